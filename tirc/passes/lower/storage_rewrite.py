"""StorageRewrite (TVM's ``tirx.transform.StorageRewrite``): plan the memory of a
function's allocations by liveness.

* Every allocation moves to its *attach scope*, the start of the outermost kernel launch
  scope (``thread_extent``) or the outermost ``T.parallel`` loop around it, else the
  start of the function: a buffer allocated inside a serial loop is allocated once.
* The statements at an allocation's level are put in one linear order; a buffer lives
  from the first statement that touches it to the last. A buffer whose life begins where
  another one's ends may take over its memory (same scope and attach scope, a size within
  16x, an element type that divides the offset): the later one becomes
  ``T.decl_buffer(..., data=<first>.data)``. A statement ``dst[i] = f(src[i])`` that
  reads each element of ``src`` only at the index it writes lets ``dst`` reuse ``src``
  in place. Allocations of different shapes sharing memory become one allocation of the
  largest size in bits, in the element type with the most lanes.
* Not reused, as TVM: ``local`` and ``warp`` memory and arrays of at most 32 bits (LLVM
  keeps those in registers), buffers whose size is not constant except with another of
  the same element type, and buffers of more than one dimension.
* An allocation that nothing touches is removed (and any declaration over its memory).

tirc keeps in place what TVM would move out of its scope wrongly: an allocation whose
size uses a variable defined between the attach scope and the allocation. A function
whose accesses do not fit the analysis (an access outside any statement) is left as is.
TVM also retypes allocations accessed only as vectors (``PointerValueTypeRewrite``);
tirc does not, its backends index vectors of scalars directly.

Preconditions: FlattenBuffer (flat buffers), VectorizeLoop and InjectVirtualThread ran.
Guarantees: every access reads the same bytes it read before; no two buffers live at the
same time share memory; allocations keep their annotations.
"""
from __future__ import annotations

import bisect
from dataclasses import field, replace

from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import WMMA_SCOPES, Buffer, constant_elements
from tirc.ir.expr import BufferLoad, IntImm, PointerType, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import AllocBuffer, AttrStmt, BufferStore, DeclBuffer, For, SeqStmt, Stmt, seq
from tirc.ir.visitor import Mutator, walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop
from tirc.passes.lower.storage_access import AccessFinder, Entry, InplaceCheck, Unsupported
from tirc.records import record

_RANKS = {"global": 0, "shared": 1, "warp": 2, "local": 3}
_MATCH_RANGE = 16


def storage_rewrite(mod: IRModule, ctx=None) -> IRModule:
    def run(body: Stmt) -> Stmt:
        try:
            return _plan(body)
        except Unsupported:
            return body
    return mod.map_bodies(run)


def _rank(scope: str) -> int:
    if scope in WMMA_SCOPES:
        return 4  # registers of a warp, each fragment buffer its own (TVM's ranks past warp)
    return _RANKS.get(scope.split(".")[0], 3)


def _tag(scope: str) -> str:
    if scope in WMMA_SCOPES:
        return ""
    return scope[len(scope.split(".")[0]):]


def _special(scope: str) -> bool:
    """Memory with its own tag (``local.L0A``): all of one attach scope is merged."""
    return _tag(scope) not in ("", ".dyn", ".workspace", ".vtcm")


def const_bits(buf: Buffer) -> int:
    """The allocation's size in bits, 0 when not constant (the size TVM's plans compare)."""
    n = constant_elements(buf.shape)
    return 0 if n is None else n * buf.dtype.bits * buf.dtype.lanes


# -- planning -------------------------------------------------------------------------------

