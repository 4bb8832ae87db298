"""What InjectSoftwarePipeline does to each statement of a pipelined loop: the
statement as an opaque block with the regions it accesses (:func:`make_sblock`), the
dependences between statements (:func:`depends`), and its multi-versioned buffers
indexed by version (:class:`BodyRewriter`, TVM's ``PipelineBodyRewriter``)."""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.block import BufferRegion, Range, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import INT32
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var
from tirc.ir.stmt import BufferStore, For, Stmt
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_ops import binop, imm
from tirc.passes.analysis.block_access_region import block_read_write_regions


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
                 all_versions: bool):
        self.remap = remap
        self.olds = olds
        self.loop = loop
        self.all_versions = all_versions

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
        e = self.generic_visit(e)
        if e.op == "tvm_access_ptr":
            return self._access_ptr(e)
        if e.op in ("tvm_load_matrix_sync", "tvm_store_matrix_sync", "tvm_mma_sync",
                    "ptx_mma", "ptx_ldmatrix"):
            for a in e.args:
                if isinstance(a, Var) and any(b.data is a for b in self._old_buffers()):
                    raise Diagnostic(f"software pipelining a buffer accessed by T.{e.op} "
                                     "(tensor-core fragments) is not supported", e.span)
        return e

    def _old_buffers(self):
        return self.olds.values()

    def _access_ptr(self, e: Call) -> Call:
        data = e.args[1]
        old = next((b for b in self._old_buffers() if b.data is data), None)
        if old is None:
            return e
        new = self.remap[id(old)]
        offset = new.strides[0] if new.strides else _product(old.shape)
        index = binop("add", e.args[2],
                      binop("mul", binop("floormod", self.loop.loop_var, new.shape[0]), offset))
        args = list(e.args)
        args[1], args[2] = new.data, index
        return replace(e, args=tuple(args))


def _product(shape) -> PrimExpr:
    out: PrimExpr = imm(INT32, 1)
    for e in shape:
        out = binop("mul", out, e)
    return out

