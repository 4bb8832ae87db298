"""PlanAndUpdateBufferAllocationLocation: every buffer a block allocates moves to the
lowest common ancestor (a loop or a block) of all its accesses, so that a buffer used
inside one parallel or thread-bound loop is allocated per iteration of it (per thread),
and one used across two loop nests stays where both see it. As in TVM's
``DetectBufferAccessLCA``:

- the buffer a reduction block writes is allocated above its outermost reduction loop
  (the accumulator outlives the reduction), and a block's opaque iterators lift the
  buffers it writes above the loops they are bound to;
- a ``global`` buffer is never allocated inside a ``blockIdx`` loop (one copy per
  kernel, not per thread block);
- a buffer nobody accesses is dropped; a use of its data pointer (``A.data`` passed to
  an extern function) is an access.

A buffer that lands on a loop gets a new iterator-free block ``""`` directly inside the
loop; its regions are what its body touches of the buffers outside it, relaxed over the
loops inside (:mod:`tirc.passes.analysis.block_access_region`). Every block's regions drop the
buffers allocated in it or below it.

Precondition: LowerInitBlock ran. Guarantees: each allocating block is the LCA of the
accesses of what it allocates.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.attrs import THREAD_EXTENT
from tirc.ir.block import SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, IntImm, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import AttrStmt, BufferStore, For, IterVar, Stmt
from tirc.ir.visitor import Mutator, Visitor, walk
from tirc.ir.dtype import BOOL
from tirc.passes.analysis.block_access_region import block_read_write_regions
from tirc.records import record


@record(eq=False)
class _Scope:
    parent: "_Scope | None"
    node: object  # a For or an SBlock; None for the function itself
    depth: int


def _lca(a: _Scope | None, b: _Scope) -> _Scope:
    if a is None:
        return b
    while a.depth > b.depth:
        a = a.parent  # type: ignore[assignment]
    while b.depth > a.depth:
        b = b.parent  # type: ignore[assignment]
    while a is not b:
        a, b = a.parent, b.parent  # type: ignore[assignment]
    return a


class _LCADetector(Visitor):
    def __init__(self) -> None:
        self.stack = [_Scope(None, None, 0)]
        self.lca: dict[int, _Scope] = {}
        self.buffers: dict[int, Buffer] = {}
        self.loop_scope: dict[int, _Scope] = {}
        self.block_idx_scopes: list[_Scope] = []
        self.matched: set[int] = set()
        self.by_data: dict[int, Buffer] = {}

    def update(self, buf: Buffer, scope: _Scope) -> None:
        self.by_data.setdefault(id(buf.data), buf)
        if id(buf) in self.matched:
            return
        self.buffers[id(buf)] = buf
        self.lca[id(buf)] = _lca(self.lca.get(id(buf)), scope)

    def visit_For(self, s: For):
        scope = _Scope(self.stack[-1], s, len(self.stack))
        if s.kind == "thread_binding" and (s.thread_tag or "").startswith("blockIdx"):
            self.block_idx_scopes.append(scope)
        self.visit(s.min)
        self.visit(s.extent)
        self.stack.append(scope)
        self.loop_scope[id(s.loop_var)] = scope
        yield s.body
        self.stack.pop()

    def visit_AttrStmt(self, s: AttrStmt):
        if isinstance(s.node, IterVar) and s.key == THREAD_EXTENT and s.node.thread_tag.startswith("blockIdx"):
            self.block_idx_scopes.append(self.stack[-1])
        yield from self.descend(s)

    def visit_Var(self, v: Var) -> None:
        buf = self.by_data.get(id(v))
        if buf is not None:  # an opaque access through the data pointer (``A.data``)
            self.update(buf, self.stack[-1])

    def visit_SBlockRealize(self, s: SBlockRealize):
        block = s.block
        for b in block.alloc_buffers:
            self.by_data.setdefault(id(b.data), b)
        for v in (*s.iter_values, s.predicate):
            self.visit(v)
        scope = _Scope(self.stack[-1], block, len(self.stack))
        self.stack.append(scope)
        self._non_spatial(s, scope)
        for m in block.match_buffers:
            self.update(m.source.buffer, scope)
            self.matched.add(id(m.buffer))
        for region in (*block.reads, *block.writes):
            for rng in region.region:
                self.visit(rng.min)
                self.visit(rng.extent)
        if block.init is not None:
            yield block.init
        yield block.body
        self.stack.pop()

    def _outermost_loop_parent(self, value) -> _Scope | None:
        """The parent of the outermost loop whose variable ``value`` uses."""
        best = None
        for n in walk(value):
            if isinstance(n, Var) and id(n) in self.loop_scope:
                parent = self.loop_scope[id(n)].parent
                if best is None or parent.depth < best.depth:
                    best = parent
        return best

    def _non_spatial(self, s: SBlockRealize, scope: _Scope) -> None:
        block = s.block
        reduce_scope = None
        is_reduce = False
        opaque: dict[int, _Scope] = {}  # opaque/scan iterator -> above the loops it spans
        for iv, value in zip(block.iter_vars, s.iter_values):
            if iv.iter_type == "spatial":
                continue
            top = self._outermost_loop_parent(value)
            if top is None:
                continue
            if iv.iter_type == "reduce":
                is_reduce = True
                if reduce_scope is None or top.depth < reduce_scope.depth:
                    reduce_scope = top
            else:
                opaque[id(iv.var)] = top
                for w in block.writes:
                    self.update(w.buffer, top)

        def region_scope(region, reduce_write: bool) -> _Scope:
            at = scope
            for rng in region.region:
                for n in (*walk(rng.min), *walk(rng.extent)):
                    if isinstance(n, Var) and id(n) in opaque and opaque[id(n)].depth < at.depth:
                        at = opaque[id(n)]
            if reduce_write and reduce_scope is not None and at.depth > reduce_scope.depth:
                at = reduce_scope
            return at

        if opaque:
            # A region spanning an opaque iterator (a loop-carried access such as
            # C[v - 1]) must outlive the loops that iterator is bound to.
            for r in block.reads:
                self.update(r.buffer, region_scope(r, False))
            for w in block.writes:
                self.update(w.buffer, region_scope(w, is_reduce))
        elif is_reduce and reduce_scope is not None:
            for w in block.writes:
                self.update(w.buffer, region_scope(w, True))

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.update(e.buffer, self.stack[-1])
        for i in e.indices:
            self.visit(i)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.update(s.buffer, self.stack[-1])
        self.generic_visit(s)

    def finish(self) -> dict[int, _Scope]:
        for key, buf in self.buffers.items():
            if buf.scope == "global":
                for scope in self.block_idx_scopes:
                    self.lca[key] = _lca(self.lca[key], scope)
        return self.lca


def _plan(func: PrimFunc) -> Stmt:
    managed: list[Buffer] = [b for n in walk(func.body) if isinstance(n, SBlock) for b in n.alloc_buffers]
    if not managed:
        return func.body
    detector = _LCADetector()
    for _, buf in func.buffer_map:
        detector.matched.add(id(buf))  # parameters are never moved
    detector.visit(func.body)
    lca = detector.finish()
    placement: dict[int, list[Buffer]] = {}
    for buf in managed:
        scope = lca.get(id(buf))
        if scope is None or scope.node is None:
            continue  # never accessed: dropped
        placement.setdefault(id(scope.node), []).append(buf)
    visible = {id(b.data): b for _, b in func.buffer_map}
    visible.update((id(b.data), b) for key, b in detector.buffers.items() if key in lca)
    return _Place(placement, visible).visit(func.body)


class _Place(Mutator):
    """Places buffers by the identity of the loops and blocks of the unchanged tree:
    children are rewritten after the decision for the node is taken. ``visible`` holds
    the buffers (by data pointer) a block's regions may name: once the subtree
    allocating a buffer is done, regions outside it drop the buffer."""

    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self, placement: dict[int, list[Buffer]], visible: dict[int, Buffer]):
        self.placement = placement
        self.visible = visible

    def visit_For(self, s: For):
        bufs = self.placement.get(id(s))
        out = (yield from self.descend(s))
        if not bufs:
            return out
        for b in bufs:
            self.visible.pop(id(b.data), None)
        block = SBlock("", (), (), (), out.body, None, tuple(bufs), (), (), s.span)
        reads, writes = block_read_write_regions(block, self.visible)
        block = replace(block, reads=reads, writes=writes)
        return replace(out, body=SBlockRealize((), IntImm(BOOL, 1), block, s.span))

    def visit_SBlock(self, s: SBlock):
        allocs = tuple(self.placement.get(id(s), ()))
        for m in s.match_buffers:
            self.visible[id(m.buffer.data)] = m.buffer
        out = (yield from self.descend(s))
        for b in (*(m.buffer for m in s.match_buffers), *allocs):
            self.visible.pop(id(b.data), None)
        reads = tuple(r for r in out.reads if id(r.buffer.data) in self.visible)
        writes = tuple(r for r in out.writes if id(r.buffer.data) in self.visible)
        if allocs == out.alloc_buffers and len(reads) == len(out.reads) and len(writes) == len(out.writes):
            return out
        return replace(out, alloc_buffers=allocs, reads=reads, writes=writes)


def plan_and_update_buffer_allocation_location(mod: IRModule, ctx=None) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        body = _plan(f)
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)
