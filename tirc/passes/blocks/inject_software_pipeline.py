"""InjectSoftwarePipeline — not ported: a loop annotated for software pipelining
(``software_pipeline_stage``, ``software_pipeline_order``, ``software_pipeline_async_stages``,
as dlight and meta-schedule write on GPU main loops) is a located error naming the
annotation and the loop. Lowering such a loop without the rewrite would build a
different program from the one scheduled (no prefetch stages, no multi-buffering) with
no word to the user; TVM rewrites it into prologue, body and epilogue with staged
buffers. Remove the annotation (``sch.unannotate``) to build the loop as written.

Precondition: Verify. Guarantees: no loop carries a ``software_pipeline_*`` annotation.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.function import IRModule
from tirc.ir.stmt import For
from tirc.ir.visitor import walk


def inject_software_pipeline(mod: IRModule, ctx=None) -> IRModule:
    for func in mod.functions.values():
        for node in walk(func.body):
            if not isinstance(node, For):
                continue
            for key, _ in node.annotations:
                if key.startswith("software_pipeline_"):
                    raise Diagnostic(
                        f"loop '{node.loop_var.name}' is annotated \"{key}\": software "
                        "pipelining (InjectSoftwarePipeline) is not supported by tirc; remove "
                        "the annotation to build the loop without pipelining", node.span)
    return mod
