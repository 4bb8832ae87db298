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
from tirc.ir.visitor import NODE_TYPES, Mutator, child_fields, rebuild, walk, walk_statements
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
    """One copy of a loop body: the loop variable replaced, inner definitions (``defs``,
    the buffers ``defined``) renewed."""

    def __init__(self, loop_var: Var, value: PrimExpr, defs=(), defined=frozenset()):
        self.vars: dict[int, PrimExpr] = {id(loop_var): value}
        self.buffers: dict[int, Buffer] = {}
        self.defined = defined
        for v in defs:
            self._fresh(v)

    def _fresh(self, v: Var) -> None:
        self.vars.setdefault(id(v), Var(v.name, v.dtype, v.ptr, v.span))

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vars.get(id(v), v)

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b))
        if new is None:
            new = self.buffers[id(b)] = map_buffer(self, b, force=id(b) in self.defined)
        return new


class _FirstCopy(_Copy):
    """The first copy, learning as it goes what the others need: the definitions, met
    before their uses (a loop's variable before its bounds and body, a let's before its
    value and body, a buffer at its allocation), and which nodes and buffers changed
    (``touched``, ``changed``): those, and only those, mention what a copy replaces. A
    variable or buffer used before a definition of it (``early``) would have been
    renewed there too: the copy is then made again from a walk that finds every
    definition first (:func:`_definitions`)."""

    def __init__(self, loop_var: Var, value: PrimExpr):
        super().__init__(loop_var, value, (), set())
        self.defs: list[Var] = []
        self.seen: set[int] = set()  # variables and buffers met unchanged
        self.early = False
        self.touched: set[int] = set()
        self.changed: dict[int, bool] = {}

    def _define(self, v: Var) -> None:
        if id(v) in self.seen:
            self.early = True
        self.defs.append(v)
        self._fresh(v)

    def visit_Var(self, v: Var) -> PrimExpr:
        new = self.vars.get(id(v))
        if new is None:
            self.seen.add(id(v))
            return v
        self.touched.add(id(v))
        return new

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b))
        if new is None:
            new = super().visit_buffer(b)
            self.changed[id(b)] = new is not b
            if new is b:
                self.seen.add(id(b))
        return new

    def _finish(self, node, out):
        out = super()._finish(node, out)
        if out is not node:
            self.touched.add(id(node))
        return out

    def generic_visit(self, node):
        out = super().generic_visit(node)
        if out is not node:
            self.touched.add(id(node))
        return out

    def visit_For(self, s: For):
        self._define(s.loop_var)
        return (yield from self.descend(s))

    def visit_LetStmt(self, s: LetStmt):
        self._define(s.var)
        return (yield from self.descend(s))

    def visit_AttrStmt(self, s: AttrStmt):
        if isinstance(s.node, IterVar):
            self._define(s.node.var)
        return (yield from self.descend(s))

    def visit_AllocBuffer(self, s: AllocBuffer):
        self._buffer(s.buffer)
        self._define(s.buffer.data)
        return (yield from self.descend(s))

    def visit_DeclBuffer(self, s: DeclBuffer):
        self._buffer(s.buffer)
        return (yield from self.descend(s))

    def _buffer(self, b: Buffer) -> None:
        if id(b) in self.seen:
            self.early = True
        self.defined.add(id(b))

    def visit_Let(self, e: Let):
        self._define(e.var)
        return self.generic_visit(e)


class _CopyTouched(_Copy):
    """A later copy: only the nodes the first one changed are visited (those that mention
    what changes), the others stay the same objects, as a full walk would leave them."""

    def __init__(self, first: _FirstCopy, loop_var: Var, value: PrimExpr):
        super().__init__(loop_var, value, first.defs, first.defined)
        self.touched = first.touched
        self.changed = first.changed

    def visit_buffer(self, b: Buffer) -> Buffer:
        return super().visit_buffer(b) if self.changed.get(id(b), True) else b

    # Mutator's walk, with the children that mention nothing replaced left as they are
    def generic_visit(self, node):
        if isinstance(node, Stmt):
            return self._run(self.descend(node))
        changes: dict[str, object] = {}
        for name in child_fields(type(node)):
            old = getattr(node, name)
            new = self._mutate_value(old)
            if new is not old:
                changes[name] = new
        return rebuild(node, changes) if changes else node

    def descend(self, node):
        changes: dict[str, object] = {}
        touched = self.touched
        for name in child_fields(type(node)):
            old = getattr(node, name)
            if isinstance(old, Stmt):
                new = (yield old) if id(old) in touched else old
            elif isinstance(old, tuple):
                new = yield from self._steps(old)
            else:
                new = self._mutate_value(old)
            if new is not old:
                changes[name] = new
        return rebuild(node, changes) if changes else node

    def _steps(self, value):
        if isinstance(value, Stmt) and id(value) not in self.touched:
            return value
        return (yield from super()._steps(value))

    def _mutate_value(self, value):
        if isinstance(value, NODE_TYPES):
            return self.visit(value) if id(value) in self.touched else value
        return super()._mutate_value(value)


