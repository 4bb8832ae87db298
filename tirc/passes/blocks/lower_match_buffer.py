"""LowerMatchBuffer: a block's matched buffers (``X = T.match_buffer(A[i, 0:16], (16,))``)
disappear; every access of ``X`` becomes an access of ``A`` at the region's start plus
the index (``X[j]`` is ``A[i, j]``, a leading dimension of extent 1 is its start), block
regions over ``X`` become regions of ``A``, and ``X.data`` is ``A.data``. A match of a
match resolves to the outermost buffer.

The matched buffer's declared signature binds against the region: its shape to the
region's extents, its strides to the source's (row-major ones when the source has none),
its element offset to the region's start offset. A variable (``strides=("s0", "s1")``)
takes the value; anything else (a constant, a function parameter, a variable already
bound) must provably equal it, else a located error names the constraint
(``sub_A.strides_0: 1 == 8``), as TVM rejects such a match. Scopes and dtypes must agree.

Precondition: none (runs before or after ConvertBlocksToOpaque). Guarantees: no block
matches buffers.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic, Span
from tirc.ir.describe import expr_text
from tirc.ir.block import BufferRegion, MatchBufferRegion, SBlock
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, INT32
from tirc.ir.expr import BinOp, BufferLoad, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.renew import substitute
from tirc.ir.stmt import BufferStore, For
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import add, cast, imm, is_int, mul
from tirc.passes.analysis.block_access_region import convert_region


def lower_match_buffer(mod: IRModule, ctx=None) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        body = _Lower(f).visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)


def _elem_offset(b: Buffer, indices) -> PrimExpr:
    """The flat element offset of ``indices`` in ``b`` (TVM's ``ElemOffset``)."""
    out: PrimExpr = imm(indices[0].dtype if indices else INT32, 0)
    for k, idx in enumerate(indices):
        out = add(out, mul(idx, b.strides[k])) if b.strides else add(mul(out, b.shape[k]), idx)
    if b.elem_offset is not None and not is_int(b.elem_offset, 0):
        out = add(out, b.elem_offset)
    return Analyzer().simplify(out)


class _Lower(Mutator):
    def __init__(self, func: PrimFunc):
        self.values: dict[int, PrimExpr] = {id(p): p for p in func.params if not p.dtype.is_handle}
        self.matches: dict[int, BufferRegion] = {}  # id(matched buffer) -> source region
        self.data: dict[int, Var] = {}  # id(matched buffer's data) -> the source's
        self.ana = Analyzer()

    # ---- binding the signature ----------------------------------------------------------

    def _source(self, r: BufferRegion) -> BufferRegion:
        src = self.matches.get(id(r.buffer))
        if src is None:
            return r
        return BufferRegion(src.buffer, convert_region(MatchBufferRegion(r.buffer, src), r.region), r.span)

    def _bind(self, m: MatchBufferRegion) -> None:
        buf, source = m.buffer, self._source(m.source)
        src = source.buffer
        if buf.scope != src.scope:
            raise Diagnostic(f"T.match_buffer: '{buf.name}' is in scope {buf.scope}, its source "
                             f"'{src.name}' in {src.scope}", m.span)
        if buf.dtype != src.dtype:
            raise Diagnostic(f"T.match_buffer: '{buf.name}' is {buf.dtype}, its source "
                             f"'{src.name}' {src.dtype}", m.span)
        offset = buf.elem_offset
        if offset is None and buf.offset_factor == 0:
            offset = imm(buf.shape[0].dtype if buf.shape else source.region[0].min.dtype, 0)
        if offset is not None and is_int(offset, 0) and not (
                src.elem_offset is None or is_int(src.elem_offset, 0)):
            raise Diagnostic(f"T.match_buffer: '{buf.name}' has no element offset, its source "
                             f"'{src.name}' has one", m.span)
        self.matches[id(buf)] = source
        self.data[id(buf.data)] = src.data
        starts = [r.min for r in source.region]
        if offset is not None:
            self._assign(offset, _elem_offset(src, starts), f"{buf.name}.elem_offset", m.span)
        if buf.offset_factor > 1:
            start = substitute(_elem_offset(src, starts), self.values)
            check = BinOp("eq", BinOp("mod", start, imm(start.dtype, buf.offset_factor), start.dtype),
                          imm(start.dtype, 0), BOOL)
            if not self.ana.can_prove(check):
                raise Diagnostic(f"T.match_buffer: the start of the region of '{buf.name}' is "
                                 f"not a multiple of offset_factor {buf.offset_factor}", m.span)
        lead = len(source.region) - len(buf.shape)
        if lead < 0:
            raise Diagnostic(f"T.match_buffer: '{buf.name}' has more dimensions than its region",
                             m.span)
        if buf.strides:
            if not src.strides:
                stride: PrimExpr = imm(buf.strides[-1].dtype, 1)
                for k in reversed(range(len(buf.shape))):
                    self._assign(buf.strides[k], stride, f"{buf.name}.strides_{k}", m.span)
                    stride = mul(stride, src.shape[k + lead])
            else:
                for k in reversed(range(len(buf.shape))):
                    self._assign(buf.strides[k], src.strides[k + lead], f"{buf.name}.strides_{k}",
                                 m.span)
        for k, dim in enumerate(buf.shape):
            self._assign(dim, source.region[k + lead].extent, f"{buf.name}.shape_{k}", m.span)

    def _assign(self, arg: PrimExpr, value: PrimExpr, what: str, span: Span | None) -> None:
        if arg.dtype != value.dtype and arg.dtype.is_integer and value.dtype.is_integer:
            value = cast(arg.dtype, value)
        value = substitute(value, self.values)
        if isinstance(arg, Var):
            bound = self.values.get(id(arg))
            if bound is None:
                self.values[id(arg)] = value
                self.ana.bind_value(arg, value)
                return
            arg = bound
        if not self.ana.can_prove(BinOp("eq", arg, value, BOOL)):
            raise Diagnostic(f"the buffer match constraint for {what} is not met: "
                             f"{expr_text(arg)} == {expr_text(value)}", span)

    # ---- rewriting ----------------------------------------------------------------------

    def visit_SBlock(self, b: SBlock):
        for m in b.match_buffers:
            self._bind(m)
        out = self.generic_visit(replace(b, match_buffers=()) if b.match_buffers else b)
        reads = tuple(self._source(r) for r in out.reads)
        writes = tuple(self._source(r) for r in out.writes)
        if all(x is y for x, y in zip(reads + writes, out.reads + out.writes)):
            return out
        return replace(out, reads=reads, writes=writes)

    def visit_For(self, s: For):
        self.ana.bind_range(s.loop_var, s.min, s.extent)
        return (yield from self.descend(s))

    def visit_Var(self, v: Var):
        value = self.values.get(id(v))
        if value is not None:
            return value
        return self.data.get(id(v), v)

    def _indices(self, buf: Buffer, indices) -> tuple[Buffer, tuple[PrimExpr, ...]] | None:
        source = self.matches.get(id(buf))
        if source is None:
            return None
        lead = len(source.region) - len(indices)
        out = [r.min for r in source.region[:lead]]
        out += [add(r.min, i) for r, i in zip(source.region[lead:], indices)]
        return source.buffer, tuple(out)

    def visit_BufferStore(self, s: BufferStore):
        out = self.generic_visit(s)
        moved = self._indices(s.buffer, out.indices)
        return out if moved is None else replace(out, buffer=moved[0], indices=moved[1])

    def visit_BufferLoad(self, e: BufferLoad):
        out = self.generic_visit(e)
        moved = self._indices(e.buffer, out.indices)
        return out if moved is None else replace(out, buffer=moved[0], indices=moved[1])
