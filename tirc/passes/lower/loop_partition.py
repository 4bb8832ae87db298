"""LoopPartition (TVM's ``s_tir.transform.LoopPartition``): split a loop's range so that
the conditions in its body that depend on the loop variable are decided in the middle
part, the steady state, which then runs without them; the parts before and after keep
the conditions and are partitioned again, recursively.

    for i in range(11):                          for i in range(10):
        for j in range(160):                         for j in range(160):
            if T.likely(i * 160 + j < 1600):   ->        if T.bool(True): A[...] = ...
                A[...] = ...                         for j in range(160):
                                                         if T.bool(False): A[...] = ...

Which loops (TVM 0.27's rules and its configuration ``s_tir.LoopPartition``):

* a loop (or a ``blockIdx`` launch scope) whose range is not constant, and whose body has
  a ``T.likely(...)`` condition on its variable; with ``partition_const_loop`` also loops
  of constant range (off by default, as in TVM's default pipeline, so a plain CPU kernel
  is left as it is);
* a loop under ``T.attr(loop_var, "pragma_loop_partition_hint", 1)`` (scheduled loops
  annotated ``pragma_loop_partition_hint``): then every comparison on its variable
  counts, not only ``T.likely`` ones, except those under ``T.ignore_loop_partition``;
* never a loop whose body has ``T.tvm_thread_allreduce``.

The ranges come from :func:`tirc.passes.analysis.deduce_bound.deduce_bound` (symbolic bounds;
what it cannot solve is left alone). A decided condition is replaced by ``T.bool(True)``
or ``T.bool(False)`` (Simplify later drops the dead branch); a part of one iteration is
inlined unless ``no_unroll_loop_with_extent_one`` or the loop has annotations; with
``unroll_loop_with_partition_hint_no_interval``, a hinted loop without any decided
range is unrolled. Afterwards ``T.likely`` and ``T.ignore_loop_partition`` are removed
(their argument stays) and so are the partition hints.

A ``blockIdx`` scope is not copied: its steady state becomes an ``if`` inside the
innermost launch scope, as TVM does (tirc replaces the conditions by the value they have
there; TVM always uses ``True``, wrong when they are false in the steady state).

Preconditions: FlattenBuffer ran (the loops are the final ones). Guarantees: every
iteration of every loop runs the same statements in the same order as before; every
copy of a loop body defines its own variables and buffers; no ``T.likely``,
``T.ignore_loop_partition`` or ``pragma_loop_partition_hint`` remains.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.attrs import PRAGMA_LOOP_PARTITION_HINT, THREAD_EXTENT
from tirc.ir.dtype import BOOL
from tirc.ir.expr import Call, IntImm, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.renew import substitute
from tirc.ir.ssa import convert_ssa
from tirc.ir.stmt import AttrStmt, For, IfThenElse, IterVar, SeqStmt, Stmt, seq
from tirc.ir.visitor import Mutator, walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.deduce_bound import (EVERYTHING, NOTHING, ISet, fold, intersect, intersect_all,
                                      simplify)
from tirc.passes.lower.loop_partition_analysis import Finder, Selector, thread_rank
from tirc.records import record


@record(frozen=True)
class LoopPartitionConfig:
    """TVM's pass configuration ``s_tir.LoopPartition``, with its defaults."""

    partition_const_loop: bool = False
    no_unroll_loop_with_extent_one: bool = False
    unroll_loop_with_partition_hint_no_interval: bool = False


def loop_partition(mod: IRModule, ctx=None, **options: bool) -> IRModule:
    """Partition the loops of every function; ``options`` are the fields of
    :class:`LoopPartitionConfig` (TVM's ``s_tir.LoopPartition`` configuration)."""
    config = LoopPartitionConfig(**options)

    def run(body: Stmt) -> Stmt:
        if not _has_work(body):
            return body  # no T.likely, hint or T.ignore_loop_partition: nothing to do
        body = _Partitioner(config).partition(body)
        return _RemoveHints().visit(body)
    return mod.map_bodies(run)


def _has_work(body: Stmt) -> bool:
    """Whether ``body`` has what can make a candidate or must be removed."""
    for n in walk(body):
        if isinstance(n, Call) and n.op in ("likely", "ignore_loop_partition"):
            return True
        if isinstance(n, AttrStmt) and n.key == PRAGMA_LOOP_PARTITION_HINT:
            return True
    return False


class _Eliminate(Mutator):
    """The conditions ``conds`` (by identity) replaced by ``value``."""

    def __init__(self, conds: set[int], value: bool):
        self.conds, self.value = conds, value

    def visit(self, node):
        if isinstance(node, PrimExpr) and id(node) in self.conds:
            return IntImm(BOOL, int(self.value))
        return super().visit(node)


