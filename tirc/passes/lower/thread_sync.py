"""ThreadSync: insert the shared-memory barriers ``T.tvm_storage_sync("shared")`` a kernel
needs between threads (docs/pipeline.md).

Inside each kernel (an outermost ``thread_extent`` scope) every statement is summarised
by the shared-memory accesses it makes before its first barrier (``head``), after its
last barrier (``tail``) and whether every path through it reaches a barrier. Walking a
statement sequence, the accesses since the last barrier are pending; a statement whose
head reads what a pending access wrote, or writes what one read or wrote, gets a barrier
before it. A loop whose body's tail conflicts with its head (a write late in iteration
``i`` against an access early in ``i + 1``) gets a barrier at the end of its body.
Two accesses do not conflict when no element either touches can be touched by another
thread (:mod:`tirc.passes.lower.thread_sync_index`): the same index expression, linear in the
thread and loop variables with coefficients that give every (thread, iteration) its own
element, as in ``s[tx]`` written and read (or such indices a small constant apart, as
``s[2 * tx]`` and ``s[2 * tx + 1]``). Existing barriers (``"shared"`` or
``"shared.dyn"``) are respected, so a module that has its barriers is returned as it
is. No barrier is placed inside code whose condition (an ``if``, a loop bound) depends
on ``threadIdx``: a barrier there deadlocks, so the conflict is resolved before that
statement when it is with earlier code, and left alone when it lies wholly inside.
A barrier is ``"shared.dyn"`` when every access it orders is to dynamic shared memory.

Preconditions: LowerThreadBindings ran (thread axes are ``T.launch_thread`` scopes;
``thread_binding`` loops are tolerated); buffers are flat. Guarantees: only
``Evaluate(tvm_storage_sync)`` statements are added, never inside thread-dependent
control flow; code outside kernels is untouched.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import field, replace

from tirc.ir.attrs import THREAD_EXTENT
from tirc.ir.buffer import Buffer, SHARED_SCOPES
from tirc.ir.dtype import INT32
from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, PrimExpr, StringImm, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, Break, BufferStore, Continue,
                          DeclBuffer, Evaluate, For, IfThenElse, LetStmt, Return, SeqStmt, Stmt,
                          While, seq)
from tirc.ir.trampoline import drive
from tirc.ir.visitor import Mutator, Visitor
from tirc.diagnostics import Diagnostic
from tirc.passes.lower.thread_sync_index import ThreadIndices
from tirc.records import record



@record(frozen=True, slots=True, cache_hash=True)
class Access:
    data: Var  # the buffer's pointer (compared by identity)
    write: bool
    indices: tuple[PrimExpr, ...] | None  # None: unknown elements (the pointer escaped)
    scope: str
    unit: tuple = ()  # the view's dtype and element offset: indices compare only within one


# A set of accesses is a dict (keys in order of discovery, values None). Summaries
# share them: a set is never changed once made (fold changes only its own).
Accesses = dict


@record
class _Summary:
    head: Accesses = field(default_factory=dict)
    tail: Accesses = field(default_factory=dict)
    syncs: bool = False


def barrier(scope: str = "shared", span=None) -> Evaluate:
    """A barrier; ``span``: the statement it is placed for (its accesses need it)."""
    return Evaluate(Call(INT32, "tvm_storage_sync", (StringImm(scope),)), span)


def is_barrier(s: Stmt) -> bool:
    return (isinstance(s, Evaluate) and isinstance(s.value, Call)
            and s.value.op == "tvm_storage_sync" and len(s.value.args) >= 1
            and isinstance(s.value.args[0], StringImm) and s.value.args[0].value in SHARED_SCOPES)


def _union(a: Accesses, b: Accesses) -> Accesses:
    """``a`` then what ``b`` adds; ``a`` or ``b`` itself when the other adds nothing."""
    if not b:
        return a
    if not a:
        return b
    out = dict(a)
    out.update(b)
    return out if len(out) > len(a) else a


class _Accesses(Visitor):
    """The shared-memory accesses an expression makes, in evaluation order."""

    def __init__(self) -> None:
        self.out: Accesses = {}

    def add(self, data: Var, write: bool, indices, unit: tuple = ()) -> None:
        self.out.setdefault(Access(data, write, indices, data.ptr.scope, unit))

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        for i in e.indices:
            self.visit(i)
        if e.buffer.scope in SHARED_SCOPES:
            self.add(e.buffer.data, False, _flat(e.buffer, e.indices), _unit(e.buffer))

    def visit_Call(self, e: Call) -> None:
        if e.op in ("address_of", "masked_store") and isinstance(e.args[0], BufferLoad):
            # an address, or a masked store: counted as a read and a write of the buffer
            load = e.args[0]
            for i in (*load.indices, *e.args[1:]):
                self.visit(i)
            if load.buffer.scope in SHARED_SCOPES:
                self.add(load.buffer.data, True, None)
            return
        self.generic_visit(e)

    def visit_Var(self, v: Var) -> None:
        if v.ptr is not None and v.ptr.scope in SHARED_SCOPES:
            self.add(v, True, None)  # a raw pointer: the callee may read and write anything

    def visit_buffer(self, b: Buffer) -> None:
        if b.scope in SHARED_SCOPES:
            self.add(b.data, True, None)


def _unit(b: Buffer) -> tuple:
    return (b.dtype, b.elem_offset)


def _flat(b: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
    """A multi-dimensional index as one row-major offset (the analysis reads flat ones)."""
    if len(indices) <= 1 or len(b.shape) != len(indices):
        return indices
    flat = indices[0]
    for extent, i in zip(b.shape[1:], indices[1:]):
        flat = BinOp("add", BinOp("mul", flat, extent, flat.dtype), i, flat.dtype)
    return (flat,)


def _reads(*exprs) -> Accesses:
    v = _Accesses()
    for e in exprs:
        if e is not None:
            v.visit(e)
    return v.out


def _jumps(s: Stmt) -> bool:
    """Whether ``s`` holds a break or continue of the loop around it."""
    if isinstance(s, (Break, Continue)):
        return True
    if isinstance(s, (For, While)):
        return False
    if isinstance(s, SeqStmt):
        return any(_jumps(c) for c in s.stmts)
    if isinstance(s, IfThenElse):
        return _jumps(s.then_case) or (s.else_case is not None and _jumps(s.else_case))
    body = getattr(s, "body", None)
    return isinstance(body, Stmt) and _jumps(body)


def _result(child, value):
    return value


class _Pairs:
    """Accesses by :meth:`BarrierPlanner.bucket` (only accesses of one bucket may
    conflict), all of them and the writes: a later access is checked against each of its
    bucket (against the writes only, for a read)."""

    def __init__(self, planner: "BarrierPlanner", accesses=()) -> None:
        self.planner = planner
        self.buckets: dict = {}
        for a in accesses:
            self.add(a)

    def add(self, a: Access) -> None:
        key = self.planner.bucket(a)
        if key is None:
            return
        entry = self.buckets.get(key)
        if entry is None:
            entry = self.buckets[key] = ([], [])
        entry[0].append(a)
        if a.write:
            entry[1].append(a)

    def conflicts(self, later) -> str | None:
        planner, buckets, found = self.planner, self.buckets, None
        for b in later:
            key = planner.bucket(b)
            entry = buckets.get(key) if key is not None else None
            if entry is None:
                continue
            for a in entry[0] if b.write else entry[1]:
                if (found is None or a.scope == "shared") and planner.conflict(a, b):
                    if a.scope == "shared":
                        return "shared"
                    found = "shared.dyn"
        return found


class _Group:
    """The accesses of one buffer with one unit and one form but its constant
    (``ThreadIndices.group_of``): how many, and their constants (sorted, distinct), for
    all of them and for the writes."""

    __slots__ = ("count", "writes", "consts", "write_consts")

    def __init__(self) -> None:
        self.count = self.writes = 0
        self.consts: list[int] = []
        self.write_consts: list[int] = []


class _Buffers:
    """ThreadSync's own conflicts (:meth:`BarrierPlanner.conflict`) without trying each
    pair: the accesses by buffer, then by group. A later access conflicts with an
    earlier one of its buffer (a write of it, for a read) in another group, and with
    one of its own group whose constant is too far (an unknown extent) or a reachable
    distance away (:meth:`ThreadIndices.apart`): only constants within the axes' spread
    can be, found by bisection. The same answers as each pair's, in time linear in the
    accesses (bar constants packed closer than the spread)."""

    def __init__(self, index: ThreadIndices, accesses=()) -> None:
        self.index = index
        self.generation = self.index.generation
        self.accesses: list[Access] = []
        self.buffers: dict[int, list] = {}  # id(data) -> [scope, count, writes, {key: _Group}]
        for a in accesses:
            self.add(a)

    def add(self, a: Access) -> None:
        self.accesses.append(a)
        entry = self.buffers.get(id(a.data))
        if entry is None:
            entry = self.buffers[id(a.data)] = [a.scope, 0, 0, {}]
        group, const = self.index.group_of(a.indices)
        key = None if group is None else (a.unit, group)
        g = entry[3].get(key)
        if g is None:
            g = entry[3][key] = _Group()
        entry[1] += 1
        g.count += 1
        _insert(g.consts, const)
        if a.write:
            entry[2] += 1
            g.writes += 1
            _insert(g.write_consts, const)

    def conflicts(self, later) -> str | None:
        if self.index.generation != self.generation:  # a variable was bound again
            self.__init__(self.index, self.accesses)
        found = None
        for b in later:
            entry = self.buffers.get(id(b.data))
            if entry is None or (found is not None and entry[0] != "shared"):
                continue
            if self._conflict(entry, b):
                if entry[0] == "shared":
                    return "shared"
                found = "shared.dyn"
        return found

    def _conflict(self, entry: list, b: Access) -> bool:
        total = entry[1] if b.write else entry[2]
        if not total:
            return False
        group, const = self.index.group_of(b.indices)
        if group is None:
            return True
        g = entry[3].get((b.unit, group))
        if g is None or (g.count if b.write else g.writes) < total:
            return True  # an access of another unit or form (or none)
        return self.index.collides(group, const, g.consts if b.write else g.write_consts)


def _insert(consts: list[int], c: int) -> None:
    i = bisect_left(consts, c)
    if i == len(consts) or consts[i] != c:
        consts.insert(i, c)


class BarrierPlanner:
    """The barrier planner for one kernel."""

    def __init__(self, root: Stmt):
        self.index = ThreadIndices(root)
        # a planner with its own conflict (MergeSharedMemoryAllocations') tries each pair
        # of a bucket; ThreadSync's own is answered by group (_Buffers)
        self._pairs = type(self).conflict is not BarrierPlanner.conflict

    def bucket(self, a: Access):
        """A key that two accesses share when they may conflict (None: ``a`` conflicts
        with nothing): the buffer."""
        return id(a.data)

    def conflict(self, a: Access, b: Access) -> bool:
        if a.data is not b.data or not (a.write or b.write):
            return False
        return a.unit != b.unit or not self.index.disjoint(a.indices, b.indices)

    def conflicts(self, earlier, later) -> str | None:
        """The barrier scope that orders the accesses ``earlier`` (indexed:
        :meth:`indexed`) holds before those of ``later``; None if not needed."""
        return earlier.conflicts(later)

    def indexed(self, accesses=()):
        """``accesses`` indexed for :meth:`conflicts` (more added with ``add``)."""
        return _Pairs(self, accesses) if self._pairs else _Buffers(self.index, accesses)

    # -- statements ---------------------------------------------------------------------
    def fold(self, parts: list[_Summary], insert: list[bool]) -> tuple[list[str | None], _Summary]:
        """Run ``parts`` in order; the barrier (scope) to insert before each, and the whole.
        The accesses pending since the last barrier are kept indexed as they come."""
        pending: Accesses = {}
        index = self.indexed()
        head: Accesses = {}
        syncs = False
        head_open = True
        barriers: list[str | None] = []
        for part, may_insert in zip(parts, insert):
            scope = self.conflicts(index, part.head) if may_insert and pending else None
            barriers.append(scope)
            if scope is not None:
                pending, index, syncs, head_open = {}, self.indexed(), True, False
            if head_open:
                head.update(part.head)
            if part.syncs:
                pending, syncs, head_open = dict(part.tail), True, False
                index = self.indexed(pending)
            else:
                for a in part.tail:
                    if a not in pending:
                        pending[a] = None
                        index.add(a)
        return barriers, _Summary(head, pending, syncs)

    def prefixed(self, pre: Accesses, body: Stmt, ok: bool):
        """Steps: a statement that evaluates ``pre`` and then runs ``body`` (a barrier may
        go at the top of the body). Without ``pre``: ``body``'s summary as it is."""
        new, sm = yield body, ok
        if not pre:
            return new, sm
        (_, top), whole = self.fold([_Summary(pre, pre), sm], [False, ok])
        return (new if top is None else seq([barrier(top, new.span), new])), whole

    def stmt(self, s: Stmt, ok: bool) -> tuple[Stmt, _Summary]:
        """``s`` with barriers added (only if ``ok``: not in divergent code), summarised.
        The statements under it are planned in one loop (tirc.ir.trampoline)."""
        return drive(self.steps(s, ok), lambda child: (self.steps(*child), None), _result)

    def steps(self, s: Stmt, ok: bool):
        """:meth:`stmt` as steps: yields ``(statement, ok)`` for each statement under ``s``,
        gets back its :meth:`stmt`."""
        if isinstance(s, SeqStmt):
            done = []
            for c in s.stmts:
                done.append((yield c, ok))
            scopes, whole = self.fold([sm for _, sm in done], [ok] * len(done))
            out: list[Stmt] = []
            for (new, _), scope in zip(done, scopes):
                if scope is not None:
                    out.append(barrier(scope, new.span))
                out.append(new)
            same = len(out) == len(s.stmts) and all(a is b for a, b in zip(out, s.stmts))
            return (s if same else SeqStmt(tuple(out), s.span)), whole
        if is_barrier(s):
            return s, _Summary(syncs=True)
        if isinstance(s, BufferStore):
            acc = _reads(*s.indices, s.value)
            if s.buffer.scope in SHARED_SCOPES:
                acc.setdefault(Access(s.buffer.data, True, _flat(s.buffer, s.indices),
                                      s.buffer.scope, _unit(s.buffer)))
            return s, _Summary(acc, acc)
        if isinstance(s, (Evaluate, Return)):
            acc = _reads(s.value)
            return s, _Summary(acc, acc)
        if isinstance(s, (For, While)):
            return (yield from self.loop(s, ok))
        if isinstance(s, IfThenElse):
            return (yield from self.branch(s, ok))
        if isinstance(s, LetStmt):
            self.index.bind_let(s.var, s.value)
            pre, body = _reads(s.value), s.body
        elif isinstance(s, (AttrStmt, AssertStmt)):
            pre = _reads(s.condition if isinstance(s, AssertStmt) else s.value)
            body = s.body
        elif isinstance(s, (AllocBuffer, DeclBuffer)):
            pre, body = {}, s.body
        else:
            return s, _Summary()  # Break, Continue
        new, sm = yield from self.prefixed(pre, body, ok)
        return (s if new is body else replace(s, body=new)), sm

    def loop(self, s: For | While, ok: bool):
        if isinstance(s, For) and s.kind == "thread_binding":
            new, sm = yield s.body, ok
            return (s if new is s.body else replace(s, body=new)), sm
        if isinstance(s, For):
            bounds = (s.min, s.extent, s.step)
            extent = s.extent.value if isinstance(s.extent, IntImm) else None
            self.index.bind_loop(s)
        else:
            bounds, extent = (s.condition,), None
        pre = _reads(*(b for b in bounds if b is not None))
        ok_body = ok and not self.index.is_divergent(*bounds)
        body, sm = yield s.body, ok_body
        cond = pre if isinstance(s, While) else {}
        if cond:  # a While re-reads its condition before every iteration
            (_, top), sm = self.fold([_Summary(cond, cond), sm], [False, ok_body])
            if top is not None:
                body = seq([barrier(top, s.span), body])
        if ok_body and (extent is None or extent > 1):
            scope = self.conflicts(self.indexed(sm.tail), _union(cond, sm.head))
            if scope is not None:  # loop-carried: iteration i's tail against i + 1's head
                body = seq([body, barrier(scope, s.span)])
                sm = _Summary(sm.head, {}, True)
        if _jumps(s.body):  # break/continue: any access may be the last or the first
            every = _union(sm.head, sm.tail)
            sm = _Summary(every, every, False)
        runs = extent is not None and extent > 0
        whole = _Summary(_union(pre, sm.head), _union(sm.tail, cond), sm.syncs and runs)
        return (s if body is s.body else replace(s, body=body)), whole

    def branch(self, s: IfThenElse, ok: bool):
        cond = _reads(s.condition)
        ok_inner = ok and not self.index.is_divergent(s.condition)
        then, st = yield from self.prefixed(cond, s.then_case, ok_inner)
        if s.else_case is not None:
            other, se = yield from self.prefixed(cond, s.else_case, ok_inner)
        else:
            other, se = None, _Summary(cond, cond)
        whole = _Summary(_union(st.head, se.head), _union(st.tail, se.tail), st.syncs and se.syncs)
        if then is s.then_case and other is s.else_case:
            return s, whole
        return replace(s, then_case=then, else_case=other), whole


