"""VectorizeLoop: ``T.vectorized`` loops become straight-line vector code (docs/pipeline.md).

A vectorized loop with a constant extent (the lanes) and unit step is replaced by its body
with the loop variable read as ``T.Ramp(min, 1, lanes)``: loads and stores whose index
becomes a Ramp (in the last dimension) become vector loads and stores, scalar operands of
vector operations are broadcast (``T.Broadcast``), element-wise math intrinsics
(``T.exp``, ``T.sqrt``, ``T.pow``, ``T.fma``, ...) get vector dtypes, lets of vector values
get fresh vector variables, and ``if`` statements whose condition does not depend on the
loop variable keep their place with vectorized branches.

When the body cannot be vectorized the loop stays a loop of kind ``serial`` (never a
miscompile): a store or load whose index is a vector but not a Ramp in the last dimension
(a scatter or gather), a store whose index does not depend on the loop variable (it runs
once per lane), an ``if``/``T.if_then_else`` on the loop variable, a call with side effects
or of a module function, a nested loop, an allocation or any other statement, an
expression that is already a vector, and accesses that could carry a value from one
iteration to the next (a buffer both stored and loaded in the body at different
indices). Non-constant extents, steps other than 1, extents below 1 also fall back;
an extent of 1 just substitutes ``min``.

Loops are processed innermost first. Preconditions: FlattenBuffer (not required: any rank
works, but vector indices are formed in the last dimension only). Guarantees: no loop of
kind ``vectorized`` remains.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.expr import (BinOp, Broadcast, BufferLoad, Call, Cast, IntImm, Let, Not,
                          PrimExpr, Ramp, Select, Shuffle, Var)
from tirc.ir.function import IRModule
from tirc.ir.ops import INTRINSICS
from tirc.ir.renew import substitute
from tirc.ir.stmt import BufferStore, Evaluate, For, IfThenElse, LetStmt, SeqStmt, Stmt, seq
from tirc.ir.visitor import Mutator, walk
from tirc.ir.index_arith import arith, broadcast, cast
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.pass_context import PassContext

# Pure element-wise intrinsics: a vector call applies the scalar one to every lane. An
# explicit list, so that an intrinsic added later falls back to a serial loop (safe).
ELEMENTWISE = frozenset((
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf",
    "sigmoid", "floor", "ceil", "round", "trunc", "nearbyint", "fabs", "popcount", "clz",
    "likely", "bitwise_not", "pow", "atan2", "hypot", "copysign", "nextafter", "fmod", "ldexp",
    "fma", "isnan", "isinf", "isfinite"))


class _Cannot(Exception):
    """The body cannot be vectorized; the loop becomes serial."""


class _Vectorizer:
    def __init__(self, var: Var, ramp: PrimExpr, lanes: int, loop: For):
        self.var = var
        self.ramp = ramp
        self.lanes = lanes
        self.loop = loop
        self.subst: dict[int, PrimExpr] = {id(var): ramp}
        self._analyzer: Analyzer | None = None

    # -- expressions: the result is the scalar node itself when it does not vary --------
    def expr(self, e: PrimExpr) -> PrimExpr:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise _Cannot(type(e).__name__)
        out = method(e)
        if out is not e and e.dtype.lanes != 1:
            raise _Cannot("already a vector")
        return out

    def e_Var(self, e: Var) -> PrimExpr:
        return self.subst.get(id(e), e)

    def e_IntImm(self, e):
        return e

    e_FloatImm = e_StringImm = e_IntImm

    def e_Ramp(self, e: Ramp):
        return e if self.expr(e.base) is e.base and self.expr(e.stride) is e.stride else self._fail()

    def e_Broadcast(self, e: Broadcast):
        return e if self.expr(e.value) is e.value else self._fail()

    def e_Shuffle(self, e: Shuffle):
        for v in (*e.vectors, *e.indices):
            if self.expr(v) is not v:
                self._fail()
        return e

    def _fail(self):
        raise _Cannot("vector of vectors")

    def e_BinOp(self, e: BinOp) -> PrimExpr:
        a, b = self.expr(e.a), self.expr(e.b)
        if a is e.a and b is e.b:
            return e
        if a.dtype.lanes == 1 and b.dtype.lanes == 1:
            return replace(e, a=a, b=b)
        if e.op in ("add", "sub", "mul") and e.dtype.is_integer:
            return cast(arith(e.op, a, b), e.dtype)
        return BinOp(e.op, broadcast(a, self.lanes), broadcast(b, self.lanes),
                     e.dtype.with_lanes(self.lanes), e.span)

    def e_Not(self, e: Not):
        a = self.expr(e.a)
        return e if a is e.a else Not(a, e.span)

    def e_Cast(self, e: Cast):
        v = self.expr(e.value)
        if v is e.value:
            return e
        if v.dtype.lanes == 1:
            return replace(e, value=v)
        if e.dtype.is_integer and v.dtype.is_integer and isinstance(v, (Ramp, Broadcast)):
            return cast(v, e.dtype)
        return Cast(e.dtype.with_lanes(self.lanes), v, e.span)

    def e_Select(self, e: Select):
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        if c.dtype.lanes == 1 and t.dtype.lanes == 1 and f.dtype.lanes == 1:
            return Select(c, t, f, e.span)
        return Select(c, broadcast(t, self.lanes), broadcast(f, self.lanes), e.span)

    def e_Let(self, e: Let):
        value = self.expr(e.value)
        var = self.bind(e.var, value)
        body = self.expr(e.body)
        if var is e.var and value is e.value and body is e.body:
            return e
        return Let(var, value, body, e.span)

    def bind(self, var: Var, value: PrimExpr) -> Var:
        if value.dtype.lanes == 1:
            return var
        new = Var(var.name, value.dtype, None, var.span)
        self.subst[id(var)] = new
        return new

    def e_BufferLoad(self, e: BufferLoad):
        indices = self.indices(e.buffer, e.indices)
        if indices is e.indices:
            return e
        if indices[-1].dtype.lanes == 1:
            return replace(e, indices=indices)
        if isinstance(indices[-1], Broadcast):  # the same element for every lane
            return Broadcast(replace(e, indices=indices[:-1] + (indices[-1].value,)), self.lanes)
        return BufferLoad(e.buffer, indices, e.dtype.with_lanes(self.lanes), e.span)

    def indices(self, buffer, indices):
        new = tuple(self.expr(i) for i in indices)
        if all(a is b for a, b in zip(new, indices)):
            return indices
        if buffer.dtype.lanes != 1 or any(i.dtype.lanes != 1 for i in new[:-1]):
            raise _Cannot("vector buffer or vector index before the last")
        if new[-1].dtype.lanes != 1 and not isinstance(new[-1], (Ramp, Broadcast)):
            new = new[:-1] + (self.contiguous(indices[-1]),)
        return new

    def contiguous(self, index: PrimExpr) -> PrimExpr:
        """The vector form of a last index that is not a Ramp as written: the index
        simplified with the loop variable's range (``(x * 4 + v) // 64 * 64 + (x * 4 + v)
        % 64`` with ``v < 4`` is ``x * 4 + v``), vectorized again; a gather or scatter
        when it still is none."""
        if self._analyzer is None:
            self._analyzer = Analyzer()
            self._analyzer.bind_range(self.var, self.loop.min, self.loop.extent)
        simplified = self._analyzer.simplify(index)
        if simplified is not index:
            out = self.expr(simplified)
            if out.dtype.lanes == 1 or isinstance(out, (Ramp, Broadcast)):
                return out
        raise _Cannot("gather or scatter")

    def e_Call(self, e: Call):
        name = e.op if isinstance(e.op, str) else None
        intr = INTRINSICS.get(name) if name else None
        if intr is None or not intr.pure:
            raise _Cannot("call with side effects")
        if name == "if_then_else":
            cond = self.expr(e.args[0])
            if cond is not e.args[0]:
                raise _Cannot("if_then_else on the loop variable")
            t, f = self.expr(e.args[1]), self.expr(e.args[2])
            if t is e.args[1] and f is e.args[2]:
                return e
            if t.dtype.lanes == 1 and f.dtype.lanes == 1:
                return replace(e, args=(cond, t, f))
            return Call(e.dtype.with_lanes(self.lanes), e.op,
                        (cond, broadcast(t, self.lanes), broadcast(f, self.lanes)), e.span, e.kwargs)
        args = tuple(a if not isinstance(a, PrimExpr) else self.expr(a) for a in e.args)
        if all(a is b for a, b in zip(args, e.args)):
            return e
        if all(not isinstance(a, PrimExpr) or a.dtype.lanes == 1 for a in args):
            return replace(e, args=args)
        if name not in ELEMENTWISE:
            raise _Cannot(f"'{name}' has no vector form")
        return Call(e.dtype.with_lanes(self.lanes), e.op,
                    tuple(broadcast(a, self.lanes) for a in args), e.span, e.kwargs)

    # -- statements ------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, SeqStmt):
            return SeqStmt(tuple(self.stmt(c) for c in s.stmts), s.span)
        if isinstance(s, BufferStore):
            indices = self.indices(s.buffer, s.indices)
            if indices is s.indices or indices[-1].dtype.lanes == 1 or isinstance(indices[-1], Broadcast):
                raise _Cannot("store to the same element in every iteration")
            value = broadcast(self.expr(s.value), self.lanes)
            return BufferStore(s.buffer, value, indices, s.span)
        if isinstance(s, LetStmt):
            value = self.expr(s.value)
            var = self.bind(s.var, value)
            return LetStmt(var, value, self.stmt(s.body), s.span, s.form)
        if isinstance(s, IfThenElse):
            if self.expr(s.condition) is not s.condition:
                raise _Cannot("if on the loop variable")
            else_case = None if s.else_case is None else self.stmt(s.else_case)
            return IfThenElse(s.condition, self.stmt(s.then_case), else_case, s.span)
        if isinstance(s, Evaluate):
            return Evaluate(self.expr(s.value), s.span)
        raise _Cannot(type(s).__name__)


def _carries_values(body: Stmt) -> bool:
    """Whether some memory is stored and also accessed through another buffer or at
    another index: then lanes would see each other's values in another order than the
    serial loop's iterations."""
    accesses: dict[int, list[tuple]] = {}
    stored: set[int] = set()
    for node in walk(body):
        if isinstance(node, (BufferLoad, BufferStore)):
            key = id(node.buffer.data)
            accesses.setdefault(key, []).append((node.buffer, node.indices))
            if isinstance(node, BufferStore):
                stored.add(key)
    for key in stored:
        (buffer, indices), *rest = accesses[key]
        if any(b is not buffer or i != indices for b, i in rest):
            return True
    return False


