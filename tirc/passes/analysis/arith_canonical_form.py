"""TVM's canonical form of integer index expressions (``SumExpr``/``SplitExpr``): a sum
``base + sum(args)`` of *splits* ``(index % upper) / lower * scale`` of atoms, and its
normal form, the expression TVM prints: arguments by decreasing scale (ties in order of
first appearance), positive ones first, then the constant, then the negative ones
subtracted (``i * 8 + j * 4 + 3``, ``n - i * 2 - 1``).
"""
from __future__ import annotations

from dataclasses import field, replace
from typing import Union

from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr
from tirc.passes.analysis.arith_ops import binop, imm, mul
from tirc.records import record

FLOOR, TRUNC = 1, 0  # TVM's DivMode order (kTruncDiv < kFloorDiv)


@record(frozen=True)
class Split:
    """``(index % upper) / lower * scale``; ``upper`` None is no modulo."""

    index: PrimExpr
    dtype: DataType
    lower: int = 1
    upper: int | None = None
    scale: int = 1
    mode: int = TRUNC

    def compatible(self, mode: int) -> bool:
        return self.mode == mode or (self.lower == 1 and self.upper is None)

    def normalize(self, sscale: int = 1) -> PrimExpr:
        if self.scale == 0:
            return imm(self.dtype, 0)
        res = self.index
        div, mod = ("floordiv", "floormod") if self.mode == FLOOR else ("div", "mod")
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


@record
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


def separate(s: Sum, c: int) -> tuple[Sum, Sum]:
    div, rest = Sum(s.dtype), Sum(s.dtype)
    if s.base % c == 0:
        div.base = s.base
    else:
        rest.base = s.base
    for a in s.args:
        (div if a.scale % c == 0 else rest).args.append(a)
    return div, rest


def convert_mode(s: Split, mode: int) -> Split:
    if s.mode == mode:
        return s
    if s.compatible(mode):
        return replace(s, mode=mode)
    return replace(to_split(s.normalize()), mode=mode)
