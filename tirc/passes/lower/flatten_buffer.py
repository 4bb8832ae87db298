"""FlattenBuffer: multi-dimensional buffers become flat (1-D) ones (docs/pipeline.md).

Every buffer with more or fewer than one dimension, with strides, or with an element
offset is accessed through a flat buffer over the same data pointer:

* a parameter keeps its original buffer in ``buffer_map`` (MakePackedAPI checks shapes
  against it); the body gets, at its top, a ``T.decl_buffer((N,), data=X.data,
  layout=None)`` per such parameter that is loaded or stored (TVM declares one for every
  parameter; declaring only the used ones makes the pass idempotent);
* ``T.alloc_buffer`` / ``T.decl_buffer`` of such a buffer becomes one of the flat buffer
  (same data variable, same name; the printer makes names unique);
* every load and store ``X[i0, ..., ik]`` becomes ``X_flat[sum(i_j * stride_j) + offset]``
  with row-major strides when none are declared; a vector (Ramp) index stays a Ramp of
  the flattened base (``C[1, 0:4]`` of a 16x4 buffer is ``C_flat[4:8]``); indices that
  split one position into rows and columns (``X[x // 64, x % 64]`` of a buffer 64 wide)
  fold back into it (``X_flat[x]``) where the canonical simplifier removes every division,
  as TVM's iterator-map simplification of the flat index does.

N is the product of the shape for compact buffers and ``1 + sum((shape_j - 1) *
stride_j)`` (the extent reachable through the strides) for strided ones, plus the element
offset in both cases, so that the flat buffer covers every index the function can form.
(TVM 0.27 leaves the offset out of N and uses ``shape_0 * stride_0``; the indices agree.)

The flat index and N are computed in int64 unless every in-bounds flat index provably
fits the indices' own type: a buffer of int32 sizes ``(n, m)`` may hold more than 2**31
elements, and ``i * m + j`` in int32 would wrap and address memory outside the array
(TVM computes it in int32; its NarrowDataType narrows to int32 only what it proves fits).
Constant shapes, strides and offsets whose reach fits keep the narrower type.

Buffers passed as arguments of module calls (``Module.f(A)``) keep referring to the
original buffer, whose shape the callee's parameter describes; an allocation passed this
way stays declared with its original shape as a view of the flat allocation. 1-D compact
buffers without offset are left as they are.

An allocation of one element (a reduction's per-thread rfactor buffer after
CompactBufferAllocation) is accessed at index 0: any other index would be out of bounds,
and the shifted indices that compaction leaves (``(bx * 16 + tx) // 128 - bx // 8``) are
zero only by arithmetic the code generator cannot see, which would keep the element in
memory instead of a register. Declared views never loaded or stored
(region arguments of calls) are left as they are.

Preconditions: Verify (indices match each buffer's rank). Only the last index of an access
may be a vector (a diagnostic otherwise, as in TVM). Guarantees: every load and store in
the result has one index; every allocation is 1-D.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import INT64, DataType
from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, PrimExpr
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.index_arith import arith, cast, const_int, constant_layout, widen
from tirc.ir.stmt import AllocBuffer, AttrStmt, BufferStore, DeclBuffer, Stmt
from tirc.ir.visitor import Mutator, walk, walk_statements
from tirc.passes.pass_context import PassContext




def needs_flattening(b: Buffer) -> bool:
    compact_strides = not b.strides or (len(b.strides) == 1 and const_int(b.strides[0]) == 1)
    no_offset = b.elem_offset is None or const_int(b.elem_offset) == 0
    return not (b.ndim == 1 and compact_strides and no_offset)


def _row_major(b: Buffer, wide: bool = False) -> list[PrimExpr]:
    if b.strides:
        return [widen(s) for s in b.strides] if wide else list(b.strides)
    strides: list[PrimExpr] = []
    acc: PrimExpr = IntImm(INT64 if wide else b.shape[-1].dtype if b.shape else DataType("int32"), 1)
    for extent in reversed(b.shape):
        strides.append(acc)
        acc = arith("mul", acc, widen(extent) if wide else extent)
    return list(reversed(strides))


def _reach(b: Buffer) -> int | None:
    """The largest magnitude of an in-bounds flat index of ``b`` plus one, when its
    shape, strides and offset are constants; None otherwise."""
    layout = constant_layout(b)
    if layout is None:
        return None
    shape, strides, offset = layout
    if 0 in shape:
        return abs(offset) + 1
    return abs(offset) + sum((n - 1) * abs(s) for n, s in zip(shape, strides)) + 1


def _wide_index(b: Buffer, dtype: DataType) -> bool:
    """Whether ``b``'s flat index needs int64 rather than ``dtype`` (module docstring)."""
    if not dtype.is_int or dtype.bits >= 64:
        return False
    reach = _reach(b)
    return reach is None or reach > 1 << (dtype.bits - 1)


