"""TransformMmaBufferLayout: the ``m16n8k8.matrixA/B/C`` buffers of TVM's mma.sync
intrinsics become each thread's ``local`` part of them (TVM's
``s_tir.transform.TransformMmaBufferLayout``, ``transform_mma_buffer_layout.cc``).

A block allocating such a buffer of shape ``[..., I, J]`` allocates instead a ``local``
buffer of the same name and dtype of shape ``[..., I/16, J/8, 2, 2]`` (matrixC: 16 x 8 tiles,
each thread two rows and two columns of each), ``[..., I/32, J/8, 4, 2]`` (matrixA) or
``[..., I/8, J/32, 1, 8]`` (matrixB). Loads and stores of a matrixC buffer at ``(i, j)``
go to ``(i // 16, j // 8, i % 16 // 8, j % 2)`` (TVM's ``index_map_m16n8k8.matrixC``,
simplified); those of matrixA/B keep their indices on the new buffer (their real accesses
are opaque, through the buffer's data in ``ldmatrix`` and ``mma``), and every use of the old
data pointer names the new one.

Unlike TVM, the blocks' ``T.reads``/``T.writes`` regions of a transformed buffer become the
whole new buffer (TVM leaves them naming the old buffer, which then has no allocation).
A dimension not divisible as above is a located error, where TVM stops with a check.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.block import BufferRegion, SBlock, full_region
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32
from tirc.ir.expr import BufferLoad, IntImm, PointerType, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import BufferStore
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, imm

# scope -> (tile rows, tile columns, the per-thread shape of a tile)
_TILES = {"m16n8k8.matrixC": (16, 8, (2, 2)), "m16n8k8.matrixA": (32, 8, (4, 2)),
          "m16n8k8.matrixB": (8, 32, (1, 8))}
SCOPES = tuple(_TILES)


def _local(buf: Buffer) -> Buffer:
    rows, cols, inner = _TILES[buf.scope]
    if len(buf.shape) < 2:
        raise Diagnostic(f"buffer '{buf.name}' in scope {buf.scope} needs at least two dimensions",
                         buf.span)
    d0, d1 = buf.shape[-2], buf.shape[-1]
    if not (isinstance(d0, IntImm) and isinstance(d1, IntImm) and d0.value % rows == 0
            and d1.value % cols == 0):
        raise Diagnostic(f"buffer '{buf.name}' in scope {buf.scope} must have constant last two "
                         f"dimensions divisible by {rows} and {cols}", buf.span)
    shape = tuple(buf.shape[:-2]) + tuple(IntImm(INT32, v) for v in (d0.value // rows, d1.value // cols,
                                                                      *inner))
    data = Var(buf.name, HANDLE, PointerType(buf.dtype, "local"), buf.data.span)
    return replace(buf, data=data, shape=shape, strides=(), elem_offset=None)


class _Transformer(Mutator):
    def __init__(self):
        self.buffers: dict[int, Buffer] = {}  # old buffer id -> new
        self.data: dict[int, Var] = {}  # old data var id -> new
        self.analyzer = Analyzer()

    def visit_SBlock(self, s: SBlock):
        allocs = []
        for b in s.alloc_buffers:
            if b.scope in _TILES:
                new = _local(b)
                self.buffers[id(b)] = new
                self.data[id(b.data)] = new.data
                allocs.append(new)
            else:
                allocs.append(b)
        out = yield from self.descend(s)
        return replace(out, alloc_buffers=tuple(allocs), reads=self._regions(out.reads),
                       writes=self._regions(out.writes))

    def _regions(self, regions: tuple[BufferRegion, ...]) -> tuple[BufferRegion, ...]:
        if not any(id(r.buffer) in self.buffers for r in regions):
            return regions
        return tuple(full_region(self.buffers[id(r.buffer)], r.span) if id(r.buffer) in self.buffers
                     else r for r in regions)

    def _indices(self, old: Buffer, indices):
        if old.scope != "m16n8k8.matrixC":
            return indices
        i, j = indices[-2], indices[-1]
        mapped = (binop("floordiv", binop("floordiv", i, imm(i.dtype, 8)), imm(i.dtype, 2)),
                  binop("floordiv", j, imm(j.dtype, 8)),
                  binop("floormod", binop("floordiv", i, imm(i.dtype, 8)), imm(i.dtype, 2)),
                  binop("floormod", binop("floormod", j, imm(j.dtype, 8)), imm(j.dtype, 2)))
        return tuple(indices[:-2]) + tuple(self.analyzer.simplify(e) for e in mapped)

    def visit_BufferStore(self, s: BufferStore):
        out = yield from self.descend(s)
        new = self.buffers.get(id(out.buffer))
        if new is None:
            return out
        return replace(out, buffer=new, indices=self._indices(out.buffer, out.indices))

    def visit_BufferLoad(self, e: BufferLoad):
        out = self.generic_visit(e)
        new = self.buffers.get(id(out.buffer))
        if new is None:
            return out
        return replace(out, buffer=new, indices=self._indices(out.buffer, out.indices))

    def visit_Var(self, e: Var):
        return self.data.get(id(e), e)


def transform_mma_buffer_layout(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(lambda body: _Transformer().visit(body))
