"""InjectDoubleBuffer — not ported: a buffer marked for double buffering
(``T.attr(buf.data, "double_buffer_scope", 1)``, or a block annotated
``double_buffer_scope`` by ``sch.double_buffer``, which TVM's LowerOpaqueBlock turns into
that attribute) is a located error naming the annotation and the buffer. TVM doubles the
buffer and alternates halves between loop iterations; building the loop without it would
silently drop what the schedule asked for.

Runs before LowerOpaqueBlock, which drops block annotations, so both spellings are seen.

Precondition: Verify. Guarantees: no ``double_buffer_scope`` attribute or block
annotation remains.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.block import SBlock
from tirc.ir.function import IRModule
from tirc.ir.stmt import AttrStmt
from tirc.ir.visitor import walk

_KEY = "double_buffer_scope"


def _refuse(what: str, span) -> Diagnostic:
    return Diagnostic(f"{what} is annotated \"{_KEY}\": double buffering (InjectDoubleBuffer) "
                      "is not supported by tirc; remove the annotation to build without it", span)


def inject_double_buffer(mod: IRModule, ctx=None) -> IRModule:
    for func in mod.functions.values():
        for node in walk(func.body):
            if isinstance(node, AttrStmt) and node.key == _KEY:
                name = getattr(node.node, "name", "a buffer")
                raise _refuse(f"buffer '{name}'", node.span)
            if isinstance(node, SBlock) and any(k == _KEY for k, _ in node.annotations):
                raise _refuse(f"block '{node.name_hint}'", node.span)
    return mod