class _ThreadInserter(Mutator):
    """Inside the innermost launch scope: ``if cond: <body, conditions decided>
    else: <body>`` (TVM's ``ThreadPartitionInserter``)."""

    def __init__(self, conds: set[int], value: bool, cond: PrimExpr):
        self.conds, self.value, self.cond = conds, value, cond
        self.innermost = False

    expressions = False

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key != THREAD_EXTENT:
            return (yield from self.descend(s))
        self.innermost = True
        out = (yield from self.descend(s))
        if self.innermost:
            decided = _Eliminate(self.conds, self.value).visit(s.body)
            out = replace(s, body=IfThenElse(self.cond, decided, s.body))
        self.innermost = False
        return out


class _Partitioner(Mutator):
    def __init__(self, config: LoopPartitionConfig):
        self.config = config
        self.selector = Selector(config.partition_const_loop)
        self.hint: dict[int, ISet] = {}
        self.relax: dict[int, ISet] = {}
        self.arith = Analyzer()

    def partition(self, s: Stmt) -> Stmt:
        self.selector.visit(s)
        return self.visit(s)

    expressions = False

    def visit_SeqStmt(self, s: SeqStmt):
        new = (yield from self.descend(s))
        if new is not s and any(isinstance(x, SeqStmt) for x in new.stmts):
            return seq(new.stmts, s.span)  # a partitioned loop is spliced in
        return new

    def visit_For(self, s: For):
        self.arith.values.pop(id(s.loop_var), None)  # a copy of the loop may rebind it
        self.arith.bind_range(s.loop_var, s.min, s.extent)
        one = IntImm(s.extent.dtype, 1)
        hi = fold("sub", fold("add", s.min, s.extent), one)
        if id(s) in self.selector.candidates and s.kind != "thread_binding":
            out = self._try(s, s.loop_var, s.min, hi, s.body, False)
            if out is not None:
                return out
        self.hint[id(s.loop_var)] = ISet(s.min, hi)
        out = (yield from self.descend(s))
        self.hint.pop(id(s.loop_var), None)
        return out

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key != THREAD_EXTENT or not isinstance(s.node, IterVar):
            return (yield from self.descend(s))
        var = s.node.var
        hi = fold("sub", s.value, IntImm(s.value.dtype, 1))
        if id(s) in self.selector.candidates:
            out = self._try(s, var, IntImm(s.value.dtype, 0), hi, s.body, True)
            if out is not None:
                return out
        table = self.relax if thread_rank(s.node.thread_tag) == 1 else self.hint
        table[id(var)] = ISet(IntImm(var.dtype, 0), hi)
        out = (yield from self.descend(s))
        table.pop(id(var), None)
        return out

    # -- TVM's LoopPartitioner::TryPartition ------------------------------------------------

    def _interval(self, partitions, for_set: ISet, value: bool, hinted: bool):
        """An interval in which all conditions that can take ``value`` in the loop's range
        provably do, and those conditions."""
        sets, conds = [], []
        for (_, v), (cond, s) in reversed(partitions.items()):
            if v == value and not intersect(self.arith, s, for_set).is_empty:
                sets.append(s)
                conds.append(cond)
        found = intersect_all(sets) if sets else NOTHING
        if found.is_empty and hinted:
            # the longest prefix of the conditions whose intervals still meet
            acc, conds = EVERYTHING, []
            for (_, v), (cond, s) in reversed(partitions.items()):
                if v != value or intersect(self.arith, s, for_set).is_empty:
                    continue
                acc = intersect(self.arith, acc, s)
                if acc.is_empty:
                    break
                conds.append(cond)
                found = ISet(simplify(self.arith, acc.min), simplify(self.arith, acc.max))
        return found, conds

    def _try(self, s: Stmt, var: Var, lo: PrimExpr, hi: PrimExpr, body: Stmt, thread: bool):
        hinted = id(var) in self.selector.hinted
        self.hint[id(var)] = ISet(lo, hi)
        finder = Finder(var, self.hint, self.relax, hinted)
        finder.visit(body)
        del self.hint[id(var)]
        if not finder.partitions:
            return None
        for_set = ISet(lo, hi)
        middle, conds, value = None, [], None
        for candidate in (True, False):
            middle, conds = self._interval(finder.partitions, for_set, candidate, hinted)
            if not middle.is_empty:
                value = candidate
                break
        if value is None:
            if all(self._point_outside(part, for_set) for _, part in finder.partitions.values()):
                return None
            if (hinted and not thread and self.config.unroll_loop_with_partition_hint_no_interval
                    and self.arith.can_prove(fold("gt", fold("sub", hi, lo), IntImm(lo.dtype, 0)))):
                extent = fold("add", fold("sub", hi, lo), IntImm(lo.dtype, 1))
                return For(var, lo, extent, "unrolled", self.partition(body), span=s.span)
            return None
        ids = {id(c) for c in conds}
        a = self.arith
        pre = post = None
        pre_again = post_again = True
        # [lo, begin) before, [begin, end) the middle, [end, hi] after. Where TVM cannot
        # prove an end in order it clamps it; tirc also clamps begin <= hi + 1 and
        # end >= begin, so the parts never overlap whatever the prover manages.
        end_of_range = fold("add", hi, IntImm(hi.dtype, 1))
        if middle.has_lower:
            begin = a.simplify(middle.min)
            if not a.can_prove(fold("eq", begin, lo)):
                extent = a.simplify(fold("sub", begin, lo))
                if not a.can_prove(fold("gt", extent, IntImm(extent.dtype, 0))):
                    begin, pre_again = fold("max", begin, lo), False
                if not a.can_prove(fold("le", begin, end_of_range)):
                    begin, pre_again = fold("min", begin, end_of_range), False
                if not a.can_prove(fold("le", extent, IntImm(extent.dtype, 0))) and not thread:
                    shifted = substitute(body, {id(var): fold("add", var, lo)})
                    pre = self._make_for(s, fold("sub", begin, lo), shifted)
        else:
            begin = lo
        if middle.has_upper:
            end = a.simplify(fold("add", middle.max, IntImm(middle.max.dtype, 1)))
            if not a.can_prove(fold("eq", middle.max, hi)):
                extent = a.simplify(fold("add", fold("sub", hi, end), IntImm(hi.dtype, 1)))
                if not a.can_prove(fold("gt", extent, IntImm(extent.dtype, 0))):
                    end, post_again = fold("min", end, end_of_range), False
                if not a.can_prove(fold("ge", end, begin)):
                    end, post_again = fold("max", end, begin), False
                    extent = fold("sub", end_of_range, end)
                if not a.can_prove(fold("le", extent, IntImm(extent.dtype, 0))) and not thread:
                    shifted = substitute(body, {id(var): fold("add", var, end)})
                    post = self._make_for(s, extent, shifted)
        else:
            end = end_of_range
        if not a.can_prove(fold("ge", end, begin)):
            end = fold("max", end, begin)  # a middle without an upper bound
        if thread:
            cond = IntImm(BOOL, 1)
            if not a.can_prove(fold("eq", begin, lo)):
                cond = fold("and", cond, fold("ge", var, begin))
            if not a.can_prove(fold("eq", end, end_of_range)):
                cond = fold("and", cond, fold("lt", var, end))
            return convert_ssa(_ThreadInserter(ids, value, cond).visit(s))
        mid = None
        if not a.can_prove(fold("ge", begin, end)):
            decided = _Eliminate(ids, value).visit(body)
            shifted = substitute(decided, {id(var): fold("add", var, begin)})
            mid = self.partition(self._make_for(s, fold("sub", end, begin), shifted))
            if pre is not None and pre_again:
                pre = self.partition(pre)
            if post is not None and post_again:
                post = self.partition(post)
        return convert_ssa(seq([x for x in (pre, mid, post) if x is not None], s.span))

    def _point_outside(self, part: ISet, for_set: ISet) -> bool:
        if not part.is_point:
            return False
        inside = (self.arith.can_prove(fold("ge", part.min, for_set.min))
                  and self.arith.can_prove(fold("le", part.min, for_set.max)))
        return not inside

    def _make_for(self, s: For, extent: PrimExpr, body: Stmt) -> Stmt:
        if (self.arith.can_prove(fold("eq", extent, IntImm(extent.dtype, 1)))
                and not self.config.no_unroll_loop_with_extent_one and not s.annotations):
            return substitute(body, {id(s.loop_var): IntImm(s.loop_var.dtype, 0)})
        return replace(s, min=IntImm(s.min.dtype, 0), extent=extent, body=body)


class _RemoveHints(Mutator):
    def visit_Call(self, e: Call) -> PrimExpr:
        if e.op in ("likely", "ignore_loop_partition") and len(e.args) == 1:
            return self.visit(e.args[0])
        return self.generic_visit(e)

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == PRAGMA_LOOP_PARTITION_HINT:
            return (yield s.body)
        return (yield from self.descend(s))
