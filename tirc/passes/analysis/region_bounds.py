"""What branch conditions and block predicates tell region relaxation.

- :func:`solve_condition` (TVM's ``ConditionalBoundsContext``): inside ``if i < 112:``
  the relaxed variable ``i`` ranges over ``[0, 111]`` only. Conditions made of
  one-variable linear comparisons narrow the domains; any other condition is left
  unresolved (the caller keeps it as a predicate).
- :func:`predicate_refiner` (the part of TVM's ``DetectIterMap`` that region estimation
  uses): a predicate such as ``j * 8 + k < 60`` bounds every index whose relaxed part is
  exactly ``j * 8 + k`` (or a multiple of it), so ``i * 64 + j * 8 + k`` covers
  ``[i * 64, i * 64 + 59]``.
"""
from __future__ import annotations

from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, Not, PrimExpr, Var
from tirc.ir.visitor import walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_canonical_form import Sum, to_sum
from tirc.ir.renew import substitute
from tirc.passes.analysis.arith_ops import add, floordiv_int, imm, index_typed
from tirc.passes.analysis.region_relax import Dom, IntervalSet, NEG_INF, POS_INF, intersect
from tirc.records import record

_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
_SIMPLE = ("add", "sub", "mul", "floordiv", "floormod")


def conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    """The comparisons ``cond`` requires all of (through ``and`` and ``T.likely``)."""
    if isinstance(cond, BinOp) and cond.op == "and":
        return conjuncts(cond.a) + conjuncts(cond.b)
    if isinstance(cond, Call) and cond.op == "likely":
        return conjuncts(cond.args[0])
    return [cond]


def _linear(diff: Sum) -> dict[int, tuple[Var, int]] | None:
    """The variable terms of a canonical sum, when each is ``var * scale``."""
    out: dict[int, tuple[Var, int]] = {}
    for a in diff.args:
        if not (isinstance(a.index, Var) and a.lower == 1 and a.upper is None):
            return None
        prev = out.get(id(a.index))
        out[id(a.index)] = (a.index, a.scale + (prev[1] if prev else 0))
    return out


def _one_side(op: str, c: int, k: int) -> tuple[int | None, int | None] | None:
    """Bounds of ``v`` from ``c * v + k  op  0`` (``c != 0``)."""
    if op in ("lt", "le"):
        m = -k - 1 if op == "lt" else -k  # c * v <= m
        return (None, floordiv_int(m, c)) if c > 0 else (-floordiv_int(m, -c), None)
    if op in ("gt", "ge"):
        m = -k + 1 if op == "gt" else -k  # c * v >= m
        return (-floordiv_int(-m, c), None) if c > 0 else (None, floordiv_int(-m, -c))
    if op == "eq" and k % c == 0:
        return (-k // c, -k // c)
    return None


def solve_condition(cond: PrimExpr, dom: Dom) -> dict[int, IntervalSet] | None:
    """The narrowed domains of the relaxed variables of ``cond`` (possibly none), or None
    when ``cond`` is not a conjunction of one-variable linear comparisons."""
    if not _may_solve(cond):
        return None
    ana = Analyzer()
    cond = ana.simplify(cond)
    if isinstance(cond, IntImm):
        return None
    bounds: dict[int, list] = {}
    seen_equation = False
    for c in conjuncts(cond):
        if not (isinstance(c, BinOp) and c.op in _COMPARE and index_typed(c.a)):
            continue
        inner = [n for n in walk(c) if n is not c]
        if not all((isinstance(n, BinOp) and n.op in _SIMPLE) or isinstance(n, IntImm)
                   or (isinstance(n, Var) and n.dtype.is_integer) for n in inner):
            continue
        if not any(isinstance(n, Var) for n in inner):
            continue
        seen_equation = True
        diff = to_sum(ana.canonical.mutate(BinOp("sub", c.a, c.b, c.a.dtype)))
        terms = _linear(diff)
        if terms is None or len(terms) != 1:
            return None
        (var, scale), = terms.values()
        side = _one_side(c.op, scale, diff.base) if scale else None
        if side is None:
            return None
        entry = bounds.setdefault(id(var), [var, None, None])
        if side[0] is not None:
            entry[1] = side[0] if entry[1] is None else max(entry[1], side[0])
        if side[1] is not None:
            entry[2] = side[1] if entry[2] is None else min(entry[2], side[1])
    if not seen_equation:
        return None
    out: dict[int, IntervalSet] = {}
    for key, (var, lo, hi) in bounds.items():
        if key not in dom:
            continue  # a bound of a variable not relaxed here: a hint only
        new = IntervalSet(NEG_INF if lo is None else imm(var.dtype, lo),
                          POS_INF if hi is None else imm(var.dtype, hi))
        out[key] = intersect(dom[key], new)
    return out


def _solvable(c: PrimExpr) -> bool | None:
    """For a conjunct ``c``: None when :func:`solve_condition` passes over it (not a
    comparison of simple index arithmetic with a variable), else whether it has one
    variable (two or more: the condition is not solved)."""
    if not (isinstance(c, BinOp) and c.op in _COMPARE and index_typed(c.a)):
        return None
    found: set[int] = set()
    for n in walk(c):
        if n is c or isinstance(n, IntImm) or (isinstance(n, BinOp) and n.op in _SIMPLE):
            continue
        if not (isinstance(n, Var) and n.dtype.is_integer):
            return None
        found.add(id(n))
    return len(found) == 1 if found else None


def _disjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, BinOp) and cond.op == "or":
        return _disjuncts(cond.a) + _disjuncts(cond.b)
    return [cond]


