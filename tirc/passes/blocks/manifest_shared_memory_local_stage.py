"""ManifestSharedMemoryLocalStage: a copy into shared memory whose block is annotated
``"tirx.manifest_shared_memory_local_stage"`` goes through registers (TVM's
``s_tir.transform.ManifestSharedMemoryLocalStage``, ``manifest_shared_memory_local_stage.cc``).

dlight and MetaSchedule mark the blocks that fill a shared buffer from global memory so.
For each such block (its body one store to ``shared``/``shared.dyn`` memory):

* the loops between it and the block that allocates the shared buffer (serial or
  vectorized, each the only child of the next) are *relaxed*: a ``local`` buffer
  ``<name>_local`` gets one dimension per loop, its extent;
* a *local stage* is added: the same loops (fresh variables) around a block that stores
  the copied value into the local buffer at the loops' indices (it reads what the copy
  read, under the copy's predicate);
* the copy then stores the local buffer's element, and loses the annotation.

The local stage and the local buffer go to the block that allocates the shared buffer:
the stage just before the statement of that block's body that holds the copy, the buffer
after its allocations. As in TVM the rewritten copy keeps its reads as they were, and the
stage's block has no name and no iterators. A copy not shaped so (its body not one store
to shared memory, a parallel or thread-bound loop, a loop with siblings, the shared buffer
not allocated by an enclosing block) is a located error, where TVM stops with a check.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.block import BufferRegion, Range, SBlock, SBlockRealize
from tirc.ir.buffer import SHARED_SCOPES, Buffer
from tirc.ir.dtype import HANDLE
from tirc.ir.expr import BufferLoad, IntImm, PointerType, Var
from tirc.ir.function import IRModule
from tirc.ir.renew import substitute
from tirc.ir.stmt import BufferStore, For, SeqStmt, Stmt
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_ops import binop

KEY = "tirx.manifest_shared_memory_local_stage"


def _local_buffer(shared: Buffer, shape) -> Buffer:
    name = f"{shared.name}_local"
    return replace(shared, name=name, data=Var(name, HANDLE, PointerType(shared.dtype, "local"), shared.span),
                   shape=tuple(shape), strides=(), elem_offset=None)


class _Inserter(Mutator):
    def __init__(self):
        self.ancestors: list[Stmt] = []  # the loops and block realizations around
        self.targets: list[Buffer] = []  # shared buffers rewritten, in order
        self.local: dict[int, Buffer] = {}
        self.stage: dict[int, Stmt] = {}

    def visit_For(self, s: For):
        self.ancestors.append(s)
        try:
            return (yield from self.descend(s))
        finally:
            self.ancestors.pop()

    def visit_SBlockRealize(self, s: SBlockRealize):
        self.ancestors.append(s)
        try:
            return (yield from self.descend(s))
        finally:
            self.ancestors.pop()

    def visit_SBlock(self, s: SBlock):
        if any(k == KEY for k, _ in s.annotations):
            return self._rewrite(s)
        allocated = {id(b) for b in s.alloc_buffers}
        items = s.body.stmts if isinstance(s.body, SeqStmt) else (s.body,)
        new_seq: list[Stmt] = []
        new_allocs: list[Buffer] = []
        changed = False
        for item in items:
            start = len(self.targets)
            new = yield item
            for t in self.targets[start:]:
                if id(t) in allocated:
                    new_seq.append(self.stage[id(t)])
                    new_allocs.append(self.local[id(t)])
            new_seq.append(new)
            changed = changed or new is not item
        if not changed:
            return s
        body = new_seq[0] if len(new_seq) == 1 else SeqStmt(tuple(new_seq), s.body.span)
        return replace(s, body=body, alloc_buffers=s.alloc_buffers + tuple(new_allocs))

    def _rewrite(self, block: SBlock) -> SBlock:
        store = block.body
        if not (isinstance(store, BufferStore) and store.buffer.scope in SHARED_SCOPES):
            raise Diagnostic(f"block '{block.name_hint}' is annotated \"{KEY}\", so its body must be "
                             "one store to shared memory", block.span)
        target = store.buffer
        loops = self._relaxed_loops(block, target)
        indices, shape = [], []
        for loop in reversed(loops):  # outermost first
            zero = isinstance(loop.min, IntImm) and loop.min.value == 0  # TVM's + folds it
            indices.append(loop.loop_var if zero else binop("add", loop.min, loop.loop_var))
            shape.append(loop.extent)
        local = _local_buffer(target, shape)
        stage: Stmt = BufferStore(local, store.value, tuple(indices), store.span)
        point = BufferRegion(local, tuple(Range(i, IntImm(i.dtype, 1)) for i in indices))
        stage = SBlock("", (), block.reads, (point,), stage, span=block.span)
        stage = SBlockRealize((), self.ancestors[-1].predicate, stage, block.span)
        fresh: dict[int, Var] = {}
        for loop in loops:  # innermost first
            var = Var(loop.loop_var.name, loop.loop_var.dtype, None, loop.loop_var.span)
            fresh[id(loop.loop_var)] = var
            stage = replace(loop, loop_var=var, body=stage)
        stage = substitute(stage, fresh)
        self.targets.append(target)
        self.local[id(target)] = local
        self.stage[id(target)] = stage
        copy = BufferStore(target, BufferLoad(local, tuple(indices), local.dtype, store.span), store.indices,
                           store.span)
        return replace(block, body=copy, annotations=tuple((k, v) for k, v in block.annotations if k != KEY))

    def _relaxed_loops(self, block: SBlock, target: Buffer) -> list[For]:
        """The loops between the block and the block allocating ``target``, innermost first."""
        anc = self.ancestors
        loops: list[For] = []
        for i in range(len(anc) - 2, -1, -1):
            node = anc[i]
            if isinstance(node, For):
                if node.kind not in ("serial", "vectorized") or node.thread_tag:
                    raise Diagnostic(f"the loop '{node.loop_var.name}' around block '{block.name_hint}' "
                                     f"(annotated \"{KEY}\") must be serial or vectorized, not "
                                     f"{node.thread_tag or node.kind}", node.span or block.span)
                child_ok = (node.body is anc[i + 1] if i < len(anc) - 2 else
                            isinstance(node.body, SBlockRealize) and node.body.block is block)
                if not child_ok:
                    raise Diagnostic(f"the loop '{node.loop_var.name}' around block '{block.name_hint}' "
                                     f"(annotated \"{KEY}\") must hold nothing else", node.span or block.span)
                loops.append(node)
                continue
            if not any(b is target for b in node.block.alloc_buffers):
                raise Diagnostic(f"block '{block.name_hint}' (annotated \"{KEY}\") copies into "
                                 f"'{target.name}', which the block around its loops does not "
                                 "allocate", block.span)
            return loops
        raise Diagnostic(f"block '{block.name_hint}' (annotated \"{KEY}\") copies into "
                         f"'{target.name}', which no block around it allocates", block.span)


def manifest_shared_memory_local_stage(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(lambda body: _Inserter().visit(body))
