"""Bound deduction for LoopPartition (TVM's ``arith::DeduceBound``): solve a comparison
for one variable, ``i * 4 + j < 39991`` with ``j`` in ``[0, 3]`` giving ``i <= 9996``.

Only the operators on the path from the root to the variable matter (``+``, ``-``, ``*``
by a value of known sign, ``//`` by a positive or negative value); anything else is no
answer (``None``), never a guess. Intervals, their evaluation and the analyzer are the
region analyses' (:mod:`tirc.passes.analysis.region_relax`, :mod:`tirc.passes.analysis.arith_analyzer`);
expressions are built with TVM's constant-folding operators (:func:`fold`).
"""
from __future__ import annotations

from tirc.ir.expr import BinOp, IntImm, PrimExpr, Var
from tirc.ir.visitor import child_fields, is_node, walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop
from tirc.passes.analysis.region_relax import (EVERYTHING, NEG_INF, NOTHING, POS_INF, IntervalSet,
                                      eval_set)

ISet = IntervalSet


def _inf(e) -> bool:
    return e is NEG_INF or e is POS_INF


def _int(e, value: int) -> bool:
    return isinstance(e, IntImm) and e.value == value


def fold(op: str, a, b):
    """``a op b`` as TVM's operators build it (:func:`~tirc.passes.analysis.arith_ops.binop`),
    ``min``/``max`` aware of the infinities."""
    if op in ("min", "max"):
        low, high = (NEG_INF, POS_INF) if op == "min" else (POS_INF, NEG_INF)
        for x, y in ((a, b), (b, a)):
            if x is high:
                return y
            if x is low:
                return x
    return binop(op, a, b)


def neg(a: PrimExpr) -> PrimExpr:
    """TVM's unary minus: ``0 - a`` unless ``a`` is a constant."""
    if isinstance(a, IntImm):
        return IntImm(a.dtype, -a.value)
    return BinOp("sub", IntImm(a.dtype, 0), a, a.dtype)


def simplify(ana: Analyzer, e):
    return e if _inf(e) else ana.simplify(e)


def intersect(ana: Analyzer, a: ISet, b: ISet) -> ISet:
    """TVM's ``Intersect(analyzer, a, b)``: empty when ``max < min`` is provable."""
    hi = fold("min", a.max, b.max)
    lo = fold("max", a.min, b.min)
    if not _inf(hi) and not _inf(lo) and ana.can_prove(fold("lt", hi, lo)):
        return NOTHING
    return ISet(lo, hi)


def intersect_all(sets: list[ISet]) -> ISet:
    """TVM's ``Intersect(Array<IntSet>)``: with a fresh analyzer, ends simplified."""
    if not sets:
        return NOTHING
    if len(sets) == 1:
        return sets[0]
    fresh = Analyzer()
    x = sets[0]
    for s in sets[1:]:
        x = intersect(fresh, x, s)
    return ISet(simplify(fresh, x.min), simplify(fresh, x.max))


def _sign(ana: Analyzer, s: ISet) -> str:
    """``positive``, ``negative``, ``zero`` or ``unknown`` (TVM's ``GetSignType``)."""
    lo = simplify(ana, s.min)
    if isinstance(lo, IntImm) and lo.value > 0:
        return "positive"
    hi = simplify(ana, s.max)
    if isinstance(hi, IntImm) and hi.value < 0:
        return "negative"
    if s.is_point and _int(s.min, 0):
        return "zero"
    return "unknown"


# -- DeduceBound ------------------------------------------------------------------------------

def _path(target: Var, expr: PrimExpr) -> list[PrimExpr]:
    """The nodes from ``expr`` down to the first occurrence of ``target`` (pre-order);
    empty when ``target`` does not occur."""
    path: list[PrimExpr] = []
    seen: set[int] = set()

    def visit(n) -> bool:
        if id(n) in seen:
            return False
        seen.add(id(n))
        path.append(n)
        if n is target:
            return True
        for child in _children(n):
            if visit(child):
                return True
        path.pop()
        return False

    visit(expr)
    return path


def _children(n) -> list:
    out = []
    for name in child_fields(type(n)):
        v = getattr(n, name)
        for item in (v if isinstance(v, tuple) else (v,)):
            if isinstance(item, PrimExpr) and is_node(item):
                out.append(item)
    return out


_FLIP = {"greater": "less", "less": "greater", "equal": "equal"}


def _count(target: Var, e: PrimExpr) -> int:
    return sum(1 for n in walk(e) if n is target)


