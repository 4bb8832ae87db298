"""Constant folding, once for all of tirc: what an operator on immediates gives.

- :func:`fold_imms`: two scalar immediates folded into one, exactly (integers in their
  dtype's range, floats rounded as their dtype rounds); ``None`` where folding could
  change the program's meaning (division by zero, a result outside the dtype, a shift
  by a negative or too large amount, a float dtype whose rounding is not reproduced).
- :func:`fold_identity`: TVM 0.27's folding of an operator with one immediate operand
  that makes it trivial (``arith::TryConstFold``): ``x + 0``, ``x * 1``, ``0 * x``,
  ``x // 1``, ``T.min(x, x)``, ``x and True``...
- :func:`try_const_fold`: TVM's ``TryConstFold`` whole, the two above with TVM's limits
  (its operators fold float32 and float64 immediates only).
- :func:`fold_cast`: a cast of an immediate.
- :func:`fold_math_exact`: a float math function of immediates whose result is exact
  (``T.ceil``, ``T.sqrt``, ``T.log2`` of a power of two...), for code generators.

TVM's operators apply ``TryConstFold`` while its parser reads the text (``x + 0`` reads
as ``x``), so tirc's front end folds the same way, and its printer writes a node that
TVM's operator would fold in the node form ``T.Add(x, 0)``, exactly as TVM's printer
does, so that the text reads back as that node (:func:`folds_away`). The analyses build
expressions with :func:`try_const_fold` too (``arith_ops.binop``), so what they build
prints as TVM prints it; Simplify folds with :func:`fold_imms` (float16 as well).
"""
from __future__ import annotations

import math
import struct

from tirc.ir.dtype import BOOL, DataType
from tirc.ir.expr import Call, FloatImm, IntImm, PrimExpr

COMPARE = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
           "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
_FLOAT_FORMAT = {"float16": "e", "float32": "f", "float64": "d"}
TVM_FOLDED_FLOATS = ("float32", "float64")  # the float dtypes TVM's operators fold


