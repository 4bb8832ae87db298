"""MergeSharedMemoryAllocations (TVM's ``s_tir.transform.MergeSharedMemoryAllocations``):
a kernel launch's shared memory in one dynamic buffer, whose bytes buffers never alive
together share; static shared memory stays static in a kernel without a dynamic
allocation (docs/pipeline.md).

Every outermost thread scope (``T.launch_thread`` / ``thread_extent``; a
``thread_binding`` loop is accepted too) is a kernel launch and is handled on its own.

* A kernel with a ``shared.dyn`` allocation (anywhere in its subtree) gets one
  ``buf_dyn_shmem = T.alloc_buffer((total,), "uint8", scope="shared.dyn")`` placed directly
  inside its outermost thread scope, so the merged buffer is visible only in its own
  kernel and two sibling kernels of one function get one buffer each. All its shared
  allocations, ``shared.dyn`` and ``shared``, become views of it: each ``AllocBuffer`` is
  replaced in place by a ``DeclBuffer`` of the same name, dtype and shape over
  ``buf_dyn_shmem.data`` with ``elem_offset`` = its byte offset / element size. Sizes may
  be symbolic as long as they depend only on values known at the launch.
* A kernel whose shared allocations are all static (``shared``) keeps them as they are,
  unless together they need more than 48 KiB (or a size is not constant): then they are
  merged as above, since dynamic shared memory is how a launch gets more than 48 KiB, and
  the launch lowering reads the kernel's ``shared.dyn`` size.

Where the memory goes is TVM 0.27's plan. The kernel's statements are put in one linear
order (StorageRewrite's access pattern, :mod:`tirc.passes.lower.storage_access`), and a
buffer lives from the first statement at its allocation's level that touches it to the
last one (StorageRewrite's ``liveness``). Walking that order, a buffer whose life ends
frees its storage; a buffer whose life begins takes the smallest free storage at least as
big as it (and at most 16 times bigger), else all the free smaller ones together (their
layers are combined, side by side, and the buffer becomes a new layer over them), else a
new storage. Storages are laid out one after the other, the constant ones by increasing
size, then the symbolic ones; every layer of a storage starts where the storage does and
lays its buffers side by side, each aligned to 64 bytes (TVM's default buffer alignment;
a buffer's own ``align`` replaces it) and to the widest element of its layer. So two
1 KiB buffers never alive together take 1 KiB. TVM's exceptions are kept: a buffer of at
most 32 bits and a buffer of symbolic size get storage of their own (TVM 0.27 fails on
both when they would share).

Where tirc differs from TVM, and why:

* TVM merges only ``shared.dyn`` allocations and leaves a kernel with a single one as it
  is; tirc merges a kernel's static allocations too when it has a dynamic one, and gives a
  single one the merged form, so every kernel with dynamic shared memory has exactly one
  allocation of it (the NVPTX backend maps every ``shared.dyn`` allocation of a module to
  the same ``.extern .shared`` array) and liveness covers all its shared memory.
* TVM's offsets are index shifts (``A[i + 256]``, views declared at the kernel's top);
  tirc's are the ``elem_offset`` of views declared where the allocations were. Every
  access touches the same bytes.
* Reuse is made safe across threads. TVM plans after ThreadSync, so nothing orders the
  last access of a buffer before the first access of the one that takes its memory; tirc
  places the barriers that order them with ThreadSync's planner
  (:mod:`tirc.passes.lower.thread_sync`), shown only the accesses of two buffers that
  share bytes. Existing barriers usually order them already, and nothing is added then.
* A buffer whose life ends in the statement where another's begins gives its memory to
  it only when that statement writes the new one at the element of the old one it reads
  (StorageRewrite's in-place test, same element type); TVM always does, which races when
  another thread reads the old element. A buffer allocated under an ``if``, a ``while`` or
  a loop of non-constant bounds inside the kernel never gives up its memory (a barrier
  there might not be reached by every thread). TVM counts taking an address
  (``T.address_of(A[i])``) as no access; tirc counts it.
* When combining layers makes two buffers alive together share a byte (TVM lays the
  combined layers out anew, which can put a later layer over a buffer of another storage
  still alive), the kernel is planned again without combining free storages; when its
  accesses do not fit the analysis (an access outside any statement), it is laid out
  without reuse.
* An allocation nothing touches gets no memory (a view at offset 0), as in TVM. The
  merged allocation is volatile when one of the merged ones was, as in TVM.

Diagnostics: a constant total above the kernel target's ``max_shared_memory_per_block``
(the target of the enclosing ``T.attr(T.target(...), "target", 0)`` region, else the
function's) is reported at the first allocation (in program order) that ends past the
limit; a size that depends on a variable defined inside the kernel is reported at that
allocation.

Preconditions: BindTarget (every function has a target), LowerThreadBindings, buffers
flat (1-D), ThreadSync done. Guarantees: a kernel with dynamic shared memory holds exactly
one allocation of shared memory, ``buf_dyn_shmem`` of scope ``shared.dyn``, directly in
its outermost thread scope; a kernel without keeps its static allocations (at most 48 KiB
together); no Var or Buffer is shared between kernels; two buffers share a byte only when
they are never alive together, and a barrier orders every access of one before any
access of the other across threads wherever one can be placed.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import field, replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import TARGET, THREAD_EXTENT, VOLATILE
from tirc.ir.buffer import Buffer, SHARED_SCOPES
from tirc.ir.const_fold import try_const_fold
from tirc.ir.dtype import HANDLE, INT32, INT64, DataType
from tirc.ir.expr import BinOp, BufferLoad, Call, Cast, IntImm, Let, PointerType, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import (AllocBuffer, AttrStmt, DeclBuffer, For, IfThenElse, IterVar, LetStmt,
                          Stmt, While)
from tirc.ir.visitor import Mutator, Visitor, walk, walk_statements
from tirc.passes.lower.storage_access import AccessFinder, Entry, InplaceCheck, Unsupported
from tirc.passes.lower.storage_rewrite import const_bits, liveness
from tirc.passes.lower.thread_sync import Access, BarrierPlanner
from tirc.records import record
from tirc.target.kinds import Target

STATIC_LIMIT = 48 * 1024  # the most static shared memory a launch gets without opting in
STATIC_ALIGN = 16  # the alignment of a static .shared array
BUFFER_ALIGN = 64  # TVM's default buffer alignment, which its plan aligns every buffer to
MATCH_RANGE = 16  # a free storage up to this many times bigger may be taken
SMALL_BITS = 32  # buffers this small never share memory (as in TVM)
UINT8 = DataType("uint8")


# -- size arithmetic on constants or expressions ---------------------------------------
def _cast(e: PrimExpr, dtype: DataType) -> PrimExpr:
    if e.dtype == dtype:
        return e
    return IntImm(dtype, e.value) if isinstance(e, IntImm) else Cast(dtype, e)


def _binop(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    folded = try_const_fold(op, a, b, a.dtype)
    return folded if folded is not None else BinOp(op, a, b, a.dtype)


def _align(x: PrimExpr, a: int) -> PrimExpr:
    """``x`` rounded up to a multiple of ``a``."""
    if isinstance(x, IntImm):
        return IntImm(x.dtype, -(-x.value // a) * a)
    up = _binop("add", x, IntImm(x.dtype, a - 1))
    return _binop("mul", _binop("floordiv", up, IntImm(x.dtype, a)), IntImm(x.dtype, a))


def _element_bits(dtype: DataType) -> int:
    return (8 if dtype.is_bool else dtype.bits) * dtype.lanes


def _element_bytes(dtype: DataType) -> int:
    """TVM's ``StorageBytes``: whole bytes per element."""
    return (dtype.bits * dtype.lanes + 7) // 8


