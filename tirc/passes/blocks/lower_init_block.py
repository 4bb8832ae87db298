"""LowerInitBlock: a block's ``T.init()`` statement runs at the first step of its
reduction: ``if v_k == 0 and v_l == 0: <init>`` (the reduce iterators at the start of
their domains) in front of the block body. A block without reduce iterators runs its init
unconditionally.

Precondition: none beyond Verify. Guarantees: no block has an init statement.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.block import SBlock
from tirc.ir.dtype import BOOL
from tirc.ir.expr import BinOp
from tirc.ir.function import IRModule
from tirc.ir.stmt import IfThenElse, seq
from tirc.ir.visitor import Mutator


class _Lower(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_SBlock(self, s: SBlock):
        s = (yield from self.descend(s))
        if s.init is None:
            return s
        cond = None
        for iv in s.iter_vars:
            if iv.iter_type != "reduce":
                continue
            # The frontend gives an iterator's domain the iterator's dtype.
            first = BinOp("eq", iv.var, iv.dom.min, BOOL, iv.span)
            cond = first if cond is None else BinOp("and", cond, first, BOOL, iv.span)
        init = s.init if cond is None else IfThenElse(cond, s.init, None, s.span)
        return replace(s, body=seq([init, s.body], s.span), init=None)


def lower_init_block(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(_Lower().visit)
