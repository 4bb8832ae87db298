"""The part of every allocated buffer its code touches, for CompactBufferAllocation
(TVM's ``BufferAccessRegionCollector``).

Each access to a buffer allocated in the function (by a block or ``T.alloc_buffer``) is
relaxed over the loops *inside* its allocation, and over the enclosing thread-bound
loops whose threads share the buffer's storage scope
(:func:`~tirc.passes.analysis.region_relax.need_relax_thread`); outer loops stay symbolic, so a
buffer allocated per iteration of ``i`` covers ``[i * 8, i * 8 + 8)``, not all of it.
Branch conditions narrow the loops' ranges; conditions that do not, and block
predicates, bound fused loops (:mod:`tirc.passes.analysis.region_bounds`). A use of a buffer's
data pointer (an opaque access) covers the region the enclosing block declares for the
buffer, else the whole buffer.

The union of the accesses of a buffer, once its allocation scope is left, becomes its
region: with ``strict``, clamped to the buffer (``[max(0, min), min(shape, extent))``);
an extent that still depends on a loop becomes its constant upper bound, or the whole
dimension when it has none or depends on memory (``A[n[0]]``). An access whose bounds
depend on the sign of a symbolic divisor covers its whole dimension (:func:`_signless`).
"""
from __future__ import annotations

import math

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.block import BufferRegion, Range, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL
from tirc.ir.expr import (BinOp, BufferLoad, Call, IntImm, Let, Not, PrimExpr, Ramp, Select,
                          Var, scalable_count)
from tirc.ir.ops import INTRINSICS
from tirc.ir.stmt import AllocBuffer, AttrStmt, BufferStore, For, IfThenElse, IterVar, LetStmt
from tirc.ir.visitor import Visitor, walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, imm, index_typed, max_, min_, mul
from tirc.passes.analysis.region_bounds import may_constrain, predicate_refiner, solve_condition
from tirc.passes.analysis.region_relax import (EVERYTHING, IntervalSet, cover_range, eval_range,
                                      from_range, need_relax_thread, union)

Region = tuple[Range, ...]


def collect_regions(body, strict: bool) -> dict[int, tuple[Buffer, Region]]:
    """``id(buffer) -> (buffer, region)`` for every buffer allocated in ``body`` and
    accessed there."""
    c = _Collector(strict, _aliases(body))
    c.visit(body)
    return c.regions


def _aliases(body) -> dict[int, list[Buffer]]:
    """``id(data pointer) -> buffers`` over it (allocated, matched or accessed)."""
    out: dict[int, list[Buffer]] = {}

    def add(b: Buffer) -> None:
        lst = out.setdefault(id(b.data), [])
        if not any(x is b for x in lst):
            lst.append(b)
    for n in walk(body):
        if isinstance(n, (BufferLoad, BufferStore, AllocBuffer)):
            add(n.buffer)
        elif isinstance(n, SBlock):
            for b in n.alloc_buffers:
                add(b)
            for m in n.match_buffers:
                add(m.buffer)
                add(m.source.buffer)
    return out


def _point(indices) -> Region:
    """The region of one access; a vector index ``Ramp(b, s, n)`` covers ``[b, b + s * n)``
    (``n`` is ``T.vscale() * lanes`` for a scalable one)."""
    return tuple(Range(i.base, mul(i.stride, _count(i))) if isinstance(i, Ramp)
                 else Range(i, imm(i.dtype, 1)) for i in indices)


def _count(ramp: Ramp) -> PrimExpr:
    if ramp.scalable:
        return scalable_count(ramp.lanes, ramp.stride.dtype)
    return imm(ramp.stride.dtype, ramp.lanes)


def _full(buf: Buffer) -> Region:
    return tuple(Range(imm(e.dtype, 0), e) for e in buf.shape)


