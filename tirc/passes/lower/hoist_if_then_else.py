"""HoistIfThenElse: an ``if`` whose condition a loop does not change moves above that
loop (TVM 0.27's ``s_tir.transform.HoistIfThenElse``).

    for i in range(n):                     if c < 3:
        for j in range(m):                     for i, j in T.grid(n, m):
            if c < 3:              ->               A[i, j] = 1
                A[i, j] = 1                    else:
            else:                              for i, j in T.grid(n, m):
                A[i, j] = 2                         A[i, j] = 2

Which conditions move, and how far (TVM's rules):

* the condition of an ``if`` statement that is pure and reads no memory, and uses no
  let-bound variable; not one that divides by a variable (or shifts by one): moved, it
  is evaluated where it was not (a loop without iterations, another ``if``'s branch), and
  a division by zero traps (TVM 0.27 moves it);
* it moves above every enclosing loop whose variable it does not use, up to (not past)
  the first loop whose body is a sequence of several statements (an allocation, a
  declaration, an assert or a let with side effects counts as a statement before its
  body, as TVM 0.27 sees them);
* thread axes (``T.launch_thread`` and other attributes over a variable) are loops it
  neither moves past nor uses, unless ``support_block_scope_hoisting`` (TVM's
  ``s_tir.HoistIfThenElse`` config) is set. A function with the attribute
  ``tirx.HoistIfThenElseExprWithBlock`` = 1 (dlight's GEMV rules) instead has its
  ``T.if_then_else`` conditions moved, across thread axes too.

The loop is then copied into both branches of the new ``if``: in the ``then`` copy every
``if`` (and ``T.if_then_else``) on that condition keeps its ``then`` branch, in the
``else`` copy its ``else`` branch, and the ``else`` copy gets fresh loop variables, lets
and buffers. An ``if`` without ``else`` directly in the loop moves without an ``else``
copy; one inside a branch of another ``if`` (or a ``while``) gets one, where TVM 0.27
drops the other branch's work when the condition is false. A copy that would hold more
than ``MAX_COPY_STATEMENTS`` statements is not made (the condition stays where it is).
As in TVM the pass ends with Simplify and RemoveNoOp, which drop the loops left empty.

TVM's own pass also runs its StmtSimplify over the function, which writes comparisons and
products in its canonical form (``3 <= i`` for ``i >= 3``, ``j * 9`` for ``9 * j``);
tirc's Simplify leaves the operands as written.

Preconditions: LowerThreadBindings (thread axes are ``T.launch_thread`` scopes). Guarantees:
the program computes the same; no variable or buffer is defined twice.
"""
from __future__ import annotations

from dataclasses import field, replace

from tirc.ir.block import SBlock
from tirc.ir.dtype import INT32
from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, Let, Not, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.renew import fresh_definitions
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, DeclBuffer, Evaluate, For,
                          IfThenElse, IterVar, LetStmt, SeqStmt, Stmt, While)
from tirc.ir.visitor import Mutator, walk
from tirc.passes.lower.remove_no_op import remove_no_op
from tirc.passes.lower.simplify import simplify
from tirc.passes.analysis.simplify_rules import is_pure
from tirc.records import record

MAX_COPY_STATEMENTS = 4096
EXPR_HOIST_ATTR = "tirx.HoistIfThenElseExprWithBlock"
_CHAIN = (SeqStmt, LetStmt, AllocBuffer, DeclBuffer, AssertStmt)


def hoist_if_then_else(mod: IRModule, ctx=None, *,
                       support_block_scope_hoisting: bool = False) -> IRModule:
    """Hoist loop-invariant conditions in every function, then Simplify and RemoveNoOp."""
    funcs = {}
    for name, func in mod.functions.items():
        flag = func.attrs.get(EXPR_HOIST_ATTR)
        exprs = getattr(flag, "value", flag) == 1
        hoister = _Hoister(block_vars=support_block_scope_hoisting or exprs,
                           stmts=not exprs, exprs=exprs)
        body = hoister.visit(func.body)
        funcs[name] = func if body is func.body else func.with_body(body)
    return remove_no_op(simplify(replace(mod, functions=funcs)))