def truncdiv(a: int, b: int) -> int:
    """``a / b`` rounded toward zero (C's and TVM's ``div``)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def truncmod(a: int, b: int) -> int:
    """The remainder of :func:`truncdiv` (sign of ``a``)."""
    return a - b * truncdiv(a, b)


INT_OPS = {  # integer operators of TIR (and of Python ints, but div/mod)
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "div": truncdiv, "mod": truncmod, "floordiv": lambda x, y: x // y,
    "floormod": lambda x, y: x % y, "min": min, "max": max,
    "bitwise_and": lambda x, y: x & y, "bitwise_or": lambda x, y: x | y,
    "bitwise_xor": lambda x, y: x ^ y, "shift_left": lambda x, y: x << y,
    "shift_right": lambda x, y: x >> y,
}
_FLOAT_OPS = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y,
              "mul": lambda x, y: x * y, "div": lambda x, y: x / y, "min": min, "max": max}


def int_range(dtype: DataType) -> tuple[int, int] | None:
    """The values a scalar integer (or bool) dtype holds; None for other dtypes."""
    if dtype.lanes != 1:
        return None
    if dtype.is_bool:
        return (0, 1)
    if dtype.is_int:
        return (-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1)
    if dtype.is_uint:
        return (0, (1 << dtype.bits) - 1)
    return None


def make_int(value: int, dtype: DataType) -> IntImm | None:
    """An immediate of ``dtype`` when ``value`` fits, else None."""
    r = int_range(dtype)
    if r is None or not r[0] <= value <= r[1]:
        return None
    return IntImm(dtype, int(value))


def round_float(value: float, dtype: DataType) -> float | None:
    """``value`` rounded to ``dtype`` (beyond its range: an infinity, as IEEE rounding
    gives); None for a float dtype whose rounding is not reproduced here."""
    fmt = _FLOAT_FORMAT.get(dtype.base)
    if fmt is None:
        return None
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return struct.unpack(fmt, struct.pack(fmt, value))[0]
    except (OverflowError, struct.error):
        return math.copysign(math.inf, value)


def float_value(e: PrimExpr) -> float | None:
    """The value of a float immediate in its dtype (a literal holds a double: a float16
    ``0.1`` is 0.0999755859375), of an integer immediate as a float; None for float
    dtypes whose rounding is not reproduced here."""
    if isinstance(e, IntImm):
        return float(e.value)
    return round_float(float(e.value), e.dtype)


def is_imm(e: object) -> bool:
    """A scalar integer, bool or float immediate."""
    return isinstance(e, (IntImm, FloatImm)) and e.dtype.lanes == 1


def fold_imms(op: str, a: PrimExpr, b: PrimExpr, dtype: DataType) -> PrimExpr | None:
    """``a op b`` (result dtype ``dtype``) for two scalar immediates, or None when it is
    not one immediate or must not be folded (see the module docstring)."""
    if not (is_imm(a) and is_imm(b)) or dtype.lanes != 1:
        return None
    if op in ("and", "or"):
        x, y = bool(a.value), bool(b.value)
        return IntImm(BOOL, int(x and y if op == "and" else x or y))
    if isinstance(a, FloatImm) or isinstance(b, FloatImm):
        x, y = float_value(a), float_value(b)
        if x is None or y is None:
            return None
        if op in COMPARE:
            return IntImm(BOOL, int(COMPARE[op](x, y)))
        fn = _FLOAT_OPS.get(op)
        if fn is None or not dtype.is_float or (op == "div" and y == 0.0):
            return None
        value = round_float(fn(x, y), dtype)
        return None if value is None else FloatImm(dtype, value)
    x, y = a.value, b.value
    if op in COMPARE:
        return IntImm(BOOL, int(COMPARE[op](x, y)))
    fn = INT_OPS.get(op)
    if fn is None or not dtype.is_integer:
        return None
    if op in ("div", "mod", "floordiv", "floormod") and y == 0:
        return None
    if op in ("shift_left", "shift_right") and not 0 <= y < dtype.bits:
        return None
    return make_int(fn(x, y), dtype)


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
        rounded = round_float(float(v), dtype)
        if rounded is None or (math.isinf(rounded) and not math.isinf(v)):
            return None
        return FloatImm(dtype, rounded)
    return None


def try_const_fold(op: str, a: PrimExpr, b: PrimExpr, dtype: DataType) -> PrimExpr | None:
    """TVM's ``TryConstFold``: what its operator ``op`` returns for ``a`` and ``b`` (of
    one dtype; ``dtype`` the result's) instead of a new node, or None when it builds the
    node. Only float32 and float64 immediates fold, as in TVM."""
    if is_imm(a) and is_imm(b):
        if isinstance(a, FloatImm) and a.dtype.base not in TVM_FOLDED_FLOATS:
            return None
        return fold_imms(op, a, b, dtype)
    return fold_identity(op, a, b)


def _index_typed(e: PrimExpr) -> bool:
    d = e.dtype
    return d.is_int and d.bits in (32, 64) and d.lanes == 1


def fold_identity(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """What TVM's ``op(a, b)`` returns instead of a new node when one operand is an
    immediate that makes the operation trivial, or ``None`` when it builds the node.
    ``a`` and ``b`` have the same dtype (TVM matches the types first). Two immediates are
    not handled here (see the module docstring)."""
    ia, ib = isinstance(a, IntImm), isinstance(b, IntImm)
    fa, fb = isinstance(a, FloatImm), isinstance(b, FloatImm)
    va = a.value if ia or fa else None
    vb = b.value if ib or fb else None
    if op == "add":
        if (ia or fa) and va == 0:
            return b
        if (ib or fb) and vb == 0:
            return a
    elif op == "sub":
        if (ib or fb) and vb == 0:
            return a
    elif op == "mul":
        if ia or fa:
            if va == 1:
                return b
            if va == 0:
                return a
        if ib or fb:
            if vb == 1:
                return a
            if vb == 0:
                return b
    elif op in ("div", "floordiv"):
        if (ia or fa) and va == 0 and not (ib and vb == 0):
            return a
        if (ib or fb) and vb == 1:
            return a
    elif op in ("mod", "floormod"):
        if _index_typed(a) and _index_typed(b):
            if ia and va == 0 and not (ib and vb == 0):
                return a
            if ib and vb == 1:
                return IntImm(a.dtype, 0)
    elif op in ("min", "max"):
        if a is b:
            return a
    elif op == "and":
        if ia:
            return b if va else a
        if ib:
            return a if vb else b
    elif op == "or":
        if ia:
            return a if va else b
        if ib:
            return b if vb else a
    return None


def folds_away(op: str, a: PrimExpr, b: PrimExpr) -> bool:
    """Would TVM's operator, applied to ``a`` and ``b``, not give back a node ``op`` of
    exactly these operands? (Then TVM's printer writes the node form.)"""
    if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
        return True
    return fold_identity(op, a, b) is not None


def _log2_exact(x: float) -> float | None:
    if x <= 0 or math.isinf(x) or math.isnan(x):
        return None
    mantissa, exponent = math.frexp(x)
    return float(exponent - 1) if mantissa == 0.5 else None


def _exp2_exact(x: float) -> float | None:
    if x != int(x) if math.isfinite(x) else True:
        return None
    return math.ldexp(1.0, int(x)) if -1074 <= x <= 1023 else None


def _round_half_away(x: float) -> float:
    whole = math.floor(abs(x))
    return math.copysign(whole + (1 if abs(x) - whole >= 0.5 else 0), x)


# math functions whose value on finite immediates is exactly what IEEE arithmetic gives
# (rounding of the exact result, or an exact result), so folding them cannot differ from
# the function evaluated at run time on any device; None where the result is not exact
_EXACT_MATH = {
    "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "round": _round_half_away,
    "nearbyint": round, "fabs": abs,
    "sqrt": lambda x: math.sqrt(x) if x >= 0 else None,
    "log2": _log2_exact, "exp2": _exp2_exact,
}


def fold_math_exact(op: str, args: tuple, dtype: DataType) -> FloatImm | None:
    """``op(*args)`` as an immediate of ``dtype`` where the argument is a finite scalar
    immediate (or such a call itself) and the result is exact: rounding functions,
    ``fabs``, ``sqrt`` (IEEE rounds it correctly; float32 through float64 too), ``log2``
    of a power of two, ``exp2`` of an integer. Code generators fold these before calling
    a math library the optimiser cannot see through (libdevice):
    ``T.ceil(T.log2(128.0))``, TOPI's idiom for a bit count, is 7. None otherwise."""
    fn = _EXACT_MATH.get(op)
    if fn is None or len(args) != 1 or not dtype.is_float or dtype.lanes != 1:
        return None
    arg = args[0]
    if isinstance(arg, Call) and isinstance(arg.op, str):
        arg = fold_math_exact(arg.op, arg.args, arg.dtype)
    if not is_imm(arg):
        return None
    x = float_value(arg)
    if x is None or not math.isfinite(x):
        return None
    y = fn(x)
    if y is None:
        return None
    y = round_float(float(y), dtype)
    return None if y is None else FloatImm(dtype, y)
