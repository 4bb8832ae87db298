"""CompactBufferAllocation: every buffer allocated in a function shrinks to the region
its code touches (:mod:`tirc.passes.blocks.buffer_region_collector`), and every access is
shifted by the region's start: a ``(16, 16)`` buffer allocated per iteration of ``i``
and touched at ``B[i, j]`` becomes ``(1, 16)`` touched at ``B[i - i, j]``. Block
regions and matched-buffer sources are shifted the same way.

A block annotation ``buffer_dim_align`` (``[[write index, dim, factor, offset], ...]``,
from ``storage_align``) and an allocation's own one (write index -1) give the compacted
buffer strides padded so that ``stride[dim] % factor == offset``.

After compaction a local buffer of a dynamic kernel has a constant size: the extent of
a loop-dependent region is its constant upper bound.

Precondition: ConvertBlocksToOpaque ran (blocks have no iterators or init). Applies to
block-level functions (``s_tir`` or holding blocks); others pass unchanged.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.block import BufferRegion, MatchBufferRegion, Range, SBlock
from tirc.ir.visitor import contains_blocks, walk_statements
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BinOp, Broadcast, BufferLoad, PrimExpr
from tirc.ir.function import IRModule
from tirc.ir.stmt import AllocBuffer, BufferStore
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_ops import add, floormod, imm, is_int, mul, sub
from tirc.passes.blocks.buffer_region_collector import collect_regions


def compact_buffer_allocation(mod: IRModule, ctx=None, strict: bool = True) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        if not (f.s_tir or contains_blocks(f.body)):
            funcs[name] = f
            continue
        body = compact(f.body, strict)
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)


def compact(body, strict: bool = True):
    regions = collect_regions(body, strict)
    if not regions:
        return body
    aligns = _storage_aligns(body)
    info: dict[int, tuple[Buffer, tuple[Range, ...]]] = {}
    for buf, region in regions.values():
        shape = tuple(r.extent for r in region)
        strides = _strides(aligns.get(id(buf.data)), shape)
        info[id(buf.data)] = (replace(buf, shape=shape, strides=strides), region)
    return _Compactor(info).visit(body)


def _storage_aligns(body) -> dict[int, list[tuple[int, int, int]]]:
    """``id(data) -> [(dim, factor, offset)]`` from ``buffer_dim_align`` annotations."""
    out: dict[int, list[tuple[int, int, int]]] = {}
    for n in walk_statements(body):
        if isinstance(n, SBlock):
            for key, value in n.annotations:
                if key == "buffer_dim_align":
                    for index, dim, factor, offset in value:
                        out.setdefault(id(n.writes[index].buffer.data), []).append((dim, factor, offset))
        elif isinstance(n, AllocBuffer):
            for key, value in n.annotations:
                if key == "buffer_dim_align":
                    for _, dim, factor, offset in value:
                        out.setdefault(id(n.buffer.data), []).append((dim, factor, offset))
    return out


def _strides(aligns, shape: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
    """Row-major strides padded to the alignments (none when nothing is aligned)."""
    if not aligns:
        return ()
    per_dim = {dim: (factor, offset) for dim, factor, offset in aligns}
    stride: PrimExpr = imm(shape[0].dtype, 1)
    strides: list[PrimExpr] = [stride] * len(shape)
    for dim in reversed(range(len(shape))):
        factor, offset = per_dim.get(dim, (0, 0))
        if factor:
            f, o = imm(stride.dtype, factor), imm(stride.dtype, offset)
            stride = add(stride, floormod(sub(add(f, o), floormod(stride, f)), f))
        strides[dim] = stride
        stride = mul(stride, shape[dim])
    return tuple(strides)


def _minus(index: PrimExpr, start: PrimExpr) -> PrimExpr:
    """``index - start``; a vector index subtracts the start from every lane."""
    if index.dtype.lanes == 1 or start.dtype.lanes != 1:
        return sub(index, start)
    if is_int(start, 0):
        return index
    return BinOp("sub", index, Broadcast(start, index.dtype.lanes, None, index.dtype.scalable),
                 index.dtype)


class _Compactor(Mutator):
    def __init__(self, info: dict[int, tuple[Buffer, tuple[Range, ...]]]):
        self.info = info

    def _shift(self, buf: Buffer, indices):
        entry = self.info.get(id(buf.data))
        if entry is None or len(indices) != len(entry[1]):
            return None
        return entry[0], tuple(_minus(i, r.min) for i, r in zip(indices, entry[1]))

    def visit_BufferStore(self, s: BufferStore):
        out = self.generic_visit(s)
        shifted = self._shift(s.buffer, out.indices)
        return out if shifted is None else replace(out, buffer=shifted[0], indices=shifted[1])

    def visit_BufferLoad(self, e: BufferLoad):
        out = self.generic_visit(e)
        shifted = self._shift(e.buffer, out.indices)
        return out if shifted is None else replace(out, buffer=shifted[0], indices=shifted[1])

    def _region(self, r: BufferRegion) -> BufferRegion:
        entry = self.info.get(id(r.buffer.data))
        if entry is None or len(r.region) != len(entry[1]):
            return r
        region = tuple(Range(sub(x.min, c.min), x.extent, x.span) for x, c in zip(r.region, entry[1]))
        return BufferRegion(entry[0], region, r.span)

    def visit_SBlock(self, b: SBlock):
        reads = tuple(self._region(r) for r in b.reads)
        writes = tuple(self._region(r) for r in b.writes)
        matches = tuple(MatchBufferRegion(m.buffer, self._region(m.source), m.span)
                        for m in b.match_buffers)
        allocs = tuple(self.info.get(id(x.data), (x,))[0] for x in b.alloc_buffers)
        out = self.generic_visit(replace(b, reads=reads, writes=writes, match_buffers=matches,
                                         alloc_buffers=allocs))
        return out

    def visit_AllocBuffer(self, s: AllocBuffer):
        out = (yield from self.descend(s))
        entry = self.info.get(id(s.buffer.data))
        if entry is None or entry[0].dtype != s.buffer.dtype:
            return out
        return replace(out, buffer=entry[0])
