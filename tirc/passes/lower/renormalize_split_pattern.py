"""RenormalizeSplitPattern: index expressions of split loops written back in the form
TVM's later passes recognise (``floordiv(floormod(x, c1 * c2), c2)`` becomes
``floormod(floordiv(x, c2), c1)``, a common factor of a sum's term and its divisor is
divided out), as TVM's pass of the same name does, rule for rule:

* ``(x % c3) // c2`` with ``c3 % c2 == 0``: ``(x // c2) % (c3 // c2)``;
* ``(x * c1 + y) // c2`` and ``(x * c1 + y + z) // c2`` with ``g = gcd(c1, c2) > 1``
  (both positive): ``(x * (c1 / g) + (y [+ z]) // g) // (c2 / g)``;
* comparisons become ``<`` or its negation (``a > b`` is ``b < a``, ``a >= b`` is
  ``b <= a``), and ``x < c`` with a constant ``c > 0`` is ``x // c < 1``;
* ``not`` of a comparison is the opposite comparison; ``not not x`` is ``x``.

The same for vectors (a broadcast constant in place of each ``c``). A rewritten
expression is rewritten again, at most 5 levels deep in all (TVM's limit).
"""
from __future__ import annotations

from math import gcd

from tirc.ir.expr import BinOp, Broadcast, IntImm, Not, PrimExpr
from tirc.ir.function import IRModule
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_ops import binop

_MAX_DEPTH = 5


def renormalize_split_pattern(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(_Renormalize().visit)


def _const(e: PrimExpr) -> tuple[int, int | None] | None:
    """``(value, lanes)`` of an integer constant, or of a broadcast of one (lanes None for
    a scalar)."""
    if isinstance(e, IntImm) and e.dtype.is_integer:
        return e.value, None
    if isinstance(e, Broadcast) and isinstance(e.value, IntImm) and e.value.dtype.is_integer:
        return e.value.value, e.lanes
    return None


def _like(value: int, shape: PrimExpr) -> PrimExpr:
    """The constant ``value`` shaped as ``shape`` (an IntImm, or a broadcast of one)."""
    if isinstance(shape, Broadcast):
        return Broadcast(IntImm(shape.value.dtype, value), shape.lanes, None, shape.scalable)
    return IntImm(shape.dtype, value)


class _Renormalize(Mutator):
    def __init__(self):
        self.depth = 0

    def again(self, e: PrimExpr) -> PrimExpr:
        if self.depth >= _MAX_DEPTH:
            return e
        self.depth += 1
        try:
            return self.visit(e)
        finally:
            self.depth -= 1

    def visit_BinOp(self, e: BinOp):
        if e.op == "le":  # a <= b: not (b < a)
            return self.visit(Not(BinOp("lt", e.b, e.a, e.dtype), e.span))
        if e.op == "gt":
            return self.visit(BinOp("lt", e.b, e.a, e.dtype, e.span))
        if e.op == "ge":
            return self.visit(Not(BinOp("lt", e.a, e.b, e.dtype), e.span))
        if e.op not in ("floordiv", "lt"):
            return self.generic_visit(e)
        a, b = self.visit(e.a), self.visit(e.b)
        if e.op == "lt":
            ret = binop("lt", a, b)
            if isinstance(b, IntImm) and b.dtype.is_integer and b.value > 0:
                return self.again(binop("lt", binop("floordiv", a, b), _like(1, b)))
            return ret
        ret = binop("floordiv", a, b)
        return self._floordiv(ret) if isinstance(ret, BinOp) and ret.op == "floordiv" else ret

    def _floordiv(self, ret: BinOp) -> PrimExpr:
        x, c2e = ret.a, ret.b
        c2 = _const(c2e)
        if c2 is None:
            return ret
        # (x % c3) // c2 -> (x // c2) % (c3 // c2)
        if isinstance(x, BinOp) and x.op == "floormod":
            c3 = _const(x.b)
            if c3 is not None and c3[1] == c2[1] and c2[0] != 0 and c3[0] % c2[0] == 0:
                return self.again(binop("floormod", binop("floordiv", x.a, c2e),
                                        _like(c3[0] // c2[0], c2e)))
        # (x * c1 + y [+ z]) // c2 -> (x * (c1/g) + (y [+ z]) // g) // (c2/g)
        if isinstance(x, BinOp) and x.op == "add":
            for term, rest in _product_and_rest(x):
                c1 = _const(term.b)
                if c1 is None or c1[1] != c2[1] or c1[0] <= 0 or c2[0] <= 0:
                    continue
                g = gcd(c1[0], c2[0])
                if g <= 1:
                    return ret
                head = binop("mul", term.a, _like(c1[0] // g, term.b))
                return self.again(binop("floordiv", binop("add", head,
                                                          binop("floordiv", rest, _like(g, c2e))),
                                        _like(c2[0] // g, c2e)))
        return ret

    def visit_Not(self, e: Not):
        a = self.visit(e.a)
        ret = e if a is e.a else Not(a, e.span)
        if isinstance(a, Not):
            return a.a
        if isinstance(a, BinOp):
            flip = {"le": ("lt", True), "ge": ("lt", False), "lt": ("le", True),
                    "gt": ("le", False)}.get(a.op)
            if flip is not None:
                op, swap = flip
                return BinOp(op, a.b, a.a, a.dtype, e.span) if swap else \
                    BinOp(op, a.a, a.b, a.dtype, e.span)
        return ret


def _product_and_rest(x: BinOp):
    """The ways TVM's patterns ``x * c1 + y`` and ``x * c1 + y + z`` match ``x`` (a sum):
    ``(the product term, the rest of the sum)``."""
    if isinstance(x.a, BinOp) and x.a.op == "mul":
        yield x.a, x.b
    elif (isinstance(x.a, BinOp) and x.a.op == "add" and isinstance(x.a.a, BinOp)
          and x.a.a.op == "mul"):
        yield x.a.a, binop("add", x.a.b, x.b)
