"""RemoveNoOp: drop statements that do nothing (TVM 0.27's ``tirx.transform.RemoveNoOp``).

What is removed, every time keeping the side effects of what it drops (a call that is
not pure stays as ``T.evaluate(call)``):

* ``T.evaluate(e)`` of a pure ``e``; a statement sequence loses its no-ops;
* a loop whose body does nothing, or whose extent is at most 0 (given the ranges of the
  enclosing loops, thread axes and let-bound values: ``for j in range(i - 20)`` with
  ``i < 16``);
* an ``if`` whose two branches do nothing; an empty ``else``; an empty ``then`` (the
  ``else`` becomes the ``then`` of ``if not cond``); an ``if`` on a constant condition;
* an attribute (``T.attr``, ``T.launch_thread``) whose body does nothing, and every
  ``pragma_debug_skip_region`` attribute with its body; a wait for a negative number of
  asynchronous copy groups (``async_wait_queue_scope``) keeps only its body (and a wait's
  count is folded, as TVM's simplifier after unrolling folds it);
* a store of the value its destination already holds: ``A[i] = A[j]`` where ``i`` and
  ``j`` are provably equal, with let-bound variables replaced by their values and the
  equalities known inside an ``if`` (``i == 0`` in the ``else`` of ``if i != 0``) used.

Kept, as TVM 0.27 keeps them: let bindings (even unused ones), allocations and buffer
declarations, ``while`` loops, and stores a later store overwrites. A scoped statement
(let, allocation, declaration, assert) whose body became empty keeps an empty body, what
the parser builds when nothing follows it.

Options (TVM's ``tirx.RemoveNoOp`` config) are accepted and change nothing here:
``ignore_profiler_call`` (tirc has no CUDA profiler intrinsics) and
``max_simplification_steps`` (a debugging limit of TVM's rewrite simplifier).

Preconditions: none beyond a well-formed module. Guarantees: the program's effects are
unchanged; functions keep their signatures; the result verifies.
"""
from __future__ import annotations

from dataclasses import replace
from itertools import islice

from tirc.ir.attrs import PRAGMA_DEBUG_SKIP_REGION, THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.dtype import INT32
from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, Not, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, BufferStore, DeclBuffer, Evaluate,
                          For, IfThenElse, IterVar, LetStmt, SeqStmt, Stmt, seq)
from tirc.ir.visitor import Mutator, walk
from tirc.passes.lower.simplify import is_noop, simplify_expr
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.simplify_arith import Interval, interval
from tirc.passes.analysis.simplify_rules import const_int, is_pure

# Calls that are pure values but carry information a later pass reads (TVM's kEmbedInfo).
_KEEP_CALLS = ("assume",)
_MAX_FACT_NODES = 64  # larger values are not substituted or simplified in proofs


def remove_no_op(mod: IRModule, ctx=None, *, ignore_profiler_call: bool = False,
                 max_simplification_steps: int = 0) -> IRModule:
    """``mod`` without its no-op statements; the module object when nothing changed."""
    changed = False
    funcs = {}
    for name, func in mod.functions.items():
        body = _NoOpRemover().visit(func.body)
        changed |= body is not func.body
        funcs[name] = func if body is func.body else func.with_body(body)
    return replace(mod, functions=funcs) if changed else mod


def is_no_op(s: Stmt) -> bool:
    """``T.evaluate`` of a constant, or an empty sequence."""
    return is_noop(s) or (isinstance(s, SeqStmt) and not s.stmts)


def _nop(span=None) -> Stmt:
    return Evaluate(IntImm(INT32, 0), span)


def _empty_body(new: Stmt, old: Stmt) -> Stmt:
    """The body of a scoped statement: an empty sequence once it does nothing."""
    return SeqStmt(()) if new is not old and is_no_op(new) else new


