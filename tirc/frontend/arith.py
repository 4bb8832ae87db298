"""Typing of operators as TVM does it: literals adopt the other operand's dtype,
narrower integers widen, integers meet floats as floats, scalars broadcast to vectors."""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.values import (describe, float_literal, is_scalar_buffer, literal_expr,
                                  scalar_element)
from tirc.ir.const_fold import COMPARE, INT_OPS, fold_imms, try_const_fold
from tirc.ir.dtype import BOOL, DataType
from tirc.ir.expr import (COMPARE_OPS, LOGIC_OPS, BinOp, Broadcast, Cast, FloatImm, IntImm,
                          PrimExpr)

# Python numbers of the script, folded as Python does (``/`` is not an integer operator)
_PY_FOLD = {**{op: f for op, f in INT_OPS.items() if op not in ("div", "mod")}, **COMPARE}
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
    if e.dtype.lanes == 1 and not e.dtype.scalable and (dtype.lanes > 1 or dtype.scalable):
        return Broadcast(cast_to(e, dtype.element(), span), dtype.lanes, span, dtype.scalable)
    if isinstance(e, IntImm) and dtype.is_integer and e.dtype.is_integer:
        return IntImm(dtype, e.value, e.span)
    if isinstance(e, (IntImm, FloatImm)) and dtype.is_float and not e.dtype.is_bool:
        return float_literal(float(e.value), dtype, e.span)
    return Cast(dtype, e, span)


def _common(a: DataType, b: DataType, span: Span | None, op: str) -> DataType:
    if a == b:
        return a
    lanes = max(a.lanes, b.lanes)
    scalable = a.scalable or b.scalable  # a scalar with a scalable vector: broadcast
    if a.scalable != b.scalable and not (a.is_scalar or b.is_scalar):
        raise Diagnostic(f"operands of '{SYMBOLS.get(op, op)}' mix a scalable and a fixed "
                         f"vector: {a} and {b}", span)
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
    return DataType(res.base, lanes, scalable) if scalable else res.with_lanes(lanes)


def binary(op: str, a: object, b: object, span: Span | None, fold: bool = True) -> object:
    """``a op b`` for evaluated operands. Like TVM's operators, folds constant operands
    (``fold=False`` for the node constructors ``T.Add`` and kin, which never fold)."""
    if _is_py_number(a) and _is_py_number(b) or (isinstance(a, bool) and isinstance(b, bool)):
        if op in _PY_FOLD and not (op in _INT_ONLY and (isinstance(a, float) or isinstance(b, float))):
            if op in ("floordiv", "floormod") and b == 0:
                raise Diagnostic("division by zero", span)
            return _PY_FOLD[op](a, b)
    a = scalar_element(a, span) if is_scalar_buffer(a) else a
    b = scalar_element(b, span) if is_scalar_buffer(b) else b
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
    result = BOOL.with_lanes_of(dtype) if op in COMPARE_OPS else dtype
    if fold:
        # as TVM's operators: two immediates fold, and so do x + 0, x * 1, T.min(x, x)...
        # (its parser builds 'and'/'or' of a non-constant as nodes, unfolded)
        folded = (fold_imms(op, a, b, result) if op in LOGIC_OPS
                  else try_const_fold(op, a, b, result))
        if folded is not None:
            return folded if folded is a or folded is b else replace(folded, span=span)
    return BinOp(op, a, b, result, span)


def difference(stop: PrimExpr, start: PrimExpr, span: Span | None) -> PrimExpr:
    """``stop - start`` for loop and slice bounds, folded where the text wrote
    ``start + n`` (so ``range(i, i + 4)`` has extent 4 and printing round-trips)."""
    from tirc.ir.equal import structural_equal

    if isinstance(stop, BinOp) and stop.op == "add":
        if structural_equal(stop.a, start):
            return stop.b
        if structural_equal(stop.b, start):
            return stop.a
    result = binary("sub", stop, start, span)
    assert isinstance(result, PrimExpr)
    return result
