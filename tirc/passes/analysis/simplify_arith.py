"""Arithmetic for Simplify: folding operators and casts on immediates, and integer
intervals (the ranges an expression's value can take).

Folding follows TVM's integer semantics (``div``/``mod`` truncate, ``floordiv``/
``floormod`` floor) and refuses whatever could change a program's meaning: division by
zero, a result outside the dtype's range, shifts by negative or too large amounts,
floats whose rounding this module cannot reproduce (only float16/32/64 are folded).
"""
from __future__ import annotations

import math
import struct

from tirc.ir.dtype import BOOL, DataType
from tirc.ir.expr import BinOp, Call, Cast, FloatImm, IntImm, PrimExpr, Select, Var

Interval = tuple[int, int]


def int_range(dtype: DataType) -> Interval | None:
    """The values a scalar integer (or bool) dtype holds."""
    if dtype.lanes != 1:
        return None
    if dtype.is_bool:
        return (0, 1)
    if dtype.is_int:
        return (-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1)
    if dtype.is_uint:
        return (0, (1 << dtype.bits) - 1)
    return None


def is_imm(e: object) -> bool:
    return isinstance(e, (IntImm, FloatImm)) and e.dtype.lanes == 1


def make_int(value: int, dtype: DataType) -> IntImm | None:
    """An immediate of ``dtype`` when ``value`` fits, else None."""
    r = int_range(dtype)
    if r is None or not r[0] <= value <= r[1]:
        return None
    return IntImm(dtype, int(value))


def make_float(value: float, dtype: DataType) -> FloatImm | None:
    """An immediate of ``dtype``, rounded as the dtype rounds; None when not exact to do."""
    if dtype.lanes != 1 or math.isnan(value):
        return None
    fmt = {"float16": "e", "float32": "f", "float64": "d"}.get(dtype.base)
    if fmt is None:
        return None
    try:
        rounded = struct.unpack(fmt, struct.pack(fmt, value))[0]
    except (OverflowError, struct.error):
        return None
    if math.isinf(rounded) and not math.isinf(value):
        return None
    return FloatImm(dtype, rounded)


def truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def truncmod(a: int, b: int) -> int:
    return a - b * truncdiv(a, b)


_COMPARE = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
            "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


def fold_binop(op: str, a: PrimExpr, b: PrimExpr, dtype: DataType) -> PrimExpr | None:
    """``a op b`` for two scalar immediates, or None when it must not be folded."""
    if not (is_imm(a) and is_imm(b)) or dtype.lanes != 1:
        return None
    x, y = a.value, b.value
    if op in _COMPARE and not (isinstance(a, FloatImm) or isinstance(b, FloatImm)):
        return IntImm(BOOL, int(_COMPARE[op](x, y)))
    if op in ("and", "or"):
        return IntImm(BOOL, int(bool(x) and bool(y)) if op == "and" else int(bool(x) or bool(y)))
    if isinstance(a, FloatImm) or isinstance(b, FloatImm):
        x, y = float_value(a), float_value(b)
        if x is None or y is None:
            return None
        if op in _COMPARE:
            return IntImm(BOOL, int(_COMPARE[op](x, y)))
        return _fold_float(op, x, y, dtype)
    if not (dtype.is_integer or dtype.is_bool):
        return None
    if op in ("div", "mod", "floordiv", "floormod") and y == 0:
        return None
    if op in ("shift_left", "shift_right") and not 0 <= y < dtype.bits:
        return None
    result = {
        "add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
        "div": lambda: truncdiv(x, y), "mod": lambda: truncmod(x, y),
        "floordiv": lambda: x // y, "floormod": lambda: x % y,
        "min": lambda: min(x, y), "max": lambda: max(x, y),
        "bitwise_and": lambda: x & y, "bitwise_or": lambda: x | y, "bitwise_xor": lambda: x ^ y,
        "shift_left": lambda: x << y, "shift_right": lambda: x >> y,
    }.get(op)
    return None if result is None else make_int(result(), dtype)


def _fold_float(op: str, x: float, y: float, dtype: DataType) -> PrimExpr | None:
    if not dtype.is_float:
        return None
    if op == "div" and y == 0.0:
        return None
    fn = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
          "div": lambda: x / y, "min": lambda: min(x, y), "max": lambda: max(x, y)}.get(op)
    return None if fn is None else make_float(fn(), dtype)