def _may_solve(cond: PrimExpr) -> bool:
    """Whether :func:`solve_condition` can bound anything in ``cond``, judged from its
    shape before the simplification, which costs most of the region analysis of a
    convolution's padding conditions and finds nothing there: the negation of a
    conjunction (a disjunction once simplified), and a comparison of two variables
    (``h * 2 + r - 1 >= 0``), are not solved."""
    if isinstance(cond, Not):
        inner = conjuncts(cond.a)
        if len(inner) > 1:
            return False
        parts = _disjuncts(inner[0])  # not (a or b): not a and not b
    else:
        parts = conjuncts(cond)
    seen = False
    for c in parts:
        one = _solvable(c)
        if one is False:
            return False
        seen = seen or bool(one)
    return seen


def may_constrain(cond: PrimExpr) -> bool:
    """Whether ``cond``, simplified, may state a bound for :func:`predicate_constraints`
    (an integer comparison), judged from its shape: a comparison of values that are not
    integers and load from memory (a sort's ``values[i] <= values[j]``) never does, and
    its simplification costs milliseconds. Conjunctions, disjunctions and negations are
    looked through; anything else may."""
    if isinstance(cond, Not):
        return may_constrain(cond.a)
    if isinstance(cond, BinOp) and cond.op in ("and", "or"):
        return may_constrain(cond.a) or may_constrain(cond.b)
    if isinstance(cond, BinOp) and cond.op in _COMPARE and not index_typed(cond.a):
        return not any(isinstance(n, BufferLoad) for n in walk(cond))
    return True


# ---- predicates --------------------------------------------------------------------------

@record(frozen=True)
class _Constraint:
    coeffs: tuple[tuple[int, int], ...]  # sorted (id(var), scale) over relaxed variables
    lo: int | None
    hi: int | None


def _points(dom: Dom) -> dict[int, PrimExpr]:
    return {k: s.min for k, s in dom.items() if s.is_point}


def _relaxed_terms(e: PrimExpr, dom: Dom, ana: Analyzer):
    """``e`` as (relaxed linear terms, rest); variables fixed to a point substituted."""
    points = _points(dom)
    if points:
        e = substitute(e, points)
    s = to_sum(ana.canonical.mutate(e))
    iters, rest = {}, Sum(s.dtype, [], s.base)
    for a in s.args:
        if (isinstance(a.index, Var) and id(a.index) in dom and a.lower == 1
                and a.upper is None):
            iters[id(a.index)] = iters.get(id(a.index), 0) + a.scale
        else:
            rest.args.append(a)
    return {k: v for k, v in iters.items() if v}, rest