def _count(b: Buffer, idx: DataType) -> PrimExpr:
    n: PrimExpr = IntImm(idx, 1)
    for d in b.shape:
        n = _binop("mul", n, _cast(d, idx))
    return n


def _size_bytes(b: Buffer, idx: DataType) -> PrimExpr:
    """The bytes a static array of ``b`` takes."""
    n = _count(b, idx)
    bits = _element_bits(b.dtype)
    if bits % 8 == 0:
        return _binop("mul", n, IntImm(idx, bits // 8))
    return _binop("floordiv", _binop("add", _binop("mul", n, IntImm(idx, bits)), IntImm(idx, 7)),
                  IntImm(idx, 8))


def _plan_bytes(b: Buffer, idx: DataType) -> PrimExpr:
    """The bytes ``b`` takes in the merged buffer (TVM's: whole bytes per element)."""
    return _binop("mul", _count(b, idx), IntImm(idx, _element_bytes(b.dtype)))


def _kernel_bound_vars(body: Stmt) -> dict[int, Var]:
    out: dict[int, Var] = {}
    for n in walk(body):
        v = None
        if isinstance(n, For):
            v = n.loop_var
        elif isinstance(n, (LetStmt, Let)):
            v = n.var
        elif isinstance(n, AttrStmt) and isinstance(n.node, IterVar):
            v = n.node.var
        if v is not None:
            out[id(v)] = v
    return out


# -- the plan --------------------------------------------------------------------------

@record(eq=False)
class _Storage:
    bits: int  # the constant size in bits (0: symbolic)
    layers: list[list[int]] = field(default_factory=list)  # ids of data vars, by layer


class _Confined(Visitor):
    """The allocations under an ``if``, a ``while`` or a loop of non-constant bounds: a
    barrier there may not be reached by every thread, so their memory is never reused."""

    expressions = False

    def __init__(self) -> None:
        self.depth = 0
        self.out: set[int] = set()

    def _inside(self, s):
        self.depth += 1
        try:
            yield from self.descend(s)
        finally:
            self.depth -= 1

    def visit_IfThenElse(self, s: IfThenElse):
        return (yield from self._inside(s))

    def visit_While(self, s: While):
        return (yield from self._inside(s))

    def visit_For(self, s: For):
        if isinstance(s.min, IntImm) and isinstance(s.extent, IntImm):
            return (yield from self.descend(s))
        return (yield from self._inside(s))

    def visit_AllocBuffer(self, s: AllocBuffer):
        if self.depth:
            self.out.add(id(s.buffer.data))
        return (yield from self.descend(s))


class _Planner:
    """TVM's memory plan for the merged allocations of one kernel."""

    def __init__(self, allocs: dict[int, AllocBuffer], confined: set[int], combine: bool):
        self.allocs = allocs  # id(data) -> allocation, only the merged ones
        self.confined = confined
        self.combine = combine  # may combine free smaller storages into one
        self.free_const: list[tuple[int, int, _Storage]] = []  # sorted (bits, order, storage)
        self.free_sym: list[tuple[int, _Storage]] = []
        self.kept: list[tuple[int, int, _Storage]] = []  # dead, never reused
        self.order = 0
        self.alloc_map: dict[int, _Storage] = {}
        self.born: dict[int, int] = {}  # id(data) -> index in the linear order
        self.died: dict[int, int] = {}
        self.in_place: set[tuple[int, int]] = set()  # (dead, new) sharing one statement

    def plan(self, seq: list[Entry]) -> None:
        gen, kill = liveness(seq)
        for i, e in enumerate(seq):
            key = id(e.stmt)
            born = [v for v in gen.get(key, ()) if v in self.allocs] if e.offset >= 0 else []
            dying = [v for v in kill.get(key, ()) if v in self.allocs] if e.offset <= 0 else []
            # TVM frees what dies here before placing what is born here; tirc only when the
            # statement is an in-place update of each new buffer from the dead one
            early = [v for v in dying if v not in born and self.in_place_ok(v, born, e)]
            for v in early:
                self.in_place.update((v, b) for b in born)
                self.free(v, i)
            for v in born:
                self.alloc_map[v] = self.find(v)
                self.born[v] = i
            for v in dying:
                if v not in early:
                    self.free(v, i)

    def in_place_ok(self, dead: int, born: list[int], e: Entry) -> bool:
        if not born:
            return True
        old = self.allocs[dead].buffer
        for v in born:
            new = self.allocs[v].buffer
            if e.offset != 0 or new.dtype != old.dtype or not InplaceCheck(v, dead).check(e.stmt):
                return False
        return True

    def new(self, v: int, bits: int) -> _Storage:
        return _Storage(bits, [[v]])

    def find(self, v: int) -> _Storage:
        buf = self.allocs[v].buffer
        bits = const_bits(buf)
        if not bits or bits <= SMALL_BITS:
            return self.new(v, bits)  # symbolic or tiny: never shared
        keys = [x[0] for x in self.free_const]
        mid = bisect.bisect_left(keys, bits)
        end = bisect.bisect_right(keys, bits * MATCH_RANGE)
        if mid < end:  # the smallest free storage at least as big
            st = self.free_const.pop(mid)[2]
            st.bits = max(st.bits, bits)
            st.layers.append([v])
            return st
        if not self.combine:
            return self.new(v, bits)
        # all free smaller ones, the biggest first, until they hold the buffer
        layers: list[list[int]] = []
        total = 0
        while mid > 0 and total < bits:
            mid -= 1
            st = self.free_const.pop(mid)[2]
            total += st.bits
            for k, layer in enumerate(st.layers):
                if k == len(layers):
                    layers.append([])
                layers[k].extend(layer)
        if not total:
            return self.new(v, bits)
        return _Storage(max(bits, total), layers + [[v]])

    def free(self, v: int, i: int) -> None:
        st = self.alloc_map[v]
        self.died[v] = i
        self.order += 1
        if not st.bits:
            self.free_sym.append((self.order, st))
        elif st.bits <= SMALL_BITS or v in self.confined:
            self.kept.append((st.bits, self.order, st))
        else:
            bisect.insort(self.free_const, (st.bits, self.order, st), key=lambda x: (x[0], x[1]))

    def storages(self) -> list[_Storage]:
        """Every storage, in the order TVM lays them out."""
        const = sorted(self.free_const + self.kept, key=lambda x: (x[0], x[1]))
        return [st for _, _, st in const] + [st for _, st in self.free_sym]


def _layout(storages: list[_Storage], allocs: dict[int, AllocBuffer],
            idx: DataType) -> tuple[dict[int, PrimExpr], PrimExpr]:
    """The byte offset of each buffer and the total (TVM's ``ComputeOffsets``)."""
    depth = max((len(st.layers) for st in storages), default=0)
    layer_align = [1] * depth  # the widest element of each layer, over all storages
    for st in storages:
        for k, layer in enumerate(st.layers):
            for v in layer:
                layer_align[k] = max(layer_align[k], _element_bytes(allocs[v].buffer.dtype))
    offsets: dict[int, PrimExpr] = {}
    total: PrimExpr = IntImm(idx, 0)
    for st in storages:
        ends: list[PrimExpr] = []
        for k, layer in enumerate(st.layers):  # every layer starts where the storage does
            end: PrimExpr = total
            for v in layer:
                b = allocs[v].buffer
                need = max(layer_align[k], _element_bytes(b.dtype))
                align = b.align if b.align > 0 else BUFFER_ALIGN
                start = _align(end, math.lcm(align, need))
                offsets[v] = start
                end = _binop("add", start, _plan_bytes(b, idx))
            ends.append(end)
        top = ends[0]
        for end in ends[1:]:
            top = _binop("max", top, end)
        total = top
    return offsets, total


def _sequential(allocs: list[AllocBuffer], idx: DataType) -> tuple[dict[int, PrimExpr], PrimExpr]:
    """No reuse: every buffer after the one before it."""
    offsets: dict[int, PrimExpr] = {}
    end: PrimExpr = IntImm(idx, 0)
    for a in allocs:
        b = a.buffer
        align = b.align if b.align > 0 else BUFFER_ALIGN
        start = _align(end, math.lcm(align, _element_bytes(b.dtype)))
        offsets[id(b.data)] = start
        end = _binop("add", start, _plan_bytes(b, idx))
    return offsets, end


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _plan(root: AttrStmt | For, allocs: list[AllocBuffer],
          idx: DataType) -> tuple[dict[int, PrimExpr], PrimExpr, dict[int, tuple]]:
    """Byte offsets and total of the merged buffer (an allocation nothing touches has
    none), and for each buffer that shares bytes with another (storage, start, end), so
    that barriers can be placed between them."""
    merged = {id(a.buffer.data): a for a in allocs}
    try:
        finder = AccessFinder()
        finder.visit(root)
    except Unsupported:
        return (*_sequential(allocs, idx), {})
    confined = _Confined()
    confined.visit(root.body)
    planned = {v: a for v, a in merged.items() if v in finder.allocs}
    for combine in (True, False):
        planner = _Planner(planned, confined.out, combine)
        planner.plan(finder.seq)
        storages = planner.storages()
        # an allocation the finder could not plan (not flat) is alive throughout
        storages += [_Storage(0, [[v]]) for v in merged if v in finder.pinned]
        offsets, total = _layout(storages, merged, idx)
        regions = _shared_regions(planner, storages, offsets, idx)
        if regions is not None:
            return offsets, total, regions
    return (*_sequential(allocs, idx), {})


def _shared_regions(planner: _Planner, storages: list[_Storage], offsets: dict[int, PrimExpr],
                    idx: DataType) -> dict[int, tuple] | None:
    """(storage, start, end) of each buffer of a storage with more than one layer; None
    if two buffers alive together share a byte."""
    regions: dict[int, tuple] = {}
    for st in storages:
        if len(st.layers) < 2:
            continue
        members = [v for layer in st.layers for v in layer]
        for v in members:
            start = offsets[v].value
            regions[v] = (st, start, start + _plan_bytes(planner.allocs[v].buffer, idx).value)
        for n, u in enumerate(members):
            for v in members[n + 1:]:
                if _overlaps(regions[u][1:], regions[v][1:]) and not _apart(planner, regions, u, v):
                    return None
    return regions


def _apart(planner: _Planner, regions: dict[int, tuple], u: int, v: int) -> bool:
    """Whether ``u`` and ``v`` may share bytes: never alive together."""
    if planner.died[u] < planner.born[v] or planner.died[v] < planner.born[u]:
        return True
    pair = (u, v) if (u, v) in planner.in_place else (v, u)
    if pair not in planner.in_place or planner.died[pair[0]] != planner.born[pair[1]]:
        return False
    a, b = planner.allocs[u].buffer, planner.allocs[v].buffer
    return regions[u][1] == regions[v][1] and a.dtype == b.dtype


class _ReuseBarriers(BarrierPlanner):
    """ThreadSync's planner, seeing only the conflicts reuse makes: an access of one
    buffer against a write of another that shares its bytes (or the other way round)."""

    def __init__(self, root: Stmt, regions: dict[int, tuple]):
        super().__init__(root)
        self.regions = regions

    def bucket(self, a: Access):
        region = self.regions.get(id(a.data))  # only accesses of one allocation conflict
        return None if region is None else id(region[0])

    def conflict(self, a: Access, b: Access) -> bool:
        if a.data is b.data or not (a.write or b.write):
            return False
        ra, rb = self.regions.get(id(a.data)), self.regions.get(id(b.data))
        if ra is None or rb is None or ra[0] is not rb[0] or not _overlaps(ra[1:], rb[1:]):
            return False
        if ra[1] == rb[1] and a.unit == b.unit:  # one element each at the same address
            return not self.index.disjoint(a.indices, b.indices)
        return True


class _Rewrite(Mutator):
    """Replaces each merged allocation by its view and every use of it by the view."""

    def __init__(self, views: dict[int, Buffer], offsets: dict[int, tuple[Buffer, PrimExpr]]):
        self.views = views  # id(old buffer) -> view
        self.offsets = offsets  # id(old data var) -> (view, byte offset)

    def visit_AllocBuffer(self, s: AllocBuffer):
        view = self.views.get(id(s.buffer))
        if view is None:
            return (yield from self.descend(s))
        return DeclBuffer(view, (yield s.body), s.span)

    def visit_buffer(self, b: Buffer) -> Buffer:
        if id(b) in self.views:
            return self.views[id(b)]
        if id(b.data) not in self.offsets:
            return b
        # Another declaration over a merged buffer's memory (T.decl_buffer(data=X.data)).
        view, byte_offset = self.offsets[id(b.data)]
        bits = _element_bits(b.dtype)
        if not isinstance(byte_offset, IntImm) or (byte_offset.value * 8) % bits:
            raise Diagnostic(f"buffer '{b.name}' views the memory of '{view.name}' with an "
                             "offset that is not a whole number of its elements", b.span)
        start = IntImm(byte_offset.dtype, byte_offset.value * 8 // bits)
        elem = start if b.elem_offset is None else _binop("add", _cast(b.elem_offset, start.dtype), start)
        new = replace(b, data=view.data, elem_offset=None if _is_zero(elem) else elem)
        self.views[id(b)] = new
        return new

    def visit_Var(self, v: Var):
        if id(v) not in self.offsets:
            return v
        view, _ = self.offsets[id(v)]  # a raw pointer use: the address of the view's start
        zero = tuple(IntImm(INT32, 0) for _ in view.shape)
        return Call(HANDLE, "address_of", (BufferLoad(view, zero, view.dtype),))


def _is_zero(e: PrimExpr | None) -> bool:
    return isinstance(e, IntImm) and e.value == 0


class _Kernels(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self, target: Target | None):
        self.targets = [target]

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == TARGET and isinstance(s.node, Target):
            self.targets.append(s.node)
            try:
                return (yield from self.descend(s))
            finally:
                self.targets.pop()
        if s.key == THREAD_EXTENT:
            return self.kernel(s)
        return (yield from self.descend(s))

    def visit_For(self, s: For):
        return self.kernel(s) if s.kind == "thread_binding" else (yield from self.descend(s))

    def kernel(self, root: AttrStmt | For) -> Stmt:
        allocs = [n for n in walk_statements(root.body)
                  if isinstance(n, AllocBuffer) and n.buffer.scope in SHARED_SCOPES]
        if not allocs:
            return root
        inner = _kernel_bound_vars(root.body)
        for a in allocs:
            for n in (m for d in a.buffer.shape for m in walk(d)):
                if isinstance(n, Var) and id(n) in inner:
                    raise Diagnostic(f"the size of shared buffer '{a.buffer.name}' depends on "
                                     f"'{n.name}', which is defined inside the kernel; shared "
                                     "memory is sized when the kernel is launched",
                                     a.span or a.buffer.span)
        idx = INT64 if any(d.dtype == INT64 for a in allocs for d in a.buffer.shape) else INT32
        if all(a.buffer.scope == "shared" for a in allocs):
            starts, end = self.static_layout(allocs, idx)
            if isinstance(end, IntImm) and end.value <= STATIC_LIMIT:
                self.check_limit(allocs, starts, end, idx, _size_bytes)
                return root  # static shared memory stays static
        offsets, total, regions = _plan(root, allocs, idx)
        self.check_limit([a for a in allocs if id(a.buffer.data) in offsets], offsets, total, idx,
                         _plan_bytes)
        body = root.body
        if regions:
            body, _ = _ReuseBarriers(root, regions).stmt(body, True)
        data = Var("buf_dyn_shmem", HANDLE, PointerType(UINT8, "shared.dyn"), root.span)
        merged = Buffer("buf_dyn_shmem", data, UINT8, (total,), span=root.span,
                        layout_none=allocs[0].buffer.layout_none)
        views: dict[int, Buffer] = {}
        placed: dict[int, tuple[Buffer, PrimExpr]] = {}
        for a in allocs:
            b = a.buffer
            start = offsets.get(id(b.data), IntImm(idx, 0))  # nothing touches it: no memory
            bits = _element_bits(b.dtype)
            if isinstance(start, IntImm):
                elem: PrimExpr = IntImm(idx, start.value * 8 // bits)
            elif bits % 8 == 0:
                elem = _binop("floordiv", start, IntImm(idx, bits // 8))
            else:  # sub-byte elements: a whole number of them per byte
                elem = _binop("floordiv", _binop("mul", start, IntImm(idx, 8)), IntImm(idx, bits))
            if b.elem_offset is not None:
                elem = _binop("add", _cast(b.elem_offset, idx), elem)
            views[id(b)] = replace(b, data=data, elem_offset=None if _is_zero(elem) else elem)
            placed[id(b.data)] = (views[id(b)], start)
        body = _Rewrite(views, placed).visit(body)
        volatile = any(k == VOLATILE and v for a in allocs for k, v in a.annotations)
        notes = ((VOLATILE, True),) if volatile else ()
        return replace(root, body=AllocBuffer(merged, body, root.span, notes))

    @staticmethod
    def static_layout(allocs: list[AllocBuffer],
                      idx: DataType) -> tuple[dict[int, PrimExpr], PrimExpr]:
        """Where static arrays, each aligned to 16 bytes, would end: the 48 KiB test."""
        starts: dict[int, PrimExpr] = {}
        end: PrimExpr = IntImm(idx, 0)
        for a in allocs:
            bits = _element_bits(a.buffer.dtype)
            align = math.lcm(STATIC_ALIGN, bits // 8) if bits % 8 == 0 else STATIC_ALIGN
            start = _align(end, align)
            starts[id(a.buffer.data)] = start
            end = _binop("add", start, _size_bytes(a.buffer, idx))
        return starts, end

    def check_limit(self, allocs: list[AllocBuffer], starts: dict[int, PrimExpr], total: PrimExpr,
                    idx: DataType, size_of) -> None:
        target = self.targets[-1]
        limit = target.get("max_shared_memory_per_block") if isinstance(target, Target) else None
        if not isinstance(limit, int):
            return
        for a in allocs:
            start, size = starts[id(a.buffer.data)], size_of(a.buffer, idx)
            if isinstance(start, IntImm) and isinstance(size, IntImm) and start.value + size.value > limit:
                need = (f"{total.value} bytes" if isinstance(total, IntImm)
                        else f"at least {start.value + size.value} bytes")
                arch = target.get("arch") or target.kind
                arch = ",".join(arch) if isinstance(arch, tuple) else arch
                raise Diagnostic(f"shared memory of this kernel totals {need}, over the limit "
                                 f"of {limit} bytes per block on {arch}; allocating "
                                 f"'{a.buffer.name}' crosses it", a.span or a.buffer.span)


def merge_shared_memory_allocations(mod: IRModule, ctx=None) -> IRModule:
    """Give every kernel launch of ``mod`` with dynamic shared memory one merged buffer."""
    funcs = {}
    for name, f in mod.functions.items():
        target = f.attrs.get(TARGET)
        body = _Kernels(target if isinstance(target, Target) else None).visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
    if all(funcs[n] is mod.functions[n] for n in funcs):
        return mod
    return replace(mod, functions=funcs)
