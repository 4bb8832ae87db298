"""InjectPermutedLayout: inside blocks annotated ``"permuted_layout"``, shared-memory
accesses of float16 tiles use a bank-conflict-free permutation of each row's 8-element
chunks (TVM's ``s_tir.transform.InjectPermutedLayout``, ``inject_permuted_layout.cc``).

For a buffer whose last dimension (the row) has ``row`` elements, an access at
(``r``, ``c``) of its last two dimensions goes to column ``(c // 8 ^ s) * 8 + c % 8``,
with ``s = r % 8`` when ``row`` is a multiple of 64 (an 8 x 8 permutation) and
``s = r % 8 // 2`` when it is a multiple of 32 (8 x 4; the buffer's other dimension
must then be even). Rewritten under the annotation (which is then removed):

* loads and stores of ``shared``/``shared.dyn`` buffers of at least two dimensions;
* ``T.ptx_legacy.ldmatrix``: its shared address ``T.tvm_access_ptr(.., data, offset, ..)``
  plus its offset is one flat index; it is split into (row, column), permuted, and becomes
  the access pointer's offset, the call's offset 0.

Both writer and readers of a buffer must be under the annotation, as in TVM; the new
indices are simplified with the ranges of the enclosing loops. A buffer whose row is not a
multiple of 32 (or 64 with an odd other dimension), and an ldmatrix whose address is not
a ``T.tvm_access_ptr`` of a known buffer, are located errors where TVM stops with a check.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.block import SBlock
from tirc.ir.buffer import SHARED_SCOPES, Buffer
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import BufferStore, For
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, imm

KEY = "permuted_layout"
VECTOR = 8


def _on(value) -> bool:
    if isinstance(value, str):
        return value != ""
    if isinstance(value, IntImm):
        return value.value != 0
    if isinstance(value, (bool, int)):
        return bool(value)
    raise Diagnostic(f"invalid \"{KEY}\" annotation {value!r} (an integer or a string)")


class _Injector(Mutator):
    def __init__(self, func: PrimFunc):
        self.analyzer = Analyzer()
        self.buffers: dict[int, Buffer] = {id(b.data): b for _, b in func.buffer_map}
        self.permute = False

    # -- scopes ---------------------------------------------------------------------------
    def visit_For(self, s: For):
        self.analyzer.bind_range(s.loop_var, s.min, s.extent)
        return (yield from self.descend(s))

    def visit_SBlock(self, s: SBlock):
        for b in s.alloc_buffers:
            self.buffers[id(b.data)] = b
        for m in s.match_buffers:
            self.buffers[id(m.buffer.data)] = m.buffer
        value = next((v for k, v in s.annotations if k == KEY), None)
        if value is None or not _on(value):
            return (yield from self.descend(s))
        before, self.permute = self.permute, True
        try:
            out = yield from self.descend(s)
        finally:
            self.permute = before
        return replace(out, annotations=tuple((k, v) for k, v in out.annotations if k != KEY))

    # -- accesses -------------------------------------------------------------------------
    def visit_BufferStore(self, s: BufferStore):
        out = yield from self.descend(s)
        if not self._permuted(out.buffer):
            return out
        return replace(out, indices=self._indices(out.buffer, out.indices, s))

    def visit_BufferLoad(self, e: BufferLoad):
        out = self.generic_visit(e)
        if not self._permuted(out.buffer):
            return out
        return replace(out, indices=self._indices(out.buffer, out.indices, e))

    def visit_Call(self, e: Call):
        out = self.generic_visit(e)
        if not self.permute or out.op != "ptx_legacy.ldmatrix":
            return out
        ptr, offset = out.args[5], out.args[6]
        if not (isinstance(ptr, Call) and ptr.op == "tvm_access_ptr"):
            raise Diagnostic("T.ptx_legacy.ldmatrix under a \"permuted_layout\" block must read "
                             "through T.tvm_access_ptr(...) of a shared buffer", e.span)
        data = ptr.args[1]
        buf = self.buffers.get(id(data)) if isinstance(data, Var) else None
        if buf is None:
            raise Diagnostic("T.ptx_legacy.ldmatrix under a \"permuted_layout\" block reads a "
                             "buffer whose shape is not known here", e.span)
        row = self._row_size(buf, e)
        flat = binop("add", ptr.args[2], offset)
        r = binop("floordiv", flat, imm(flat.dtype, row))
        c = binop("floormod", flat, imm(flat.dtype, row))
        r, c = self._permute(r, c, row)
        new_offset = self.analyzer.simplify(binop("add", binop("mul", r, imm(r.dtype, row)), c))
        new_ptr = replace(ptr, args=ptr.args[:2] + (new_offset,) + ptr.args[3:])
        args = out.args[:5] + (new_ptr, IntImm(offset.dtype, 0)) + out.args[7:]
        return replace(out, args=args)

    # -- the permutation ------------------------------------------------------------------
    def _permuted(self, buf: Buffer) -> bool:
        return self.permute and len(buf.shape) >= 2 and buf.scope in SHARED_SCOPES

    def _row_size(self, buf: Buffer, node) -> int:
        if len(buf.shape) < 2:
            raise Diagnostic(f"buffer '{buf.name}' under a \"{KEY}\" block needs at least two "
                             "dimensions", node.span)
        row, other = buf.shape[-1], buf.shape[-2]
        if not (isinstance(row, IntImm) and isinstance(other, IntImm)):
            raise Diagnostic(f"buffer '{buf.name}' under a \"{KEY}\" block needs a constant shape",
                             node.span)
        if row.value % 64:
            if row.value % 32:
                raise Diagnostic(f"the permuted layout of buffer '{buf.name}' needs its last dimension "
                                 f"to be a multiple of 32, not {row.value}", node.span)
            if other.value % 2:
                raise Diagnostic(f"the permuted layout of buffer '{buf.name}' needs its next-to-last "
                                 f"dimension even when its last ({row.value}) is not a multiple of 64",
                                 node.span)
        return row.value

    def _permute(self, r: PrimExpr, c: PrimExpr, row: int) -> tuple[PrimExpr, PrimExpr]:
        outer = binop("floordiv", c, imm(c.dtype, VECTOR))
        inner = binop("floormod", c, imm(c.dtype, VECTOR))
        sub = binop("floormod", r, imm(r.dtype, 8))
        if row % 64:
            sub = binop("floordiv", sub, imm(r.dtype, 2))
        new_outer = binop("bitwise_xor", outer, sub)
        return r, self.analyzer.simplify(binop("add", binop("mul", new_outer, imm(c.dtype, VECTOR)), inner))

    def _indices(self, buf: Buffer, indices, node) -> tuple[PrimExpr, ...]:
        row = self._row_size(buf, node)
        r, c = self._permute(indices[-2], indices[-1], row)
        return tuple(indices[:-2]) + (r, c)


def inject_permuted_layout(mod: IRModule, ctx=None) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        body = _Injector(f).visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)
