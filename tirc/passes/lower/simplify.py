"""Simplify: fold constants, apply arithmetic identities, propagate constants, drop
branches that integer ranges decide, and evaluate calls of pure private functions with
constant arguments (docs/pipeline.md).

* Operators, casts, ``Not``, ``Select`` and ``T.if_then_else`` on immediates fold with
  TVM's integer semantics (see :mod:`tirc.passes.analysis.simplify_arith`); nothing that could
  change a program's meaning is folded (division by zero, overflow, float
  reassociation, dropping a side effect).
* Identities: ``x+0``, ``x-0``, ``x*1``, ``x*0`` (ints), ``x//1``, ``x%1``, ``x-x``
  (ints), ``min(x,x)``, ``max(x,x)``, comparisons of identical integer operands,
  ``and``/``or`` with a constant operand; constants move right and combine
  (``(x + 2) + 3`` is ``x + 5``).
* A ``LetStmt`` or ``Let`` whose value folds to an immediate is substituted and removed.
* Ranges: loop variables (``For`` min and extent), thread variables (``thread_extent``
  and ``virtual_thread`` scopes), let-bound variables and constants have integer
  intervals; comparisons they decide fold, so an ``if`` (or ``Select``, ``if_then_else``,
  ``assert``) that always holds keeps only the branch taken; ``min``/``max``/
  ``floordiv``/``floormod`` are decided the same way.
* ``Module.f(c1, c2)`` with immediate arguments, where ``f`` is a private function whose
  body is pure (LetStmts, IfThenElse and Returns over scalar parameters: no buffer, no
  extern or side-effecting call), becomes the immediate it returns. So a host-side launch
  extent or condition may use the known result of a device subroutine.

Preconditions: Verify (and BindTarget, though targets are not read). Guarantees: the
module's functions are all kept, with the same signatures; every expression keeps its
dtype; the result verifies.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import Buffer
from tirc.ir.const_fold import fold_cast, is_imm
from tirc.ir.dtype import INT32
from tirc.ir.expr import (BinOp, BufferLoad, Call, Cast, GlobalVar, IntImm, Let, Not,
                          PrimExpr, Select, Var)
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.ops import INTRINSICS
from tirc.ir.stmt import (AssertStmt, AttrStmt, Evaluate, For, IfThenElse, IterVar, LetStmt,
                          Return, SeqStmt, Stmt, While, seq)
from tirc.ir.visitor import Mutator, walk
from tirc.passes.analysis.simplify_arith import Interval, interval
from tirc.passes.analysis.simplify_rules import const_int, imm_bool, is_pure, simplify_binop

_FALLTHROUGH = object()  # a pure function's statement finished without returning


def simplify(mod: IRModule, ctx=None) -> IRModule:
    """Simplify every function of ``mod``; the module object is returned when nothing changed."""
    new: dict[str, PrimFunc] = {}
    changed = False
    memo: dict = {}
    for name, func in mod.functions.items():
        body = _Simplifier(mod, (name,), memo).visit(func.body)
        changed |= body is not func.body
        new[name] = func if body is func.body else func.with_body(body)
    return replace(mod, functions=new) if changed else mod


def simplify_expr(e: PrimExpr, ranges: dict[int, Interval] | None = None) -> PrimExpr:
    """``e`` simplified as Simplify simplifies expressions in a function body, given integer
    ``ranges`` of variables (by id); calls of module functions are left as they are."""
    s = _Simplifier(IRModule({}), ())
    s.ranges.update(ranges or {})
    return s.visit(e)


def is_noop(s: Stmt) -> bool:
    return isinstance(s, Evaluate) and is_imm(s.value)


class _Simplifier(Mutator):
    def __init__(self, mod: IRModule, evaluating: tuple[str, ...], memo: dict | None = None):
        self.mod = mod
        self.evaluating = evaluating  # functions being evaluated (no recursion)
        # results of pure calls by (function, argument values, functions being
        # evaluated: a call refused as recursive in one context may fold in another),
        # shared by the module's simplification: nested calls (f calling g twice, g
        # calling h twice, ...) are evaluated once each, not once per path (exponential)
        self.memo: dict = {} if memo is None else memo
        self.bind: dict[int, PrimExpr] = {}
        self.ranges: dict[int, Interval] = {}
        self.buffers: dict[int, Buffer] = {}

    # -- scopes ----------------------------------------------------------------------------
    def with_range(self, var: Var, r: Interval | None, body: Stmt):
        """Steps of a statement walk: ``body`` visited with ``var`` in ``r``."""
        if r is None or r[0] > r[1]:
            return (yield body)
        old = self.ranges.get(id(var))
        self.ranges[id(var)] = r
        try:
            return (yield body)
        finally:
            if old is None:
                self.ranges.pop(id(var), None)
            else:
                self.ranges[id(var)] = old

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b))
        if new is None:
            shape = tuple(self.visit(e) for e in b.shape)
            strides = tuple(self.visit(e) for e in b.strides)
            offset = None if b.elem_offset is None else self.visit(b.elem_offset)
            same = offset is b.elem_offset and all(
                x is y for x, y in zip(shape + strides, b.shape + b.strides))
            new = b if same else replace(b, shape=shape, strides=strides, elem_offset=offset)
            self.buffers[id(b)] = new
        return new

    # -- statements ------------------------------------------------------------------------
    def visit_LetStmt(self, s: LetStmt):
        value = self.visit(s.value)
        if is_imm(value):
            self.bind[id(s.var)] = value
            return (yield s.body)
        r = interval(value, self.ranges) if value.dtype.is_integer else None
        body = yield from self.with_range(s.var, r, s.body)
        if value is s.value and body is s.body:
            return s
        return replace(s, value=value, body=body)

    def visit_For(self, s: For):
        lo, ext = self.visit(s.min), self.visit(s.extent)
        step = None if s.step is None else self.visit(s.step)
        r = None
        mr, er = interval(lo, self.ranges), interval(ext, self.ranges)
        if mr is not None and er is not None and (step is None or const_int(step) == 1):
            r = (mr[0], mr[1] + er[1] - 1)
        body = yield from self.with_range(s.loop_var, r, s.body)
        if lo is s.min and ext is s.extent and step is s.step and body is s.body:
            return s
        return replace(s, min=lo, extent=ext, step=step, body=body)

    def visit_AttrStmt(self, s: AttrStmt):
        value = self.visit(s.value)
        node = s.node
        if isinstance(node, IterVar) and s.key in (THREAD_EXTENT, VIRTUAL_THREAD):
            er = interval(value, self.ranges)
            body = yield from self.with_range(node.var, None if er is None else (0, er[1] - 1), s.body)
        else:
            node = self._mutate_value(node)
            body = (yield s.body)
        if value is s.value and node is s.node and body is s.body:
            return s
        return replace(s, node=node, value=value, body=body)

    def visit_IfThenElse(self, s: IfThenElse):
        cond = self.visit(s.condition)
        if is_imm(cond):
            if cond.value:
                return (yield s.then_case)
            return (yield s.else_case) if s.else_case is not None else Evaluate(IntImm(INT32, 0))
        then = (yield s.then_case)
        other = None if s.else_case is None else (yield s.else_case)
        if other is not None and is_noop(other):
            other = None
        if cond is s.condition and then is s.then_case and other is s.else_case:
            return s
        return replace(s, condition=cond, then_case=then, else_case=other)

    def visit_AssertStmt(self, s: AssertStmt):
        cond = self.visit(s.condition)
        if is_imm(cond) and cond.value:
            return (yield s.body)
        body = (yield s.body)
        return s if cond is s.condition and body is s.body else replace(s, condition=cond, body=body)

    def visit_While(self, s: While):
        cond = self.visit(s.condition)
        if is_imm(cond) and not cond.value:
            return Evaluate(IntImm(INT32, 0), s.span)
        body = (yield s.body)
        return s if cond is s.condition and body is s.body else replace(s, condition=cond, body=body)

    def visit_SeqStmt(self, s: SeqStmt):
        items = []
        for x in s.stmts:
            items.append((yield x))
        if all(a is b for a, b in zip(items, s.stmts)):
            return s
        kept = [x for x in items if not is_noop(x)]
        return seq(kept, s.span) if kept else Evaluate(IntImm(INT32, 0), s.span)

    # -- expressions -----------------------------------------------------------------------
    def visit_Var(self, v: Var) -> PrimExpr:
        return self.bind.get(id(v), v)

    def visit_Let(self, e: Let) -> PrimExpr:
        value = self.visit(e.value)
        if is_imm(value):
            self.bind[id(e.var)] = value
            return self.visit(e.body)
        body = self.visit(e.body)
        return e if value is e.value and body is e.body else replace(e, value=value, body=body)

    def visit_Not(self, e: Not) -> PrimExpr:
        e = self.generic_visit(e)
        if is_imm(e.a):
            return imm_bool(not e.a.value)
        if isinstance(e.a, Not):
            return e.a.a
        return e

    def visit_Cast(self, e: Cast) -> PrimExpr:
        e = self.generic_visit(e)
        if e.value.dtype == e.dtype:
            return e.value
        return fold_cast(e.dtype, e.value) or e

    def visit_Select(self, e: Select) -> PrimExpr:
        e = self.generic_visit(e)
        return self._choose(e.condition, e.true_value, e.false_value, True) or e

    def _choose(self, cond, yes, no, eager: bool) -> PrimExpr | None:
        if is_imm(cond):
            keep, drop = (yes, no) if cond.value else (no, yes)
            if not eager or is_pure(drop):
                return keep
        if yes == no and is_pure(cond):
            return yes
        return None

    def visit_Call(self, e: Call) -> PrimExpr:
        e = self.generic_visit(e)
        if e.op == "if_then_else" and len(e.args) == 3:
            return self._choose(*e.args, False) or e
        if isinstance(e.op, GlobalVar) and all(is_imm(a) for a in e.args):
            return self._evaluate(e) or e
        return e

    def visit_BinOp(self, e: BinOp) -> PrimExpr:
        return self.binop(self.generic_visit(e))

    def binop(self, e: BinOp) -> PrimExpr:
        return simplify_binop(e, self.ranges)

    # -- pure private functions ------------------------------------------------------------
    def _evaluate(self, call: Call) -> PrimExpr | None:
        name = call.op.name
        key = (name, tuple((a.dtype, a.value.hex() if isinstance(a.value, float) else a.value)
                           for a in call.args), self.evaluating)
        if key in self.memo:
            result = self.memo[key]
        else:
            result = self.memo[key] = self._evaluate_call(name, call)
        return None if result is None else replace(result, span=call.span)

    def _evaluate_call(self, name: str, call: Call) -> PrimExpr | None:
        callee = self.mod.functions.get(name)
        if (callee is None or not callee.private or callee.buffer_map or name in self.evaluating
                or len(callee.params) != len(call.args)
                or any(p.dtype != a.dtype or p.dtype.is_handle for p, a in zip(callee.params, call.args))
                or not self._pure(name, callee)):
            return None
        inner = _Simplifier(self.mod, self.evaluating + (name,), self.memo)
        for p, a in zip(callee.params, call.args):
            inner.bind[id(p)] = a
        result = inner.run(callee.body)
        if result is _FALLTHROUGH or result is None or result.dtype != call.dtype:
            return None
        return result

    def _pure(self, name: str, callee: PrimFunc) -> bool:
        key = ("pure", name)
        if key not in self.memo:
            self.memo[key] = _pure_body(callee)
        return self.memo[key]

    def run(self, s: Stmt):
        """Execute a pure body on immediates: the immediate it returns, _FALLTHROUGH when
        it ends without returning, None when it cannot be decided."""
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                r = self.run(x)
                if r is not _FALLTHROUGH:
                    return r
            return _FALLTHROUGH
        if isinstance(s, Return):
            v = self.visit(s.value)
            return v if is_imm(v) else None
        if isinstance(s, LetStmt):
            v = self.visit(s.value)
            if not is_imm(v):
                return None
            self.bind[id(s.var)] = v
            return self.run(s.body)
        if isinstance(s, IfThenElse):
            c = self.visit(s.condition)
            if not is_imm(c):
                return None
            branch = s.then_case if c.value else s.else_case
            return _FALLTHROUGH if branch is None else self.run(branch)
        return None


def _pure_body(func: PrimFunc) -> bool:
    """Only LetStmts, IfThenElse, Returns and pure expressions over scalars."""
    allowed = (LetStmt, IfThenElse, Return, SeqStmt)
    for n in walk(func.body):
        if isinstance(n, Stmt) and not isinstance(n, allowed):
            return False
        if isinstance(n, Call) and not isinstance(n.op, GlobalVar):
            intr = INTRINSICS.get(n.op)
            if intr is None or not intr.pure:
                return False
        if isinstance(n, BufferLoad) or (isinstance(n, Var) and n.dtype.is_handle):
            return False
        if isinstance(n, Call) and any(isinstance(x, Buffer) for x in n.args):
            return False
    return True