@record
class _Condition:
    cond: PrimExpr
    with_else: bool


@record
class _Loop:
    """A loop (or thread axis) being visited and the conditions that will wrap it."""

    var: Var
    thread_axis: bool
    branch_depth: int  # enclosing if-branches when the loop was entered
    sequential: bool = False
    conditions: list[_Condition] = field(default_factory=list)


class _Hoister(Mutator):
    def __init__(self, block_vars: bool, stmts: bool, exprs: bool):
        self.block_vars = block_vars  # TVM's kUsingBlockVar
        self.stmts = stmts  # hoist the conditions of if statements (kIfElseStmt)
        self.exprs = exprs  # hoist the conditions of T.if_then_else (kIfElseExpr)
        self.loops: list[_Loop] = []
        self.thread_vars: set[int] = set()
        self.bound: set[int] = set()  # let-bound variables and block iterators in scope
        self.branches = 0
        self.in_chain = False
        self.outer_in_chain: list[bool] = []  # ``in_chain`` outside each statement entered

    # -- where a condition can go ----------------------------------------------------------
    def destination(self, used: set[int]) -> _Loop | None:
        """The outermost loop the condition may wrap (TVM's FindHoistDestination)."""
        for k in range(len(self.loops) - 1, -1, -1):
            loop = self.loops[k]
            if (loop.sequential or id(loop.var) in used
                    or (loop.thread_axis and not self.block_vars)):
                return None if k == len(self.loops) - 1 else self.loops[k + 1]
        return self.loops[0] if self.loops else None

    def attempt(self, cond: PrimExpr, with_else: bool) -> None:
        if not _hoistable(cond):
            return
        used = {id(n) for n in walk(cond) if isinstance(n, Var)}
        loop = self.destination(used)
        if loop is None or loop.sequential or used & self.bound:
            return
        if not self.block_vars and used & self.thread_vars:
            return
        with_else = with_else or self.branches > loop.branch_depth
        loop.conditions.append(_Condition(cond, with_else))

    def wrap(self, stmt: Stmt, loop: _Loop) -> Stmt:
        for c in reversed(loop.conditions):
            if c.with_else and _statements(stmt) > MAX_COPY_STATEMENTS:
                continue
            then = _Fold(c.cond, True).visit(stmt)
            other = fresh_definitions(_Fold(c.cond, False).visit(stmt), thread_axes=False) \
                if c.with_else else None
            stmt = IfThenElse(c.cond, then, other, stmt.span)
        return stmt

    # -- traversal -------------------------------------------------------------------------
    def enter(self, node) -> None:
        if isinstance(node, Stmt) and not isinstance(node, _CHAIN):
            self.outer_in_chain.append(self.in_chain)
            self.in_chain = False

    def leave(self, node) -> None:
        if isinstance(node, Stmt) and not isinstance(node, _CHAIN):
            self.in_chain = self.outer_in_chain.pop()

    def chain(self, node: Stmt):
        """A sequence, or a statement TVM 0.27 writes as one before its body: a loop whose
        body holds several statements keeps the conditions below it."""
        if not self.in_chain and self.loops and _several(node):
            self.loops[-1].sequential = True
        saved, self.in_chain = self.in_chain, True
        try:
            return (yield from self.descend(node))
        finally:
            self.in_chain = saved

    visit_SeqStmt = visit_AllocBuffer = visit_DeclBuffer = visit_AssertStmt = chain

    def visit_LetStmt(self, s: LetStmt):
        self.bound.add(id(s.var))
        try:
            return (yield from self.chain(s))
        finally:
            self.bound.discard(id(s.var))

    def visit_Let(self, e: Let) -> PrimExpr:
        self.bound.add(id(e.var))
        try:
            return self.generic_visit(e)
        finally:
            self.bound.discard(id(e.var))

    def visit_SBlock(self, s: SBlock):
        ids = {id(iv.var) for iv in s.iter_vars}
        self.bound |= ids
        try:
            return (yield from self.descend(s))
        finally:
            self.bound -= ids

    def loop(self, node: Stmt, var: Var, thread_axis: bool):
        loop = _Loop(var, thread_axis, self.branches)
        self.loops.append(loop)
        if thread_axis:
            self.thread_vars.add(id(var))
        try:
            new = yield from self.descend(node)
        finally:
            self.loops.pop()
            if thread_axis:
                self.thread_vars.discard(id(var))
        return self.wrap(new, loop)

    def visit_For(self, s: For):
        return (yield from self.loop(s, s.loop_var, False))

    def visit_AttrStmt(self, s: AttrStmt):
        if isinstance(s.node, IterVar):
            return (yield from self.loop(s, s.node.var, True))
        if isinstance(s.node, Var):
            return (yield from self.loop(s, s.node, True))
        return (yield from self.descend(s))

    def visit_IfThenElse(self, s: IfThenElse):
        if self.stmts:
            self.attempt(s.condition, s.else_case is not None)
        cond = self.visit(s.condition)
        self.branches += 1
        try:
            then = (yield s.then_case)
            other = None if s.else_case is None else (yield s.else_case)
        finally:
            self.branches -= 1
        if cond is s.condition and then is s.then_case and other is s.else_case:
            return s
        return replace(s, condition=cond, then_case=then, else_case=other)

    def visit_While(self, s: While):
        self.branches += 1
        try:
            return (yield from self.descend(s))
        finally:
            self.branches -= 1

    def visit_Call(self, e: Call) -> PrimExpr:
        if self.exprs and e.op == "if_then_else" and len(e.args) == 3:
            self.attempt(e.args[0], True)
        return self.generic_visit(e)