def liveness(seq: list[Entry]) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Where each allocation's life begins and ends in a linear access pattern: for each
    statement (by id), the allocations first touched there (``gen``; a scope's begin entry
    holds what its body touches first) and last touched there (``kill``; a scope's end
    entry), each list in the order of the touches."""
    kill: dict[int, list[int]] = {}
    gen: dict[int, list[int]] = {}
    seen: set[int] = set()
    for e in reversed(seq):
        for v in e.touched:
            if v not in seen:
                seen.add(v)
                kill.setdefault(id(e.stmt), []).append(v)
    seen.clear()
    for i, e in enumerate(seq):
        if e.offset < 0:
            continue
        end = seq[i + e.offset]
        for v in end.touched:
            if v not in seen:
                seen.add(v)
                gen.setdefault(id(end.stmt), []).append(v)
    return gen, kill


@record(eq=False)
class _Storage:
    attach: object  # the attach scope's statement, None for the function
    scope: str
    elem: object  # element dtype (lanes 1)
    const_bits: int
    allocs: list[AllocBuffer] = field(default_factory=list)
    buffer: Buffer | None = None  # the allocation that backs it
    nest: AllocBuffer | None = None
    children: list["_Storage"] = field(default_factory=list)  # merged into this one
    bits_offset: int = 0  # where this one starts in the backing allocation


class _Planner:
    def __init__(self, finder: AccessFinder):
        self.finder = finder
        self.thread_scope = None
        self.free_const: list[tuple[int, int, _Storage]] = []  # sorted (bits, order, storage)
        self.free_sym: list[_Storage] = []
        self.order = 0
        self.alloc_map: dict[int, _Storage] = {}
        self.storages: list[_Storage] = []

    def plan(self) -> None:
        seq = self.finder.seq
        gen, kill = liveness(seq)
        inplaced: set[int] = set()
        for e in seq:
            key = id(e.stmt)
            if e.offset >= 0 and key in gen:
                detect = len(gen[key]) <= 2
                for var in gen[key]:
                    alloc = self.finder.allocs[var][1]
                    dst = None
                    if detect:
                        for src in kill.get(key, []):
                            s = self.alloc_map.get(src)
                            if (src in inplaced or s is None or s.scope != alloc.buffer.scope
                                    or s.attach is not self.thread_scope
                                    or s.elem != alloc.buffer.dtype.element()
                                    or not InplaceCheck(var, src).check(e.stmt)):
                                continue
                            if s.const_bits == const_bits(alloc.buffer):
                                dst = s
                                inplaced.add(src)
                                break
                    if dst is None:
                        dst = self.find(alloc)
                    dst.allocs.append(alloc)
                    self.alloc_map[var] = dst
            s = e.stmt
            if isinstance(s, AttrStmt) and s.key in (THREAD_EXTENT, VIRTUAL_THREAD):
                self.new_scope(s)
            elif isinstance(s, For) and s.kind == "parallel" and self.thread_scope in (None, s):
                self.new_scope(s)
            if e.offset <= 0 and key in kill:
                for var in kill[key]:
                    if var not in inplaced:
                        self.free(var)

    def new_scope(self, s) -> None:
        if self.thread_scope is None:
            self.thread_scope = s
            return
        if self.thread_scope is not s:
            raise Unsupported  # a launch inside a parallel loop, or the like
        self.free_const = [x for x in self.free_const if x[2].attach is not s]
        self.free_sym = [x for x in self.free_sym if x.attach is not s]
        self.thread_scope = None

    def new(self, alloc: AllocBuffer, bits: int) -> _Storage:
        st = _Storage(self.thread_scope, alloc.buffer.scope, alloc.buffer.dtype.element(), bits)
        self.storages.append(st)
        return st

    def find(self, alloc: AllocBuffer) -> _Storage:
        buf = alloc.buffer
        bits = const_bits(buf)
        rank = _rank(buf.scope)
        if not _tag(buf.scope) and (rank >= 2 or (bits and bits <= 32)):
            return self.new(alloc, bits)  # registers are LLVM's business
        if bits:
            keys = [x[0] for x in self.free_const]
            lo = bisect.bisect_left(keys, bits // _MATCH_RANGE)
            mid = bisect.bisect_left(keys, bits)
            hi = bisect.bisect_right(keys, bits * _MATCH_RANGE)
            for k in range(mid, hi):  # a bigger one first
                st = self.free_const[k][2]
                if st.attach is self.thread_scope and st.scope == buf.scope:
                    st.const_bits = max(bits, st.const_bits)
                    del self.free_const[k]
                    return st
            for k in range(mid - 1, lo - 1, -1):
                st = self.free_const[k][2]
                if (st.attach is self.thread_scope and st.scope == buf.scope
                        and st.elem == buf.dtype.element()):
                    st.const_bits = max(bits, st.const_bits)
                    del self.free_const[k]
                    return st
        else:
            for k, st in enumerate(self.free_sym):
                if (st.attach is self.thread_scope and st.scope == buf.scope
                        and st.elem == buf.dtype.element()):
                    del self.free_sym[k]
                    return st
        return self.new(alloc, bits)

    def free(self, var: int) -> None:
        st = self.alloc_map[var]
        if not _tag(st.scope) and (_rank(st.scope) >= 2 or 0 < st.const_bits <= 32):
            return
        if st.const_bits:
            self.order += 1
            bisect.insort(self.free_const, (st.const_bits, self.order, st),
                          key=lambda x: (x[0], x[1]))
        else:
            self.free_sym.append(st)

    def prepare(self) -> dict[int, list[_Storage]]:
        """The allocation that backs each storage, by attach scope."""
        attach: dict[int, list[_Storage]] = {}
        for st in self.storages:
            attach.setdefault(id(st.attach), []).append(st)
        for vec in attach.values():
            for i, st in enumerate(vec):
                if _special(st.scope):
                    if not st.const_bits:
                        raise Unsupported
                    for other in vec[:i]:
                        if other.scope == st.scope:
                            other.children.append(st)
                            break
        for st in self.storages:
            if st.bits_offset:
                continue
            if st.children:
                self._merge_tagged(st)
                continue
            first = st.allocs[0]
            wide = first.buffer.dtype
            for a in st.allocs:
                if a.buffer.dtype.lanes > wide.lanes:
                    wide = a.buffer.dtype
            same = all(a.buffer.dtype == first.buffer.dtype and a.buffer.shape == first.buffer.shape
                       for a in st.allocs[1:])
            if same:
                st.buffer = first.buffer
                st.nest = first
                continue
            size = None
            for a in st.allocs:
                nbits = a.buffer.dtype.bits * a.buffer.dtype.lanes
                d = a.buffer.shape[0]
                sz = binop("mul", d, IntImm(d.dtype, nbits))
                size = sz if size is None else binop("max", size, sz)
            type_bits = wide.bits * wide.lanes
            ana = Analyzer()
            tb = IntImm(size.dtype, type_bits)
            divided = ana.can_prove(binop("eq", binop("floormod", size, tb), IntImm(size.dtype, 0)))
            size = binop("floordiv", size, tb)
            if not divided:
                size = binop("add", size, IntImm(size.dtype, 1))
            size = ana.simplify(size)
            old = first.buffer
            data = Var(old.data.name, old.data.dtype, PointerType(wide, old.scope), old.data.span)
            st.buffer = Buffer(old.name, data, wide, (size,), span=old.span,
                               layout_none=old.layout_none)
            st.nest = replace(first, buffer=st.buffer)
        return {k: [x for x in vec if not x.bits_offset] for k, vec in attach.items()}

    def _merge_tagged(self, st: _Storage) -> None:
        """One allocation for all storages of one tagged scope, each 32-bit aligned."""
        def align(bits: int) -> int:
            return -(-bits // 32) * 32
        total = align(st.const_bits)
        for child in st.children:
            child.bits_offset = total
            total = align(total + child.const_bits)
        type_bits = st.elem.bits * st.elem.lanes
        old = st.allocs[0].buffer
        size = IntImm(old.shape[0].dtype, -(-total // type_bits))
        data = Var(old.data.name, old.data.dtype, PointerType(st.elem, old.scope), old.data.span)
        st.buffer = Buffer(old.name, data, st.elem, (size,), span=old.span,
                           layout_none=old.layout_none)
        st.nest = replace(st.allocs[0], buffer=st.buffer)
        for child in st.children:
            child.buffer = st.buffer


# -- rewriting ------------------------------------------------------------------------------

class _Rewriter(Mutator):
    def __init__(self, planner: _Planner, attach: dict[int, list[_Storage]]):
        self.map = planner.alloc_map
        self.pinned = planner.finder.pinned
        self.attach = attach
        self.remapped: dict[int, Buffer] = {}
        self.stripped = {id(a.buffer.data) for _, a in planner.finder.allocs.values()
                         if id(a.buffer.data) not in self.map}

    def remap(self, b: Buffer) -> Buffer:
        st = self.map[id(b.data)]
        if b is st.buffer:
            return b
        new = self.remapped.get(id(b))
        if new is None:
            new = replace(b, data=st.buffer.data, name=st.buffer.name)
            self.remapped[id(b)] = new
        return new

    def wrap(self, s, body: Stmt) -> Stmt:
        for st in reversed(self.attach.get(id(s), [])):
            body = replace(st.nest, body=body)
        return body

    def visit_buffer(self, b: Buffer) -> Buffer:
        return self.remap(b) if id(b.data) in self.map else b

    def visit_Var(self, v: Var) -> Var:
        st = self.map.get(id(v))
        if st is not None and st.bits_offset:
            raise Unsupported  # the address of a buffer merged at an offset
        return v if st is None else st.buffer.data

    def _shift(self, node, old: Buffer):
        """An access of a buffer merged at an offset: the offset added to its last index."""
        st = self.map.get(id(old.data))
        if st is None or not st.bits_offset:
            return node
        bits = old.dtype.bits
        if st.bits_offset % bits:
            raise Unsupported
        last = node.indices[-1]
        shifted = binop("add", IntImm(last.dtype.element(), st.bits_offset // bits), last)
        return replace(node, indices=node.indices[:-1] + (shifted,))

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        return self._shift(self.generic_visit(s), s.buffer)

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        return self._shift(self.generic_visit(e), e.buffer)

    def visit_SeqStmt(self, s: SeqStmt):
        new = (yield from self.descend(s))
        if new is not s and any(isinstance(x, SeqStmt) for x in new.stmts):
            return seq(new.stmts, s.span)  # a removed allocation's body is spliced in
        return new

    def visit_AllocBuffer(self, s: AllocBuffer):
        key = id(s.buffer.data)
        if key in self.pinned:
            return (yield from self.descend(s))
        body = (yield s.body)
        st = self.map.get(key)
        if st is None or st.buffer is s.buffer:
            return body  # unused, or re-created at its attach scope
        return DeclBuffer(self.remap(s.buffer), body, s.span)

    def visit_DeclBuffer(self, s: DeclBuffer):
        if id(s.buffer.data) in self.stripped:
            return (yield s.body)  # a view of memory nothing uses
        return (yield from self.descend(s))

    def visit_For(self, s: For):
        out = (yield from self.descend(s))
        if id(s) in self.attach:
            out = replace(out, body=self.wrap(s, out.body))
        return out

    def visit_AttrStmt(self, s: AttrStmt):
        out = (yield from self.descend(s))
        if id(s) in self.attach:
            out = replace(out, body=self.wrap(s, out.body))
        return out


def _plan(body: Stmt) -> Stmt:
    if not any(isinstance(n, AllocBuffer) for n in walk(body)):
        return body
    finder = AccessFinder()
    finder.visit(body)
    if not finder.allocs:
        return body
    planner = _Planner(finder)
    planner.plan()
    attach = planner.prepare()
    out = _Rewriter(planner, attach).visit(body)
    for st in reversed(attach.get(id(None), [])):
        out = replace(st.nest, body=out)
    return out
