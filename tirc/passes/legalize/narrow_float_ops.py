"""Conversion recipes for narrow float formats, written once and run two ways: as TIR
(:class:`IROps`, integer, shift, bitwise, ``Select`` and ``T.reinterpret`` operations,
values used twice bound by expression-level ``T.Let``) and on Python numbers
(:class:`PyOps`, for constants). Used by BF16StorageLegalize and FP8StorageLegalize
through :mod:`tirc.passes.legalize.narrow_float`."""
from __future__ import annotations

import math
import struct
from typing import Callable

from tirc.ir.dtype import FLOAT32, DataType
from tirc.ir.expr import BinOp, Broadcast, Call, Cast, FloatImm, IntImm, Let, PrimExpr, Select, Var
from tirc.records import record


class Ops:
    """What a conversion recipe may do with unsigned 32-bit values (``u``) and float32
    values (``f``). Shift amounts are below 32."""

    def c(self, n: int): ...
    def add(self, a, b): ...
    def sub(self, a, b): ...
    def band(self, a, b): ...
    def bor(self, a, b): ...
    def shl(self, a, b): ...
    def shr(self, a, b): ...
    def minu(self, a, b): ...
    def gt(self, a, b): ...
    def ge(self, a, b): ...
    def eq(self, a, b): ...
    def sel(self, cond, a, b): ...
    def let(self, name: str, value, body: Callable): ...
    def f32_bits(self, f): ...
    def bits_f32(self, u): ...
    def u_to_f32(self, u): ...
    def fmul(self, f, k: float): ...


class IROps(Ops):
    """Builds the recipe as TIR with ``lanes`` lanes."""

    def __init__(self, lanes: int, scalable: bool = False):
        self.lanes, self.scalable = lanes, scalable  # scalable: T.vscale() * lanes
        self.u32 = DataType("uint32", lanes, scalable)
        self.f32 = DataType("float32", lanes, scalable)
        self.bool = DataType("bool", lanes, scalable)

    def c(self, n):
        imm = IntImm(DataType("uint32"), n)
        return imm if self.u32.is_scalar else Broadcast(imm, self.lanes, None, self.scalable)

    def _bin(self, op, a, b, dtype=None):
        return BinOp(op, a, b, dtype or self.u32)

    def add(self, a, b): return self._bin("add", a, b)
    def sub(self, a, b): return self._bin("sub", a, b)
    def band(self, a, b): return self._bin("bitwise_and", a, b)
    def bor(self, a, b): return self._bin("bitwise_or", a, b)
    def shl(self, a, b): return self._bin("shift_left", a, b)
    def shr(self, a, b): return self._bin("shift_right", a, b)
    def minu(self, a, b): return self._bin("min", a, b)
    def gt(self, a, b): return self._bin("gt", a, b, self.bool)
    def ge(self, a, b): return self._bin("ge", a, b, self.bool)
    def eq(self, a, b): return self._bin("eq", a, b, self.bool)
    def sel(self, cond, a, b): return Select(cond, a, b)

    def let(self, name, value, body):
        var = Var(name, value.dtype)
        return Let(var, value, body(var))

    def f32_bits(self, f): return Call(self.u32, "reinterpret", (f,))
    def bits_f32(self, u): return Call(self.f32, "reinterpret", (u,))
    def u_to_f32(self, u): return Cast(self.f32, u)
    def fmul(self, f, k): return BinOp("mul", f, FloatImm(FLOAT32, k) if self.lanes == 1
                                       else Broadcast(FloatImm(FLOAT32, k), self.lanes, None, self.scalable), self.f32)


class PyOps(Ops):
    """Evaluates the recipe on Python ints (uint32) and floats (float32), for constants."""

    M = 0xFFFFFFFF

    def c(self, n): return n & self.M
    def add(self, a, b): return (a + b) & self.M
    def sub(self, a, b): return (a - b) & self.M
    def band(self, a, b): return a & b
    def bor(self, a, b): return a | b
    def shl(self, a, b): return (a << b) & self.M
    def shr(self, a, b): return a >> b
    def minu(self, a, b): return min(a, b)
    def gt(self, a, b): return a > b
    def ge(self, a, b): return a >= b
    def eq(self, a, b): return a == b
    def sel(self, cond, a, b): return a if cond else b
    def let(self, name, value, body): return body(value)
    def f32_bits(self, f): return struct.unpack("<I", _pack_f32(f))[0]
    def bits_f32(self, u): return struct.unpack("<f", struct.pack("<I", u))[0]
    def u_to_f32(self, u): return float(u)
    def fmul(self, f, k): return struct.unpack("<f", _pack_f32(f * k))[0]


def _pack_f32(f: float) -> bytes:
    """``f`` rounded to float32 (beyond its range: infinity, as a float32 conversion
    rounds; a bfloat16 literal may be up to TVM's bound, 3.895e38)."""
    try:
        return struct.pack("<f", f)
    except OverflowError:
        return struct.pack("<f", math.copysign(math.inf, f))


@record(frozen=True)
class Format:
    """A narrow float dtype: its storage integer and its conversion recipes. ``encode``
    maps a float32 to the code (a uint32 holding the narrow bits), ``decode`` the code
    (uint32) to the float32 it stands for."""

    name: str
    storage: str  # "uint16" or "uint8"
    encode: Callable[[Ops, object], object]
    decode: Callable[[Ops, object], object]

    def storage_type(self, dtype: DataType) -> DataType:
        return DataType(self.storage, dtype.lanes, dtype.scalable)

    def encode_ir(self, value: PrimExpr) -> PrimExpr:
        """float32 expression -> storage-typed expression."""
        d = value.dtype
        return Cast(DataType(self.storage, d.lanes, d.scalable),
                    self.encode(IROps(d.lanes, d.scalable), value))

    def decode_ir(self, code: PrimExpr) -> PrimExpr:
        """storage-typed expression -> float32 expression."""
        ops = IROps(code.dtype.lanes, code.dtype.scalable)
        return self.decode(ops, Cast(ops.u32, code))

    def encode_const(self, value: float) -> int:
        return self.encode(PyOps(), float(value))

    def round_const(self, value: float) -> float:
        """``value`` rounded to this format, as a float32."""
        return self.decode(PyOps(), self.encode_const(value))