class _Fold(Mutator):
    """Decide every ``if`` and ``T.if_then_else`` on ``cond`` as ``value``."""

    def __init__(self, cond: PrimExpr, value: bool):
        self.cond, self.negated, self.value = cond, Not(cond), value

    def decided(self, c: PrimExpr) -> bool | None:
        if c == self.cond:
            return self.value
        if c == self.negated:
            return not self.value
        return None

    def visit_IfThenElse(self, s: IfThenElse):
        d = self.decided(s.condition)
        if d is None:
            return (yield from self.descend(s))
        branch = s.then_case if d else s.else_case
        return self.visit(branch) if branch is not None else Evaluate(IntImm(INT32, 0), s.span)

    def visit_Call(self, e: Call) -> PrimExpr:
        if e.op == "if_then_else" and len(e.args) == 3:
            d = self.decided(e.args[0])
            if d is not None:
                return self.visit(e.args[1] if d else e.args[2])
        return self.generic_visit(e)


def _hoistable(cond: PrimExpr) -> bool:
    """Pure, reading no memory, and safe to evaluate anywhere: an integer division by
    anything but a positive constant, or a shift by anything but a constant below the
    width, could trap (or be undefined) where the ``if`` was never reached."""
    if not is_pure(cond):
        return False
    for n in walk(cond):
        if isinstance(n, BufferLoad):
            return False
        if isinstance(n, BinOp) and n.dtype.is_integer:
            amount = n.b.value if isinstance(n.b, IntImm) else None
            if n.op in ("div", "mod", "floordiv", "floormod") and not (amount and amount > 0):
                return False
            if n.op in ("shift_left", "shift_right") and not (
                    amount is not None and 0 <= amount < n.dtype.bits):
                return False
    return True


def _several(s: Stmt) -> bool:
    """Whether ``s`` is more than one statement as TVM 0.27 lays them out in one sequence
    (its lets, allocations, declarations and asserts stand before their bodies; a pure
    let does not count)."""
    count, todo = 0, [s]
    while todo:
        x = todo.pop()
        if isinstance(x, SeqStmt):
            todo.extend(x.stmts)
            continue
        if isinstance(x, LetStmt):
            count += 0 if is_pure(x.value) else 1
            todo.append(x.body)
        elif isinstance(x, (AllocBuffer, DeclBuffer, AssertStmt)):
            count += 1
            todo.append(x.body)
        else:
            count += 1
        if count > 1:
            return True
    return False


def _statements(s: Stmt) -> int:
    return sum(1 for n in walk(s) if isinstance(n, Stmt) and not isinstance(n, SeqStmt))
