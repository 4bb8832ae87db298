"""Arithmetic for Simplify: integer intervals (the ranges an expression's value can
take). Folding immediates is :mod:`tirc.ir.const_fold`'s.
"""
from __future__ import annotations

from tirc.ir.const_fold import int_range, truncdiv
from tirc.ir.expr import BinOp, Call, Cast, IntImm, PrimExpr, Select, Var

Interval = tuple[int, int]


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
