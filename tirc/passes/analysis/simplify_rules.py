"""Rewrite rules of Simplify for binary operators: constant folding, identities,
reassociation of integer constants, and decisions from integer ranges. Nothing is
dropped that could have a side effect, and floats are never reassociated."""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.const_fold import fold_imms, is_imm
from tirc.ir.dtype import BOOL
from tirc.ir.expr import BinOp, Call, IntImm, PrimExpr
from tirc.ir.ops import INTRINSICS
from tirc.ir.visitor import walk
from tirc.passes.analysis.simplify_arith import Interval, decide_compare, interval

def is_pure(e: PrimExpr) -> bool:
    """No call in ``e`` may have a side effect (module calls count as side-effecting)."""
    for n in walk(e):
        if isinstance(n, Call):
            intr = INTRINSICS.get(n.op) if isinstance(n.op, str) else None
            if intr is None or not intr.pure:
                return False
    return True


def imm_bool(value: bool) -> IntImm:
    return IntImm(BOOL, int(value))


def const_int(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) and e.dtype.lanes == 1 else None


def _is_value(e: PrimExpr, value) -> bool:
    return is_imm(e) and e.value == value



def simplify_binop(e: BinOp, ranges: dict[int, Interval]) -> PrimExpr:
    """``e`` (whose operands are already simplified) rewritten by folding, identities,
    reassociation of constants and the integer ranges of variables."""
    op, a, b, dt = e.op, e.a, e.b, e.dtype
    folded = fold_imms(op, a, b, dt)
    if folded is not None:
        return folded
    if dt.lanes != 1 and op not in ("and", "or"):
        return e
    ints = a.dtype.is_integer and a.dtype.lanes == 1
    same = a == b and is_pure(a)
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        if ints and same:
            return imm_bool(op in ("eq", "le", "ge"))
        decided = decide_compare(op, a, b, ranges) if ints else None
        return e if decided is None else imm_bool(decided)
    if op in ("and", "or"):
        return _logic(e)
    if op in ("min", "max") and same:
        return a
    if not (ints or dt.is_float):
        return e
    if ints and is_imm(a) and not is_imm(b) and op in ("add", "mul"):
        return simplify_binop(replace(e, a=b, b=a), ranges)  # constants go right
    if op in ("add", "sub") and ints and _is_value(b, 0):
        return a
    if op == "sub" and dt.is_float and _is_value(b, 0.0):
        return a
    if op == "sub" and ints and same:
        return IntImm(dt, 0)
    if op == "mul" and _is_value(b, 1):
        return a
    if op == "mul" and ints and _is_value(b, 0) and is_pure(a):
        return b
    if (op == "div" or op == "floordiv" and ints) and _is_value(b, 1):
        return a
    if op in ("mod", "floormod") and ints and _is_value(b, 1) and is_pure(a):
        return IntImm(dt, 0)
    return _reassociate(e, ranges) if ints else e

def _logic(e: BinOp) -> PrimExpr:
    a, b, is_and = e.a, e.b, e.op == "and"
    for x, y in ((a, b), (b, a)):
        if is_imm(x):
            if bool(x.value) == is_and:  # true and y / false or y
                return y
            if is_pure(y):  # false and y / true or y
                return x
    if a == b and is_pure(a):
        return a
    return e


def _reassociate(e: BinOp, ranges: dict[int, Interval]) -> PrimExpr:
    """``(x + c1) + c2`` -> ``x + (c1 + c2)``; likewise for ``-`` and ``*``, and the
    range-decided forms of ``min``, ``max``, ``floordiv``, ``floormod``."""
    op, a, b, dt = e.op, e.a, e.b, e.dtype
    c2 = const_int(b)
    if c2 is not None and isinstance(a, BinOp) and const_int(a.b) is not None:
        c1, inner = a.b.value, a.op
        combined = None
        if op in ("add", "sub") and inner in ("add", "sub"):
            total = (c1 if inner == "add" else -c1) + (c2 if op == "add" else -c2)
            combined = ("add", total) if total >= 0 else ("sub", -total)
        elif op == "mul" and inner == "mul":
            combined = ("mul", c1 * c2)
        if combined is not None:
            const = fold_imms("add", IntImm(dt, combined[1]), IntImm(dt, 0), dt)
            if const is not None:
                return simplify_binop(BinOp(combined[0], a.a, const, dt, e.span), ranges)
    if op in ("add", "sub") and c2 is not None and c2 < 0:  # x + -3 -> x - 3
        flipped = fold_imms("sub", IntImm(dt, 0), b, dt)
        if flipped is not None:
            return simplify_binop(BinOp("sub" if op == "add" else "add", a, flipped, dt, e.span), ranges)
    if (op in ("add", "sub") and c2 is None and isinstance(a, BinOp) and a.op in ("add", "sub")
            and const_int(a.b) is not None):  # (x + c) + y -> (x + y) + c
        inner = simplify_binop(BinOp(op, a.a, b, dt, e.span), ranges)
        return simplify_binop(BinOp(a.op, inner, a.b, dt, a.span), ranges)
    ia, ib = interval(a, ranges), interval(b, ranges)
    if ia is None or ib is None:
        return e
    if op in ("min", "max"):
        if ia[1] <= ib[0]:
            return a if op == "min" else b
        if ib[1] <= ia[0]:
            return b if op == "min" else a
    if op in ("floordiv", "floormod") and c2 is not None and c2 > 0 \
            and ia[0] // c2 == ia[1] // c2:
        if op == "floordiv":
            return IntImm(dt, ia[0] // c2)
        return a if ia[0] >= 0 and ia[1] < c2 else e
    return e

