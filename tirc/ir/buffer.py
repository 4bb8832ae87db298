"""Buffers: a typed, shaped view of the memory a handle variable points at."""
from __future__ import annotations

from dataclasses import dataclass, field

from tirc.diagnostics import Span
from tirc.ir.dtype import DataType
from tirc.ir.expr import PrimExpr, Var

SCOPES = ("global", "shared", "shared.dyn", "local", "warp")


@dataclass(frozen=True, slots=True, eq=False)
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

    @property
    def scope(self) -> str:
        return self.data.ptr.scope if self.data.ptr else "global"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Buffer({self.name}:{self.dtype}{list(self.shape)})"
