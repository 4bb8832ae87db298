"""LowerAutoCopy — not ported: a block annotated ``"auto_copy"`` (MetaSchedule's and
dlight's memhammer copies: global to shared, shared to WMMA fragments, with the layout
rewrites of ``memhammer_*.cc``) is a located error naming the block. TVM 0.27 still has
the pass (``s_tir.transform.LowerAutoCopy``); it rewrites each such copy into thread-bound,
vectorized, coalesced loops and, into fragments, WMMA loads and stores. Built as written,
every thread would run the whole copy, and a copy into a fragment would touch its
elements one by one, which no GPU can: so tirc refuses instead.

Precondition: Verify. Guarantees: no block carries an ``auto_copy`` annotation.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.block import SBlock
from tirc.ir.function import IRModule
from tirc.ir.visitor import walk

KEY = "auto_copy"


def lower_auto_copy(mod: IRModule, ctx=None) -> IRModule:
    for func in mod.functions.values():
        for node in walk(func.body):
            if isinstance(node, SBlock) and any(k == KEY for k, _ in node.annotations):
                raise Diagnostic(
                    f"block '{node.name_hint}' is annotated \"{KEY}\": the memhammer copy "
                    "rewrite (LowerAutoCopy) is not supported by tirc; schedule the copy "
                    "(split, bind, vectorize; tensorize a copy into WMMA fragments) instead",
                    node.span)
    return mod