class _Collector(Visitor):
    def __init__(self, strict: bool, aliases: dict[int, list[Buffer]]):
        self.strict = strict
        self.aliases = aliases
        self.ancestors: list[tuple[Var, str | None]] = []
        self.dom: dict[int, IntervalSet] = {}
        self.ana = Analyzer()
        # conditions of the enclosing branches that bound no loop alone, each with its
        # simplified form once an access needed it (the facts about its variables do not
        # change inside the branch)
        self.pending: list[list] = []
        self.def_depth: dict[int, int] = {}
        self.relaxed: dict[int, tuple[Buffer, list[IntervalSet]]] = {}
        self.annotations: dict[int, list[BufferRegion]] = {}
        self.regions: dict[int, tuple[Buffer, Region]] = {}
        # the refiner of the pending conditions, made once while the scope stays the same
        # (``epoch`` counts changes of the loops, lets, conditions and their ranges)
        self.epoch = 0
        self.refiners: dict[tuple[int, frozenset[int]], object] = {}

    # ---- scopes -------------------------------------------------------------------------

    def _enter_loop(self, var: Var, min_: PrimExpr, extent: PrimExpr, tag: str | None) -> None:
        self.epoch += 1
        self.ancestors.append((var, tag))
        self.ana.bind_range(var, min_, extent)
        self.dom[id(var)] = from_range(min_, extent)

    def _leave_loop(self, var: Var) -> None:
        self.epoch += 1
        self.dom.pop(id(var), None)
        self.ancestors.pop()

    def visit_For(self, s: For):
        self.visit(s.min)
        self.visit(s.extent)
        self._enter_loop(s.loop_var, s.min, s.extent, s.thread_tag if s.kind == "thread_binding" else None)
        yield s.body
        self._leave_loop(s.loop_var)

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key in (THREAD_EXTENT, VIRTUAL_THREAD) and isinstance(s.node, IterVar):
            self.visit(s.value)
            var = s.node.var
            self._enter_loop(var, imm(s.value.dtype, 0), s.value, s.node.thread_tag)
            yield s.body
            self._leave_loop(var)
            return
        yield from self.descend(s)

    def visit_LetStmt(self, s: LetStmt):
        self.visit(s.value)
        if index_typed(s.value):
            self.epoch += 1
            self.ana.bind_value(s.var, s.value)
            self.dom[id(s.var)] = IntervalSet.point(s.value)
        yield s.body

    def visit_Let(self, e: Let) -> None:
        self.visit(e.value)
        if index_typed(e.value):
            self.epoch += 1
            self.ana.bind_value(e.var, e.value)
            self.dom[id(e.var)] = IntervalSet.point(e.value)
        self.visit(e.body)
        self.epoch += 1
        self.dom.pop(id(e.var), None)

    def _under(self, cond: PrimExpr, node) -> None:
        """Visit ``node`` knowing ``cond`` (TVM's ConditionalBoundsContext)."""
        solved = solve_condition(cond, self.dom)
        self.epoch += 1
        if solved is None:
            self.pending.append([cond, None])
            self.visit(node)
            self.pending.pop()
        else:
            saved = {k: self.dom[k] for k in solved}
            self.dom.update(solved)
            self.visit(node)
            self.dom.update(saved)
        self.epoch += 1

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.visit(s.condition)
        self._under(s.condition, s.then_case)
        if s.else_case is not None:
            self._under(Not(s.condition), s.else_case)

    def visit_Call(self, e: Call) -> None:
        if e.op == "if_then_else":
            self.visit(e.args[0])
            self._under(e.args[0], e.args[1])
            self._under(Not(e.args[0]), e.args[2])
            return
        self.generic_visit(e)

    def visit_SBlockRealize(self, s: SBlockRealize) -> None:
        for v in s.iter_values:
            self.visit(v)
        self.visit(s.predicate)
        self._under(s.predicate, s.block)

    def visit_SBlock(self, b: SBlock):
        if b.init is not None or b.iter_vars:
            raise Diagnostic(f"block '{b.name_hint}' still has iterators or an init statement; "
                             "CompactBufferAllocation needs ConvertBlocksToOpaque first", b.span)
        mine: dict[int, list[BufferRegion]] = {}
        for r in (*b.reads, *b.writes):
            mine.setdefault(id(r.buffer), []).append(r)
        saved = {k: self.annotations.get(k) for k in mine}
        self.annotations.update(mine)
        for buf in b.alloc_buffers:
            self.def_depth[id(buf.data)] = len(self.ancestors)
        for m in b.match_buffers:
            self.access(m.source.buffer, m.source.region)
        yield b.body
        for k, v in saved.items():
            if v is None:
                self.annotations.pop(k, None)
            else:
                self.annotations[k] = v
        for buf in b.alloc_buffers:
            self.narrow(buf)

    def visit_AllocBuffer(self, s: AllocBuffer):
        self.def_depth[id(s.buffer.data)] = len(self.ancestors)
        yield s.body
        self.narrow(s.buffer)

    # ---- accesses -----------------------------------------------------------------------

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.access(s.buffer, _point(s.indices))
        self.visit(s.value)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.access(e.buffer, _point(e.indices))
        for i in e.indices:
            self.visit(i)

    def visit_Var(self, v: Var) -> None:
        for buf in self.aliases.get(id(v), ()):
            declared = self.annotations.get(id(buf))
            if declared:
                for r in declared:
                    self.access(r.buffer, r.region)
            else:
                self.access(buf, _full(buf))

    def access(self, buf: Buffer, region: Region) -> None:
        depth = self.def_depth.get(id(buf.data))
        if depth is None:
            return
        fixed = {}
        for var, tag in self.ancestors[:depth]:
            if tag is not None and need_relax_thread(tag, buf.scope):
                continue
            fixed[id(var)] = self.dom.pop(id(var))
        refine = self._refiner(frozenset(fixed)) if self.pending else None
        sets = [_signless(eval_range(r.min, r.extent, self.dom, refine)) for r in region]
        self.dom.update(fixed)
        old = self.relaxed.get(id(buf))
        if old is None:
            self.relaxed[id(buf)] = (buf, sets)
        else:
            self.relaxed[id(buf)] = (buf, [union([a, b]) for a, b in zip(old[1], sets)])

    def _refiner(self, fixed: frozenset[int]):
        """The bounds the pending conditions put on the relaxed loops (``fixed``: the
        loops that stay symbolic for this access)."""
        key = (self.epoch, fixed)
        if key in self.refiners:
            return self.refiners[key]
        if self.refiners and next(iter(self.refiners))[0] != self.epoch:
            self.refiners.clear()
        pred: PrimExpr = IntImm(BOOL, 1)
        for entry in self.pending:
            if entry[1] is None:
                c = entry[0]
                c = c if c.dtype.is_bool else BinOp("ne", c, imm(c.dtype, 0), BOOL)
                entry[1] = self.ana.simplify(c) if may_constrain(c) else IntImm(BOOL, 1)
            c = entry[1]
            if isinstance(c, IntImm):
                if not c.value:
                    pred = c
                    break
                continue
            pred = c if isinstance(pred, IntImm) else BinOp("and", pred, c, BOOL)
        refine = self.refiners[key] = predicate_refiner(pred, self.dom)
        return refine

    # ---- the region of a buffer ---------------------------------------------------------

    def narrow(self, buf: Buffer) -> None:
        entry = self.relaxed.get(id(buf))
        if entry is None:
            return  # allocated but never accessed: left as it is
        loops = {id(v) for v, _ in self.ancestors}
        out = []
        for s, dim in zip(entry[1], buf.shape):
            original = Range(imm(dim.dtype, 0), dim)
            rng = cover_range(s, original)
            if self.strict:
                lo = self.ana.simplify(max_(imm(rng.min.dtype, 0), rng.min))
                extent = rng.extent
                if not self._fits(extent, dim):
                    extent = min_(dim, rng.extent)
                extent = self.ana.simplify(extent)
            else:
                lo, extent = self.ana.simplify(rng.min), self.ana.simplify(rng.extent)
            if not _pure(extent):
                out.append(original)
                continue
            if any(isinstance(n, Var) and id(n) in loops for n in walk(extent)):
                hi = self.ana.const_bound(extent)[1]
                if math.isinf(hi):
                    out.append(original)
                    continue
                extent = imm(extent.dtype, int(hi))
            out.append(Range(lo, extent))
        self.regions[id(buf)] = (buf, tuple(out))

    def _fits(self, extent: PrimExpr, shape: PrimExpr) -> bool:
        """TVM's CanProveLessEqualThanSymbolicShapeValue."""
        if self.ana.can_prove(binop("le", extent, shape)):
            return True
        if isinstance(shape, IntImm):
            return False
        scale = 1
        for f in _factors(shape):
            if isinstance(f, IntImm):
                scale *= f.value
        return self.ana.can_prove(binop("le", extent, imm(shape.dtype, abs(scale))))


def _signless(s: IntervalSet) -> IntervalSet:
    """``s``, or the whole line when a bound of it holds a ``T.Select``: the dimension is
    then kept whole. Interval arithmetic makes one for ``x // n`` and ``x % n`` with ``n``
    of unknown sign; a fused thread index split by symbolic extents (``(b * 1024 + t) //
    (n * n)``) covers the whole dimension anyway, as TVM's iterator map finds, and the
    Select forms cost more to simplify than the rest of the pass. (A Select of the index
    itself, kept as a point, also widens the region to the dimension: never less than
    what is accessed.)"""
    for bound in (s.min, s.max):
        if isinstance(bound, PrimExpr) and any(isinstance(n, Select) for n in walk(bound)):
            return EVERYTHING
    return s


def _factors(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, BinOp) and e.op == "mul":
        return _factors(e.a) + _factors(e.b)
    return [e]


def _pure(e: PrimExpr) -> bool:
    """No memory read or side effect in ``e`` (an extent must not depend on data)."""
    for n in walk(e):
        if isinstance(n, BufferLoad):
            return False
        if isinstance(n, Call):
            intr = INTRINSICS.get(n.op) if isinstance(n.op, str) else None
            if intr is None or not intr.pure:
                return False
    return True