def fold_cast(dtype: DataType, value: PrimExpr) -> PrimExpr | None:
    """``T.Cast(dtype, value)`` for a scalar immediate, or None."""
    if not is_imm(value) or dtype.lanes != 1:
        return None
    v = float_value(value) if isinstance(value, FloatImm) else value.value
    if v is None:
        return None
    if dtype.is_bool:
        return IntImm(BOOL, int(v != 0))
    if dtype.is_integer:
        if isinstance(value, FloatImm):
            if math.isnan(v) or math.isinf(v):
                return None
            v = math.trunc(v)
        return make_int(int(v), dtype)
    if dtype.is_float:
        if isinstance(value, IntImm) and abs(v) >= 1 << 53 and dtype.bits < 64:
            return None  # float(v) would round twice
        return make_float(float(v), dtype)
    return None


def float_value(e: PrimExpr) -> float | None:
    """The value of a float immediate in its dtype (a literal holds a double: a float16
    ``0.1`` is 0.0999755859375), of an integer immediate as a float; None for float
    dtypes this module cannot round."""
    if isinstance(e, IntImm):
        return float(e.value)
    fmt = {"float16": "e", "float32": "f", "float64": "d"}.get(e.dtype.base)
    if fmt is None:
        return None
    v = float(e.value)
    if math.isnan(v) or math.isinf(v):
        return v
    try:
        return struct.unpack(fmt, struct.pack(fmt, v))[0]
    except (OverflowError, struct.error):
        return math.copysign(math.inf, v)


# -- intervals ----------------------------------------------------------------------------

def interval(e: PrimExpr, ranges: dict[int, Interval]) -> Interval | None:
    """The values ``e`` (a scalar integer) can take, given ``ranges`` of variables by id;
    None when unknown or when the interval leaves the dtype (overflow is not modelled)."""
    r = _interval(e, ranges)
    limits = int_range(e.dtype)
    if r is None or limits is None or r[0] > r[1] or r[0] < limits[0] or r[1] > limits[1]:
        return None
    return r


def _interval(e: PrimExpr, ranges: dict[int, Interval]) -> Interval | None:
    if isinstance(e, IntImm):
        return (e.value, e.value)
    if isinstance(e, Var):
        return ranges.get(id(e)) or int_range(e.dtype)
    if isinstance(e, Cast):
        return interval(e.value, ranges) if e.value.dtype.is_integer else None
    if isinstance(e, Select):
        return _union(interval(e.true_value, ranges), interval(e.false_value, ranges))
    if isinstance(e, Call) and e.op == "if_then_else":
        return _union(interval(e.args[1], ranges), interval(e.args[2], ranges))
    if not isinstance(e, BinOp) or not e.dtype.is_integer:
        return None
    a, b = interval(e.a, ranges), interval(e.b, ranges)
    if a is None or b is None:
        return None
    return _binop_interval(e.op, a, b)


def _union(a: Interval | None, b: Interval | None) -> Interval | None:
    return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))


def _binop_interval(op: str, a: Interval, b: Interval) -> Interval | None:
    (alo, ahi), (blo, bhi) = a, b
    if op == "add":
        return (alo + blo, ahi + bhi)
    if op == "sub":
        return (alo - bhi, ahi - blo)
    if op == "mul":
        corners = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
        return (min(corners), max(corners))
    if op in ("min", "max"):
        f = min if op == "min" else max
        return (f(alo, blo), f(ahi, bhi))
    if blo != bhi or blo <= 0:
        return None  # the remaining rules need a positive constant divisor
    c = blo
    if op == "floordiv":
        return (alo // c, ahi // c)
    if op == "div":
        return (truncdiv(alo, c), truncdiv(ahi, c))
    if op == "floormod":
        return (alo % c, ahi % c) if alo // c == ahi // c else (0, c - 1)
    if op == "mod":
        if alo >= 0:
            return (alo % c, ahi % c) if alo // c == ahi // c else (0, c - 1)
        return (-(c - 1), c - 1) if ahi > 0 else (-(c - 1), 0)
    if op == "shift_right" and alo >= 0:
        return (alo >> c, ahi >> c)
    if op == "bitwise_and" and alo >= 0:
        return (0, min(ahi, c))
    return None


def decide_compare(op: str, a: PrimExpr, b: PrimExpr, ranges: dict[int, Interval]) -> bool | None:
    """The value of the integer comparison ``a op b`` when the ranges decide it."""
    ia, ib = interval(a, ranges), interval(b, ranges)
    if ia is None or ib is None:
        return None
    lo, hi = ia[0] - ib[1], ia[1] - ib[0]  # the range of a - b
    if op == "lt":
        return True if hi < 0 else False if lo >= 0 else None
    if op == "le":
        return True if hi <= 0 else False if lo > 0 else None
    if op == "gt":
        return True if lo > 0 else False if hi <= 0 else None
    if op == "ge":
        return True if lo >= 0 else False if hi < 0 else None
    if op == "eq":
        return True if lo == hi == 0 else False if lo > 0 or hi < 0 else None
    if op == "ne":
        return False if lo == hi == 0 else True if lo > 0 or hi < 0 else None
    return None