def deduce_bound(target: Var, cond: PrimExpr, hint: dict[int, ISet],
                 relax: dict[int, ISet]) -> ISet | None:
    """The interval of ``target`` in which ``cond`` holds, as far as it can be solved
    for ``target`` (other variables relaxed over ``relax``); None when it cannot."""
    if not isinstance(cond, BinOp) or cond.op not in ("lt", "le", "gt", "ge", "eq"):
        return None
    if _count(target, cond) != 1:
        return None
    one = IntImm(cond.a.dtype, 1)
    left = bool(_path(target, cond.a))
    expr, other = (cond.a, cond.b) if left else (cond.b, cond.a)
    if cond.op == "eq":
        comp, result = "equal", other
    else:
        # put the target's side on the left: a < b -> a <= b - 1, b >= a + 1, ...
        rel = cond.op if left else {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}[cond.op]
        comp = "less" if rel in ("lt", "le") else "greater"
        result = other
        if rel == "lt":
            result = fold("sub", other, one)
        elif rel == "gt":
            result = fold("add", other, one)
    ana = Analyzer()
    # relax the other variables
    a, b = eval_set(expr, relax), eval_set(result, relax)
    if a.is_everything or b.is_everything:
        return None
    if comp == "equal" and not (_single(ana, a) and _single(ana, b)):
        return None
    expr = a.min if comp == "greater" else a.max
    result = b.max if comp == "greater" else b.min
    if _inf(expr) or _inf(result):
        return None
    path = _path(target, expr)
    if not path:
        return None
    for k, node in enumerate(path[:-1]):
        nxt = path[k + 1]
        if not isinstance(node, BinOp):
            return None
        on_left = node.a is nxt
        if node.op == "add":
            result = fold("sub", result, node.b if on_left else node.a)
        elif node.op == "sub":
            if on_left:
                result = fold("add", result, node.b)
            else:
                result = neg(fold("sub", result, node.a))
                comp = _FLIP[comp]
        elif node.op == "mul":
            operand = node.b if on_left else node.a
            sign = "positive" if operand.dtype.is_uint else _sign(ana, eval_set(operand, hint))
            if sign == "negative":
                comp = _FLIP[comp]
            elif sign != "positive":
                return None
            divided = ana.can_prove(fold("eq", fold("floormod", result, operand),
                                           IntImm(operand.dtype, 0)))
            result = fold("floordiv", result, operand)
            if not divided:
                if comp == "greater":
                    result = fold("add", result, IntImm(result.dtype, 1))
                elif comp == "equal":
                    return None
        elif node.op == "floordiv":
            if not on_left:
                return None
            divisor = node.b
            if ana.can_prove(fold("eq", divisor, IntImm(divisor.dtype, 0))):
                return None
            sign = "positive" if divisor.dtype.is_uint else _sign(ana, eval_set(divisor, hint))
            if sign == "negative":
                comp = _FLIP[comp]
                divisor = neg(divisor)
                result = neg(result)
            elif sign != "positive":
                return None
            if comp == "greater":
                result = fold("mul", result, divisor)
            elif comp == "equal":
                return None
            else:
                result = fold("sub", fold("add", fold("mul", result, divisor), divisor),
                              IntImm(divisor.dtype, 1))
            if sign == "negative":
                result = fold("add", fold("sub", result, divisor), IntImm(divisor.dtype, 1))
        else:
            return None
    result = ana.simplify(result)
    if comp == "equal":
        return ISet(result, result)
    return ISet(result, POS_INF) if comp == "greater" else ISet(NEG_INF, result)


def _single(ana: Analyzer, s: ISet) -> bool:
    if _inf(s.min) or _inf(s.max):
        return False
    return ana.can_prove(fold("eq", s.min, s.max))


def inverse(cond: PrimExpr) -> PrimExpr | None:
    """The negation of a comparison, as a comparison (``a < b`` -> ``a >= b``)."""
    if isinstance(cond, BinOp):
        op = {"lt": "ge", "gt": "le", "le": "gt", "ge": "lt", "eq": "ne", "ne": "eq"}.get(cond.op)
        if op is not None:
            return BinOp(op, cond.a, cond.b, cond.dtype)
    return None


__all__ = ["Analyzer", "EVERYTHING", "ISet", "NEG_INF", "NOTHING", "POS_INF",
           "deduce_bound", "eval_set", "fold", "intersect", "intersect_all", "inverse"]
