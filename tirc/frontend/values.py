"""What evaluating a piece of TVMScript text can give before it becomes IR.

The builder reads expressions into these values: IR expressions, buffers, plain numbers
and strings (typed only once they meet a typed operand, as in TVM), containers, and
names that only mean something in a context (``T.int32``, ``Module.f``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tirc.diagnostics import Diagnostic, Span
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, FLOAT32, INT32, INT64, DataType
from tirc.ir.expr import FloatImm, IntImm, PrimExpr, StringImm

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class Namespace:
    """``T`` or ``I``."""

    name: str


@dataclass(frozen=True)
class TName:
    """``T.<name>``: a dtype, an intrinsic or a script construct, meaning decided by use."""

    name: str


@dataclass(frozen=True)
class ModuleRef:
    """The ``class`` name of the module, so ``Module.f`` names a function."""

    name: str


@dataclass(frozen=True)
class LetType:
    """``T.let[T.int32]``: the annotation of an immutable binding. ``pointer`` is the
    ``T.handle("float32", "global")`` construct of a typed-pointer binding."""

    dtype: DataType
    pointer: Any = None


@dataclass(frozen=True)
class HandleType:
    """``T.handle("int64", "global").ty``: a pointer type, the result dtype of a call
    (``ptr`` is None for ``T.handle().ty``, an untyped handle)."""

    ptr: Any = None


@dataclass(frozen=True)
class Lambda:
    """``lambda x, y: body``, unevaluated: its parameters get types only where it is used
    (``T.comm_reducer`` types them from the identity elements)."""

    params: tuple[str, ...]
    body: Any  # the Lark subtree
    span: Span | None


@dataclass(frozen=True)
class Slot:
    """A mutable scalar (``x: T.int32 = 0`` later reassigned): a one-element local buffer."""

    buffer: Buffer


@dataclass(frozen=True)
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
            return IntImm(dtype, int(value), span) if not dtype.is_float else FloatImm(dtype, float(value), span)
        return IntImm(BOOL, int(value), span)
    if isinstance(value, int):
        if dtype is None:
            dtype = INT32 if _INT32_MIN <= value <= _INT32_MAX else INT64
        if dtype.is_float:
            return FloatImm(dtype, float(value), span)
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
        return FloatImm(dtype, value, span)
    if isinstance(value, str):
        return StringImm(value, span)
    raise Diagnostic(f"expected an expression, got {describe(value)}", span)


def check_int_range(value: int, dtype: DataType, span: Span | None) -> None:
    bits = dtype.bits
    lo, hi = (0, 2**bits - 1) if dtype.is_uint else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= value <= hi:
        raise Diagnostic(f"integer {value} does not fit in {dtype}", span)


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
