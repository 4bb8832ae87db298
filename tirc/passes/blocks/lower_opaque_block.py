"""LowerOpaqueBlock: blocks without iterators become plain statements. A block's
allocations become ``T.alloc_buffer`` scopes around its body, its predicate (``T.where``)
an ``if``; its ``pragma_*`` annotations ``T.attr({key: value})`` around the body, its
regions and other annotations are dropped, as TVM drops them. Serial loops of one
iteration are replaced by their body at the loop's start. Loop annotations
whose key starts with ``pragma_`` (``pragma_auto_unroll_max_step``,
``pragma_unroll_explicit``, ...) become ``T.attr(loop_var, key, value)`` around the loop,
where UnrollLoop reads them; other loop annotations stay on the loop. A block that
becomes a sequence inside a sequence is spliced into it, as TVM's mutators flatten.

Precondition: ConvertBlocksToOpaque and LowerMatchBuffer ran. Guarantees: no block or
block realization remains.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.block import SBlockRealize
from tirc.ir.expr import IntImm, PrimExpr, StringImm, const
from tirc.ir.function import IRModule
from tirc.ir.stmt import AllocBuffer, AttrStmt, For, IfThenElse, SeqStmt, seq
from tirc.ir.renew import substitute
from tirc.ir.visitor import Mutator


# What TVM 0.27's LowerOpaqueBlock attaches to every allocation it makes (the alignment
# is the default one of the runtime; nothing reads the empty address list).
_ALLOC_ANNOTATIONS = (("buffer_allocated_addr", ()), ("buffer_data_alignment", 64))


def _attr_expr(value) -> PrimExpr:
    """An annotation value (a Python literal as the text wrote it) as an attribute value."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, str):
        return StringImm(value)
    return const(value)


class _Lower(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_SeqStmt(self, s: SeqStmt):
        new = (yield from self.descend(s))
        if new is not s and any(isinstance(x, SeqStmt) for x in new.stmts):
            return seq(new.stmts, s.span)
        return new

    def visit_SBlockRealize(self, s: SBlockRealize):
        block = s.block
        if block.iter_vars:
            raise Diagnostic(f"block '{block.name_hint}' still has iterators; LowerOpaqueBlock "
                             "needs ConvertBlocksToOpaque first", block.span)
        if block.match_buffers:
            raise Diagnostic(f"block '{block.name_hint}' still matches buffers; LowerOpaqueBlock "
                             "needs LowerMatchBuffer first", block.match_buffers[0].span)
        body = yield block.body
        for key, value in reversed(block.annotations):
            if key.startswith("pragma_"):
                body = AttrStmt(None, key, _attr_expr(value), body, block.span)
        for buf in reversed(block.alloc_buffers):
            body = AllocBuffer(buf, body, block.span, _ALLOC_ANNOTATIONS)
        if not (isinstance(s.predicate, IntImm) and s.predicate.value == 1):
            body = IfThenElse(self.visit(s.predicate), body, None, s.span)
        return body

    def visit_For(self, s: For):
        if (s.kind == "serial" and isinstance(s.extent, IntImm) and s.extent.value == 1
                and not s.annotations and s.step is None):
            return (yield substitute(s.body, {id(s.loop_var): s.min}))  # a unit loop
        s = (yield from self.descend(s))
        pragmas = [(k, v) for k, v in s.annotations if k.startswith("pragma_")]
        if not pragmas:
            return s
        kept = tuple((k, v) for k, v in s.annotations if not k.startswith("pragma_"))
        out = replace(s, annotations=kept)
        for key, value in reversed(pragmas):
            out = AttrStmt(s.loop_var, key, _attr_expr(value), out, s.span)
        return out


def lower_opaque_block(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(_Lower().visit)
