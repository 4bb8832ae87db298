"""LowerAutoCopy: the copies MetaSchedule and hand schedules leave to the compiler, blocks
annotated ``"auto_copy"``, become explicit thread-bound code (TVM's
``s_tir.transform.LowerAutoCopy``, ``memhammer_*.cc``).

Such a block's body is a nest of loops around one store, copying one buffer region into
another: global and shared memory, WMMA fragments, ``m16n8k8`` accumulators. The block
keeps its annotation, regions and place; its body is rewritten by the rules below, in
this order, each applying where the copy goes between the storage ranks it handles:

- ``inverse_mapping`` (shared -> global): the loops follow the global side;
- ``coalesced_access`` (global <-> shared): fused, split over the kernel's threads and a
  vector of ``"vector_bytes"`` (default 1) bytes (``auto_copy_coalesce``);
- ``create_local_stage`` (global -> shared with ``"local_stage": True``): through
  registers (``auto_copy_cache_stage``);
- ``shared_to_wmma``, ``wmma_to_global``, ``wmma_to_shared``, ``mma_to_global``: tile
  loads and stores of fragments (``auto_copy_tensor_core``).

The kernel's thread extents are those of its thread-bound loops, ``threadIdx.x`` 32 under
a block annotated ``"warp_execution"``. Afterwards every shared buffer a rewritten copy
touches is padded against bank conflicts (``auto_copy_padding``): its allocation gets
row strides, and every use the padded buffer.

A copy the rules cannot lower (not one written region, reads of several buffers outside
an accumulator copy, a nest or index map of another shape) is a located error naming its
block, never code that copies wrong.

Precondition: CompactBufferAllocation. Guarantees: every ``auto_copy`` block's body is
thread-bound code.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.block import SBlock
from tirc.ir.expr import IntImm
from tirc.ir.function import IRModule
from tirc.ir.stmt import For
from tirc.ir.visitor import Mutator, Visitor
from tirc.ir.wmma_ops import ACCUMULATOR
from tirc.passes.blocks.auto_copy_cache_stage import create_local_stage
from tirc.passes.blocks.auto_copy_coalesce import coalesced_access, inverse_mapping
from tirc.passes.blocks.auto_copy_common import ANNOTATION, Constraints, Outputs
from tirc.passes.blocks.auto_copy_padding import AutoPadder
from tirc.passes.blocks.auto_copy_tensor_core import (mma_to_global, shared_to_wmma, wmma_to_global,
                                                      wmma_to_shared)

KEY = ANNOTATION
RULES = (inverse_mapping, coalesced_access, create_local_stage, shared_to_wmma, wmma_to_global,
         wmma_to_shared, mma_to_global)


def _annotation(block: SBlock, key: str):
    for k, v in block.annotations:
        if k == key:
            return v.value if isinstance(v, IntImm) else v
    return None


class _ThreadExtents(Visitor):
    def __init__(self):
        self.extents: dict[str, int] = {}

    def visit_SBlock(self, b: SBlock):
        if _annotation(b, "warp_execution"):
            self.extents["threadIdx.x"] = 32
        self.generic_visit(b)

    def visit_For(self, s: For):
        if (s.kind == "thread_binding" and s.thread_tag and isinstance(s.extent, IntImm)):
            self.extents[s.thread_tag] = s.extent.value
        self.generic_visit(s)


class _AutoCopy(Mutator):
    def __init__(self, thread_extent: dict[str, int]):
        self.thread_extent = thread_extent
        self.outer: list[For] = []
        self.padder = AutoPadder()

    def visit_For(self, s: For):
        self.outer.append(s)
        try:
            return (yield from self.descend(s))
        finally:
            self.outer.pop()

    def visit_SBlock(self, s: SBlock):
        block = yield from self.descend(s)
        if not _annotation(s, KEY):
            allocs = self.padder.pad(block.alloc_buffers)
            if any(a is not b for a, b in zip(allocs, block.alloc_buffers)):
                block = replace(block, alloc_buffers=allocs)
            return block
        c = self._constraints(block)
        out = Outputs()
        body = block.body
        for rule in RULES:
            body = rule(body, c, out)
        for buffer, n in out.padding_min.values():
            self.padder.need_padding(buffer, n)
        self.padder.analyze(body, self.outer, self.thread_extent)
        allocs = self.padder.pad(block.alloc_buffers + tuple(out.alloc_buffers))
        return replace(block, body=body, alloc_buffers=allocs)

    def _constraints(self, block: SBlock) -> Constraints:
        def make(read):
            c = Constraints(block.name_hint, block.span, self.thread_extent, tuple(self.outer),
                            read, block.writes[0] if block.writes else None,
                            read.buffer.dtype.bits if read is not None else 0)
            for key in ("local_stage", "vector_bytes"):
                value = _annotation(block, key)
                if value is None:
                    continue
                if not isinstance(value, (bool, int)):
                    raise c.error(f"its annotation \"{key}\" is not an integer")
                setattr(c, key, int(value))
            return c
        if len(block.writes) != 1:
            raise make(None).error(f"it writes {len(block.writes)} buffer regions, not one")
        if not block.reads:
            raise make(None).error("it reads nothing")
        read = block.reads[0]
        if len(block.reads) > 1:
            accumulators = [r for r in block.reads if r.buffer.scope == ACCUMULATOR]
            if not accumulators:
                raise make(None).error("it reads several buffers and none is a WMMA accumulator")
            read = accumulators[-1]
        return make(read)


def lower_auto_copy(mod: IRModule, ctx=None) -> IRModule:
    def run(body):
        extents = _ThreadExtents()
        extents.visit(body)
        m = _AutoCopy(extents.extents)
        return m.padder.rewrite(m.visit(body))
    return mod.map_bodies(run)