def _has_scalable(body: Stmt) -> bool:
    return any(getattr(getattr(n, "dtype", None), "scalable", False) for n in walk(body))


def vectorize(loop: For) -> Stmt | None:
    """The vector form of ``loop``, or None when it must stay a (serial) loop."""
    if not isinstance(loop.extent, IntImm) or loop.extent.value < 1:
        return None
    if loop.step is not None and not (isinstance(loop.step, IntImm) and loop.step.value == 1):
        return None
    lanes = loop.extent.value
    if _has_scalable(loop.body):  # vectors of vectors: it stays a loop
        return None
    start = cast(loop.min, loop.loop_var.dtype)
    if lanes == 1:
        return substitute(loop.body, {id(loop.loop_var): start})
    ramp = Ramp(start, IntImm(loop.loop_var.dtype, 1), lanes, loop.span)
    try:
        body = _Vectorizer(loop.loop_var, ramp, lanes, loop).stmt(loop.body)
    except _Cannot:
        return None
    return None if _carries_values(body) else body


class _Loops(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_For(self, s: For):
        s = (yield from self.descend(s))
        if s.kind != "vectorized":
            return s
        body = vectorize(s)
        return body if body is not None else replace(s, kind="serial")

    def visit_SeqStmt(self, s: SeqStmt):
        new = (yield from self.descend(s))
        return s if new is s else seq(new.stmts, s.span)  # a loop may become a sequence


def vectorize_loop(mod: IRModule, ctx: PassContext) -> IRModule:
    """Vectorize every ``T.vectorized`` loop of ``mod`` (or make it serial)."""
    functions = {}
    for name, func in mod.functions.items():
        body = _Loops().visit(func.body)
        functions[name] = func if body is func.body else func.with_body(body)
    if all(functions[n] is f for n, f in mod.functions.items()):
        return mod
    return replace(mod, functions=functions)
