"""The canonical simplifier of integer index expressions (TVM's ``CanonicalSimplifier``),
so that what the region analyses simplify prints exactly as TVM prints it. Sums,
products and divisions by constants are combined in the canonical form of
:mod:`tirc.passes.analysis.arith_canonical_form`; other nodes go to the analyzer's rewrite rules.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tirc.ir.const_fold import fold_identity, truncdiv, truncmod
from tirc.ir.expr import BinOp, IntImm, PrimExpr
from tirc.passes.analysis.arith_canonical_form import (FLOOR, TRUNC, Canon, Split, Sum, convert_mode,
                                              normalize, separate, to_split, to_sum)
from tirc.passes.analysis.arith_ops import (binop, floordiv_int, floormod_int, imm, index_typed,
                                            is_int, mul)

if TYPE_CHECKING:
    from tirc.passes.analysis.arith_analyzer import Analyzer


class Canonical:
    """The canonical half of :class:`~tirc.passes.analysis.arith_analyzer.Analyzer`'s simplify."""

    def __init__(self, analyzer: "Analyzer"):
        self.ana = analyzer

    def mutate(self, e: PrimExpr) -> Canon:
        """``e`` simplified, possibly left in canonical (un-normalized) form."""
        if isinstance(e, BinOp) and index_typed(e):
            fn = getattr(self, "_" + e.op, None)
            if fn is not None:
                return fn(e)
        return self.ana.rewrite(e)

    def simplify(self, e: PrimExpr) -> PrimExpr:
        return normalize(self.mutate(e))

    def _add(self, e: BinOp, sign: int = 1) -> Canon:
        a, b = self.mutate(e.a), self.mutate(e.b)
        folded = _fold("add" if sign > 0 else "sub", a, b)
        if folded is not None:
            return folded
        ret = to_sum(a)
        if isinstance(b, IntImm):
            ret.base += sign * b.value
        elif isinstance(b, Sum):
            ret.add_sum(b, sign)
        else:
            ret.add_split(to_split(b), sign)
        return ret

    def _sub(self, e: BinOp) -> Canon:
        return self._add(e, -1)

    def _mul(self, e: BinOp) -> Canon:
        a, b = self.mutate(e.a), self.mutate(e.b)
        folded = _fold("mul", a, b)
        if folded is not None:
            return folded
        if isinstance(a, IntImm):
            a, b = b, a
        if isinstance(b, IntImm):
            if isinstance(a, Sum):
                ret = a.copy()
                ret.mul_self(b.value)
                return ret
            s = to_split(a)
            return replace(s, scale=s.scale * b.value)
        res = _mul_and_normalize(normalize(a), normalize(b))
        if isinstance(res, BinOp) and res.a is e.a and res.b is e.b:
            return e
        return res

    def _floordiv(self, e: BinOp) -> Canon:
        a, c, done = self._divisor(e, "floordiv")
        if done is not None:
            return done
        if isinstance(a, Sum):
            lhs, extra = separate(a, c)
            return self._div_sum(lhs, extra, c, FLOOR)
        lo, hi = self.ana.const_bound(normalize(a))
        if lo >= 0 and hi < c:
            return imm(e.dtype, 0)
        if (isinstance(a, Split) and a.lower == 1 and a.scale == 1 and a.upper is not None
                and a.upper % c == 0 and a.compatible(FLOOR)):
            raw = self.mutate(a.index)
            if isinstance(raw, Sum):
                lhs, extra = separate(raw, c)
                if not lhs.is_zero():
                    div = normalize(self._div_sum(lhs, extra, c, FLOOR))
                    return self.simplify(binop("floormod", div, imm(e.dtype, a.upper // c)))
        return _split_div(self, to_split(a), c, FLOOR)

    def _div(self, e: BinOp) -> Canon:
        a, c, done = self._divisor(e, "div")
        if done is not None:
            return done
        if isinstance(a, Sum):
            lhs, extra = separate(a, c)
            if extra.is_zero():
                lhs.divide_by(c)
                return lhs
            if (self.ana.can_prove_ge(lhs.normalize(), 0)
                    and self.ana.can_prove_ge(extra.normalize(), 0)):
                return self._div_sum(lhs, extra, c, TRUNC)
        else:
            lo, hi = self.ana.const_bound(normalize(a))
            if lo >= 0 and hi < c:
                return imm(e.dtype, 0)
        return _split_div(self, to_split(a), c, TRUNC)

    def _div_sum(self, lhs: Sum, extra: Sum, c: int, mode: int) -> Sum:
        if extra.is_zero():
            lhs.divide_by(c)
            return lhs
        lhs.divide_by(c)
        temp = extra.normalize()
        if isinstance(temp, IntImm):
            lhs.base += (floordiv_int if mode == FLOOR else truncdiv)(temp.value, c)
        elif not (self.ana.const_bound(temp)[1] < c
                  and (mode == TRUNC or self.ana.can_prove_ge(temp, 0))):
            lhs.add_split(_split_div(self, to_split(temp), c, mode), 1)
        return lhs

    def _floormod(self, e: BinOp) -> Canon:
        a, c, done = self._divisor(e, "floormod")
        if done is not None:
            return done
        if isinstance(a, Sum):
            _, extra = separate(a, c)
            temp = extra.normalize()
            if isinstance(temp, IntImm):
                return imm(e.dtype, floormod_int(temp.value, c))
            if self.ana.const_bound(temp)[1] < c and self.ana.can_prove_ge(temp, 0):
                return temp
            extra.base = floormod_int(extra.base, c)
            return _split_mod(self, to_split(extra), c, FLOOR)
        lo, hi = self.ana.const_bound(normalize(a))
        if lo >= 0 and hi < c:
            return a
        return _split_mod(self, to_split(a), c, FLOOR)

    def _mod(self, e: BinOp) -> Canon:
        a, c, done = self._divisor(e, "mod")
        if done is not None:
            return done
        if isinstance(a, Sum):
            lhs, extra = separate(a, c)
            if extra.is_zero():
                return imm(e.dtype, 0)
            psum = a
            if (self.ana.can_prove_ge(lhs.normalize(), 0)
                    and self.ana.can_prove_ge(extra.normalize(), 0)):
                temp = extra.normalize()
                if isinstance(temp, IntImm):
                    return imm(e.dtype, truncmod(temp.value, c))
                if self.ana.const_bound(temp)[1] < c:
                    return temp
                psum = extra
            lo = self.ana.const_bound(psum.normalize())[0]
            new_base = psum.base % c
            if lo >= 0 and lo - psum.base + new_base >= 0:
                psum = psum.copy()
                psum.base = new_base
            return _split_mod(self, to_split(psum), c, TRUNC)
        lo, hi = self.ana.const_bound(normalize(a))
        if lo >= 0 and hi < c:
            return a
        return _split_mod(self, to_split(a), c, TRUNC)

    def _divisor(self, e: BinOp, op: str) -> tuple[Canon, int, Canon | None]:
        """The canonical dividend, the constant divisor, or the finished result when the
        divisor is not a positive constant or the operation folds."""
        a, b = self.mutate(e.a), self.mutate(e.b)
        na, nb = normalize(a), normalize(b)
        if (is_int(na) and is_int(nb)) or is_int(nb, 1) or is_int(na, 0):
            return a, 0, binop(op, na, nb)
        if not (is_int(nb) and nb.value > 0):
            if na is e.a and nb is e.b:
                return a, 0, e
            return a, 0, BinOp(op, na, nb, e.dtype)
        return a, nb.value, None


def _fold(op: str, a: Canon, b: Canon) -> Canon | None:
    """TVM's TryConstFold on canonical operands (only immediates fold)."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return binop(op, a, b)
    return fold_identity(op, a, b)


def _mul_and_normalize(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """A product of non-constant factors: flattened left to right, constants last."""
    scale = 1
    res: PrimExpr = imm(a.dtype, 1)
    for x in (*_factors(a), *_factors(b)):
        if isinstance(x, IntImm):
            scale *= x.value
        else:
            res = mul(res, x)
    return mul(res, imm(res.dtype, scale)) if scale != 1 else res


def _factors(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, BinOp) and e.op == "mul":
        return _factors(e.a) + _factors(e.b)
    return [e]


def _split_div(cs: Canonical, lhs: Split, c: int, mode: int) -> Split:
    lhs = convert_mode(lhs, mode)
    if lhs.scale % c == 0:
        return replace(lhs, scale=lhs.scale // c)
    if c % lhs.scale == 0:
        sc = c // lhs.scale
        if lhs.upper is None or lhs.upper % (lhs.lower * sc) == 0:
            return replace(lhs, scale=1, lower=lhs.lower * sc)
        if lhs.upper <= lhs.lower * sc:
            return to_split(imm(lhs.dtype, 0))
        op = "floormod" if mode == FLOOR else "mod"
        return replace(lhs, index=binop(op, lhs.index, imm(lhs.dtype, lhs.upper)), upper=None,
                       scale=1, lower=lhs.lower * sc)
    lhs = to_split(lhs.normalize())
    return replace(lhs, lower=lhs.lower * c, mode=mode)


def _split_mod(cs: Canonical, lhs: Split, c: int, mode: int) -> Split:
    lhs = convert_mode(lhs, mode)
    if lhs.scale % c == 0:
        return replace(lhs, scale=0)
    if c % lhs.scale == 0:
        sc = c // lhs.scale
        new_upper = lhs.lower * sc
        if lhs.upper is None or lhs.upper % new_upper == 0:
            if lhs.upper is not None and new_upper < lhs.upper:
                op = "floormod" if mode == FLOOR else "mod"
                updated = to_split(cs.simplify(
                    binop(op, lhs.index, imm(lhs.dtype, new_upper))))
                if lhs.lower != 1:
                    ret = _split_div(cs, updated, lhs.lower, mode)
                    return replace(ret, scale=ret.scale * lhs.scale)
                return replace(updated, scale=updated.scale * lhs.scale)
            return replace(lhs, upper=new_upper)
        if new_upper % lhs.upper == 0:
            return lhs
    lhs = to_split(lhs.normalize())
    return replace(lhs, mode=mode, upper=c)
