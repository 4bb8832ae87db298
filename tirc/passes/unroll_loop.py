"""UnrollLoop: ``T.unroll`` loops with a constant trip count become copies of their body
(DESIGN §4.3).

A loop of kind ``unrolled`` whose extent (and step, if any) is a constant is replaced by
one copy of its body per iteration, in order, with the loop variable replaced by that
iteration's value (``min + k * step``, folded when ``min`` is a constant). Every variable
and buffer defined inside the body (loop variables, lets, allocations, declarations,
thread axes) gets a fresh object in each copy, so no Var or Buffer is defined twice.

Limits (chosen here; TVM unrolls without one): a loop is unrolled only when it has at
most ``MAX_COPIES`` (256) iterations and the copies hold at most ``MAX_STATEMENTS`` (4096)
statements in all; a bigger loop stays a loop of kind ``unrolled``, which the code
generators pass on as an unroll hint. A loop whose trip count is not a constant becomes an
ordinary ``serial`` loop. A loop with no iteration disappears.

Loops are processed innermost first, so nested unrolled loops multiply (and count
against the statement limit).

Loop pragmas, ``T.attr(loop_var, "pragma_<key>", value)`` around a loop (how
LowerOpaqueBlock writes a scheduled loop's ``pragma_*`` annotations), are consumed here:
the attribute goes, its body stays. TVM's UnrollLoop consumes ``pragma_auto_unroll_max_step``
and ``pragma_unroll_explicit`` the same way (its automatic unrolling under them is not
ported, so here the hint has no other effect); no later pass reads the others
(``pragma_vectorize``, ...), and none may outlive this pass, since the attribute's node
names the loop variable outside its loop (SplitHostDevice would take it for a kernel
input).

Preconditions: Verify. Guarantees: every loop of kind ``unrolled`` left has a constant
trip count above the limits; no loop pragma is left.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import INT32
from tirc.ir.expr import IntImm, Let, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import (AllocBuffer, AttrStmt, DeclBuffer, Evaluate, For, IterVar, LetStmt,
                          SeqStmt, Stmt, seq)
from tirc.ir.renew import map_buffer
from tirc.ir.visitor import Mutator, walk
from tirc.passes.flatten_buffer import arith, cast
from tirc.passes.pipeline import PassContext

MAX_COPIES = 256
MAX_STATEMENTS = 4096


def _nop() -> Stmt:
    return Evaluate(IntImm(INT32, 0))


def _is_nop(s: Stmt) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, IntImm)


class _Copy(Mutator):
    """One copy of a loop body: the loop variable replaced, inner definitions renewed."""

    def __init__(self, body: Stmt, loop_var: Var, value: PrimExpr):
        self.vars: dict[int, PrimExpr] = {id(loop_var): value}
        self.buffers: dict[int, Buffer] = {}
        self.defined: set[int] = set()
        for node in walk(body):
            if isinstance(node, For):
                self._fresh(node.loop_var)
            elif isinstance(node, (LetStmt, Let)):
                self._fresh(node.var)
            elif isinstance(node, AttrStmt) and isinstance(node.node, IterVar):
                self._fresh(node.node.var)
            elif isinstance(node, (AllocBuffer, DeclBuffer)):
                self.defined.add(id(node.buffer))
                if isinstance(node, AllocBuffer):
                    self._fresh(node.buffer.data)

    def _fresh(self, v: Var) -> None:
        self.vars.setdefault(id(v), Var(v.name, v.dtype, v.ptr, v.span))

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vars.get(id(v), v)

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b))
        if new is not None:
            return new
        new = map_buffer(self, b, force=id(b) in self.defined)
        self.buffers[id(b)] = new
        return new


def _trip_count(s: For) -> int | None:
    """The number of iterations, when it is a constant."""
    step = 1 if s.step is None else (s.step.value if isinstance(s.step, IntImm) else None)
    if not isinstance(s.extent, IntImm) or step is None or step < 1:
        return None
    return max(0, -(-s.extent.value // step))


def _value(s: For, k: int) -> PrimExpr:
    """The loop variable's value in iteration ``k``."""
    step = 1 if s.step is None else s.step.value
    return cast(arith("add", s.min, IntImm(s.loop_var.dtype, k * step)), s.loop_var.dtype)


def _statements(s: Stmt) -> int:
    return sum(1 for n in walk(s) if isinstance(n, Stmt) and not isinstance(n, SeqStmt))


class _Unroll(Mutator):
    def visit_AttrStmt(self, s: AttrStmt):
        if s.key.startswith("pragma_") and isinstance(s.node, Var):
            return self.visit(s.body)  # a loop pragma
        return self.generic_visit(s)

    def visit_For(self, s: For):
        s = self.generic_visit(s)
        if s.kind != "unrolled":
            return s
        count = _trip_count(s)
        if count is None:
            return replace(s, kind="serial")
        if count == 0:
            return _nop()
        if count > MAX_COPIES or count * _statements(s.body) > MAX_STATEMENTS:
            return s
        return seq([_Copy(s.body, s.loop_var, _value(s, k)).visit(s.body) for k in range(count)],
                   s.span)

    def visit_SeqStmt(self, s: SeqStmt):
        new = self.generic_visit(s)
        if new is s:
            return s
        kept = [c for c in new.stmts if not _is_nop(c)]
        return seq(kept, s.span) if kept else _nop()


def unroll_loop(mod: IRModule, ctx: PassContext) -> IRModule:
    """Unroll every ``T.unroll`` loop of ``mod`` within the limits."""
    functions = {}
    for name, func in mod.functions.items():
        body = _Unroll().visit(func.body)
        functions[name] = func if body is func.body else func.with_body(body)
    if all(functions[n] is f for n, f in mod.functions.items()):
        return mod
    return replace(mod, functions=functions)
