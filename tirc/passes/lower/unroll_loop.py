"""UnrollLoop: ``T.unroll`` loops with a constant trip count become copies of their body
(docs/pipeline.md).

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

Automatic unrolling, as TVM's UnrollLoop does under the loop pragmas dlight puts on most
GPU loops (``T.attr(loop_var, "pragma_<key>", value)``, written by LowerOpaqueBlock from
a scheduled loop's annotations): under ``pragma_auto_unroll_max_step`` N, a serial loop
with a constant trip count is unrolled when no loop inside it stays a loop, it is at
most 8 unrolled loops deep, and its trip count times the statements (stores and
evaluations) of its unrolled body is at most N. ``pragma_unroll_explicit`` 0 makes such
loops (and ``T.unroll`` loops) unroll hints for the code generator instead of copies.
The pragma attributes are consumed here: none may outlive this pass, since the
attribute's node names the loop variable outside its loop (SplitHostDevice would take
it for a kernel input); other ``pragma_*`` keys are hints no later pass reads.

Preconditions: Verify. Guarantees: every loop of kind ``unrolled`` left has a constant
trip count above the limits; no loop pragma is left.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import PRAGMA_AUTO_UNROLL_MAX_STEP, PRAGMA_UNROLL_EXPLICIT
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import INT32
from tirc.ir.expr import IntImm, Let, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import (AllocBuffer, AttrStmt, DeclBuffer, Evaluate, For, IterVar, LetStmt,
                          SeqStmt, Stmt, seq)
from tirc.ir.renew import map_buffer
from tirc.ir.visitor import Mutator, walk
from tirc.ir.index_arith import arith, cast
from tirc.passes.pass_context import PassContext

MAX_COPIES = 256
MAX_STATEMENTS = 4096
AUTO_MAX_DEPTH = 8  # TVM's UnrollLoop default auto_max_depth
_PRAGMAS = (PRAGMA_AUTO_UNROLL_MAX_STEP, PRAGMA_UNROLL_EXPLICIT)


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
    """Explicit ``T.unroll`` loops, and TVM's automatic unrolling under the loop pragmas.

    Counters as TVM's LoopUnroller keeps them, bottom-up: ``steps`` (stores and
    evaluations in the statement just visited, multiplied through the loops unrolled
    inside it), ``unrolled_depth`` and ``normal_depth`` (the deepest nest of loops inside
    that were, and were not, unrolled)."""

    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self) -> None:
        self.max_step = 0          # pragma_auto_unroll_max_step in scope (0: no automatic unrolling)
        self.explicit = True       # pragma_unroll_explicit in scope
        self.steps = 0
        self.unrolled_depth = 0
        self.normal_depth = 0

    def visit_AttrStmt(self, s: AttrStmt):
        if not (s.key.startswith("pragma_") and isinstance(s.node, Var)):
            return (yield from self.descend(s))
        if s.key in _PRAGMAS and not isinstance(s.value, IntImm):
            raise Diagnostic(f"loop pragma \"{s.key}\" needs a constant integer", s.span)
        if s.key == PRAGMA_AUTO_UNROLL_MAX_STEP:
            saved, self.max_step = self.max_step, s.value.value
            try:
                return (yield s.body)
            finally:
                self.max_step = saved
        if s.key == PRAGMA_UNROLL_EXPLICIT:
            saved, self.explicit = self.explicit, bool(s.value.value)
            try:
                return (yield s.body)
            finally:
                self.explicit = saved
        return (yield s.body)  # another loop pragma: a hint no later pass reads

    def visit_BufferStore(self, s):
        self.steps += 1
        return self.generic_visit(s)

    def visit_Evaluate(self, s):
        self.steps += 1
        return self.generic_visit(s)

    def visit_For(self, s: For):
        s = (yield from self.descend(s))
        count = _trip_count(s)
        auto = (s.kind == "serial" and count is not None and self.normal_depth == 0
                and self.unrolled_depth <= AUTO_MAX_DEPTH and count * self.steps <= self.max_step)
        if s.kind == "unrolled" and count is not None:
            auto = True
        if auto:
            self.steps *= count
            self.unrolled_depth += 1
        else:
            self.normal_depth += 1
        if s.kind == "unrolled" and count is None:
            return replace(s, kind="serial")
        if not auto:
            return s
        if count == 0:
            return _nop()
        if not self.explicit or count > MAX_COPIES or count * _statements(s.body) > MAX_STATEMENTS:
            return replace(s, kind="unrolled")  # an unroll hint for the code generator
        return seq([_Copy(s.body, s.loop_var, _value(s, k)).visit(s.body) for k in range(count)],
                   s.span)

    def visit_SeqStmt(self, s: SeqStmt):
        outer = (self.steps, self.unrolled_depth, self.normal_depth)
        steps, unrolled, normal = outer
        stmts = []
        for child in s.stmts:
            self.steps = self.unrolled_depth = self.normal_depth = 0
            stmts.append((yield child))
            steps += self.steps
            unrolled = max(unrolled, self.unrolled_depth)
            normal = max(normal, self.normal_depth)
        self.steps, self.unrolled_depth, self.normal_depth = steps, unrolled, normal
        if all(a is b for a, b in zip(stmts, s.stmts)):
            return s
        kept = [c for c in stmts if not _is_nop(c)]
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
