"""LowerAsyncDMA (TVM's ``s_tir.LowerAsyncDMA``, run when the pass option
``tirx.use_async_copy`` is set): in an ``async_commit_queue_scope``, a loop nest that
copies one contiguous region of a flat buffer into another (TVM's ``IdentifyMemCpy``)
would become a DMA-engine copy (``T.dma_copy``, with ``T.dma_wait`` for the queue's
waits). Only Hexagon's code generator has those builtins; no target of tirc (CPU, CUDA)
does, and TVM's CUDA code generator cannot compile them either. So here such a copy is a
located error saying so, and every other module passes unchanged: for tirc's targets the
pass is the identity wherever TVM's result would build.

What counts as a contiguous copy: a perfect nest of loops around one store of a load
into a one-dimensional buffer from one, both indices the loops' row-major iteration
number plus a constant offset. (TVM also accepts permuted bijective nests; those pass
through here and their copies stay loops.)

Precondition: FlattenBuffer. Guarantees: nothing changes.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr
from tirc.ir.function import IRModule
from tirc.ir.renew import substitute
from tirc.ir.stmt import AttrStmt, BufferStore, For
from tirc.ir.visitor import Visitor
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, imm

OPTION = "tirx.use_async_copy"
COMMIT_QUEUE = "async_commit_queue_scope"


def lower_async_dma(mod: IRModule, ctx=None, force: bool = False) -> IRModule:
    """The pass; in the pipeline only with ``--pass-config tirx.use_async_copy=1``."""
    if not force and (ctx is None or not ctx.config_of(OPTION, False)):
        return mod
    for func in mod.functions.values():
        _Finder().visit(func.body)
    return mod


class _Finder(Visitor):
    expressions = False

    def __init__(self):
        self.in_queue = False

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key != COMMIT_QUEUE:
            yield from self.descend(s)
            return
        saved, self.in_queue = self.in_queue, True
        try:
            yield s.body
        finally:
            self.in_queue = saved

    def visit_For(self, s: For):
        if self.in_queue and is_contiguous_copy(s):
            raise Diagnostic(
                "this loop copies a contiguous region inside an asynchronous commit queue: "
                "with tirx.use_async_copy TVM makes it a DMA-engine copy (T.dma_copy), "
                "which only Hexagon has and no target of tirc compiles; vectorize the copy "
                "across threads (it becomes cp.async on CUDA) or leave tirx.use_async_copy "
                "unset", s.span)
        yield from self.descend(s)


def is_contiguous_copy(loop: For) -> bool:
    loops = []
    stmt = loop
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    if not (isinstance(stmt, BufferStore) and isinstance(stmt.value, BufferLoad)):
        return False
    store, load = stmt, stmt.value
    if len(store.indices) != 1 or len(load.indices) != 1:
        return False
    if store.indices[0].dtype.lanes != 1 or load.indices[0].dtype.lanes != 1:
        return False
    ana = Analyzer()
    linear: PrimExpr = imm(loops[-1].loop_var.dtype, 0)
    stride: PrimExpr = imm(loops[-1].loop_var.dtype, 1)
    for lp in reversed(loops):
        if not isinstance(lp.min, IntImm):
            return False
        linear = binop("add", linear, binop("mul", binop("sub", lp.loop_var, lp.min), stride))
        stride = binop("mul", stride, lp.extent)
    zero = {id(lp.loop_var): lp.min for lp in loops}
    for index in (store.indices[0], load.indices[0]):
        base = substitute(index, zero)
        if not ana.can_prove_equal(binop("sub", index, base), linear):
            return False
    return True