def flat_extent(b: Buffer) -> PrimExpr:
    """The number of elements the flat view of ``b`` spans (offset included)."""
    one = IntImm(b.shape[0].dtype if b.shape else DataType("int32"), 1)
    wide = _wide_index(b, one.dtype)
    w = widen if wide else (lambda e: e)
    if wide:
        one = IntImm(INT64, 1)
    if not b.strides:
        n: PrimExpr = one
        for extent in b.shape:
            n = arith("mul", n, w(extent))
    elif any(const_int(e) == 0 for e in b.shape):
        n = IntImm(one.dtype, 0)
    else:
        n = IntImm(one.dtype, 0)
        for extent, stride in zip(b.shape, b.strides):
            extent = w(extent)
            n = arith("add", n, arith("mul", arith("sub", extent, IntImm(extent.dtype, 1)), w(stride)))
        n = arith("add", n, one)
    if b.elem_offset is not None:
        n = arith("add", n, w(b.elem_offset))
    return n


def flat_buffer(b: Buffer) -> Buffer:
    return Buffer(b.name, b.data, b.dtype, (flat_extent(b),), align=b.align, span=b.span,
                  layout_none=True)


def flat_index(b: Buffer, indices: tuple[PrimExpr, ...], span, analyzer=None) -> PrimExpr:
    """The flat index of ``b[indices]``; ``analyzer``: the function's, whose memo the
    folding of split indices shares (a fresh one otherwise)."""
    for i in indices[:-1]:
        if i.dtype.lanes != 1:
            raise Diagnostic(f"only the last index of an access to buffer '{b.name}' may be a "
                             f"vector, got {i.dtype}", getattr(i, "span", None) or span)
    elem = indices[-1].dtype.element() if indices else DataType("int32")
    wide = _wide_index(b, elem)
    if wide:
        elem, indices = INT64, tuple(cast(i, INT64) for i in indices)
    total: PrimExpr = IntImm(elem, 0)
    for index, stride in zip(indices, _row_major(b, wide)):
        total = arith("add", total, arith("mul", index, stride))
    if total.dtype.lanes == 1 and len(indices) > 1 and any(_divides(i) for i in indices):
        # indices that split one flat position into rows and columns (a reshape's
        # ``x // 4096, x % 4096``) fold back into it, as TVM's iterator-map simplification
        # of the flattened index does: ``x // c * c + x % c`` is ``x``, so the code neither
        # divides per element nor hides the access pattern from LLVM. Only where no
        # division is left: a partial rewrite would spread terms that later passes
        # cancel by their ranges (a local tile's index would no longer be constant)
        if analyzer is None:
            from tirc.passes.analysis.arith_analyzer import Analyzer
            analyzer = Analyzer()
        folded = analyzer.simplify(total)
        if not _divides(folded):
            total = folded
    if b.elem_offset is not None:
        total = arith("add", total, widen(b.elem_offset) if wide else b.elem_offset)
    return total


def _divides(e: PrimExpr) -> bool:
    return any(isinstance(n, BinOp) and n.op in ("floordiv", "floormod") for n in walk(e))


class _Uses:
    """Which buffers are loaded/stored, and which are referenced any other way."""

    def __init__(self, body: Stmt):
        self.accessed: set[int] = set()
        self.escaping: set[int] = set()
        self._keep: list[Buffer] = []
        for node in walk(body):
            if isinstance(node, (BufferLoad, BufferStore)):
                self.accessed.add(id(node.buffer))
                self._keep.append(node.buffer)
            elif isinstance(node, Call):
                for a in node.args:
                    if isinstance(a, Buffer):
                        self.escaping.add(id(a))
                        self._keep.append(a)
            elif isinstance(node, AttrStmt) and isinstance(node.node, Buffer):
                self.escaping.add(id(node.node))
                self._keep.append(node.node)