def _definitions(body: Stmt) -> tuple[list[Var], set[int]]:
    """The variables and buffers ``body`` defines, wherever their uses are."""
    defs: list[Var] = []
    defined: set[int] = set()
    for node in walk(body):
        if isinstance(node, For):
            defs.append(node.loop_var)
        elif isinstance(node, (LetStmt, Let)):
            defs.append(node.var)
        elif isinstance(node, AttrStmt) and isinstance(node.node, IterVar):
            defs.append(node.node.var)
        elif isinstance(node, (AllocBuffer, DeclBuffer)):
            defined.add(id(node.buffer))
            if isinstance(node, AllocBuffer):
                defs.append(node.buffer.data)
    return defs, defined


def _copies(s: For, count: int) -> list[Stmt]:
    """``count`` copies of ``s``'s body, one per iteration: the first made by a full
    walk, the others visiting only what it changed."""
    first = _FirstCopy(s.loop_var, _value(s, 0))
    copies = [first.visit(s.body)]
    if first.early:
        defs, defined = _definitions(s.body)
        return [_Copy(s.loop_var, _value(s, k), defs, defined).visit(s.body)
                for k in range(count)]
    return copies + [_CopyTouched(first, s.loop_var, _value(s, k)).visit(s.body)
                     for k in range(1, count)]


def _statements(s: Stmt) -> int:
    """The statements of ``s`` but sequences (expressions hold none: not walked)."""
    n, stack = 0, [s]
    while stack:
        node = stack.pop()
        if isinstance(node, Stmt) and not isinstance(node, SeqStmt):
            n += 1
        for name in child_fields(type(node)):
            _statement_nodes(getattr(node, name), stack)
    return n


def _statement_nodes(value: object, out: list) -> None:
    if isinstance(value, NODE_TYPES):
        if not isinstance(value, PrimExpr):
            out.append(value)
    elif isinstance(value, tuple):
        for item in value:
            _statement_nodes(item, out)


def _bounds_free_of(body: Stmt, var: Var) -> bool:
    """Whether no loop bound or step and no loop pragma in ``body`` mentions ``var``: what
    unrolling the loops of ``body`` decides is then the same whatever ``var`` is."""
    for n in walk_statements(body):
        if isinstance(n, For):
            parts = (n.min, n.extent) if n.step is None else (n.min, n.extent, n.step)
        elif isinstance(n, AttrStmt) and n.key.startswith("pragma_"):
            parts = (n.value,)
        else:
            continue
        if any(x is var for p in parts for x in walk(p)):
            return False
    return True


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
        count = _trip_count(s)
        if count == 1 and _bounds_free_of(s.body, s.loop_var):
            # A loop of one iteration is most often unrolled, after the loops inside it
            # made its body large: its variable is replaced in the body as written (small)
            # before those are unrolled, which gives the same code as replacing it after,
            # since no decision inside reads it. Should the loop stay a loop, its body is
            # unrolled again as written.
            saved = (self.steps, self.unrolled_depth, self.normal_depth)
            body = yield _Copy(s.loop_var, _value(s, 0)).visit(s.body)
            if self._unrolls(s, count):
                self._count(count, True)
                if self.explicit and _statements(body) <= MAX_STATEMENTS:
                    return body
            self.steps, self.unrolled_depth, self.normal_depth = saved
        s = (yield from self.descend(s))
        auto = self._unrolls(s, count)
        self._count(count, auto)
        if s.kind == "unrolled" and count is None:
            return replace(s, kind="serial")
        if not auto:
            return s
        if count == 0:
            return _nop()
        if not self.explicit or count > MAX_COPIES or count * _statements(s.body) > MAX_STATEMENTS:
            return replace(s, kind="unrolled")  # an unroll hint for the code generator
        return seq(_copies(s, count), s.span)

    def _unrolls(self, s: For, count: int | None) -> bool:
        """Whether ``s`` (its body just visited) is unrolled: TVM's rule."""
        if s.kind == "unrolled" and count is not None:
            return True
        return (s.kind == "serial" and count is not None and self.normal_depth == 0
                and self.unrolled_depth <= AUTO_MAX_DEPTH and count * self.steps <= self.max_step)

    def _count(self, count: int | None, unrolled: bool) -> None:
        if unrolled:
            self.steps *= count
            self.unrolled_depth += 1
        else:
            self.normal_depth += 1

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
