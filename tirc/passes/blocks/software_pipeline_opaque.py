"""The calls of a pipelined statement that reach a multi-versioned buffer through its
pointer rather than by indexing it (TVM's ``PipelineOpaqueAccessRewriter``): each gets the
offset of the version the statement uses added to its offset argument.

* ``T.tvm_access_ptr(type, data, offset, extent, rw)``: ``offset`` counts elements, so a
  version lies one version's elements (the first stride of the versioned buffer, else the
  old buffer's size) further on.
* ``T.tvm_load_matrix_sync`` / ``T.tvm_store_matrix_sync`` / ``T.tvm_fill_fragment``
  ``(frag, m, n, k, index, ...)`` and ``T.tvm_mma_sync(d, di, a, ai, b, bi, c, ci)``: a
  fragment index counts whole fragments (``m*k`` elements of a ``wmma.matrix_a``, ``k*n`` of
  a ``wmma.matrix_b``, ``m*n`` of a ``wmma.accumulator``; the shape is that of the first
  load, store or fill naming the fragment in the function), so a version lies one version's
  elements divided by the fragment's further on. TVM leaves ``T.tvm_fill_fragment`` alone
  (its fragment index then names version 0 in every iteration); tirc rewrites it as the
  other three.
* ``T.ptx_legacy.mma`` (operands at 6, 8, 10) and ``T.ptx_legacy.ldmatrix`` (its registers
  at 3, and its shared-memory pointer at 5 where that is a buffer's data rather than a
  ``T.tvm_access_ptr``, which TVM leaves alone) take pointer and element offset; an
  ``m16n8k8.matrixA``/``matrixB`` buffer is spread over the 32 threads of a warp
  (TransformMmaBufferLayout), so its offsets count a thread's share, a 32nd.

Any other call given the data of a multi-versioned buffer, a version whose elements are
not a whole number of fragments (or of 32-element shares), and a fragment whose shape no
call gives are located errors: which version such a call reaches is not known.

A versioned buffer keeps its data variable, so a fragment versioned again by an enclosing
pipeline (dlight's nested main loops) is still found among the function's fragments;
TVM 0.27 gives the versioned buffer a new variable and fails an internal check there.

The version is ``(loop_var - loop_min) % versions`` for every access, the index of the
buffer's loads and stores; TVM takes ``loop_var % versions`` for the pointer forms, which
is the same for the loops it pipelines (from 0) and names another version's data for a
loop from an odd start.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir import wmma_ops
from tirc.ir.buffer import Buffer
from tirc.ir.describe import expr_text
from tirc.ir.dtype import INT32
from tirc.ir.expr import Call, IntImm, PrimExpr, Var
from tirc.ir.stmt import Stmt
from tirc.ir.visitor import walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, imm

ACCESS_PTR = "tvm_access_ptr"
PTX_MMA, PTX_LDMATRIX = "ptx_legacy.mma", "ptx_legacy.ldmatrix"
_MMA_SHARED = ("m16n8k8.matrixA", "m16n8k8.matrixB")
_WARP = 32
# op -> the positions of its (pointer, element offset) pairs
_POINTERS = {ACCESS_PTR: (1,), PTX_MMA: (6, 8, 10), PTX_LDMATRIX: (3, 5)}
# op -> the positions of its (fragment, fragment index) pairs
_FRAGMENTS = {wmma_ops.LOAD: ((0, 4),), wmma_ops.STORE: ((0, 4),), wmma_ops.FILL: ((0, 4),),
              wmma_ops.MMA: ((0, 1), (2, 3), (4, 5), (6, 7))}


def fragment_elements(body: Stmt) -> dict[int, int]:
    """The elements of one fragment of each WMMA fragment buffer that a load, store or fill
    in ``body`` names, by the id of its data variable (the first such call decides)."""
    out: dict[int, int] = {}
    for node in walk(body):
        if isinstance(node, Call) and node.op in (wmma_ops.LOAD, wmma_ops.STORE, wmma_ops.FILL):
            d = wmma_ops.decode(node)
            frag = d.frags[0]
            rows, cols = wmma_ops.tile(frag.scope, d.shape)
            out.setdefault(id(frag.data), rows * cols)
    return out


class OpaqueAccessRewriter:
    """Rewrites the calls named in the module docstring for the multi-versioned buffers
    ``remap`` (id of the old buffer -> versioned buffer; ``olds`` the old buffers by the
    same ids) at version ``version(new buffer)``. ``fragments`` gives the fragment
    elements of the function (:func:`fragment_elements`), computed when first needed."""

    def __init__(self, remap: dict[int, Buffer], olds: dict[int, Buffer], version, fragments):
        self.remap = remap
        self.by_data = {id(b.data): b for b in olds.values()}
        self.version = version
        self.fragments = fragments
        self.ana = Analyzer()

    def rewrite(self, e: Call) -> Call:
        if not self.by_data:
            return e
        args = list(e.args)
        done: set[int] = set()
        for i in _POINTERS.get(e.op, ()):
            old = self._old(args[i])
            if old is not None:
                args[i + 1] = self._shift(args[i + 1], old, self._pointer_step(old, e), e)
                done.add(i)
        for i, j in _FRAGMENTS.get(e.op, ()) + (_FRAGMENTS[wmma_ops.MMA]
                                               if e.op == wmma_ops.BMMA else ()):
            old = self._old(args[i])
            if old is not None:
                args[j] = self._shift(args[j], old, self._fragment_step(old, e), e)
                done.add(i)
        for i, a in enumerate(args):
            old = self._old(a)
            if old is not None and i not in done:
                versions = expr_text(self._new(old).shape[0])
                raise Diagnostic(f"T.{e.op} takes the data of '{old.name}', which software "
                                 f"pipelining gives {versions} versions, and which version it "
                                 "reaches is not known (only "
                                 "T.tvm_access_ptr, the WMMA builtins and T.ptx_legacy.mma/"
                                 "ldmatrix are rewritten)", e.span)
        if not done:
            return e
        return replace(e, args=tuple(args))

    def _old(self, a) -> Buffer | None:
        return self.by_data.get(id(a)) if isinstance(a, Var) else None

    def _new(self, old: Buffer) -> Buffer:
        return self.remap[id(old)]

    def _elements(self, old: Buffer) -> PrimExpr:
        """The elements between two versions of ``old``."""
        new = self._new(old)
        if new.strides:
            return new.strides[0]
        out: PrimExpr = imm(INT32, 1)
        for s in old.shape:
            out = binop("mul", out, s)
        return out

    def _pointer_step(self, old: Buffer, e: Call) -> PrimExpr:
        step = self._elements(old)
        if e.op != ACCESS_PTR and old.scope in _MMA_SHARED:
            return self._divide(step, _WARP, old, e, f"the {_WARP} threads of a warp")
        return step

    def _fragment_step(self, old: Buffer, e: Call) -> PrimExpr:
        size = self.fragments().get(id(old.data))
        if size is None:
            versions = expr_text(self._new(old).shape[0])
            raise Diagnostic(f"T.{e.op}: software pipelining gives fragment '{old.name}' "
                             f"{versions} versions, but no T.tvm_load_matrix_sync, "
                             "T.tvm_store_matrix_sync or T.tvm_fill_fragment gives its shape, "
                             "so a version's number of fragments is not known", e.span)
        return self._divide(self._elements(old), size, old, e, f"fragments of {size} elements")

    def _divide(self, step: PrimExpr, by: int, old: Buffer, e: Call, what: str) -> IntImm:
        step = self.ana.simplify(step)
        if not isinstance(step, IntImm) or step.value % by:
            raise Diagnostic(f"T.{e.op}: a version of the software-pipelined buffer "
                             f"'{old.name}' holds {expr_text(step)} elements, not a whole number "
                             f"of {what}, so the versions cannot be told apart in this call",
                             e.span)
        return imm(step.dtype, step.value // by)

    def _shift(self, index: PrimExpr, old: Buffer, step: PrimExpr, e: Call) -> PrimExpr:
        return binop("add", index, binop("mul", self.version(self._new(old)), step))