def _mentions_relaxed(e: PrimExpr, dom: Dom, seen: set[int] | None = None) -> bool:
    """Whether ``e`` holds a variable that ``dom`` relaxes to more than a point, or one
    fixed to a point that does (what :func:`_relaxed_terms` substitutes)."""
    seen = set() if seen is None else seen
    for n in walk(e):
        if n.__class__ is Var and id(n) not in seen:
            seen.add(id(n))
            s = dom.get(id(n))
            if s is not None and (not s.is_point or _mentions_relaxed(s.min, dom, seen)):
                return True
    return False


def predicate_constraints(pred: PrimExpr, dom: Dom) -> list[_Constraint]:
    """Bounds ``lo <= L <= hi`` on linear forms ``L`` of relaxed variables that
    ``pred`` states with constants alone."""
    ana = Analyzer()
    out = []
    for c in conjuncts(pred):
        if not (isinstance(c, BinOp) and c.op in _COMPARE and index_typed(c.a)):
            continue
        if not _mentions_relaxed(c, dom):  # bounds none of them: no canonical form needed
            continue
        iters, rest = _relaxed_terms(BinOp("sub", c.a, c.b, c.a.dtype), dom, ana)
        if not iters or rest.args:
            continue
        op, k = c.op, rest.base
        if all(v < 0 for v in iters.values()):
            iters = {key: -v for key, v in iters.items()}
            k = -k
            op = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op, op)
        elif not all(v > 0 for v in iters.values()):
            continue
        # L + k  op  0
        lo = hi = None
        if op == "lt":
            hi = -k - 1
        elif op == "le":
            hi = -k
        elif op == "gt":
            lo = -k + 1
        elif op == "ge":
            lo = -k
        elif op == "eq":
            lo = hi = -k
        elif op == "ne" and len(iters) == 1:
            (key, scale), = iters.items()
            s = dom[key]
            if scale == 1 and isinstance(s.min, IntImm) and s.min.value == -k:
                lo = -k + 1
            elif scale == 1 and isinstance(s.max, IntImm) and s.max.value == -k:
                hi = -k - 1
        if lo is not None or hi is not None:
            out.append(_Constraint(tuple(sorted(iters.items())), lo, hi))
    return out


def predicate_refiner(pred: PrimExpr, dom: Dom):
    """A refiner for :func:`~tirc.passes.analysis.region_relax.eval_set` applying ``pred``'s
    bounds, or None when ``pred`` bounds nothing."""
    constraints = predicate_constraints(pred, dom)
    if not constraints:
        return None
    ana = Analyzer()

    def refine(e: PrimExpr, ev) -> IntervalSet | None:
        if not (isinstance(e, Var) or (isinstance(e, BinOp) and e.op in ("add", "sub", "mul"))):
            return None
        if not any(isinstance(n, Var) and id(n) in dom for n in walk(e)):
            return None
        iters, rest = _relaxed_terms(e, dom, ana)
        if not iters:
            return None
        natural = _natural(iters, dom)
        if natural is None:
            return None
        for c in constraints:
            m = _multiple(iters, dict(c.coeffs))
            if m is None:
                continue
            lo = natural[0] if c.lo is None else max(natural[0], c.lo * m)
            hi = natural[1] if c.hi is None else min(natural[1], c.hi * m)
            base = ev.interval_of(rest.normalize())
            if not (base.has_lower and base.has_upper):
                return None
            return IntervalSet(add(base.min, imm(e.dtype, lo)), add(base.max, imm(e.dtype, hi)))
        return None
    return refine


def _natural(iters: dict[int, int], dom: Dom) -> tuple[int, int] | None:
    lo = hi = 0
    for key, scale in iters.items():
        s = dom[key]
        if not (isinstance(s.min, IntImm) and isinstance(s.max, IntImm)):
            return None
        a, b = s.min.value * scale, s.max.value * scale
        lo, hi = lo + min(a, b), hi + max(a, b)
    return lo, hi


def _multiple(iters: dict[int, int], coeffs: dict[int, int]) -> int | None:
    """``m`` when ``iters == m * coeffs`` for a positive integer ``m``."""
    if iters.keys() != coeffs.keys():
        return None
    key = next(iter(coeffs))
    if iters[key] % coeffs[key]:
        return None
    m = iters[key] // coeffs[key]
    if m <= 0 or any(iters[k] != m * coeffs[k] for k in coeffs):
        return None
    return m