class _NoOpRemover(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self) -> None:
        self.ranges: dict[int, Interval] = {}
        self.known: dict[int, PrimExpr] = {}  # let values and equalities in scope, by var id

    # -- side effects ----------------------------------------------------------------------
    def has_side_effect(self, e: PrimExpr) -> bool:
        return not is_pure(e) or any(isinstance(n, Call) and n.op in _KEEP_CALLS for n in walk(e))

    def evaluate(self, values, span=None) -> Stmt:
        """The statements evaluating those of ``values`` that have side effects."""
        kept = [Evaluate(v, span) for v in values if v is not None and self.has_side_effect(v)]
        return seq(kept, span) if kept else _nop(span)

    # -- scopes ----------------------------------------------------------------------------
    def scoped(self, ranges: dict[int, Interval], known: dict[int, PrimExpr], body: Stmt):
        """Steps of a statement walk: ``body`` visited with ``ranges`` and ``known``."""
        saved_ranges, saved_known = self.ranges, self.known
        self.ranges = {**self.ranges, **ranges} if ranges else self.ranges
        self.known = {**self.known, **known} if known else self.known
        try:
            return (yield body)
        finally:
            self.ranges, self.known = saved_ranges, saved_known

    def facts(self, cond: PrimExpr, holds: bool) -> dict[int, PrimExpr]:
        """Variables whose value ``cond`` fixes when it is ``holds``: ``i == e``."""
        if isinstance(cond, Call) and cond.op == "likely" and len(cond.args) == 1:
            cond = cond.args[0]
        if isinstance(cond, Not):
            return self.facts(cond.a, not holds)
        if not isinstance(cond, BinOp):
            return {}
        if cond.op == ("and" if holds else "or"):
            return {**self.facts(cond.a, holds), **self.facts(cond.b, holds)}
        if cond.op == ("eq" if holds else "ne") and cond.a.dtype.is_integer:
            for var, value in ((cond.a, cond.b), (cond.b, cond.a)):
                if isinstance(var, Var) and _invariant(value) and not _mentions(value, var):
                    full = self.substitute(value)
                    return {id(var): full} if _small(full) else {}
        return {}

    # -- statements ------------------------------------------------------------------------
    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        if const_int(s.value) == 0 or self.has_side_effect(s.value):
            return s
        return _nop(s.span)

    def visit_SeqStmt(self, s: SeqStmt):
        items = []
        for x in s.stmts:
            items.append((yield x))
        if all(a is b for a, b in zip(items, s.stmts)) and not any(map(is_no_op, items)):
            return s
        kept = [x for x in items if not is_no_op(x)]
        return seq(kept, s.span) if kept else _nop(s.span)

    def visit_LetStmt(self, s: LetStmt):
        value = self.visit(s.value)
        r = interval(value, self.ranges) if value.dtype.is_integer else None
        known = {}
        if _invariant(value):
            full = self.substitute(value)
            if _small(full):
                known[id(s.var)] = full
        body = _empty_body((yield from self.scoped({id(s.var): r} if r else {}, known, s.body)), s.body)
        if value is s.value and body is s.body:
            return s
        return replace(s, value=value, body=body)

    def visit_AllocBuffer(self, s: AllocBuffer):
        body = _empty_body((yield s.body), s.body)
        return s if body is s.body else replace(s, body=body)

    def visit_DeclBuffer(self, s: DeclBuffer):
        body = _empty_body((yield s.body), s.body)
        return s if body is s.body else replace(s, body=body)

    def visit_AssertStmt(self, s: AssertStmt):
        cond = self.visit(s.condition)
        body = _empty_body((yield from self.scoped({}, self.facts(cond, True), s.body)), s.body)
        if cond is s.condition and body is s.body:
            return s
        return replace(s, condition=cond, body=body)

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == PRAGMA_DEBUG_SKIP_REGION:
            return _nop(s.span)
        if (s.key == "async_wait_queue_scope" and isinstance(s.body, AttrStmt)
                and s.body.key == "async_wait_inflight_count"):
            count = Analyzer().simplify(s.body.value)
            if isinstance(count, IntImm) and count.value < 0:
                # a wait for a negative number of groups (a pipeline epilogue's count such
                # as 1 - i once unrolled) waits for nothing
                return (yield s.body.body)
            if count is not s.body.value:
                # the count folded (unrolling made it constant), as the code generator needs
                s = replace(s, body=replace(s.body, value=count))
        value = self.visit(s.value)
        ranges = {}
        if isinstance(s.node, IterVar) and s.key in (THREAD_EXTENT, VIRTUAL_THREAD):
            r = interval(value, self.ranges)
            if r is not None and r[1] >= 1:
                ranges[id(s.node.var)] = (0, r[1] - 1)
        body = (yield from self.scoped(ranges, {}, s.body))
        if is_no_op(body):
            return self.evaluate([value], s.span)
        if value is s.value and body is s.body:
            return s
        return replace(s, value=value, body=body)

    def visit_For(self, s: For):
        ext = interval(s.extent, self.ranges)
        if ext is not None and ext[1] <= 0:
            return _nop(s.span)
        lo, extent = self.visit(s.min), self.visit(s.extent)
        step = None if s.step is None else self.visit(s.step)
        ranges = {}
        mr = interval(lo, self.ranges)
        if mr is not None and ext is not None and (step is None or const_int(step) == 1):
            ranges[id(s.loop_var)] = (mr[0], mr[1] + ext[1] - 1)
        body = (yield from self.scoped(ranges, {}, s.body))
        if const_int(extent) == 0:
            return _nop(s.span)
        if is_no_op(body):
            return self.evaluate([lo, extent], s.span)
        if lo is s.min and extent is s.extent and step is s.step and body is s.body:
            return s
        return replace(s, min=lo, extent=extent, step=step, body=body)

    def visit_IfThenElse(self, s: IfThenElse):
        cond = self.visit(s.condition)
        then = (yield from self.scoped({}, self.facts(cond, True), s.then_case))
        other = None if s.else_case is None else (yield from self.scoped({}, self.facts(cond, False), s.else_case))
        if const_int(cond) is not None:
            if const_int(cond):
                return then
            return other if other is not None else _nop(s.span)
        no_then = is_no_op(then)
        no_else = other is None or is_no_op(other)
        if no_then and no_else:
            return self.evaluate([cond], s.span)
        if no_else and other is not None:
            return IfThenElse(cond, then, None, s.span)
        if no_then:
            return IfThenElse(Not(cond), other, None, s.span)
        if cond is s.condition and then is s.then_case and other is s.else_case:
            return s
        return replace(s, condition=cond, then_case=then, else_case=other)

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        if self.stores_existing_value(s):
            return self.evaluate([s.value, *s.indices], s.span)
        return s

    # -- proofs ----------------------------------------------------------------------------
    def stores_existing_value(self, s: BufferStore) -> bool:
        """Whether ``s`` writes what its destination holds: its value is (or simplifies
        to) a load of the same buffer at provably equal indices."""
        value = s.value
        if not (isinstance(value, BufferLoad) and value.buffer is s.buffer):
            # ``A[i] + 0``, ``T.max(A[i], A[i])``: a small value with a load of the
            # destination's buffer as an operand may simplify to that load
            operands = [getattr(value, f, None) for f in ("a", "b", "value", "true_value")]
            if not (any(isinstance(x, BufferLoad) and x.buffer is s.buffer for x in operands)
                    and _small(value)):
                return False
            value = simplify_expr(value, self.ranges)
        if not (isinstance(value, BufferLoad) and value.buffer is s.buffer
                and len(value.indices) == len(s.indices)):
            return False
        return all(self.equal(a, b) for a, b in zip(value.indices, s.indices))

    def equal(self, a: PrimExpr, b: PrimExpr) -> bool:
        if a == b and is_pure(a):
            return True
        if not (is_pure(a) and is_pure(b)) or a.dtype != b.dtype or not a.dtype.is_integer:
            return False
        ca, cb = self.canonical(a), self.canonical(b)
        if ca == cb:
            return True
        return const_int(simplify_expr(BinOp("sub", ca, cb, ca.dtype), self.ranges)) == 0

    def canonical(self, e: PrimExpr) -> PrimExpr:
        return simplify_expr(self.substitute(e), self.ranges)

    def substitute(self, e: PrimExpr) -> PrimExpr:
        if not self.known:
            return e
        return _Substitute(self.known).visit(e)


class _Substitute(Mutator):
    def __init__(self, values: dict[int, PrimExpr]):
        self.values = values

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.values.get(id(v), v)


def _small(e: PrimExpr) -> bool:
    """At most ``_MAX_FACT_NODES`` nodes (what a proof substitutes or simplifies)."""
    return sum(1 for _ in islice(walk(e), _MAX_FACT_NODES + 1)) <= _MAX_FACT_NODES


def _invariant(e: PrimExpr) -> bool:
    """Pure and reading no memory: the same value wherever it is evaluated in its scope."""
    return is_pure(e) and not any(isinstance(n, BufferLoad) for n in walk(e))


def _mentions(e: PrimExpr, var: Var) -> bool:
    return any(n is var for n in walk(e))
