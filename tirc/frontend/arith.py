"""Typing of operators as TVM does it: literals adopt the other operand's dtype,
narrower integers widen, integers meet floats as floats, scalars broadcast to vectors."""
from __future__ import annotations

import struct

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.values import describe, literal_expr
from tirc.ir.const_fold import fold_identity
from tirc.ir.dtype import BOOL, DataType
from tirc.ir.expr import (COMPARE_OPS, LOGIC_OPS, BinOp, Broadcast, Cast, FloatImm, IntImm,
                          PrimExpr)

_PY_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
    "min": min, "max": max,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "shift_left": lambda a, b: a << b, "shift_right": lambda a, b: a >> b,
    "bitwise_and": lambda a, b: a & b, "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
}
_INT_ONLY = ("floordiv", "floormod", "shift_left", "shift_right", "bitwise_and",
             "bitwise_or", "bitwise_xor")

SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
    "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "and",
    "or": "or", "shift_left": "<<", "shift_right": ">>", "bitwise_and": "&",
    "bitwise_or": "|", "bitwise_xor": "^", "mod": "truncmod", "min": "min", "max": "max",
}


def _is_py_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cast_to(e: PrimExpr, dtype: DataType, span: Span | None) -> PrimExpr:
    if e.dtype == dtype:
        return e
    if e.dtype.lanes == 1 and dtype.lanes > 1:
        return Broadcast(cast_to(e, dtype.element(), span), dtype.lanes, span)
    if isinstance(e, IntImm) and dtype.is_integer and e.dtype.is_integer:
        return IntImm(dtype, e.value, e.span)
    if isinstance(e, (IntImm, FloatImm)) and dtype.is_float and not e.dtype.is_bool:
        from tirc.frontend.values import float_literal
        return float_literal(float(e.value), dtype, e.span)
    return Cast(dtype, e, span)


def _common(a: DataType, b: DataType, span: Span | None, op: str) -> DataType:
    if a == b:
        return a
    lanes = max(a.lanes, b.lanes)
    if a.lanes not in (1, lanes) or b.lanes not in (1, lanes):
        raise Diagnostic(f"operands of '{SYMBOLS.get(op, op)}' have different lane counts: "
                         f"{a} and {b}", span)
    ea, eb = a.element(), b.element()
    if ea == eb:
        res = ea
    elif ea.is_float and eb.is_float:
        res = ea if ea.bits >= eb.bits else eb
    elif ea.is_float and (eb.is_integer or eb.is_bool):
        res = ea
    elif eb.is_float and (ea.is_integer or ea.is_bool):
        res = eb
    elif (ea.is_integer or ea.is_bool) and (eb.is_integer or eb.is_bool):
        if ea.is_bool:
            res = eb
        elif eb.is_bool:
            res = ea
        elif ea.bits != eb.bits:
            res = ea if ea.bits > eb.bits else eb
        else:
            res = ea if ea.is_int else eb  # int32 with uint32: TVM keeps the signed one
    else:
        raise Diagnostic(f"operands of '{SYMBOLS.get(op, op)}' have incompatible dtypes "
                         f"{a} and {b}", span)
    return res.with_lanes(lanes)


def binary(op: str, a: object, b: object, span: Span | None, fold: bool = True) -> object:
    """``a op b`` for evaluated operands. Like TVM's operators, folds constant operands
    (``fold=False`` for the node constructors ``T.Add`` and kin, which never fold)."""
    if _is_py_number(a) and _is_py_number(b) or (isinstance(a, bool) and isinstance(b, bool)):
        if op in _PY_FOLD and not (op in _INT_ONLY and (isinstance(a, float) or isinstance(b, float))):
            if op in ("floordiv", "floormod") and b == 0:
                raise Diagnostic("division by zero", span)
            return _PY_FOLD[op](a, b)
    for v in (a, b):
        if not isinstance(v, (PrimExpr, int, float, bool)):
            raise Diagnostic(f"operand of '{SYMBOLS.get(op, op)}' must be an expression, "
                             f"not {describe(v)}", span)
    if not isinstance(a, PrimExpr):
        # two Python numbers left unfolded (an integer-only operator on a float): the
        # left one takes its default dtype and types the other
        a = literal_expr(a, span, _literal_hint(a, b) if isinstance(b, PrimExpr) else None)
    if not isinstance(b, PrimExpr):
        b = literal_expr(b, span, _literal_hint(b, a))
    return typed_binary(op, a, b, span, fold)


