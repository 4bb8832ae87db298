"""Integer expression building blocks shared by the region analyses (TVM's ``arith``):

- operators that fold constants exactly as TVM's (``x + 0`` is ``x``, ``x * 1`` is ``x``,
  two immediates fold: :func:`tirc.ir.const_fold.try_const_fold`), so that what the
  analyses build prints as TVM prints it;
- constant bounds of an expression given constant bounds of its variables
  (``ConstIntBound``);
- modular sets, ``coeff * k + base`` (``ModularSet``).

Only integer scalars are handled; anything else is left as it is.
"""
from __future__ import annotations

import math

from tirc.ir.const_fold import COMPARE, truncdiv, try_const_fold
from tirc.ir.dtype import BOOL, DataType
from tirc.ir.expr import BinOp, Call, Cast, IntImm, PrimExpr, Select, Var

INF = math.inf
Bound = tuple[float, float]  # inclusive; +-inf for unknown


def floordiv_int(a: int, b: int) -> int:
    return a // b


def floormod_int(a: int, b: int) -> int:
    return a % b


def is_int(e: object, value: int | None = None) -> bool:
    return (isinstance(e, IntImm) and e.dtype.lanes == 1 and not e.dtype.is_bool
            and (value is None or e.value == value))


def index_typed(e: PrimExpr) -> bool:
    return e.dtype.lanes == 1 and (e.dtype.is_int or e.dtype.is_uint)


def imm(dtype: DataType, value: int) -> IntImm:
    return IntImm(dtype, int(value))


