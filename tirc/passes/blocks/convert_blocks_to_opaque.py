"""ConvertBlocksToOpaque: every block iterator is replaced by the value its realization
binds it to (in the body, the regions and the matched buffers), and blocks lose their
iterators. What remains of a block is its name, regions, allocations, matched buffers
and annotations, under the realization's predicate.

Precondition: LowerInitBlock ran (an init statement is only defined with iterators).
Guarantees: no block has iterators or bindings.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.block import SBlockRealize
from tirc.ir.function import IRModule
from tirc.ir.renew import substitute
from tirc.ir.visitor import Mutator


class _Convert(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_SBlockRealize(self, s: SBlockRealize):
        s = (yield from self.descend(s))
        block = s.block
        if block.init is not None:
            raise Diagnostic(f"block '{block.name_hint}' still has an init statement; "
                             "ConvertBlocksToOpaque needs LowerInitBlock first", block.span)
        if not block.iter_vars:
            return s
        bindings = {id(iv.var): value for iv, value in zip(block.iter_vars, s.iter_values)}
        inner = substitute(replace(block, iter_vars=()), bindings)
        return replace(s, iter_values=(), block=inner)


def convert_blocks_to_opaque(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(_Convert().visit)