def _literal_hint(lit: object, other: PrimExpr) -> DataType | None:
    dt = other.dtype.element()
    if isinstance(lit, float) and not dt.is_float:
        return None
    if isinstance(lit, bool) and not dt.is_bool:
        return None
    if dt.is_handle or dt.is_void:
        return None
    return dt


def typed_binary(op: str, a: PrimExpr, b: PrimExpr, span: Span | None, fold: bool = False) -> PrimExpr:
    if op in LOGIC_OPS:
        for v in (a, b):
            if not v.dtype.element().is_bool:
                raise Diagnostic(f"operands of '{op}' must be bool, got {v.dtype}", span)
    dtype = _common(a.dtype, b.dtype, span, op)
    if op in _INT_ONLY and op.startswith(("shift", "bitwise")) and dtype.element().is_float:
        raise Diagnostic(f"'{SYMBOLS[op]}' needs integer operands, got {dtype}", span)
    a = cast_to(a, dtype, span)
    b = cast_to(b, dtype, span)
    result = BOOL.with_lanes(dtype.lanes) if op in COMPARE_OPS else dtype
    if fold:
        folded = fold_constants(op, a, b, result, span)
        if folded is None and op not in LOGIC_OPS:
            # x + 0, x * 1, T.min(x, x)...: TVM's operators fold these too (its parser
            # builds 'and'/'or' as nodes, unfolded)
            folded = fold_identity(op, a, b)
        if folded is not None:
            return folded
    return BinOp(op, a, b, result, span)


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


_INT_FOLD = {
    **_PY_FOLD,
    "div": _trunc_div,
    "mod": lambda x, y: x - _trunc_div(x, y) * y,
    "and": lambda x, y: bool(x) and bool(y), "or": lambda x, y: bool(x) or bool(y),
}
_FLOAT_FOLD = {k: _PY_FOLD[k] for k in ("add", "sub", "mul", "min", "max", "eq", "ne", "lt",
                                         "le", "gt", "ge")}
_FLOAT_FOLD["div"] = lambda x, y: x / y


def fold_constants(op: str, a: PrimExpr, b: PrimExpr, dtype, span: Span | None) -> PrimExpr | None:
    """``a op b`` as one immediate when both are scalar immediates and the result is exact."""
    if a.dtype.lanes != 1:
        return None
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        if op in ("div", "mod", "floordiv", "floormod") and b.value == 0:
            return None
        if op in ("shift_left", "shift_right") and not 0 <= b.value < a.dtype.bits:
            return None
        fn = _INT_FOLD.get(op)
        if fn is None:
            return None
        value = fn(a.value, b.value)
        if dtype.is_bool:
            return IntImm(dtype, int(bool(value)), span)
        bits = dtype.bits
        lo, hi = (0, 2**bits - 1) if dtype.is_uint else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return IntImm(dtype, int(value), span) if lo <= value <= hi else None
    if isinstance(a, FloatImm) and isinstance(b, FloatImm):
        # as TVM: float32 and float64 only, on the operands' values in their dtype
        # (a float32 literal holds a double until then), the result rounded to it
        fn = _FLOAT_FOLD.get(op)
        if fn is None or (op == "div" and b.value == 0.0) or a.dtype.base not in _FLOAT_FMT:
            return None
        value = fn(_round_float(a.value, a.dtype), _round_float(b.value, b.dtype))
        if dtype.is_bool:
            return IntImm(dtype, int(bool(value)), span)
        return FloatImm(dtype, _round_float(float(value), dtype), span)
    return None


_FLOAT_FMT = {"float32": "f", "float64": "d"}


def _round_float(value: float, dtype: DataType) -> float:
    """``value`` rounded to float32 (float64 values are doubles already)."""
    fmt = _FLOAT_FMT.get(dtype.base)
    if fmt is None or value != value or value in (float("inf"), float("-inf")):
        return value
    try:
        return struct.unpack(fmt, struct.pack(fmt, value))[0]
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def difference(stop: PrimExpr, start: PrimExpr, span: Span | None) -> PrimExpr:
    """``stop - start`` for loop and slice bounds, folded where the text wrote
    ``start + n`` (so ``range(i, i + 4)`` has extent 4 and printing round-trips)."""
    from tirc.ir.equal import structural_equal

    if isinstance(stop, IntImm) and isinstance(start, IntImm):
        return IntImm(stop.dtype if stop.dtype.bits >= start.dtype.bits else start.dtype,
                      stop.value - start.value, span)
    if isinstance(stop, BinOp) and stop.op == "add":
        if structural_equal(stop.a, start):
            return stop.b
        if structural_equal(stop.b, start):
            return stop.a
    result = binary("sub", stop, start, span)
    assert isinstance(result, PrimExpr)
    return result
