"""Expression nodes. Immutable; ``span`` takes no part in equality. Each keeps its hash
once computed (``cache_hash``): it is a function of the whole tree under it.

Variables are compared by identity (two ``Var("i")`` are different variables);
:mod:`tirc.ir.equal` compares whole trees up to renaming.
"""
from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Union

from tirc.diagnostics import Span
from tirc.ir.dtype import BOOL, HANDLE, INT32, DataType
from tirc.records import record

if TYPE_CHECKING:
    from tirc.ir.buffer import Buffer

_SPAN = dict(default=None, compare=False, repr=False)


class PrimExpr:
    """Base of every expression; each subclass has a ``dtype``."""

    __slots__ = ()
    dtype: DataType


@record(frozen=True, slots=True)
class PointerType:
    """The type annotation of a handle variable that points at ``dtype`` in ``scope``."""

    dtype: DataType
    scope: str = "global"


@record(frozen=True, slots=True, eq=False)
class Var(PrimExpr):
    name: str
    dtype: DataType = INT32
    ptr: PointerType | None = None
    span: Span | None = field(**_SPAN)

    def __repr__(self) -> str:
        return f"Var({self.name}:{self.dtype})"


@record(frozen=True, slots=True, cache_hash=True)
class IntImm(PrimExpr):
    dtype: DataType
    value: int
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True, cache_hash=True)
class FloatImm(PrimExpr):
    dtype: DataType
    value: float
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True, cache_hash=True)
class StringImm(PrimExpr):
    value: str
    span: Span | None = field(**_SPAN)
    dtype: DataType = field(default=HANDLE, repr=False)


# Binary operators: arithmetic, comparison, logic, bitwise. ``op`` is one of BINARY_OPS.
ARITH_OPS = ("add", "sub", "mul", "div", "mod", "floordiv", "floormod", "min", "max")
COMPARE_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGIC_OPS = ("and", "or")
BITWISE_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")
BINARY_OPS = ARITH_OPS + COMPARE_OPS + LOGIC_OPS + BITWISE_OPS


@record(frozen=True, slots=True, cache_hash=True)
class BinOp(PrimExpr):
    """``a op b``. ``div``/``mod`` truncate (C semantics); ``floordiv``/``floormod`` floor."""

    op: str
    a: PrimExpr
    b: PrimExpr
    dtype: DataType
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True, cache_hash=True)
class Not(PrimExpr):
    a: PrimExpr
    span: Span | None = field(**_SPAN)

    @property
    def dtype(self) -> DataType:  # type: ignore[override]
        return BOOL.with_lanes(self.a.dtype.lanes)


@record(frozen=True, slots=True, cache_hash=True)
class Select(PrimExpr):
    """Both branches are evaluated (unlike ``T.if_then_else``)."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    span: Span | None = field(**_SPAN)

    @property
    def dtype(self) -> DataType:  # type: ignore[override]
        return self.true_value.dtype


@record(frozen=True, slots=True, cache_hash=True)
class Cast(PrimExpr):
    dtype: DataType
    value: PrimExpr
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True, cache_hash=True)
class BufferLoad(PrimExpr):
    buffer: "Buffer"
    indices: tuple[PrimExpr, ...]
    dtype: DataType
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True, cache_hash=True)
class Ramp(PrimExpr):
    """The vector ``base, base+stride, ..., base+(lanes-1)*stride``; with ``scalable``,
    of ``T.vscale() * lanes`` lanes (printed so)."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int
    span: Span | None = field(**_SPAN)
    scalable: bool = False

    @property
    def dtype(self) -> DataType:  # type: ignore[override]
        return DataType(self.base.dtype.base, self.lanes, self.scalable)


@record(frozen=True, slots=True, cache_hash=True)
class Broadcast(PrimExpr):
    """``value`` in every lane; ``scalable``: of ``T.vscale() * lanes`` lanes."""

    value: PrimExpr
    lanes: int
    span: Span | None = field(**_SPAN)
    scalable: bool = False

    @property
    def dtype(self) -> DataType:  # type: ignore[override]
        return DataType(self.value.dtype.base, self.lanes, self.scalable)


@record(frozen=True, slots=True, cache_hash=True)
class Shuffle(PrimExpr):
    """Lanes picked by ``indices`` from the concatenation of ``vectors``."""

    vectors: tuple[PrimExpr, ...]
    indices: tuple[PrimExpr, ...]
    span: Span | None = field(**_SPAN)

    @property
    def dtype(self) -> DataType:  # type: ignore[override]
        return self.vectors[0].dtype.with_lanes(len(self.indices)) if len(self.indices) > 1 \
            else self.vectors[0].dtype.element()


@record(frozen=True, slots=True, cache_hash=True)
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr
    span: Span | None = field(**_SPAN)

    @property
    def dtype(self) -> DataType:  # type: ignore[override]
        return self.body.dtype


@record(frozen=True, slots=True)
class GlobalVar:
    """A function of the module, by name."""

    name: str


@record(frozen=True, slots=True, cache_hash=True)
class Call(PrimExpr):
    """A call of an intrinsic (``op`` is its name, e.g. ``"exp"``, ``"call_extern"``)
    or of a function of the same module (``op`` is a :class:`GlobalVar`)."""

    dtype: DataType
    op: Union[str, GlobalVar]
    args: tuple[PrimExpr, ...]
    span: Span | None = field(**_SPAN)
    kwargs: tuple[tuple[str, Any], ...] = ()  # keyword options (T.call_ffi_kernel's launch_params)
    # a handle result typed as a pointer (``T.call_extern(T.handle("int64", "global").ty, ...)``)
    ptr: PointerType | None = None


def is_one(e: PrimExpr) -> bool:
    """Whether ``e`` is the integer constant 1."""
    return isinstance(e, IntImm) and e.value == 1


def const(value: int | float | bool, dtype: DataType | None = None) -> PrimExpr:
    """An immediate of ``dtype`` (int32/float32/bool chosen from the Python type if omitted)."""
    if isinstance(value, bool):
        return IntImm(dtype or BOOL, int(value))
    if isinstance(value, int):
        return IntImm(dtype or INT32, value)
    return FloatImm(dtype or DataType("float32"), float(value))


def scalable_count(lanes: int, dtype: DataType = INT32) -> PrimExpr:
    """``T.vscale() * lanes`` in ``dtype``: the lane count of a scalable vector, as TVM
    writes it."""
    vscale: PrimExpr = Call(INT32, "vscale", ())
    if dtype != INT32:
        vscale = Cast(dtype, vscale)
    return BinOp("mul", vscale, IntImm(dtype, lanes), dtype)

