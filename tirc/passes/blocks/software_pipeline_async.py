"""The asynchronous stages of a software pipeline (TVM's async bookkeeping in
``PipelineRewriter``): which statements form a commit group
(``async_commit_queue_scope``), where a consumer waits (``async_wait_queue_scope``) and
how many groups may still be in flight there (``async_wait_inflight_count``).

A *producer head* is the (normalized) iteration whose copy an async stage issued last,
a *consumer head* the iteration whose data a statement reads; their difference is the
number of groups that may stay in flight. Global state runs across the prologue, body
and epilogue of one loop; local state is per part.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.block import SBlockRealize
from tirc.ir.dtype import INT32
from tirc.ir.equal import structural_equal
from tirc.ir.expr import Call, PrimExpr
from tirc.ir.stmt import AttrStmt, SeqStmt
from tirc.passes.analysis.arith_ops import binop, imm
from tirc.passes.blocks.software_pipeline_body import make_sblock


class _Global:
    def __init__(self) -> None:
        self.dst: set[int] = set()  # ids of the buffers the stage writes asynchronously
        # the sum of the extents of the parts run so far, minus 1, while every predicate
        # of the stage's producers was provably true; None once unknown
        self.head: PrimExpr | None = imm(INT32, -1)


class _Local:
    def __init__(self) -> None:
        self.wait_before: int = -1
        self.wait_count: PrimExpr | None = None
        self.seen: set[int] = set()
        self.head: PrimExpr | None = None
        self.predicate: PrimExpr | None = None
        self.groups: list[list[int]] = []
        self.consumed = False


class AsyncPlanner:
    """The global async state of one pipelined loop; ``begin`` starts a part."""

    def __init__(self, rewriter):
        self.rewriter = rewriter
        self.stages: dict[int, _Global] = {}

    def begin(self, normalized) -> "_Part":
        return _Part(self, normalized)


class _Part:
    def __init__(self, planner: AsyncPlanner, normalized):
        self.planner = planner
        self.globals = planner.stages
        self.ana = planner.rewriter.ana
        self.normalized = normalized
        self.locals: dict[int, _Local] = {}
        self.group_of: dict[int, int] = {}

    def _local(self, stage: int) -> _Local:
        return self.locals.setdefault(stage, _Local())

    def _global(self, stage: int) -> _Global:
        return self.globals.setdefault(stage, _Global())

    def producer(self, stage: int, block, index: int, access: PrimExpr, inbound: PrimExpr):
        local = self._local(stage)
        if not local.groups or local.consumed:
            group = len(local.groups)
            local.groups.append([index])
        else:
            group = len(local.groups) - 1
            local.groups[-1].append(index)
        for w in block.writes:
            self._global(stage).dst.add(id(w.buffer))
            self.group_of[id(w.buffer)] = group
        local.head = access
        if local.predicate is None or self.normalized.can_prove(local.predicate):
            local.predicate = inbound
        else:
            local.predicate = self.normalized.simplify(binop("and", local.predicate, inbound))
        body = AttrStmt(None, "async_scope", imm(INT32, 1), block.body, block.body.span)
        return replace(block, body=body)

    def mark_consumed(self, stage: int, block) -> None:
        for r in block.reads:
            for k in sorted(self.globals):
                if k <= stage and id(r.buffer) in self.globals[k].dst:
                    self._local(k).consumed = True

    def populate_wait_counts(self, new_blocks: list) -> None:
        for i, (stage, _, block, access, is_async) in enumerate(new_blocks):
            if is_async:
                for w in block.writes:
                    self._local(stage).seen.add(id(w.buffer))
            producer = -1
            for r in block.reads:
                for k in sorted(self.globals):
                    if k <= stage and id(r.buffer) in self.globals[k].dst:
                        if producer not in (-1, k):
                            raise Diagnostic("a software-pipeline statement depends on more "
                                             "than one asynchronous stage", block.span)
                        producer = k
            if producer == -1:
                continue
            dep = self._local(producer)
            heads: list[PrimExpr | None] = []
            if not dep.groups:
                heads.append(self.globals[producer].head)
            else:
                need = [True] * len(dep.groups)
                for r in block.reads:
                    if id(r.buffer) not in self.globals[producer].dst:
                        continue
                    group = self.group_of.get(id(r.buffer))
                    if group is None or not need[group]:
                        continue
                    if id(r.buffer) not in dep.seen:
                        heads.append(binop("sub", dep.head, imm(dep.head.dtype, 1)))
                    else:
                        heads.append(dep.head)
                    need[group] = False
            count = self._wait_count(heads, access)
            if dep.wait_count is None:
                dep.wait_before, dep.wait_count = i, count
            elif self.ana.can_prove(binop("lt", count, dep.wait_count)):
                dep.wait_count = count

    def _wait_count(self, heads: list, consumer: PrimExpr) -> PrimExpr:
        total: PrimExpr = imm(INT32, 0)
        for head in heads:
            if head is None or not self.normalized.can_prove(binop("ge", head, imm(head.dtype, 0))):
                return imm(INT32, 0)
            total = binop("add", total, self.ana.simplify(binop("sub", head, consumer)))
        return total

    def complete(self, new_blocks: list) -> list:
        blocks = [list(b) for b in new_blocks]
        group_stage = [-1] * len(blocks)
        for stage in sorted(self.locals):
            state = self.locals[stage]
            for group in state.groups:
                for j in range(len(group)):
                    group_stage[group[0] + j] = stage
            if state.wait_count is not None:
                count = state.wait_count
                if state.predicate is not None and not self.normalized.can_prove(state.predicate):
                    count = Call(INT32, "if_then_else", (state.predicate, count, imm(INT32, 0)))
                b = blocks[state.wait_before][2]
                span = self.planner.rewriter.loop.span
                inner = AttrStmt(None, "async_wait_inflight_count", count, b.body, span)
                body = AttrStmt(None, "async_wait_queue_scope", imm(INT32, stage), inner, span)
                blocks[state.wait_before][2] = replace(b, body=body)
        stmts = []
        i = 0
        visible = self.planner.rewriter.visible
        while i < len(blocks):
            stage, predicate, block = group_stage[i], blocks[i][1], blocks[i][2]
            if stage == -1:
                stmts.append(SBlockRealize((), predicate, block, block.span))
                i += 1
                continue
            bodies = []
            while i < len(blocks) and group_stage[i] == stage:
                if not structural_equal(predicate, blocks[i][1]):
                    raise Diagnostic("the statements of one asynchronous stage of a software "
                                     "pipeline run under different predicates", blocks[i][2].span)
                bodies.append(blocks[i][2].body)
                i += 1
            body = bodies[0] if len(bodies) == 1 else SeqStmt(tuple(bodies), bodies[0].span)
            commit = AttrStmt(None, "async_commit_queue_scope", imm(INT32, stage), body,
                              self.planner.rewriter.loop.span)
            stmts.append(SBlockRealize((), predicate, make_sblock(commit, visible), body.span))
        return stmts

    def finish(self, extent: PrimExpr) -> None:
        for stage in sorted(self.locals):
            state = self.locals[stage]
            g = self._global(stage)
            if (state.predicate is not None and self.normalized.can_prove(state.predicate)
                    and g.head is not None):
                g.head = binop("add", g.head, extent)
            else:
                g.head = None
