"""Buffers: a typed, shaped view of the memory a handle variable points at."""
from __future__ import annotations

from dataclasses import field

from tirc.diagnostics import Span
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.records import record

# the scopes tirc builds (the wmma ones hold the fragments of tirc.ir.wmma_ops; the
# m16n8k8 ones become local buffers in TransformMmaBufferLayout)
SCOPES = ("global", "shared", "shared.dyn", "local", "warp", "wmma.matrix_a", "wmma.matrix_b",
          "wmma.accumulator", "m16n8k8.matrixA", "m16n8k8.matrixB", "m16n8k8.matrixC")
WMMA_SCOPES = ("wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator")

# TVM 0.27's storage ranks (runtime::StorageScope::Create): a scope is a rank followed by
# an optional tag naming special memory of that rank ("local.L0A", "global.texture").
STORAGE_RANKS = ("global", "shared", "warp", "local", "wmma.matrix_a", "wmma.matrix_b",
                 "wmma.accumulator", "texture", "amx.tmm", "m16n8k8.matrixA",
                 "m16n8k8.matrixB", "m16n8k8.matrixC", "metal.simdgroup",
                 "metal.cooperative_tensor", "trn.sbuf", "trn.psum")

# the scopes of a thread block's shared memory: static, and dynamic (sized at launch)
SHARED_SCOPES = ("shared", "shared.dyn")


def is_storage_scope(scope: str) -> bool:
    """Is ``scope`` a storage scope TVM 0.27 knows (a rank, then any tag)? tirc reads and
    prints every such scope; it builds those in :data:`SCOPES`."""
    return scope.startswith(STORAGE_RANKS)


@record(frozen=True, slots=True, eq=False)
class Buffer:
    """Compared by identity, like :class:`Var`. ``data`` is the pointer variable;
    its :class:`~tirc.ir.expr.PointerType` holds the storage scope."""

    name: str
    data: Var
    dtype: DataType
    shape: tuple[PrimExpr, ...]
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr | None = None
    align: int = 0
    offset_factor: int = 0
    span: Span | None = field(default=None, compare=False, repr=False)
    # TVM 0.27 buffers carry a tile layout; after flattening TVM writes ``layout=None``.
    layout_none: bool = False
    # In an s_tir function TVM's buffers have no layout, except one declared in the scalar
    # form ``x: T.int32``, which gets the default tile layout there too: the printer keeps
    # the scalar form for such a buffer, and for no other, in an s_tir function.
    tile_layout: bool = False

    @property
    def scope(self) -> str:
        return self.data.ptr.scope if self.data.ptr else "global"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Buffer({self.name}:{self.dtype}{list(self.shape)})"


def constant_elements(shape) -> int | None:
    """How many elements a shape holds, None when a dimension is not a constant."""
    n = 1
    for e in shape:
        if not isinstance(e, IntImm):
            return None
        n *= e.value
    return n


def dtype_view_of(base: Buffer, dtype: DataType):
    """``(shape, elem_offset)`` of ``base`` viewed as ``dtype`` (TVM's
    ``Buffer.view(dtype)``): the last dimension and the element offset scaled by the
    ratio of the element sizes; None when neither size divides the other, ``base`` has no
    dimension, or a constant dimension or offset is not a multiple of the ratio."""
    from tirc.ir.index_arith import arith
    old, new = base.dtype.bits * base.dtype.lanes, dtype.bits * dtype.lanes
    if not base.shape or max(old, new) % min(old, new):
        return None

    def scaled(e: PrimExpr):
        if new <= old:
            return arith("mul", e, IntImm(e.dtype, old // new))
        ratio = new // old
        if isinstance(e, IntImm) and e.value % ratio:
            return None
        return arith("floordiv", e, IntImm(e.dtype, ratio))

    last = scaled(base.shape[-1])
    offset = None if base.elem_offset is None else scaled(base.elem_offset)
    if last is None or (base.elem_offset is not None and offset is None):
        return None
    return base.shape[:-1] + (last,), offset


def access_dtype(buf: "Buffer", indices) -> DataType:
    """The dtype of ``buf[indices]``: the element type with the lanes of the vector index
    (times the buffer's own lanes); a scalable index (``T.Ramp(b, 1, T.vscale() * 4)``)
    gives a scalable vector of the buffer's scalars."""
    for i in indices:
        if i.dtype.scalable:
            return buf.dtype.with_lanes_of(i.dtype)
    lanes = max((i.dtype.lanes for i in indices), default=1)
    return buf.dtype if lanes == 1 else buf.dtype.with_lanes(lanes * buf.dtype.lanes)

