"""Region relaxation: the integer intervals an index expression covers while some
variables range over their domains (TVM's ``IntervalSet``/``EvalSet``).

An :class:`IntervalSet` holds symbolic inclusive bounds (``i * 8`` to ``i * 8 + 7``) or
none (:data:`NEG_INF`/:data:`POS_INF`). :func:`eval_set` relaxes the variables of a
domain map over their intervals by interval arithmetic, building bounds with TVM's
constant-folding operators; :func:`cover_range` turns a set into the ``Range`` of a
buffer region (simplified as TVM simplifies it). Which thread-bound loops relax for a
buffer follows the storage scope (:func:`need_relax_thread`): the threads sharing the
memory are relaxed, so a ``shared`` buffer relaxes ``threadIdx``/``vthread`` loops but
not ``blockIdx``, ``local`` relaxes none, ``global`` all, ``warp`` only
``threadIdx.x``.

Predicates and branch conditions refine domains in :mod:`tirc.passes.analysis.region_bounds`.
"""
from __future__ import annotations

import math

from tirc.ir.block import Range
from tirc.ir.dtype import BOOL
from tirc.ir.expr import BinOp, BufferLoad, Cast, IntImm, PrimExpr, Ramp, Select, Var
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, cast, imm, is_int, modular_set
from tirc.ir.visitor import walk
from tirc.records import record


class _Inf:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


NEG_INF = _Inf("neg_inf")
POS_INF = _Inf("pos_inf")
Bound = PrimExpr | _Inf


@record(frozen=True, eq=False)
class IntervalSet:
    """``[min, max]``, inclusive. A single point has the *same object* as both bounds
    (as TVM's ``same_as``), which keeps a point's expression as it was written."""

    min: Bound
    max: Bound

    @staticmethod
    def point(e: PrimExpr) -> "IntervalSet":
        return IntervalSet(e, e)

    @property
    def is_point(self) -> bool:
        return self.min is self.max and not isinstance(self.min, _Inf)

    @property
    def has_lower(self) -> bool:
        return self.min is not NEG_INF and self.min is not POS_INF

    @property
    def has_upper(self) -> bool:
        return self.max is not POS_INF and self.max is not NEG_INF

    @property
    def is_empty(self) -> bool:
        return self.min is POS_INF or self.max is NEG_INF

    @property
    def is_everything(self) -> bool:
        return self.min is NEG_INF and self.max is POS_INF


EVERYTHING = IntervalSet(NEG_INF, POS_INF)
NOTHING = IntervalSet(POS_INF, NEG_INF)


def from_range(min_: PrimExpr, extent: PrimExpr) -> IntervalSet:
    """TVM's ``IntSet::FromRange``: a unit range is the point ``min``."""
    if is_int(extent, 1):
        return IntervalSet.point(min_)
    return IntervalSet(min_, binop("sub", binop("add", extent, min_), imm(extent.dtype, 1)))


def cover_range(s: IntervalSet, fallback: Range) -> Range:
    """The range ``[min, max + 1)`` of a bounded set, simplified; else ``fallback``."""
    if not (s.has_lower and s.has_upper):
        return fallback
    ana = Analyzer()
    extent = binop("sub", binop("add", s.max, imm(s.max.dtype, 1)), s.min)
    return Range(ana.simplify(s.min), ana.simplify(extent))


def union(sets: list[IntervalSet]) -> IntervalSet:
    """The smallest interval holding all of ``sets``, its bounds simplified."""
    sets = [s for s in sets if not s.is_empty] or sets[:1]
    if len(sets) == 1:
        return sets[0]
    lo, hi = sets[0].min, sets[0].max
    for s in sets[1:]:
        lo = NEG_INF if NEG_INF in (lo, s.min) else binop("min", lo, s.min)
        hi = POS_INF if POS_INF in (hi, s.max) else binop("max", hi, s.max)
    ana = Analyzer()
    return IntervalSet(lo if isinstance(lo, _Inf) else ana.simplify(lo),
                       hi if isinstance(hi, _Inf) else ana.simplify(hi))


