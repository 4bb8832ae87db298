"""LowerCrossThreadReduction — detection only, so far. A block whose reduce iterator is
bound to a thread-bound loop (``threadIdx.*``; dlight's GPU reduction rules write these)
is a reduction *across threads*: TVM rewrites it into ``tvm_thread_allreduce``, which
LowerThreadAllreduce turns into warp shuffles. tirc does not port that rewrite yet, and
lowering the block as an ordinary one would let every thread update the same element at
once (a data race: wrong results), so such a block is a located error naming the block
and the loop.

Precondition: Verify. Guarantees: no reduce iterator of any block is bound to a thread
axis.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.block import SBlockRealize
from tirc.ir.expr import Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import For
from tirc.ir.visitor import Visitor, walk


class _Find(Visitor):
    def __init__(self) -> None:
        self.thread_loops: dict[int, For] = {}

    def visit_For(self, s: For) -> None:
        if s.kind == "thread_binding" and (s.thread_tag or "").startswith("threadIdx"):
            self.thread_loops[id(s.loop_var)] = s
        self.generic_visit(s)

    def visit_SBlockRealize(self, s: SBlockRealize) -> None:
        for iv, value in zip(s.block.iter_vars, s.iter_values):
            if iv.iter_type != "reduce":
                continue
            for n in walk(value):
                loop = self.thread_loops.get(id(n)) if isinstance(n, Var) else None
                if loop is not None:
                    raise Diagnostic(
                        f"block '{s.block.name_hint}' reduces across threads (its reduce "
                        f"iterator '{iv.var.name}' is bound to the {loop.thread_tag} loop "
                        f"'{loop.loop_var.name}'); tirc does not lower cross-thread "
                        "reductions (LowerCrossThreadReduction) yet", iv.span or s.span)
        self.generic_visit(s)


def lower_cross_thread_reduction(mod: IRModule, ctx=None) -> IRModule:
    for func in mod.functions.values():
        _Find().visit(func.body)
    return mod