class _Kernels(Mutator):
    """Finds each kernel (an outermost thread scope) and plans its barriers."""

    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key != THREAD_EXTENT:
            return (yield from self.descend(s))
        return self.kernel(s)

    def visit_For(self, s: For):
        if s.kind != "thread_binding":
            return (yield from self.descend(s))
        return self.kernel(s)

    def kernel(self, root: AttrStmt | For):
        planner = BarrierPlanner(root)
        body, _ = planner.stmt(root.body, True)
        return root if body is root.body else replace(root, body=body)


class _AfterWaits(Mutator):
    """A barrier first thing under every ``async_wait_queue_scope`` (TVM's
    ``ThreadSyncAfterWaitQueueInserter``): once a thread's asynchronous copies are in,
    the others' still may not be, which the access analysis cannot see."""

    expressions = False

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key != "async_wait_queue_scope":
            return (yield from self.descend(s))
        inner = s.body
        if not (isinstance(inner, AttrStmt) and inner.key == "async_wait_inflight_count"):
            raise Diagnostic("an async_wait_queue_scope must hold an async_wait_inflight_count "
                             "attribute", s.span)
        body = yield inner.body
        sync = Evaluate(Call(INT32, "tvm_storage_sync", (StringImm("shared"),), s.span), s.span)
        return replace(s, body=replace(inner, body=seq([sync, body], s.span)))


def thread_sync(mod: IRModule, ctx=None) -> IRModule:
    """Add the shared-memory barriers every kernel of ``mod`` needs."""
    funcs = {}
    for name, f in mod.functions.items():
        body = _AfterWaits().visit(f.body)
        body = _Kernels().visit(body)
        funcs[name] = f if body is f.body else f.with_body(body)
    if all(funcs[n] is mod.functions[n] for n in funcs):
        return mod
    return replace(mod, functions=funcs)
