"""What evaluating a piece of TVMScript text can give before it becomes IR.

The builder reads expressions into these values: IR expressions, buffers, plain numbers
and strings (typed only once they meet a typed operand, as in TVM), containers, and
names that only mean something in a context (``T.int32``, ``Module.f``).
"""
from __future__ import annotations

import math

from typing import Any, Callable

from tirc.diagnostics import Diagnostic, Span
from tirc.ir.buffer import Buffer
from tirc.ir.const_fold import int_range
from tirc.ir.dtype import BOOL, FLOAT32, INT32, INT64, DataType
from tirc.ir.expr import BufferLoad, FloatImm, IntImm, PrimExpr, StringImm
from tirc.ir.stmt import Stmt
from tirc.records import record
from tirc.target.kinds import Target

Arg = tuple[object, "Span | None"]  # a call's argument and where it is written

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@record(frozen=True)
class Namespace:
    """``T`` or ``I``."""

    name: str


@record(frozen=True)
class TName:
    """``T.<name>``: a dtype, an intrinsic or a script construct, meaning decided by use."""

    name: str


@record(frozen=True)
class TileLayout:
    """``T.TileLayout(T.S[(8, 2):(2, 1)])`` (or the bare ``T.S[...]``): TVM 0.27's layout
    of a buffer's elements, a shape with a stride per axis. tirc reads the layouts that
    are the buffer's own row-major order, which is what TVM prints for a view by dtype."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    span: object = None

    def row_major_over(self, elements: int) -> bool:
        """Whether it lays out ``elements`` elements one after the other, in order."""
        expected, step = [], 1
        for extent in reversed(self.shape):
            expected.append(step)
            step *= extent
        return step == elements and tuple(reversed(expected)) == self.strides


@record(frozen=True)
class ModuleRef:
    """The ``class`` name of the module, so ``Module.f`` names a function."""

    name: str


@record(frozen=True)
class LetType:
    """``T.let[T.int32]``: the annotation of an immutable binding. ``pointer`` is the
    ``T.handle("float32", "global")`` construct of a typed-pointer binding."""

    dtype: DataType
    pointer: Any = None


@record(frozen=True)
class HandleType:
    """``T.handle("int64", "global").ty``: a pointer type, the result dtype of a call
    (``ptr`` is None for ``T.handle().ty``, an untyped handle)."""

    ptr: Any = None


@record(frozen=True)
class Lambda:
    """``lambda x, y: body``, unevaluated: its parameters get types only where it is used
    (``T.comm_reducer`` types them from the identity elements)."""

    params: tuple[str, ...]
    body: Any  # the Lark subtree
    span: Span | None


@record(frozen=True)
class Slot:
    """A mutable scalar (``x: T.int32 = 0`` later reassigned): a one-element local buffer."""

    buffer: Buffer


def is_scalar_buffer(v: object) -> bool:
    """A buffer TVMScript also names bare for its one element: one dimension of extent 1
    (TVM 0.27 prints ``B = v`` for ``B[0] = v`` and ``B`` for ``B[0]``, and reads them
    back so, parameter buffers included)."""
    return (isinstance(v, Buffer) and len(v.shape) == 1 and isinstance(v.shape[0], IntImm)
            and v.shape[0].value == 1)


def scalar_element(buf: Buffer, span: Span | None) -> PrimExpr:
    """``buf[0]`` for a buffer named bare where a value is needed (:func:`is_scalar_buffer`)."""
    return BufferLoad(buf, (IntImm(buf.shape[0].dtype, 0, span),), buf.dtype, span)


@record(frozen=True)
class ThreadDecl:
    """``bx = T.env_thread("blockIdx.x")``: a thread variable awaiting ``launch_thread``."""

    var: object
    tag: str


def literal_expr(value: object, span: Span | None, dtype: DataType | None = None) -> PrimExpr:
    """A Python literal as an IR immediate (of ``dtype`` when given)."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        if dtype is not None and not dtype.is_bool:
            return IntImm(dtype, int(value), span) if not dtype.is_float else float_literal(float(value), dtype, span)
        return IntImm(BOOL, int(value), span)
    if isinstance(value, int):
        if dtype is None:
            dtype = INT32 if _INT32_MIN <= value <= _INT32_MAX else INT64
        if dtype.is_float:
            return float_literal(_as_float(value, dtype, span), dtype, span)
        if dtype.is_bool:
            return IntImm(dtype, int(bool(value)), span)
        if dtype.is_integer:
            check_int_range(value, dtype, span)
        return IntImm(dtype, value, span)
    if isinstance(value, float):
        if dtype is None or not dtype.is_float:
            if dtype is not None and dtype.is_integer:
                raise Diagnostic(f"float literal {value!r} where {dtype} is expected", span)
            dtype = FLOAT32
        return float_literal(value, dtype, span)
    if isinstance(value, str):
        return StringImm(value, span)
    raise Diagnostic(f"expected an expression, got {describe(value)}", span)


