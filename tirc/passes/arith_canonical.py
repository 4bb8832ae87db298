"""The canonical form of integer index expressions (TVM's ``CanonicalSimplifier``), so
that what the region analyses simplify prints exactly as TVM prints it.

An index expression is a sum ``base + sum(args)``; each argument is a *split*
``(index % upper) / lower * scale`` of an atom ``index`` (a variable, a load, a
non-linear term). Sums are combined term by term; division and modulo by positive
constants fold into splits. The normal form orders the arguments by decreasing scale
(ties in order of first appearance), adds the positive ones first, then the constant,
then subtracts the negative ones: ``i * 8 + j * 4 + 3``, ``n - i * 2 - 1``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Union

from tirc.ir.dtype import DataType
from tirc.ir.expr import BinOp, IntImm, PrimExpr
from tirc.passes.arith_ops import (binop, floordiv_int, floormod_int, imm, index_typed,
                                   is_int, mul, truncdiv_int, truncmod_int)

if TYPE_CHECKING:
    from tirc.passes.arith_analyzer import Analyzer

_FLOOR, _TRUNC = 1, 0  # TVM's DivMode order (kTruncDiv < kFloorDiv)


@dataclass(frozen=True)
class Split:
    """``(index % upper) / lower * scale``; ``upper`` None is no modulo."""

    index: PrimExpr
    dtype: DataType
    lower: int = 1
    upper: int | None = None
    scale: int = 1
    mode: int = _TRUNC

    def compatible(self, mode: int) -> bool:
        return self.mode == mode or (self.lower == 1 and self.upper is None)

    def normalize(self, sscale: int = 1) -> PrimExpr:
        if self.scale == 0:
            return imm(self.dtype, 0)
        res = self.index
        div, mod = ("floordiv", "floormod") if self.mode == _FLOOR else ("div", "mod")
        if self.upper is not None:
            res = binop(mod, res, imm(self.dtype, self.upper))
        if self.lower != 1:
            res = binop(div, res, imm(self.dtype, self.lower))
        sscale *= self.scale
        if sscale != 1:
            res = mul(res, imm(self.dtype, sscale))
        return res


def _upper_lt(a: int | None, b: int | None) -> bool:
    """``a < b`` with None as +infinity."""
    if a is None:
        return False
    return b is None or a < b


@dataclass
class Sum:
    """``base + sum(args)``; arguments with the same index stay next to each other,
    in decreasing order of ``lower``."""

    dtype: DataType
    args: list[Split] = field(default_factory=list)
    base: int = 0

    def copy(self) -> "Sum":
        return Sum(self.dtype, list(self.args), self.base)

    def is_zero(self) -> bool:
        return self.base == 0 and not self.args

    def divisible_by(self, c: int) -> bool:
        return self.base % c == 0 and all(a.scale % c == 0 for a in self.args)

    def mul_self(self, c: int) -> None:
        self.base *= c
        self.args = [replace(a, scale=a.scale * c) for a in self.args]

    def divide_by(self, c: int) -> None:
        self.base //= c
        self.args = [replace(a, scale=a.scale // c) for a in self.args]

    def add_split(self, other: Split, scale: int) -> None:
        if other.scale == 0:
            return
        start = next((i for i, a in enumerate(self.args) if a.index == other.index), len(self.args))
        for j in range(start, len(self.args)):
            a = self.args[j]
            if a.index != other.index or other.lower > a.lower:
                self.args.insert(j, replace(other, scale=other.scale * scale))
                return
            if other.lower == a.lower and other.upper == a.upper and other.compatible(a.mode):
                self.args[j] = replace(a, scale=a.scale + other.scale * scale)
                return
        self.args.append(replace(other, scale=other.scale * scale))

    def add_sum(self, other: "Sum", scale: int) -> None:
        for a in other.args:
            self.add_split(a, scale)
        self.base += other.base * scale

    def normalize(self) -> PrimExpr:
        if not self.args:
            return imm(self.dtype, self.base)
        args = _merge_splits(list(self.args))
        args.sort(key=lambda a: (-a.scale, -a.lower, _neg_upper(a.upper), -a.mode))
        res: PrimExpr = imm(self.dtype, 0)
        for a in args:
            if a.scale > 0:
                res = binop("add", res, a.normalize())
        if self.base > 0:
            res = binop("add", res, imm(self.dtype, self.base))
        for a in args:
            if a.scale < 0:
                res = binop("sub", res, a.normalize(-1))
        if self.base < 0:
            res = binop("sub", res, imm(self.dtype, -self.base))
        return res


def _neg_upper(u: int | None) -> float:
    return -float("inf") if u is None else -u


def _merge_splits(args: list[Split]) -> list[Split]:
    """TVM's SimplifySplitExprs: fold equal splits and ``x / (c*s) * s + x % (c*s) / c``."""
    for i in range(len(args)):
        if args[i].scale == 0:
            continue
        for j in range(i + 1, len(args)):
            lhs, rhs = args[i], args[j]
            if lhs.index != rhs.index or _upper_lt(lhs.upper, rhs.lower):
                break
            if lhs.upper == rhs.upper and lhs.lower == rhs.lower and lhs.compatible(rhs.mode):
                args[j] = replace(rhs, scale=rhs.scale + lhs.scale)
                args[i] = lhs = replace(lhs, scale=0)
            elif (lhs.lower == rhs.upper and rhs.scale != 0 and lhs.scale % rhs.scale == 0
                  and lhs.lower == (lhs.scale // rhs.scale) * rhs.lower
                  and lhs.compatible(rhs.mode)):
                args[j] = replace(rhs, upper=lhs.upper)
                args[i] = replace(lhs, scale=0)
                break
    return [a for a in args if a.scale != 0] or args[:0]


Canon = Union[PrimExpr, Sum, Split]


def normalize(e: Canon) -> PrimExpr:
    return e.normalize() if isinstance(e, (Sum, Split)) else e


def to_split(e: Canon) -> Split:
    if isinstance(e, Split):
        return e
    if isinstance(e, Sum):
        if e.base == 0 and len(e.args) == 1:
            return e.args[0]
        e = e.normalize()
    return Split(e, e.dtype)


def to_sum(e: Canon) -> Sum:
    if isinstance(e, Sum):
        return e.copy()
    if isinstance(e, IntImm):
        return Sum(e.dtype, [], e.value)
    s = to_split(e)
    return Sum(s.dtype, [s], 0)


class Canonical:
    """The canonical half of :class:`~tirc.passes.arith_analyzer.Analyzer`'s simplify."""

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
            lhs, extra = _separate(a, c)
            return self._div_sum(lhs, extra, c, _FLOOR)
        lo, hi = self.ana.const_bound(normalize(a))
        if lo >= 0 and hi < c:
            return imm(e.dtype, 0)
        if (isinstance(a, Split) and a.lower == 1 and a.scale == 1 and a.upper is not None
                and a.upper % c == 0 and a.compatible(_FLOOR)):
            raw = self.mutate(a.index)
            if isinstance(raw, Sum):
                lhs, extra = _separate(raw, c)
                if not lhs.is_zero():
                    div = normalize(self._div_sum(lhs, extra, c, _FLOOR))
                    return self.simplify(binop("floormod", div, imm(e.dtype, a.upper // c)))
        return _split_div(self, to_split(a), c, _FLOOR)

    def _div(self, e: BinOp) -> Canon:
        a, c, done = self._divisor(e, "div")
        if done is not None:
            return done
        if isinstance(a, Sum):
            lhs, extra = _separate(a, c)
            if extra.is_zero():
                lhs.divide_by(c)
                return lhs
            if (self.ana.can_prove_ge(lhs.normalize(), 0)
                    and self.ana.can_prove_ge(extra.normalize(), 0)):
                return self._div_sum(lhs, extra, c, _TRUNC)
        else:
            lo, hi = self.ana.const_bound(normalize(a))
            if lo >= 0 and hi < c:
                return imm(e.dtype, 0)
        return _split_div(self, to_split(a), c, _TRUNC)

    def _div_sum(self, lhs: Sum, extra: Sum, c: int, mode: int) -> Sum:
        if extra.is_zero():
            lhs.divide_by(c)
            return lhs
        lhs.divide_by(c)
        temp = extra.normalize()
        if isinstance(temp, IntImm):
            lhs.base += (floordiv_int if mode == _FLOOR else truncdiv_int)(temp.value, c)
        elif not (self.ana.const_bound(temp)[1] < c
                  and (mode == _TRUNC or self.ana.can_prove_ge(temp, 0))):
            lhs.add_split(_split_div(self, to_split(temp), c, mode), 1)
        return lhs

    def _floormod(self, e: BinOp) -> Canon:
        a, c, done = self._divisor(e, "floormod")
        if done is not None:
            return done
        if isinstance(a, Sum):
            _, extra = _separate(a, c)
            temp = extra.normalize()
            if isinstance(temp, IntImm):
                return imm(e.dtype, floormod_int(temp.value, c))
            if self.ana.const_bound(temp)[1] < c and self.ana.can_prove_ge(temp, 0):
                return temp
            extra.base = floormod_int(extra.base, c)
            return _split_mod(self, to_split(extra), c, _FLOOR)
        lo, hi = self.ana.const_bound(normalize(a))
        if lo >= 0 and hi < c:
            return a
        return _split_mod(self, to_split(a), c, _FLOOR)

    def _mod(self, e: BinOp) -> Canon:
        a, c, done = self._divisor(e, "mod")
        if done is not None:
            return done
        if isinstance(a, Sum):
            lhs, extra = _separate(a, c)
            if extra.is_zero():
                return imm(e.dtype, 0)
            psum = a
            if (self.ana.can_prove_ge(lhs.normalize(), 0)
                    and self.ana.can_prove_ge(extra.normalize(), 0)):
                temp = extra.normalize()
                if isinstance(temp, IntImm):
                    return imm(e.dtype, truncmod_int(temp.value, c))
                if self.ana.const_bound(temp)[1] < c:
                    return temp
                psum = extra
            lo = self.ana.const_bound(psum.normalize())[0]
            new_base = psum.base % c
            if lo >= 0 and lo - psum.base + new_base >= 0:
                psum = psum.copy()
                psum.base = new_base
            return _split_mod(self, to_split(psum), c, _TRUNC)
        lo, hi = self.ana.const_bound(normalize(a))
        if lo >= 0 and hi < c:
            return a
        return _split_mod(self, to_split(a), c, _TRUNC)

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
    if op == "add":
        if is_int(a, 0):
            return b
        if is_int(b, 0):
            return a
    elif op == "sub":
        if is_int(b, 0):
            return a
    elif op == "mul":
        if is_int(a, 1) or is_int(b, 0):
            return b
        if is_int(b, 1) or is_int(a, 0):
            return a
    return None


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


def _separate(s: Sum, c: int) -> tuple[Sum, Sum]:
    div, rest = Sum(s.dtype), Sum(s.dtype)
    if s.base % c == 0:
        div.base = s.base
    else:
        rest.base = s.base
    for a in s.args:
        (div if a.scale % c == 0 else rest).args.append(a)
    return div, rest


def _convert_mode(s: Split, mode: int) -> Split:
    if s.mode == mode:
        return s
    if s.compatible(mode):
        return replace(s, mode=mode)
    return replace(to_split(s.normalize()), mode=mode)


def _split_div(cs: Canonical, lhs: Split, c: int, mode: int) -> Split:
    lhs = _convert_mode(lhs, mode)
    if lhs.scale % c == 0:
        return replace(lhs, scale=lhs.scale // c)
    if c % lhs.scale == 0:
        sc = c // lhs.scale
        if lhs.upper is None or lhs.upper % (lhs.lower * sc) == 0:
            return replace(lhs, scale=1, lower=lhs.lower * sc)
        if lhs.upper <= lhs.lower * sc:
            return to_split(imm(lhs.dtype, 0))
        op = "floormod" if mode == _FLOOR else "mod"
        return replace(lhs, index=binop(op, lhs.index, imm(lhs.dtype, lhs.upper)), upper=None,
                       scale=1, lower=lhs.lower * sc)
    lhs = to_split(lhs.normalize())
    return replace(lhs, lower=lhs.lower * c, mode=mode)


def _split_mod(cs: Canonical, lhs: Split, c: int, mode: int) -> Split:
    lhs = _convert_mode(lhs, mode)
    if lhs.scale % c == 0:
        return replace(lhs, scale=0)
    if c % lhs.scale == 0:
        sc = c // lhs.scale
        new_upper = lhs.lower * sc
        if lhs.upper is None or lhs.upper % new_upper == 0:
            if lhs.upper is not None and new_upper < lhs.upper:
                op = "floormod" if mode == _FLOOR else "mod"
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
