"""The regions a block reads and writes, inferred from its body (TVM's
``GetSBlockReadWriteRegion``): every load and store is relaxed over the loops inside
the block, a child block contributes its own declared regions (its iterators replaced
by their bindings), and a buffer whose data pointer is used directly (``A.data`` in an
extern call) is accessed opaquely: its whole region counts as read and written.

Regions are listed in order of first access; a dimension that is provably one point
keeps its index as written (``A[c, 0:12]``).
"""
from __future__ import annotations

from tirc.ir.block import BufferRegion, MatchBufferRegion, Range, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Call, IntImm, Not, PrimExpr, Var
from tirc.ir.renew import substitute
from tirc.ir.stmt import BufferStore, DeclBuffer, For, IfThenElse, LetStmt
from tirc.ir.visitor import Visitor
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, imm
from tirc.passes.analysis.region_bounds import solve_condition
from tirc.passes.analysis.region_relax import (IntervalSet, cover_range, eval_interval, eval_range,
                                      eval_set, from_range, union)


def block_read_write_regions(block: SBlock, visible: dict[int, Buffer], opaque_error=None):
    """``(reads, writes)`` of ``block`` (its init, then its body): accesses of the buffers
    in ``visible`` (keyed by ``id`` of their data pointer) only. A buffer accessed
    opaquely is read and written whole; with ``opaque_error`` (a function of the buffer
    returning an exception) it is that error instead, as for the regions TVM's parser
    infers."""
    d = _Detector(visible)
    for m in block.match_buffers:
        if id(m.source.buffer.data) in d.visible:
            d.matches[id(m.buffer.data)] = m
            d.visible[id(m.buffer.data)] = m.buffer
    if block.init is not None:
        d.visit(block.init)
    d.visit(block.body)
    opaque = d.collect(d.opaque, ())
    if opaque and opaque_error is not None:
        raise opaque_error(opaque[0].buffer)
    excluded = tuple(r.buffer for r in opaque)
    writes = d.collect(d.writes, excluded)
    if block.init is not None:
        excluded += tuple(r.buffer for r in writes)
    reads = d.collect(d.reads, excluded)
    return tuple(reads) + tuple(opaque), tuple(writes) + tuple(opaque)


class _Detector(Visitor):
    def __init__(self, visible: dict[int, Buffer]):
        self.visible = dict(visible)
        self.matches: dict[int, MatchBufferRegion] = {}
        self.dom: dict[int, IntervalSet] = {}
        self.lets: dict[int, PrimExpr] = {}
        self.reads: list[tuple[Buffer, list[IntervalSet]]] = []
        self.writes: list[tuple[Buffer, list[IntervalSet]]] = []
        self.opaque: list[tuple[Buffer, list[IntervalSet]]] = []

    # ---- accesses -----------------------------------------------------------------------

    def _point_region(self, indices) -> list[IntervalSet]:
        out = []
        for idx in indices:
            while True:
                new = substitute(idx, self.lets) if self.lets else idx
                if new is idx:
                    break
                idx = new
            out.append(eval_interval(IntervalSet.point(idx), self.dom) if idx.dtype.lanes == 1
                       else eval_set(idx, self.dom))
        return out

    def _full(self, buf: Buffer) -> list[IntervalSet]:
        return [eval_range(imm(e.dtype, 0), e, self.dom) for e in buf.shape]

    def update(self, table, buf: Buffer, region: list[IntervalSet]) -> None:
        if id(buf.data) not in self.visible:
            return
        m = self.matches.get(id(buf.data))
        if m is not None:
            ranges = [cover_range(s, Range(imm(e.dtype, 0), e)) for s, e in zip(region, buf.shape)]
            buf, region = m.source.buffer, [eval_range(r.min, r.extent, self.dom)
                                            for r in convert_region(m, ranges)]
        for i, (b, old) in enumerate(table):
            if b is buf:
                table[i] = (b, [union([x, y]) for x, y in zip(old, region)])
                return
        table.append((buf, region))

    def collect(self, table, excluded) -> list[BufferRegion]:
        ana = Analyzer()
        out = []
        for buf, region in table:
            if any(buf is x for x in excluded):
                continue
            ranges = []
            for s, extent in zip(region, buf.shape):
                if s.is_point or (s.has_lower and s.has_upper and ana.can_prove_equal(s.min, s.max)):
                    ranges.append(Range(s.min, imm(s.min.dtype, 1)))
                else:
                    ranges.append(cover_range(s, Range(imm(extent.dtype, 0), extent)))
            out.append(BufferRegion(buf, tuple(ranges)))
        return out

    # ---- traversal ----------------------------------------------------------------------

    def visit_For(self, s: For):
        self.visit(s.min)
        self.visit(s.extent)
        self.dom[id(s.loop_var)] = from_range(s.min, s.extent)
        yield s.body
        del self.dom[id(s.loop_var)]

    def _branch(self, cond: PrimExpr, node) -> None:
        solved = solve_condition(cond, self.dom)
        saved = {k: self.dom[k] for k in (solved or {})}
        self.dom.update(solved or {})
        self.visit(node)
        self.dom.update(saved)

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.visit(s.condition)
        self._branch(s.condition, s.then_case)
        if s.else_case is not None:
            self._branch(Not(s.condition), s.else_case)

    def visit_LetStmt(self, s: LetStmt):
        self.lets[id(s.var)] = s.value
        self.visit(s.value)
        yield s.body

    def visit_DeclBuffer(self, s: DeclBuffer):
        yield s.body

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.update(self.writes, s.buffer, self._point_region(s.indices))
        self.visit(s.value)
        for i in s.indices:
            self.visit(i)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.update(self.reads, e.buffer, self._point_region(e.indices))
        for i in e.indices:
            self.visit(i)

    def visit_Var(self, v: Var) -> None:
        buf = self.visible.get(id(v))
        if buf is not None and buf.data is v:
            self.update(self.opaque, buf, self._full(buf))

    def visit_Call(self, e: Call) -> None:
        if e.op == "tvm_access_ptr" and len(e.args) == 5:
            data, mask = e.args[1], e.args[4]
            if isinstance(data, Var) and isinstance(mask, IntImm):
                buf = self.visible.get(id(data))
                if buf is not None:
                    table = {3: self.opaque, 1: self.reads, 2: self.writes}.get(mask.value & 3)
                    if table is not None:
                        self.update(table, buf, self._full(buf))
                return
        if e.op == "if_then_else":
            self.visit(e.args[0])
            self._branch(e.args[0], e.args[1])
            self._branch(Not(e.args[0]), e.args[2])
            return
        self.generic_visit(e)

    def visit_SBlockRealize(self, s: SBlockRealize) -> None:
        block = s.block
        vmap = {id(iv.var): v for iv, v in zip(block.iter_vars, s.iter_values)}
        for table, regions in ((self.reads, block.reads), (self.writes, block.writes)):
            for r in regions:
                sets = [eval_interval(from_range(substitute(rng.min, vmap), substitute(rng.extent, vmap)),
                                      self.dom) for rng in r.region]
                self.update(table, r.buffer, sets)


def convert_region(m: MatchBufferRegion, region) -> tuple[Range, ...]:
    """A region of the matched buffer as a region of its source (TVM's ConvertRegion)."""
    src = m.source.region
    offset = len(src) - len(region)
    out = [Range(r.min, imm(r.extent.dtype, 1)) for r in src[:offset]]
    for s, r in zip(src[offset:], region):
        out.append(Range(binop("add", s.min, r.min), r.extent))
    return tuple(out)