# The largest finite literal of each float dtype, as TVM's FloatImm checks it
# (tvm/support/limits.h; TVM's bfloat16 bound is 3.895e38, above the type's largest
# value 3.39e38, so a literal between the two is accepted and becomes infinity, as in
# TVM); True: the type has no negative values. float64 has no bound: a literal beyond
# it is already infinity when read, as TVM reads it.
_FLOAT_BOUNDS = {
    "float32": (3.4028234663852886e38, False), "float16": (65504.0, False),
    "bfloat16": (3.895313892515354759047080037148786688e38, False),
    "float8_e3m4": (31.0, False), "float8_e4m3": (448.0, False),
    "float8_e4m3b11fnuz": (30.0, True), "float8_e4m3fn": (448.0, False),
    "float8_e4m3fnuz": (448.0, True), "float8_e5m2": (57344.0, False),
    "float8_e5m2fnuz": (57344.0, True), "float8_e8m0fnu": (3.4028236692093846e38, True),
    "float6_e2m3fn": (7.5, False), "float6_e3m2fn": (28.0, False), "float4_e2m1fn": (6.0, False),
}


def float_literal(value: float, dtype: DataType, span: Span | None) -> FloatImm:
    """A float literal of ``dtype`` (checked: :func:`check_float_range`)."""
    check_float_range(value, dtype, span)
    return FloatImm(dtype, value, span)


def check_float_range(value: float, dtype: DataType, span: Span | None) -> None:
    """A finite value beyond ``dtype``'s range is an error, as TVM's FloatImm makes it
    (inf and nan are literals of every float dtype)."""
    bound = _FLOAT_BOUNDS.get(dtype.element().base)
    if bound is not None and value == value and value not in (math.inf, -math.inf):
        limit, nonneg = bound
        if value > limit or value < (0.0 if nonneg else -limit):
            lowest = "0" if nonneg else f"{-limit:g}"
            raise Diagnostic(f"literal {value:g} is outside the range of {dtype.element()} "
                             f"({lowest} to {limit:g})", span)


def check_int_range(value: int, dtype: DataType, span: Span | None) -> None:
    lo, hi = int_range(dtype.element())
    if not lo <= value <= hi:
        raise Diagnostic(f"integer {value} does not fit in {dtype}", span)


def _as_float(value: int, dtype: DataType, span: Span | None) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer beyond every float
        raise Diagnostic(f"integer {value} is outside the range of {dtype}", span) from None


def describe(value: object) -> str:
    """A short user-facing description of an evaluated value."""
    if isinstance(value, Buffer):
        return f"buffer '{value.name}'"
    if isinstance(value, TName):
        return f"'T.{value.name}'"
    if isinstance(value, Namespace):
        return f"'{value.name}'"
    if isinstance(value, ModuleRef):
        return f"module '{value.name}'"
    if isinstance(value, (list, tuple)):
        return "a tuple"
    if isinstance(value, dict):
        return "a dict"
    if value is None:
        return "None"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, PrimExpr):
        return "an expression"
    if isinstance(value, HandleType):
        return "a pointer type"
    return type(value).__name__


def arity(name: str, args: list[Arg], lo: int, hi: int | None, span: Span | None) -> None:
    """Diagnostic unless ``T.name`` got ``lo`` to ``hi`` (None: any number of) arguments."""
    n = len(args)
    if n < lo or (hi is not None and n > hi):
        want = str(lo) if hi == lo else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
        raise Diagnostic(f"T.{name} takes {want} argument{'s' if want != '1' else ''}, got {n}", span)


def no_kwargs(name: str, kwargs: dict[str, Arg], allowed: tuple[str, ...] = ()) -> None:
    """Diagnostic for a keyword argument of ``T.name`` other than ``allowed``."""
    for key, (_, span) in kwargs.items():
        if key not in allowed:
            raise Diagnostic(f"T.{name} got an unexpected keyword argument '{key}'", span)


def attr_value(value: object, span: Span | None, what: str = "a function attribute") -> object:
    """A function or block attribute's value: scalars, targets, expressions, and lists
    and dicts of them; a block's (``what`` names it) may hold buffers too, as TVM's
    ``{"layout_free_placeholders": [B]}`` does."""
    if isinstance(value, (str, bool, int, float, Target, PrimExpr)):
        return value
    if isinstance(value, Buffer) and what == "a block attribute":
        return value
    if isinstance(value, (list, tuple)):
        return tuple(attr_value(v, span, what) for v in value)
    if isinstance(value, dict):
        return {k: attr_value(v, span, what) for k, v in value.items()}
    raise Diagnostic(f"{what} cannot hold {describe(value)}", span)


@record
class Binder:
    """A flat statement: wraps the rest of its block."""

    wrap: Callable[[Stmt], Stmt]