class _Flatten(Mutator):
    def __init__(self, uses: _Uses, singles: set[int]):
        self.uses = uses
        self.singles = singles  # ids of the data of allocations of one element
        self.flat: dict[int, tuple[Buffer, Buffer]] = {}
        from tirc.passes.analysis.arith_analyzer import Analyzer
        # one for the whole function: its indices share sub-expressions
        self.analyzer = Analyzer(lasting_memo=True)

    def _single(self, b: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...] | None:
        """The index of an access to an allocation of one element: 0."""
        if (id(b.data) not in self.singles or b.elem_offset is not None
                or any(i.dtype.lanes != 1 for i in indices)
                or any(isinstance(n, Call) for i in indices for n in walk(i))):
            return None
        return (IntImm(indices[-1].dtype if indices else DataType("int32"), 0),)

    def flat_of(self, b: Buffer) -> Buffer:
        entry = self.flat.get(id(b))
        if entry is None:
            entry = (b, flat_buffer(b))
            self.flat[id(b)] = entry
        return entry[1]

    def visit_BufferLoad(self, e: BufferLoad):
        e = self.generic_visit(e)
        zero = self._single(e.buffer, e.indices)
        if not needs_flattening(e.buffer):
            return e if zero is None or zero == e.indices else replace(e, indices=zero)
        index = zero[0] if zero else flat_index(e.buffer, e.indices, e.span, self.analyzer)
        return BufferLoad(self.flat_of(e.buffer), (index,), e.dtype, e.span)

    def visit_BufferStore(self, s: BufferStore):
        s = self.generic_visit(s)
        zero = self._single(s.buffer, s.indices)
        if not needs_flattening(s.buffer):
            return s if zero is None or zero == s.indices else replace(s, indices=zero)
        index = zero[0] if zero else flat_index(s.buffer, s.indices, s.span, self.analyzer)
        return BufferStore(self.flat_of(s.buffer), s.value, (index,), s.span)

    def visit_AllocBuffer(self, s: AllocBuffer):
        b = s.buffer
        if not needs_flattening(b):
            return (yield from self.descend(s))
        body = (yield s.body)
        if id(b) in self.uses.escaping:
            body = DeclBuffer(b, body, s.span)
        return AllocBuffer(self.flat_of(b), body, s.span, s.annotations)

    def visit_DeclBuffer(self, s: DeclBuffer):
        b = s.buffer
        if not needs_flattening(b) or id(b) not in self.uses.accessed:
            return (yield from self.descend(s))
        body = DeclBuffer(self.flat_of(b), (yield s.body), s.span)
        return DeclBuffer(b, body, s.span, s.view_of) if id(b) in self.uses.escaping else body


def _flatten_function(func: PrimFunc) -> PrimFunc:
    uses = _Uses(func.body)
    params = [b for _, b in func.buffer_map if needs_flattening(b) and id(b) in uses.accessed]
    singles = {id(n.buffer.data) for n in walk_statements(func.body)
               if isinstance(n, AllocBuffer) and _one_element(n.buffer)}
    if not params and not singles and not any(needs_flattening(b) for b in _all_buffers(func.body)):
        return func
    m = _Flatten(uses, singles)
    body = m.visit(func.body)
    for b in reversed(params):
        body = DeclBuffer(m.flat_of(b), body, b.span)
    return func if body is func.body else func.with_body(body)


def _one_element(b: Buffer) -> bool:
    return all(isinstance(d, IntImm) and d.value == 1 for d in b.shape) and not b.strides


def _all_buffers(body: Stmt) -> list[Buffer]:
    out: list[Buffer] = []
    for node in walk(body):
        if isinstance(node, (BufferLoad, BufferStore, AllocBuffer, DeclBuffer)):
            out.append(node.buffer)
    return out


def flatten_buffer(mod: IRModule, ctx: PassContext) -> IRModule:
    """Flatten every function of ``mod``; unchanged functions are returned as they are."""
    functions = {name: _flatten_function(f) for name, f in mod.functions.items()}
    if all(functions[n] is f for n, f in mod.functions.items()):
        return mod
    return replace(mod, functions=functions)