def intersect(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    lo = b.min if not a.has_lower else a.min if not b.has_lower else binop("max", a.min, b.min)
    hi = b.max if not a.has_upper else a.max if not b.has_upper else binop("min", a.max, b.max)
    ana = Analyzer()
    return IntervalSet(lo if isinstance(lo, _Inf) else ana.simplify(lo),
                       hi if isinstance(hi, _Inf) else ana.simplify(hi))


# ---- thread relaxation by storage scope ------------------------------------------------

_STORAGE_RANK = {"global": 0, "shared": 1, "shared.dyn": 1, "warp": 2, "local": 3}


def thread_rank(tag: str) -> int:
    """0 for ``blockIdx``, 1 for ``threadIdx`` and virtual threads."""
    return 0 if tag.startswith("blockIdx") else 1


def need_relax_thread(tag: str, scope: str) -> bool:
    """Whether a loop bound to thread ``tag`` relaxes for a buffer in ``scope``: every
    thread sharing the memory touches its own part of it."""
    rank = _STORAGE_RANK.get(scope, 3)
    if rank == 2:
        return tag == "threadIdx.x"
    return rank <= thread_rank(tag)


# ---- interval evaluation ---------------------------------------------------------------

Dom = dict[int, IntervalSet]  # id(var) -> the interval it ranges over


def eval_set(e: PrimExpr, dom: Dom, refine=None) -> IntervalSet:
    """The interval ``e`` covers while each variable of ``dom`` ranges over its set
    (TVM's ``EvalSet``). ``refine(e, evaluator)`` may return a tighter set for a
    subexpression (predicate bounds), or None."""
    return _Evaluator(dom, refine).interval_of(e)


def eval_range(min_: PrimExpr, extent: PrimExpr, dom: Dom, refine=None) -> IntervalSet:
    """``EvalSet`` of the range ``[min, min + extent)``."""
    ev = _Evaluator(dom, refine)
    if is_int(extent, 1) or (not isinstance(extent, IntImm) and Analyzer().can_prove_equal(extent, imm(extent.dtype, 1))):
        return ev.interval_of(min_)
    last = Analyzer().simplify(binop("sub", binop("add", min_, extent), imm(extent.dtype, 1)))
    return ev.relax(IntervalSet(min_, last))


def eval_interval(s: IntervalSet, dom: Dom) -> IntervalSet:
    """``EvalSet`` of a set: its lower bound relaxed down, its upper bound up."""
    ev = _Evaluator(dom, None)
    lo = ev.interval_of(s.min).min if s.has_lower else s.min
    hi = ev.interval_of(s.max).max if s.has_upper else s.max
    return IntervalSet(lo, hi)


class _Evaluator:
    def __init__(self, dom: Dom, refine):
        self.dom = dom
        self.refine = refine
        self.depth = 0
        self.memo: dict[int, IntervalSet] = {}
        self.busy: set[int] = set()
        self.ana = Analyzer()

    def relax(self, s: IntervalSet) -> IntervalSet:
        if self.depth >= len(self.dom):
            return s
        self.depth += 1
        lo, hi = self.interval_of(s.min), self.interval_of(s.max)
        self.depth -= 1
        return IntervalSet(lo.min, hi.max)

    def interval_of(self, e) -> IntervalSet:
        if isinstance(e, _Inf):
            return IntervalSet(e, e)
        if self.refine is not None:
            better = self.refine(e, self)
            if better is not None:
                return better
        if isinstance(e, IntImm):
            return IntervalSet.point(e)
        if isinstance(e, Var):
            return self._var(e)
        if isinstance(e, BinOp):
            a, b = self.interval_of(e.a), self.interval_of(e.b)
            if a.min is e.a and a.max is e.a and b.min is e.b and b.max is e.b:
                return IntervalSet.point(e)
            return _combine(e, a, b, self.ana)
        if isinstance(e, Select):
            t, f = self.interval_of(e.true_value), self.interval_of(e.false_value)
            if f.is_empty:
                return t
            if t.is_empty:
                return f
            lo = NEG_INF if NEG_INF in (f.min, t.min) else binop("min", f.min, t.min)
            hi = POS_INF if POS_INF in (f.max, t.max) else binop("max", f.max, t.max)
            return IntervalSet(lo, hi)
        if isinstance(e, Cast):
            v = self.interval_of(e.value)
            if v.min is v.max:
                return v if v.is_empty else IntervalSet.point(cast(e.dtype, v.min))
            return IntervalSet(cast(e.dtype, v.min) if v.has_lower else NEG_INF,
                               cast(e.dtype, v.max) if v.has_upper else POS_INF)
        if isinstance(e, BufferLoad):
            if not e.dtype.is_integer or any(self._uses_dom(i) for i in e.indices):
                return EVERYTHING
            return IntervalSet.point(e)
        if isinstance(e, Ramp) and isinstance(e.stride, IntImm) and not e.scalable:
            base = self.interval_of(e.base)
            span = imm(e.base.dtype, e.stride.value * (e.lanes - 1))
            zero = imm(e.base.dtype, 0)
            extra = IntervalSet(zero, span) if e.stride.value > 0 else IntervalSet(span, zero)
            return _combine(BinOp("add", e.base, span, e.base.dtype), base, extra, self.ana)
        return EVERYTHING

    def _uses_dom(self, e: PrimExpr) -> bool:
        return any(isinstance(n, Var) and id(n) in self.dom for n in walk(e))

    def _var(self, v: Var) -> IntervalSet:
        res = self.dom.get(id(v))
        if res is None:
            return IntervalSet.point(v)
        if res.min is v and res.max is v:
            return res
        if id(v) in self.memo:
            return self.memo[id(v)]
        if id(v) in self.busy:
            return res
        self.busy.add(id(v))
        out = self.relax(res)
        self.busy.discard(id(v))
        self.memo[id(v)] = out
        return out


def _combine(e: BinOp, a: IntervalSet, b: IntervalSet, ana: Analyzer) -> IntervalSet:
    """TVM's ``Combine<Op>``: the interval of ``a op b``."""
    op = e.op
    if a.is_point and b.is_point:
        return IntervalSet.point(binop(op, a.min, b.min))
    if op in ("eq", "ne", "lt", "le", "gt", "ge", "and", "or"):
        return IntervalSet(IntImm(BOOL, 0), IntImm(BOOL, 1))
    if a.is_empty:
        return a
    if b.is_empty:
        return b
    if op == "add":
        lo = binop("add", a.min, b.min) if a.has_lower and b.has_lower else NEG_INF
        hi = binop("add", a.max, b.max) if a.has_upper and b.has_upper else POS_INF
        return IntervalSet(lo, hi)
    if op == "sub":
        lo = binop("sub", a.min, b.max) if a.has_lower and b.has_upper else NEG_INF
        hi = binop("sub", a.max, b.min) if a.has_upper and b.has_lower else POS_INF
        return IntervalSet(lo, hi)
    if op == "max":
        lo = b.min if a.min is NEG_INF else a.min if b.min is NEG_INF else binop("max", a.min, b.min)
        hi = POS_INF if POS_INF in (a.max, b.max) else binop("max", a.max, b.max)
        return IntervalSet(lo, hi)
    if op == "min":
        lo = NEG_INF if NEG_INF in (a.min, b.min) else binop("min", a.min, b.min)
        hi = b.max if a.max is POS_INF else a.max if b.max is POS_INF else binop("min", a.max, b.max)
        return IntervalSet(lo, hi)
    if op == "mul":
        return _mul(a, b, ana)
    if op in ("div", "floordiv"):
        return _div(op, a, b, ana)
    if op in ("mod", "floormod"):
        return _mod(e, a, b, ana)
    return EVERYTHING


def _scaled(op: str, a: IntervalSet, c: PrimExpr, ana: Analyzer) -> IntervalSet:
    """``a op c`` for a point ``c`` (multiplication or division)."""
    if ana.can_prove_ge(c, 0):
        lo = binop(op, a.min, c) if a.has_lower else NEG_INF
        hi = binop(op, a.max, c) if a.has_upper else POS_INF
        return IntervalSet(lo, hi)
    if ana.can_prove_ge(binop("sub", imm(c.dtype, 0), c), 1):
        lo = binop(op, a.max, c) if a.has_upper else NEG_INF
        hi = binop(op, a.min, c) if a.has_lower else POS_INF
        return IntervalSet(lo, hi)
    if a.has_lower and a.has_upper:
        sign = BinOp("ge", c, imm(c.dtype, 0), BOOL)
        e1, e2 = binop(op, a.min, c), binop(op, a.max, c)
        return IntervalSet(Select(sign, e1, e2), Select(sign, e2, e1))
    return EVERYTHING


def _mul(a: IntervalSet, b: IntervalSet, ana: Analyzer) -> IntervalSet:
    if a.is_point:
        a, b = b, a
    if b.is_point:
        if is_int(b.min, 0):
            return b
        if is_int(b.min, 1):
            return a
        return _scaled("mul", a, b.min, ana)
    return EVERYTHING


def _div(op: str, a: IntervalSet, b: IntervalSet, ana: Analyzer) -> IntervalSet:
    if b.is_point:
        if is_int(b.min, 0):
            return EVERYTHING
        if is_int(b.min, 1):
            return a
        return _scaled(op, a, b.min, ana)
    return EVERYTHING


def _mod(e: BinOp, a: IntervalSet, b: IntervalSet, ana: Analyzer) -> IntervalSet:
    if not b.is_point or is_int(b.min, 0):
        return EVERYTHING
    d = b.min
    if not ana.can_prove_ge(d, 0):
        bound = binop("sub", Select(BinOp("ge", d, imm(d.dtype, 0), BOOL), d,
                                    binop("sub", imm(d.dtype, 0), d)), imm(d.dtype, 1))
        return IntervalSet(binop("sub", imm(d.dtype, 0), bound), bound)
    if e.op == "floormod" and isinstance(d, IntImm):
        if a.has_lower and a.has_upper:
            qmax, qmin = binop("floordiv", a.max, d), binop("floordiv", a.min, d)
            if ana.can_prove(BinOp("eq", qmax, qmin, BOOL)):
                return IntervalSet(binop("sub", a.min, binop("mul", d, qmin)),
                                   binop("sub", a.max, binop("mul", d, qmin)))
        coeff, base = modular_set(e.a)
        if coeff > 0:
            g = math.gcd(coeff, d.value)
            if g > 1 and d.value % g == 0:
                top = (d.value // g - 1) * g + base % g
                if 0 <= top < d.value:
                    return IntervalSet(imm(e.dtype, 0), imm(e.dtype, top))
    return IntervalSet(imm(d.dtype, 0), binop("sub", d, imm(d.dtype, 1)))
