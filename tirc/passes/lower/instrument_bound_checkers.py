"""InstrumentBoundCheckers (opt-in: ``--instrument-bound-checkers``, TVM's
``tir.instrument_bound_checkers``): every buffer access of host code is checked at run
time; an index outside its buffer raises ``RuntimeError: out-of-bounds access of buffer
'A' (index must be in [0, N)) at FILE:LINE`` instead of reading or writing memory that is
not the buffer's.

TVM's pass of the same name checks only buffers that carry a ``buffer_bound`` attribute,
which nothing in TVM 0.27 writes any more; this one checks each access against the
buffer it names, as that attribute meant to. Like TVM's, it runs late (after
FlattenBuffer, so the check is against the flat extent, and after the simplifications,
so that what is checked is what runs) and puts the checks of a statement before it: an
``assert`` of ``0 <= index < extent`` for every access in the statement's own
expressions (the stored index and the loads of the stored value, a ``let``'s value, an
``if``'s condition, a loop's bounds, an evaluated call's arguments). A vector access
checks its first and last lane; an access the analyzer proves inside its buffer (a loop
over the buffer's extent) costs nothing.

Not checked: device code (a kernel has no way to raise an error; it runs unchecked, as
TVM's device code does), a load under ``T.if_then_else``'s branches or ``T.address_of``
(guarded, or not an access), under a ``Let`` expression (its index may use the let's
variable), a ``while`` condition, and vector accesses other than ramps and broadcasts.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.dtype import BOOL, INT64
from tirc.ir.expr import (BinOp, Broadcast, BufferLoad, Call, Cast, IntImm, Let, PrimExpr,
                          Ramp)
from tirc.ir.function import IRModule
from tirc.ir.index_arith import arith
from tirc.ir.stmt import (AssertStmt, AttrStmt, BufferStore, Evaluate, For, IfThenElse,
                          LetStmt, SeqStmt, Stmt, seq)
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.context import DEVICE, body_context, scope_change

KIND = "RuntimeError"


def instrument_bound_checkers(mod: IRModule, ctx=None) -> IRModule:
    functions = dict(mod.functions)
    for name, func in mod.functions.items():
        if body_context(func) == DEVICE:
            continue
        body = _Instrument().visit(func.body)
        if body is not func.body:
            functions[name] = func.with_body(body)
    return replace(mod, functions=functions)


class _Instrument(Mutator):
    def __init__(self):
        self.analyzer = Analyzer()

    def visit_For(self, s: For):
        if scope_change(s) == DEVICE:
            return s
        self.analyzer.bind_range(s.loop_var, s.min, s.extent)
        return self._checked(self.generic_visit(s), (s.min, s.extent), s)

    def visit_AttrStmt(self, s: AttrStmt):
        if scope_change(s) == DEVICE:
            return s
        return self.generic_visit(s)

    def visit_SeqStmt(self, s: SeqStmt):
        new = self.generic_visit(s)
        if new is s or not isinstance(new, SeqStmt):
            return new
        # an assert owns the statements after it (the form the parser reads back)
        out: list[Stmt] = []
        for stmt in reversed(new.stmts):
            if isinstance(stmt, AssertStmt) and out:
                stmt = _append(stmt, list(reversed(out)))
                out = []
            out.append(stmt)
        return seq(list(reversed(out)), new.span)

    def visit_BufferStore(self, s: BufferStore):
        accesses = [(s.buffer, s.indices)]
        _loads(s.value, accesses)
        for i in s.indices:
            _loads(i, accesses)
        return self._guard(s, accesses)

    def visit_LetStmt(self, s: LetStmt):
        return self._checked(self.generic_visit(s), (s.value,), s)

    def visit_IfThenElse(self, s: IfThenElse):
        return self._checked(self.generic_visit(s), (s.condition,), s)

    def visit_Evaluate(self, s: Evaluate):
        return self._checked(s, (s.value,), s)

    def _checked(self, new: Stmt, exprs, old: Stmt) -> Stmt:
        accesses: list = []
        for e in exprs:
            _loads(e, accesses)
        return self._guard(new, accesses, old)

    def _guard(self, s: Stmt, accesses, old: Stmt | None = None) -> Stmt:
        where = (old or s).span
        for buf, indices in reversed(accesses):
            cond = self._condition(buf, indices)
            if cond is None:
                continue
            at = f" at {where.file}:{where.line}" if where is not None else ""
            s = AssertStmt(cond, KIND, (f"out-of-bounds access of buffer '{buf.name}' "
                                        f"({_bounds_text(buf)}){at}",), s, where)
        return s

    def _condition(self, buf, indices) -> PrimExpr | None:
        if len(indices) != len(buf.shape):
            return None
        cond = None
        for index, extent in zip(indices, buf.shape):
            ends = _ends(index)
            if ends is None:
                continue
            for e in ends:
                for c in (BinOp("ge", _i64(e), IntImm(INT64, 0), BOOL),
                          BinOp("lt", _i64(e), _i64(extent), BOOL)):
                    if not self.analyzer.can_prove(c):
                        cond = c if cond is None else BinOp("and", cond, c, BOOL)
        return cond


def _append(a: AssertStmt, rest: list[Stmt]) -> AssertStmt:
    """``a`` (a chain of asserts) with ``rest`` after the statement it guards."""
    if isinstance(a.body, AssertStmt):
        return replace(a, body=_append(a.body, rest))
    return replace(a, body=seq([a.body, *rest]))


def _ends(index: PrimExpr) -> tuple[PrimExpr, ...] | None:
    """The indices of the first and last lane of an access (one for a scalar)."""
    if index.dtype.lanes == 1:
        return (index,)
    if isinstance(index, Broadcast):
        return (index.value,)
    if isinstance(index, Ramp) and not index.scalable:
        last = arith("add", index.base,
                     arith("mul", index.stride, IntImm(index.stride.dtype, index.lanes - 1)))
        return (index.base, last)
    return None


def _i64(e: PrimExpr) -> PrimExpr:
    if e.dtype == INT64:
        return e
    if isinstance(e, IntImm):
        return IntImm(INT64, e.value)
    return Cast(INT64, e)


def _bounds_text(buf) -> str:
    from tirc.ir.describe import expr_text
    dims = [expr_text(e) for e in buf.shape]
    if len(dims) == 1:
        return f"index must be in [0, {dims[0]})"
    return f"indices must be within its shape ({', '.join(dims)})"


def _loads(e: PrimExpr, out: list) -> None:
    """The loads ``e`` evaluates whatever the data (see the module docstring)."""
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, BufferLoad):
            out.append((n.buffer, n.indices))
            stack.extend(reversed(n.indices))
        elif isinstance(n, Let):
            continue
        elif isinstance(n, Call):
            if n.op == "address_of":
                continue
            if n.op == "if_then_else":
                stack.append(n.args[0])
                continue
            stack.extend(reversed([a for a in n.args if isinstance(a, PrimExpr)]))
        elif isinstance(n, PrimExpr):
            for name in getattr(type(n), "__slots__", ()):
                v = getattr(n, name, None)
                if isinstance(v, PrimExpr):
                    stack.append(v)
