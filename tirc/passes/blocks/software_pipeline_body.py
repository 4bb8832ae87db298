"""What InjectSoftwarePipeline does to each statement of a pipelined loop: the
statement as an opaque block with the regions it accesses (:func:`make_sblock`), the
dependences between statements (:func:`depends`), and its multi-versioned buffers
indexed by version (:class:`BodyRewriter`, TVM's ``PipelineBodyRewriter``; the calls that
reach them by pointer, WMMA fragments included, are ``software_pipeline_opaque``'s)."""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.block import BufferRegion, Range, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import INT32
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr
from tirc.ir.stmt import BufferStore, For, Stmt
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_ops import binop, imm
from tirc.passes.analysis.block_access_region import block_read_write_regions
from tirc.passes.blocks.software_pipeline_opaque import OpaqueAccessRewriter


def make_sblock(body: Stmt, visible: dict[int, Buffer]) -> SBlock:
    """``body`` as an opaque block with the regions it accesses (of ``visible`` buffers);
    a realization without predicate gives its own block."""
    if isinstance(body, SBlockRealize) and _is_true(body.predicate):
        return body.block
    block = SBlock("", (), (), (), body, span=body.span)
    reads, writes = block_read_write_regions(block, visible)
    return replace(block, reads=tuple(reads), writes=tuple(writes))


def depends(blocks: list[SBlock]) -> list[tuple[int, int]]:
    """The (writer, reader) pairs of ``blocks``: a block reading a buffer an earlier one
    writes (TVM's ``BuildDependencyGraph``), in TVM's order."""
    writers: dict[int, list[int]] = {}
    edges = []
    for i, b in enumerate(blocks):
        for r in b.reads:
            for w in writers.get(id(r.buffer.data), ()):
                edges.append((w, i))
        for w in b.writes:
            writers.setdefault(id(w.buffer.data), []).append(i)
    return edges


def _is_true(e) -> bool:
    return isinstance(e, IntImm) and e.value != 0


class BodyRewriter(Mutator):
    """A pipelined statement with its multi-versioned buffers indexed by version (TVM's
    ``PipelineBodyRewriter``)."""

    def __init__(self, remap: dict[int, Buffer], olds: dict[int, Buffer], loop: For,
                 all_versions: bool, fragments):
        self.remap = remap
        self.loop = loop
        self.all_versions = all_versions
        self.opaque = OpaqueAccessRewriter(remap, olds, self._version, fragments)

    def _version(self, new: Buffer) -> PrimExpr:
        return binop("floormod", binop("sub", self.loop.loop_var, self.loop.min), new.shape[0])

    def _region(self, r: BufferRegion) -> BufferRegion:
        new = self.remap.get(id(r.buffer))
        if new is None:
            return r
        if self.all_versions:
            version = Range(imm(new.shape[0].dtype, 0), new.shape[0])
        else:
            version = Range(self._version(new), imm(INT32, 1))
        return BufferRegion(new, (version, *r.region), r.span)

    def visit_SBlock(self, b: SBlock):
        b = self.generic_visit(b)
        reads = tuple(self._region(r) for r in b.reads)
        writes = tuple(self._region(r) for r in b.writes)
        if any(x is not y for x, y in zip(reads + writes, b.reads + b.writes)):
            b = replace(b, reads=reads, writes=writes)
        return b

    def visit_BufferStore(self, s: BufferStore):
        s = self.generic_visit(s)
        new = self.remap.get(id(s.buffer))
        if new is None:
            return s
        return replace(s, buffer=new, indices=(self._version(new), *s.indices))

    def visit_BufferLoad(self, e: BufferLoad):
        e = self.generic_visit(e)
        new = self.remap.get(id(e.buffer))
        if new is None:
            return e
        return replace(e, buffer=new, indices=(self._version(new), *e.indices))

    def visit_Call(self, e: Call):
        return self.opaque.rewrite(self.generic_visit(e))
