"""The analyses of StorageRewrite (TVM's ``LinearAccessPatternFinder`` and
``InplaceOpVerifier``): the statements of a function in order with the allocations each
touches, and whether a statement only writes ``dst[i]`` from ``src[i]``."""
from __future__ import annotations

from dataclasses import field

from tirc.ir.attrs import TARGET, THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Call, Let, Var
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, BufferStore, DeclBuffer, Evaluate,
                          For, IfThenElse, IterVar, LetStmt, Return, While)
from tirc.ir.visitor import Visitor, walk
from tirc.records import record


class Unsupported(Exception):
    """The function does not fit the analysis; it is left as it is."""


# -- the linear access pattern --------------------------------------------------------------

@record
class Entry:
    stmt: object = None
    offset: int = 0  # > 0: a scope's begin (its end is offset further); < 0: its end
    touched: list[int] = field(default_factory=list)


class AccessFinder(Visitor):
    """TVM's ``LinearAccessPatternFinder``: statements in order, each scope (loop, branch,
    launch) a begin and an end entry, and which allocations each touches, counted at the
    allocation's own level."""

    def __init__(self) -> None:
        self.seq: list[Entry] = []
        self.scope: list[Entry] = []
        self.allocs: dict[int, tuple[int, AllocBuffer]] = {}  # id(data) -> (level, node)
        self.pinned: set[int] = set()  # allocations that stay where they are
        self.in_thread = False
        self.inner: set[int] = set()  # variables defined since the attach scope's start
        self.attached = False  # inside an attach scope other than the function

    def touch(self, var: Var) -> None:
        info = self.allocs.get(id(var))
        if info is None:
            return
        if info[0] >= len(self.scope):
            raise Unsupported
        self.scope[info[0]].touched.append(id(var))

    def _leaf(self, s, visit_children) -> None:
        self.scope.append(Entry())
        visit_children()
        e = self.scope.pop()
        if e.touched:
            e.stmt = s
            self.seq.append(e)

    def _new_scope(self, s) -> None:
        self.scope.append(Entry())
        begin = len(self.seq)
        self.seq.append(Entry(s))
        self.generic_visit(s)
        inner = self.scope.pop()
        end = len(self.seq)
        self.seq.append(Entry(s, begin - end, inner.touched))
        self.seq[begin].offset = end - begin

    def _define(self, var: Var) -> None:
        self.inner.add(id(var))

    def _attach(self, s, visit) -> None:
        """``s`` may become the attach scope: the first one entered."""
        if self.attached:
            visit()
            return
        saved, self.inner, self.attached = self.inner, set(), True
        try:
            visit()
        finally:
            self.inner, self.attached = saved, False

    # statements touching memory
    def visit_BufferStore(self, s: BufferStore) -> None:
        def children():
            self.generic_visit(s)
            self.touch(s.buffer.data)
        self._leaf(s, children)

    def visit_Evaluate(self, s: Evaluate) -> None:
        self._leaf(s, lambda: self.generic_visit(s))

    def visit_Return(self, s: Return) -> None:
        self._leaf(s, lambda: self.generic_visit(s))

    def visit_LetStmt(self, s: LetStmt):
        self._leaf(s, lambda: self.visit(s.value))
        self._define(s.var)
        yield s.body

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.generic_visit(e)
        self.touch(e.buffer.data)

    def visit_Var(self, v: Var) -> None:
        self.touch(v)

    def visit_Call(self, e: Call) -> None:
        for a in e.args:
            if isinstance(a, Buffer):
                self.touch(a.data)
        self.generic_visit(e)

    def visit_Let(self, e: Let) -> None:
        self._define(e.var)
        self.generic_visit(e)

    # scopes
    def visit_For(self, s: For) -> None:
        self._define(s.loop_var)
        if s.kind == "parallel":
            self._attach(s, lambda: self._new_scope(s))
        else:
            self._new_scope(s)

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self._new_scope(s)

    def visit_While(self, s: While) -> None:
        self._new_scope(s)

    def visit_AssertStmt(self, s: AssertStmt) -> None:
        self._new_scope(s)

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == THREAD_EXTENT and not self.in_thread:
            self.in_thread = True
            if isinstance(s.node, IterVar):
                self._define(s.node.var)
            self._attach(s, lambda: self._new_scope(s))
            self.in_thread = False
        elif s.key in (VIRTUAL_THREAD, "extern_scope"):
            self._new_scope(s)
        elif s.key == TARGET:
            raise Unsupported  # a region of another target: its memory is not ours to move
        else:
            if isinstance(s.node, IterVar):
                self._define(s.node.var)
            self.visit(s.value)
            yield s.body

    # definitions
    def visit_AllocBuffer(self, s: AllocBuffer):
        b = s.buffer
        uses = [n for d in b.shape for n in walk(d)]
        if (len(b.shape) != 1 or any(isinstance(n, BufferLoad) for n in uses)
                or any(isinstance(n, Var) and id(n) in self.inner for n in uses)):
            self.pinned.add(id(b.data))
        else:
            self.allocs[id(b.data)] = (len(self.scope), s)
        self._define(b.data)
        yield s.body

    def visit_DeclBuffer(self, s: DeclBuffer):
        yield s.body


# -- in-place detection ---------------------------------------------------------------------

class InplaceCheck(Visitor):
    """TVM's ``InplaceOpVerifier``: ``stmt`` only does ``dst[idx] = f(src[idx])``."""

    def __init__(self, dst: int, src: int):
        self.dst, self.src = dst, src
        self.ok = True
        self.nest = 0
        self.store: BufferStore | None = None

    def check(self, s) -> bool:
        if not isinstance(s, (AttrStmt, For, IfThenElse, While, BufferStore)):
            return False
        self.visit(s)
        return self.ok

    def visit(self, node) -> None:
        if self.ok:
            super().visit(node)

    def visit_Var(self, v: Var) -> None:
        if id(v) in (self.dst, self.src):
            self.ok = False

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.nest += 1
        for i in s.indices:
            self.visit(i)
        self.nest -= 1
        if id(s.buffer.data) == self.dst:
            self.store = s
            self.visit(s.value)
            self.store = None
        else:
            self.visit(s.value)

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == "extern_scope":
            self.ok = False
            return
        yield from self.descend(s)

    def visit_AllocBuffer(self, s: AllocBuffer):
        if any(k == "volatile" for k, _ in s.annotations):
            self.ok = False
            return
        yield from self.descend(s)

    def visit_Call(self, e: Call) -> None:
        if any(isinstance(a, Buffer) and id(a.data) in (self.dst, self.src) for a in e.args):
            self.ok = False
            return
        self.generic_visit(e)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        buf = id(e.buffer.data)
        if buf == self.dst or self.nest:
            self.ok = False  # a reduction, or an indirect access
            return
        if buf == self.src:
            st = self.store
            if st is None or st.value.dtype != e.dtype or st.indices != e.indices:
                self.ok = False
                return
        self.nest += 1
        self.generic_visit(e)
        self.nest -= 1
