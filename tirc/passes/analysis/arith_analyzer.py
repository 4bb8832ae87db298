"""What the region analyses know about integer expressions (TVM's ``arith::Analyzer``):
constant bounds of variables (loop ranges), variables bound to values (unit loops,
``let``), and a simplifier that puts index expressions in TVM's canonical form
(:mod:`tirc.passes.analysis.arith_canonical`) and applies TVM's rewrite rules for ``min``/``max``,
comparisons and logic. A fresh analyzer knows nothing, as TVM's ``Analyzer()``.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.dtype import BOOL
from tirc.ir.expr import BinOp, BufferLoad, Call, Cast, IntImm, Not, PrimExpr, Select, Var
from tirc.passes.analysis.arith_canonical import Canonical
from tirc.passes.analysis.arith_ops import (Bound, binop, cast, const_bound, imm, index_typed, is_int,
                                   sub)

_NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}


class Analyzer:
    def __init__(self, lasting_memo: bool = False) -> None:
        self.bounds: dict[int, Bound] = {}
        self.values: dict[int, PrimExpr] = {}
        self.canonical = Canonical(self)
        # results of simplify and rewrite within one outermost simplify call, keyed by
        # the node's id (the node is kept alive beside its result): the facts cannot
        # change during a call, and without it nested min/max simplify their operands
        # again at every level (exponential in the nesting depth). ``lasting_memo``: kept
        # across calls, for an analyzer that is given no facts (its results never change)
        self._memo: dict[tuple[str, int], tuple[PrimExpr, PrimExpr]] | None = \
            {} if lasting_memo else None
        self._lasting = lasting_memo

    # ---- facts ------------------------------------------------------------------------

    def _no_lasting_memo(self) -> None:
        if self._lasting:  # its remembered results would not know the new fact
            raise ValueError("an analyzer with a lasting memo is given no facts")

    def bind_range(self, var: Var, min_: PrimExpr, extent: PrimExpr) -> None:
        """``var`` ranges over ``[min, min + extent)`` (a unit range binds its value)."""
        self._no_lasting_memo()
        if is_int(extent, 1):
            self.bind_value(var, min_)
            return
        lo = self.const_bound(min_)[0]
        hi = self.const_bound(binop("sub", binop("add", min_, extent), imm(extent.dtype, 1)))[1]
        self.bounds[id(var)] = (lo, hi)

    def bind_value(self, var: Var, value: PrimExpr) -> None:
        self._no_lasting_memo()
        value = self.simplify(value)
        self.values[id(var)] = value
        self.bounds[id(var)] = self.const_bound(value)

    def const_bound(self, e: PrimExpr) -> Bound:
        return const_bound(e, self.bounds)

    def can_prove_ge(self, e: PrimExpr, lower: int) -> bool:
        if isinstance(e, IntImm):
            return e.value >= lower
        return self.const_bound(self.simplify(e))[0] >= lower

    def can_prove(self, cond: PrimExpr) -> bool:
        c = self.simplify(cond)
        return isinstance(c, IntImm) and c.value != 0

    def can_prove_equal(self, a: PrimExpr, b: PrimExpr) -> bool:
        return is_int(self.simplify(sub(a, b)), 0)

    # ---- simplification ---------------------------------------------------------------

    def simplify(self, e: PrimExpr) -> PrimExpr:
        """TVM's ``Simplify``: canonical form, rewrite rules, canonical form again."""
        if isinstance(e, IntImm):
            return e
        return self._memoized("s", e, self._simplify)

    def _memoized(self, kind: str, e: PrimExpr, fn) -> PrimExpr:
        memo = self._memo
        if memo is None:
            self._memo = {}
            try:
                return fn(e)
            finally:
                self._memo = None
        key = (kind, id(e))
        hit = memo.get(key)
        if hit is not None:
            return hit[1]
        out = fn(e)
        memo[key] = (e, out)
        memo.setdefault((kind, id(out)), (out, out))
        return out

    def _simplify(self, e: PrimExpr) -> PrimExpr:
        e = self.canonical.simplify(e)
        if isinstance(e, IntImm):
            return e
        return self.canonical.simplify(_reorder(e, self))

    def rewrite(self, e: PrimExpr) -> PrimExpr:
        """One node that is not a sum, product or division: its operands simplified and
        TVM's rules for it applied."""
        if isinstance(e, Var):
            return self.values.get(id(e), e)
        if isinstance(e, IntImm):
            return e
        return self._memoized("r", e, self._rewrite)

    def _rewrite(self, e: PrimExpr) -> PrimExpr:
        if isinstance(e, BinOp):
            a, b = self.simplify(e.a), self.simplify(e.b)
            if e.op in ("min", "max"):
                return self._minmax(e, a, b)
            if e.op in _NEGATE:
                return self._compare(e, a, b)
            if e.op in ("and", "or"):
                return self._logic(e, a, b)
            return e if a is e.a and b is e.b else replace(e, a=a, b=b)
        if isinstance(e, Not):
            return self._not(self.simplify(e.a), e)
        if isinstance(e, Cast):
            v = self.simplify(e.value)
            if isinstance(v, IntImm) and e.dtype.is_integer and e.dtype.lanes == 1:
                return cast(e.dtype, v)
            return e if v is e.value else replace(e, value=v)
        if isinstance(e, Select):
            c = self.simplify(e.condition)
            if is_int(c) or (isinstance(c, IntImm) and c.dtype.is_bool):
                return self.simplify(e.true_value if c.value else e.false_value)
            t, f = self.simplify(e.true_value), self.simplify(e.false_value)
            return replace(e, condition=c, true_value=t, false_value=f)
        if isinstance(e, Call):
            args = tuple(self.simplify(x) if isinstance(x, PrimExpr) else x for x in e.args)
            if e.op == "if_then_else" and isinstance(args[0], IntImm):
                return args[1] if args[0].value else args[2]
            return e if all(x is y for x, y in zip(args, e.args)) else replace(e, args=args)
        if isinstance(e, BufferLoad):
            idx = tuple(self.simplify(x) for x in e.indices)
            return e if all(x is y for x, y in zip(idx, e.indices)) else replace(e, indices=idx)
        return e

    def _minmax(self, e: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        folded = binop(e.op, a, b)
        if isinstance(folded, IntImm) or a == b:
            return a if a == b else folded
        if index_typed(e):
            ab, bb = self.const_bound(a), self.const_bound(b)
            if e.op == "min":
                if ab[1] <= bb[0]:
                    return a
                if bb[1] <= ab[0]:
                    return b
            else:
                if ab[0] >= bb[1]:
                    return a
                if bb[0] >= ab[1]:
                    return b
            diff = self.canonical.simplify(sub(a, b))
            if isinstance(diff, IntImm):
                pick_a = (diff.value <= 0) == (e.op == "min")
                return a if pick_a else b
        return e if a is e.a and b is e.b else replace(e, a=a, b=b)

    def _compare(self, e: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        folded = binop(e.op, a, b)
        if isinstance(folded, IntImm):
            return folded
        if index_typed(a) and index_typed(b):
            lo, hi = self.const_bound(self.canonical.simplify(sub(a, b)))
            decided = {"lt": (hi < 0, lo >= 0), "le": (hi <= 0, lo > 0),
                       "gt": (lo > 0, hi <= 0), "ge": (lo >= 0, hi < 0),
                       "eq": (lo == hi == 0, lo > 0 or hi < 0),
                       "ne": (lo > 0 or hi < 0, lo == hi == 0)}[e.op]
            if decided[0]:
                return IntImm(BOOL, 1)
            if decided[1]:
                return IntImm(BOOL, 0)
        return e if a is e.a and b is e.b else replace(e, a=a, b=b)

    def _logic(self, e: BinOp, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        absorbing = 0 if e.op == "and" else 1
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                return x if bool(x.value) == bool(absorbing) else y
        return e if a is e.a and b is e.b else replace(e, a=a, b=b)

    def _not(self, a: PrimExpr, e: Not) -> PrimExpr:
        if isinstance(a, IntImm):
            return IntImm(BOOL, int(not a.value))
        if isinstance(a, Not):
            return a.a
        if isinstance(a, BinOp) and a.op in _NEGATE:
            return BinOp(_NEGATE[a.op], a.a, a.b, a.dtype)
        if isinstance(a, BinOp) and a.op in ("and", "or"):
            op = "or" if a.op == "and" else "and"
            return self.simplify(BinOp(op, Not(a.a), Not(a.b), a.dtype))
        return e if a is e.a else Not(a)


def _is(e: PrimExpr, op: str) -> bool:
    return isinstance(e, BinOp) and e.op == op


def _reorder(e: PrimExpr, ana: Analyzer) -> PrimExpr:
    """The rewrite rules of TVM's middle simplification step that decide how sums with
    ``min``/``max`` terms come out: ``x + max(y, z)`` becomes ``max(y, z) + x``,
    ``max(x, y - z) + z`` becomes ``max(x + z, y)``, ``max(x, y) - y`` becomes
    ``max(x - y, 0)`` (and the ``min`` forms); and its rules for a division of
    ``x * c1 + y`` by a multiple of ``c1`` (:func:`_scaled_division`)."""
    if not (isinstance(e, BinOp) and index_typed(e)):
        return e
    a, b = _reorder(e.a, ana), _reorder(e.b, ana)
    if e.op in ("floordiv", "floormod") and is_int(b) and b.value > 0:
        scaled = _scaled_division(e.op, a, b.value, ana)
        if scaled is not None:
            return scaled
    if e.op == "floordiv" and _is(a, "floordiv") and is_int(b) and is_int(a.b):
        if a.b.value > 0 and b.value > 0:
            return BinOp("floordiv", a.a, imm(e.dtype, a.b.value * b.value), e.dtype)
    if e.op == "floormod" and _is(a, "mul") and is_int(a.b) and is_int(b) and b.value > 0:
        c = a.b.value % b.value
        if c != a.b.value:
            return BinOp("floormod", binop("mul", a.a, imm(e.dtype, c)), b, e.dtype)
    if e.op not in ("add", "sub"):
        return e if a is e.a and b is e.b else BinOp(e.op, a, b, e.dtype)
    if e.op == "add":
        for m in ("min", "max"):
            if _is(a, m) and _is(a.b, "sub") and a.b.b == b:
                return BinOp(m, binop("add", a.a, b), a.b.a, e.dtype)
            if _is(a, m) and _is(a.a, "sub") and a.a.b == b:
                return BinOp(m, a.a.a, binop("add", a.b, b), e.dtype)
            if _is(b, m) and not (_is(a, "min") or _is(a, "max")):
                return _reorder(BinOp("add", b, a, e.dtype), ana)
        if _is(a, "add") and is_int(a.b) and is_int(b):
            return binop("add", a.a, binop("add", a.b, b))
    else:
        zero = imm(e.dtype, 0)
        for m, first in (("min", False), ("max", False)):
            if _is(a, m) and a.b == b:
                return BinOp(m, binop("sub", a.a, b), zero, e.dtype)
            if _is(b, m) and b.a == a:
                return BinOp("min" if m == "max" else "max", zero, binop("sub", a, b.b), e.dtype)
    return e if a is e.a and b is e.b else BinOp(e.op, a, b, e.dtype)


def _scaled_division(op: str, a: PrimExpr, c2: int, ana: Analyzer) -> PrimExpr | None:
    """TVM's rules for ``(x * c1 + y) // c2`` and ``(x * c1 + y) % c2`` where ``c2`` is a
    multiple of ``c1`` and ``y`` stays below ``c1``: ``x // (c2 // c1) + y // c2`` and
    ``x % (c2 // c1) * c1 + y`` (``(bx * 16 + tx) // 128`` with ``tx < 16`` is
    ``bx // 8``). The product may come first or second in the sum, or stand alone."""
    if _is(a, "mul") and is_int(a.b):
        x, c1, y = a.a, a.b.value, None
    elif _is(a, "add") and _is(a.a, "mul") and is_int(a.a.b):
        x, c1, y = a.a.a, a.a.b.value, a.b
    elif _is(a, "add") and _is(a.b, "mul") and is_int(a.b.b):
        x, c1, y = a.b.a, a.b.b.value, a.a
    else:
        return None
    if c1 <= 0 or c2 % c1:
        return None
    dtype = a.dtype
    ratio = imm(dtype, c2 // c1)
    if op == "floordiv":
        if y is not None and ana.const_bound(ana.simplify(binop("floormod", y, imm(dtype, c2))))[1] >= c1:
            return None
        quotient = binop("floordiv", x, ratio)
        if y is None:
            return quotient
        y_div = ana.simplify(binop("floordiv", y, imm(dtype, c2)))
        return quotient if is_int(y_div, 0) else binop("add", quotient, binop("floordiv", y, imm(dtype, c2)))
    if y is None:
        return binop("mul", binop("floormod", x, ratio), imm(dtype, c1))
    if not is_int(ana.simplify(binop("floordiv", y, imm(dtype, c1))), 0):
        return None
    return binop("add", binop("mul", binop("floormod", x, ratio), imm(dtype, c1)), y)
