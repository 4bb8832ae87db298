"""The rewrite of one software-pipelined loop (InjectSoftwarePipeline's core, TVM's
``PipelineRewriter``): buffer versions, prologue/body/epilogue emission with the
statements skewed by their stage, and the commit groups and waits of asynchronous
stages (:mod:`tirc.passes.blocks.software_pipeline_async`)."""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.block import Range, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, INT32
from tirc.ir.expr import BinOp, IntImm, Not, PrimExpr, Var
from tirc.ir.renew import substitute
from tirc.ir.stmt import Evaluate, For, SeqStmt, Stmt
from tirc.diagnostics import Diagnostic
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, imm
from tirc.passes.blocks.software_pipeline_async import AsyncPlanner
from tirc.passes.blocks.software_pipeline_body import BodyRewriter, make_sblock
from tirc.records import record


@record(frozen=True)
class Stage:
    stage: int
    order: int
    is_async: bool


def _is_true(e) -> bool:
    return isinstance(e, IntImm) and e.value != 0


def _true() -> IntImm:
    return IntImm(BOOL, 1)


def _nop() -> SBlockRealize:
    return SBlockRealize((), _true(), SBlock("", (), (), (), Evaluate(IntImm(INT32, 0))))


def _logical_and(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return binop("and", a, b)


def _not(a: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm):
        return IntImm(a.dtype, int(not a.value))
    return Not(a)


class PipelineRewriter:
    """Rewrites one annotated loop (``build``) into the block realization of its
    prologue, body and epilogue."""

    def __init__(self, visible: dict[int, Buffer], double_buffers: set[int],
                 allocs: list[Buffer], loop: For, blocks: list[SBlock], info: list,
                 preserved: tuple, fragments):
        self.ana = Analyzer()
        self.visible = visible
        self.double_buffers = double_buffers
        self.allocs = allocs
        self.loop = loop
        self.blocks = blocks
        self.info = info
        self.preserved = preserved
        self.fragments = fragments  # () -> elements of a fragment by id of its data
        self.max_stage = max((st.stage for st in info), default=-1)
        self.remap: dict[int, Buffer] = {}
        self.olds: dict[int, Buffer] = {}
        self.asyncs = AsyncPlanner(self)

    # ---- buffer versions ----------------------------------------------------------

    def _access_info(self) -> dict[int, list[int]]:
        infos: dict[int, list[int]] = {}  # id(buffer) -> [def, use]
        for b, st in zip(self.blocks, self.info):
            for w in b.writes:
                info = infos.setdefault(id(w.buffer), [-1, -1])
                info[0] = st.stage if info[0] == -1 else min(info[0], st.stage)
            for r in b.reads:
                info = infos.setdefault(id(r.buffer), [-1, -1])
                info[1] = max(info[1], st.stage)
        return infos

    def _may_conflict(self, a: tuple[Range, ...], b: tuple[Range, ...]) -> bool:
        for x, y in zip(a, b):
            lo = binop("max", x.min, y.min)
            hi = binop("min", binop("sub", binop("add", x.min, x.extent), imm(x.extent.dtype, 1)),
                       binop("sub", binop("add", y.min, y.extent), imm(y.extent.dtype, 1)))
            if Analyzer().can_prove(binop("lt", hi, lo)):
                return False
        return True

    def _versions(self, buf: Buffer, info: list[int]) -> int:
        define, use = info
        if define == -1:
            return 1
        n = use - define + 1
        if n == 2:
            need = False
            for wb, wi in zip(self.blocks, self.info):
                w = next((r for r in wb.writes if r.buffer is buf), None)
                if w is None:
                    continue
                for rb, ri in zip(self.blocks, self.info):
                    r = next((x for x in rb.reads if x.buffer is buf), None)
                    if r is None:
                        continue
                    if (wi.order < ri.order and wi.stage < ri.stage
                            and self._may_conflict(w.region, r.region)):
                        need = True
                        break
            if not need:
                n = 1
        if n == 1 and id(buf) in self.double_buffers:
            n = 2
        return n

    def _multi_version(self, buf: Buffer, n: int) -> Buffer:
        shape = (imm(INT32, n), *buf.shape)
        strides = buf.strides
        if strides:
            strides = (binop("mul", strides[0], buf.shape[0]), *strides)
        return replace(buf, shape=shape, strides=strides)

    # ---- the pipeline -----------------------------------------------------------------

    def _check_unversioned(self) -> None:
        """A buffer the pipeline cannot version (allocated outside the pipelined loop)
        must not be overwritten by a later iteration's statement before an earlier
        iteration reads it: TVM leaves such a buffer as it is and the pipeline reads
        the wrong data; here it is a located error."""
        allocated = {id(b) for b in self.allocs}
        var = self.loop.loop_var
        for wb, wi in zip(self.blocks, self.info):
            for w in wb.writes:
                if id(w.buffer) in allocated:
                    continue
                for rb, ri in zip(self.blocks, self.info):
                    gap = ri.stage - wi.stage
                    if gap < 1 or (gap == 1 and wi.order > ri.order):
                        continue
                    for r in rb.reads:
                        if r.buffer is not w.buffer:
                            continue
                        for d in range(1, gap + 1):
                            later = tuple(Range(substitute(x.min, {id(var): binop("add", var, imm(var.dtype, d))}),
                                                x.extent) for x in w.region)
                            if self._may_conflict(later, r.region):
                                raise Diagnostic(
                                    f"buffer '{w.buffer.name}' is written in stage {wi.stage} and "
                                    f"read in stage {ri.stage} of the software pipeline of loop "
                                    f"'{var.name}', but it is allocated outside the loop, so it "
                                    "cannot get one version per iteration in flight: a later "
                                    "iteration would overwrite what an earlier one still reads "
                                    "(allocate it in the loop's block)", self.loop.span)

    def build(self) -> SBlockRealize:
        infos = self._access_info()
        self._check_unversioned()
        for buf in self.allocs:
            n = self._versions(buf, infos.get(id(buf), [-1, -1]))
            if n > 1:
                new = self._multi_version(buf, n)
                self.remap[id(buf)] = new
                self.olds[id(buf)] = buf
                self.visible[id(new.data)] = new
        self.ordered = sorted(range(len(self.blocks)), key=lambda k: self.info[k].order)
        loop, ms = self.loop, self.max_stage
        lo = loop.min
        end = binop("add", lo, loop.extent)
        prologue = self._emit(lo, binop("add", lo, imm(lo.dtype, ms)), True)
        body = self._emit(binop("add", lo, imm(lo.dtype, ms)), end, False)
        epilogue_start = end
        extra = None
        if ms > 1 and not self.ana.can_prove_ge(loop.extent, ms):
            if isinstance(epilogue_start, IntImm):
                epilogue_start = binop("max", epilogue_start, binop("add", lo, imm(lo.dtype, ms)))
            else:
                extra = binop("add", lo, imm(lo.dtype, ms))
        epilogue = self._emit(epilogue_start, binop("add", end, imm(end.dtype, ms)), True, extra)
        stmt = SeqStmt((prologue, body, epilogue), loop.span)
        allocs = []
        for buf in self.allocs:
            new = self.remap.get(id(buf), buf)
            allocs.append(new)
            self.visible.pop(id(buf.data), None)
            self.visible.pop(id(new.data), None)
        block = replace(make_sblock(stmt, self.visible), alloc_buffers=tuple(allocs))
        return SBlockRealize((), _true(), block, loop.span)

    def _lower_check(self, lo: PrimExpr, skewed: PrimExpr) -> PrimExpr:
        """``lo <= skewed`` simplified as TVM's rewrite simplifier writes it: ``c0 <= x - c1``
        becomes ``c0 + c1 <= x``, and ``x == c0 + c1`` where ``x`` cannot exceed that."""
        e = self.ana.simplify(binop("le", lo, skewed))
        if (isinstance(e, BinOp) and e.op == "le" and isinstance(e.a, IntImm)
                and isinstance(e.b, BinOp) and e.b.op == "sub" and isinstance(e.b.b, IntImm)):
            x, c = e.b.a, imm(e.a.dtype, e.a.value + e.b.b.value)
            if self.ana.const_bound(binop("sub", c, x))[0] >= 0:
                return BinOp("eq", x, c, BOOL)
            return BinOp("le", c, x, BOOL)
        return e

    def _rewrite_body(self, block: SBlock) -> SBlock:
        return BodyRewriter(self.remap, self.olds, self.loop, self.max_stage != 1,
                            self.fragments).visit(block)

    def _emit(self, start: PrimExpr, end: PrimExpr, unroll: bool, extra=None) -> Stmt:
        loop = self.loop
        extent = binop("sub", end, start)
        if self.ana.can_prove(binop("le", extent, imm(extent.dtype, 0))):
            return _nop()
        unit = self.ana.can_prove_equal(extent, imm(extent.dtype, 1))
        if unit:
            var: PrimExpr = start
        else:
            var = Var(loop.loop_var.name, loop.loop_var.dtype, loop.loop_var.ptr, loop.loop_var.span)
            self.ana.bind_range(var, start, extent)
        normalized = Analyzer()
        if not unit:
            normalized.bind_range(var, loop.min, binop("sub", extent, loop.min))
        new_blocks = []
        planner = self.asyncs.begin(normalized)
        for k in self.ordered:
            block, st = self.blocks[k], self.info[k]
            skewed = binop("sub", var, imm(var.dtype, st.stage))
            inbound = _logical_and(self._lower_check(loop.min, skewed),
                                   binop("lt", skewed, binop("add", loop.min, loop.extent)))
            if extra is not None:
                inbound = self.ana.simplify(_logical_and(inbound, binop("ge", var, extra)))
            if self.ana.can_prove(_not(inbound)):
                continue
            new_block = self._rewrite_body(block)
            delta = binop("sub", start, loop.min)
            access = skewed if unit else binop("add", skewed, delta)
            if not unit:
                inbound = substitute(inbound, {id(var): binop("add", var, delta)})
            new_block = substitute(new_block, {id(loop.loop_var): access})
            if st.is_async:
                new_block = planner.producer(st.stage, new_block, len(new_blocks), access, inbound)
            new_blocks.append([st.stage, inbound, new_block, access, st.is_async])
            planner.mark_consumed(st.stage, new_block)
        planner.populate_wait_counts(new_blocks)
        stmts = planner.complete(new_blocks)
        if not stmts:
            return _nop()
        new_loop: Stmt = stmts[0] if len(stmts) == 1 else SeqStmt(tuple(stmts), loop.span)
        if not unit:
            new_loop = For(var, loop.min, extent, "unrolled" if unroll else loop.kind, new_loop,
                           loop.thread_tag if not unroll else None, self.preserved, None, loop.span)
        planner.finish(extent)
        return SBlockRealize((), _true(), make_sblock(new_loop, self.visible), loop.span)
