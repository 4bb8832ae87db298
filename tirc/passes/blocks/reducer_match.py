"""Recognising the commutative reducer of a reduction block (TVM's ReducerRegistry).

A reduction block initialises its outputs to identity values and updates them with a
combination of their old value and a new one (``B[i] = B[i] + A[i, k]``). Cross-thread
reduction needs that combination as a :class:`~tirc.ir.reducer.CommReducer`, so it is
matched against the reducers TVM knows, in TVM's order: sum, product, min, max, a sum
of pairs, and four argmax/argmin forms over (index, value) pairs. A reducer matches when
its identities are exactly the init values and its combined values, with the left
operands the block's own outputs, are exactly the update values (operand order
matters: ``A[i, k] + B[i]`` is not recognised, as in TVM).
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass
from functools import lru_cache
from typing import Callable, Sequence

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, DataType
from tirc.ir.expr import (COMPARE_OPS, LOGIC_OPS, BinOp, BufferLoad, FloatImm, IntImm, PrimExpr,
                          Select, Var)
from tirc.ir.reducer import CommReducer

_FLOAT_MAX = {16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}
_BF16_MAX = 3.3895313892515355e38


def max_value(dtype: DataType) -> PrimExpr:
    if dtype.is_float:
        top = _BF16_MAX if str(dtype).startswith("bfloat") else _FLOAT_MAX[dtype.bits]
        return FloatImm(dtype, top)
    if dtype.is_uint:
        return IntImm(dtype, 2 ** dtype.bits - 1)
    if dtype.is_bool:
        return IntImm(dtype, 1)
    return IntImm(dtype, 2 ** (dtype.bits - 1) - 1)


def min_value(dtype: DataType) -> PrimExpr:
    if dtype.is_float:
        top = max_value(dtype)
        return FloatImm(dtype, -top.value)
    if dtype.is_uint or dtype.is_bool:
        return IntImm(dtype, 0)
    return IntImm(dtype, -(2 ** (dtype.bits - 1)))


def const(dtype: DataType, value: int) -> PrimExpr:
    return FloatImm(dtype, float(value)) if dtype.is_float else IntImm(dtype, value)


def _b(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return BinOp(op, a, b, BOOL if op in COMPARE_OPS + LOGIC_OPS else a.dtype)


def _argmax_ge(x, y):
    better = _b("ge", x[1], y[1])
    return [Select(better, x[0], y[0]), Select(better, x[1], y[1])]


def _argmax_first(x, y):
    idx = _b("or", _b("gt", x[1], y[1]), _b("and", _b("eq", x[1], y[1]), _b("lt", x[0], y[0])))
    return [Select(idx, x[0], y[0]), Select(_b("gt", x[1], y[1]), x[1], y[1])]


def _argmin_le(x, y):
    better = _b("le", x[1], y[1])
    return [Select(better, x[0], y[0]), Select(better, x[1], y[1])]


def _argmin_first(x, y):
    idx = _b("or", _b("lt", x[1], y[1]), _b("and", _b("eq", x[1], y[1]), _b("lt", x[0], y[0])))
    return [Select(idx, x[0], y[0]), Select(_b("lt", x[1], y[1]), x[1], y[1])]


# (number of values, combiner over lhs/rhs vars, identities from the value dtypes)
_Combiner = Callable[[Sequence[Var], Sequence[Var]], list]
_REGISTRY: list[tuple[int, _Combiner, Callable[[list[DataType]], list]]] = [
    (1, lambda x, y: [_b("add", x[0], y[0])], lambda t: [const(t[0], 0)]),
    (1, lambda x, y: [_b("mul", x[0], y[0])], lambda t: [const(t[0], 1)]),
    (1, lambda x, y: [_b("min", x[0], y[0])], lambda t: [max_value(t[0])]),
    (1, lambda x, y: [_b("max", x[0], y[0])], lambda t: [min_value(t[0])]),
    (2, lambda x, y: [_b("add", x[0], y[0]), _b("add", x[1], y[1])],
     lambda t: [const(t[0], 0), const(t[1], 0)]),
    (2, _argmax_ge, lambda t: [const(t[0], -1), min_value(t[1])]),
    (2, _argmax_first, lambda t: [const(t[0], -1), min_value(t[1])]),
    (2, _argmin_le, lambda t: [const(t[0], -1), max_value(t[1])]),
    (2, _argmin_first, lambda t: [const(t[0], -1), max_value(t[1])]),
]


@lru_cache(maxsize=None)
def _compared(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls) if f.compare)


def match(pattern: object, expr: object, holes: dict[int, object]) -> bool:
    """Whether ``expr`` has the shape of ``pattern``. Variables of ``pattern`` whose ids
    are keys of ``holes`` match any expression (the same one at every occurrence; the
    match is recorded as the value); every other variable and buffer only itself."""
    if isinstance(pattern, Var) and id(pattern) in holes:
        seen = holes[id(pattern)]
        if seen is None:
            holes[id(pattern)] = expr
            return True
        return deep_equal(seen, expr)
    if pattern is expr:
        return True
    if type(pattern) is not type(expr) or isinstance(pattern, (Var, Buffer)):
        return False
    if isinstance(pattern, (tuple, list)):
        return len(pattern) == len(expr) and all(match(p, e, holes) for p, e in zip(pattern, expr))
    if is_dataclass(pattern) and not isinstance(pattern, type):
        if getattr(pattern, "dtype", None) != getattr(expr, "dtype", None):
            return False
        return all(match(getattr(pattern, n), getattr(expr, n), holes) for n in _compared(type(pattern)))
    return pattern == expr


def deep_equal(a: object, b: object) -> bool:
    """Structural equality where variables and buffers compare by identity."""
    return match(a, b, {})


def find_reducer(identities: Sequence[PrimExpr], outputs: Sequence[BufferLoad],
                 updates: Sequence[PrimExpr]):
    """The reducer whose identities are ``identities`` and which combines each output's
    old value (``outputs``) with a new one into ``updates``: ``(reducer, rhs values)``, or
    None when no known reducer fits."""
    n = len(identities)
    dtypes = [e.dtype for e in identities]
    for size, combine, ident in _REGISTRY:
        if size != n:
            continue
        if not all(deep_equal(a, b) for a, b in zip(ident(dtypes), identities)):
            continue
        lhs = tuple(Var(f"x{i}", t) for i, t in enumerate(dtypes))
        rhs = tuple(Var(f"y{i}", t) for i, t in enumerate(dtypes))
        result = combine(lhs, rhs)
        holes: dict[int, object] = {id(v): None for v in (*lhs, *rhs)}
        if not match(result, list(updates), holes):
            continue
        if not all(holes[id(v)] is not None and deep_equal(holes[id(v)], out)
                   for v, out in zip(lhs, outputs)):
            continue
        return CommReducer(lhs, rhs, tuple(result), tuple(ident(dtypes))), [holes[id(v)] for v in rhs]
    return None