def _match(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """TVM's BinaryOpMatchTypes for integers: the narrower side is widened."""
    if a.dtype == b.dtype or not (a.dtype.is_integer and b.dtype.is_integer):
        return a, b
    if a.dtype.bits < b.dtype.bits:
        return cast(b.dtype, a), b
    return a, cast(a.dtype, b)


def cast(dtype: DataType, e: PrimExpr) -> PrimExpr:
    if e.dtype == dtype:
        return e
    if isinstance(e, IntImm) and dtype.is_integer and dtype.lanes == 1:
        return IntImm(dtype, e.value)
    return Cast(dtype, e)


def binop(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a op b`` as TVM's operator functions build it (TryConstFold first)."""
    a, b = _match(a, b)
    dt = BOOL if op in COMPARE else a.dtype
    folded = try_const_fold(op, a, b, dt)
    return folded if folded is not None else BinOp(op, a, b, dt)


def add(a, b): return binop("add", a, b)
def sub(a, b): return binop("sub", a, b)
def mul(a, b): return binop("mul", a, b)
def floordiv(a, b): return binop("floordiv", a, b)
def floormod(a, b): return binop("floormod", a, b)
def min_(a, b): return binop("min", a, b)
def max_(a, b): return binop("max", a, b)


def as_expr(value: int | PrimExpr, like: PrimExpr) -> PrimExpr:
    return imm(like.dtype, value) if isinstance(value, int) else value


# ---- constant bounds ------------------------------------------------------------------

def dtype_bound(dtype: DataType) -> Bound:
    if dtype.lanes != 1:
        return (-INF, INF)
    if dtype.is_bool:
        return (0, 1)
    if dtype.is_int:
        return (-(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1)
    if dtype.is_uint:
        return (0, 2 ** dtype.bits - 1)
    return (-INF, INF)


def _mul_bound(a: Bound, b: Bound) -> Bound:
    vals = []
    for x in a:
        for y in b:
            if (x == 0 and math.isinf(y)) or (y == 0 and math.isinf(x)):
                vals.append(0)
            else:
                vals.append(x * y)
    return (min(vals), max(vals))


def _div_bound(a: Bound, c: int, floor: bool) -> Bound:
    """``a / c`` for a constant divisor ``c != 0``."""
    def div(x):
        if math.isinf(x):
            return x if c > 0 else -x
        return floordiv_int(int(x), c) if floor else truncdiv(int(x), c)
    lo, hi = div(a[0]), div(a[1])
    return (min(lo, hi), max(lo, hi))


def const_bound(e: PrimExpr, bounds: dict[int, Bound],
                memo: dict[int, Bound] | None = None) -> Bound:
    """Inclusive constant bounds of integer ``e``; ``bounds`` maps ``id(var)``. ``memo``
    (keyed by ``id``, for a caller that asks about every node of a tree whose variables'
    bounds do not change meanwhile) keeps each subexpression's bounds."""
    if memo is not None:
        hit = memo.get(id(e))
        if hit is not None:
            return hit
    full = dtype_bound(e.dtype)
    b = _bound(e, bounds, memo)
    out = (max(b[0], full[0]), min(b[1], full[1]))
    if memo is not None:
        memo[id(e)] = out
    return out


def _bound(e: PrimExpr, bounds: dict[int, Bound], memo: dict[int, Bound] | None) -> Bound:
    if isinstance(e, IntImm):
        return (e.value, e.value)
    if isinstance(e, Var):
        return bounds.get(id(e), dtype_bound(e.dtype))
    if isinstance(e, Cast):
        inner = const_bound(e.value, bounds, memo)
        full = dtype_bound(e.dtype)
        return inner if full[0] <= inner[0] and inner[1] <= full[1] else full
    if isinstance(e, Select):
        t, f = const_bound(e.true_value, bounds, memo), const_bound(e.false_value, bounds, memo)
        return (min(t[0], f[0]), max(t[1], f[1]))
    if isinstance(e, Call) and e.op == "if_then_else":
        t, f = const_bound(e.args[1], bounds, memo), const_bound(e.args[2], bounds, memo)
        return (min(t[0], f[0]), max(t[1], f[1]))
    if not isinstance(e, BinOp) or not index_typed(e):
        return dtype_bound(e.dtype)
    a, b = const_bound(e.a, bounds, memo), const_bound(e.b, bounds, memo)
    op = e.op
    if op == "add":
        return (a[0] + b[0], a[1] + b[1])
    if op == "sub":
        return (a[0] - b[1], a[1] - b[0])
    if op == "mul":
        return _mul_bound(a, b)
    if op == "min":
        return (min(a[0], b[0]), min(a[1], b[1]))
    if op == "max":
        return (max(a[0], b[0]), max(a[1], b[1]))
    if op in ("floordiv", "div") and b[0] == b[1] and b[0] != 0:
        return _div_bound(a, int(b[0]), op == "floordiv")
    if op == "floormod" and b[0] == b[1] and b[0] > 0:
        c = int(b[0])
        if a[0] >= 0 and a[1] < c:
            return a
        return (0, c - 1)
    if op == "mod" and b[0] == b[1] and b[0] > 0:
        c = int(b[0])
        if a[0] >= 0:
            return (0, min(a[1], c - 1))
        return (-(c - 1), c - 1)
    return dtype_bound(e.dtype)


# ---- modular sets ---------------------------------------------------------------------

def modular_set(e: PrimExpr) -> tuple[int, int]:
    """``(coeff, base)``: every value of ``e`` is ``coeff * k + base`` (coeff 0: constant,
    coeff 1: anything)."""
    if isinstance(e, IntImm):
        return (0, e.value)
    if isinstance(e, BinOp) and index_typed(e):
        a, b = modular_set(e.a), modular_set(e.b)
        if e.op in ("add", "sub"):
            coeff = math.gcd(a[0], b[0])
            base = a[1] + b[1] if e.op == "add" else a[1] - b[1]
            return _norm(coeff, base)
        if e.op == "mul":
            if b[0] == 0:
                return _norm(a[0] * abs(b[1]), a[1] * b[1])
            if a[0] == 0:
                return _norm(b[0] * abs(a[1]), a[1] * b[1])
            return _norm(math.gcd(a[0] * b[0], math.gcd(a[0] * b[1], a[1] * b[0])), a[1] * b[1])
    return (1, 0)


def _norm(coeff: int, base: int) -> tuple[int, int]:
    return (coeff, base % coeff) if coeff else (0, base)
