"""The analyses of LoopPartition (TVM's ``CandidateSelector`` and ``PartitionFinder``):
which loops are worth partitioning, and for the variable of one, the interval in which
each condition of its body is provably true, or provably false."""
from __future__ import annotations

from tirc.ir.attrs import PRAGMA_LOOP_PARTITION_HINT, THREAD_EXTENT
from tirc.ir.dtype import BOOL
from tirc.ir.expr import BinOp, Call, IntImm, PrimExpr, Var
from tirc.ir.stmt import AttrStmt, For, IterVar, SeqStmt, Stmt
from tirc.ir.visitor import Visitor, walk
from tirc.passes.analysis.deduce_bound import NOTHING, ISet, deduce_bound, fold, intersect_all, inverse

_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


def _is_const(e: PrimExpr) -> bool:
    return isinstance(e, IntImm)


def thread_rank(tag: str) -> int:
    return 0 if tag.startswith("blockIdx.") else 1


class Selector(Visitor):
    """Loops (and launch scopes) worth partitioning: TVM's ``CandidateSelector``."""

    def __init__(self, partition_const_loop: bool):
        self.const_too = partition_const_loop
        self.candidates: dict[int, Stmt] = {}  # by id; holding the statement keeps ids unique
        self.hinted: set[int] = set()  # ids of loop variables under a partition hint
        self.record: dict[int, bool] = {}
        self.in_likely = False
        self.no_split = False

    def _scope(self, s: Stmt, var: Var, selectable: bool) -> None:
        if id(var) in self.hinted:
            self.candidates[id(s)] = s
            self.generic_visit(s)
        elif selectable:
            self.record[id(var)] = False
            self.generic_visit(s)
            if self.record.pop(id(var)) and not self.no_split:
                self.candidates[id(s)] = s
        else:
            self.generic_visit(s)

    def visit_For(self, s: For) -> None:
        self._scope(s, s.loop_var, not (_is_const(s.min) and _is_const(s.extent))
                    or self.const_too)

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == THREAD_EXTENT and isinstance(s.node, IterVar):
            self._scope(s, s.node.var, thread_rank(s.node.thread_tag) == 0
                        and (not _is_const(s.value) or self.const_too))
            return
        if s.key == PRAGMA_LOOP_PARTITION_HINT and isinstance(s.value, IntImm) and s.value.value:
            var = s.node.var if isinstance(s.node, IterVar) else s.node
            if isinstance(var, Var):
                self.hinted.add(id(var))
        yield from self.descend(s)

    def visit_SeqStmt(self, s: SeqStmt):
        start = self.no_split
        for x in s.stmts:
            before, self.no_split = self.no_split, start
            yield x
            self.no_split = self.no_split or before

    def visit_Call(self, e: Call) -> None:
        if e.op == "likely":
            self.in_likely = True
            self.generic_visit(e)
            self.in_likely = False
        elif e.op == "tvm_thread_allreduce":
            self.no_split = True
        else:
            self.generic_visit(e)

    def visit_Var(self, v: Var) -> None:
        if self.in_likely and id(v) in self.record:
            self.record[id(v)] = True


class Finder(Visitor):
    """For the variable being partitioned, the interval in which each condition is
    provably true, or provably false (TVM's ``PartitionFinder``)."""

    def __init__(self, var: Var, hint: dict[int, ISet], relax: dict[int, ISet], hinted: bool):
        self.var = var
        self.hint, self.relax = dict(hint), dict(relax)
        self.outer = set(hint) | set(relax)
        self.hinted = hinted
        # (cond, value) -> interval, in the order found
        self.partitions: dict[tuple[int, bool], tuple[PrimExpr, ISet]] = {}

    def _uses_outer(self, e: PrimExpr) -> bool:
        return any(isinstance(n, Var) and id(n) in self.outer for n in walk(e))

    def _enter(self, var: Var, s: ISet, body_visit) -> None:
        self.hint[id(var)] = s
        self.relax[id(var)] = s
        body_visit()
        del self.hint[id(var)], self.relax[id(var)]

    def visit_For(self, s: For) -> None:
        if self._uses_outer(s.min) or self._uses_outer(s.extent):
            return
        one = IntImm(s.extent.dtype, 1)
        dom = ISet(s.min, fold("sub", fold("add", s.min, s.extent), one))
        self._enter(s.loop_var, dom, lambda: self.generic_visit(s))

    def visit_AttrStmt(self, s: AttrStmt) -> None:
        if s.key == THREAD_EXTENT and isinstance(s.node, IterVar):
            zero = IntImm(s.value.dtype, 0)
            if isinstance(s.value, IntImm) and s.value.value == 1:
                dom = ISet.point(zero)
            else:
                dom = ISet(zero, fold("sub", s.value, IntImm(s.value.dtype, 1)))
            self._enter(s.node.var, dom, lambda: self.generic_visit(s))
        else:
            self.generic_visit(s)

    def visit_Call(self, e: Call) -> None:
        if e.op == "likely":
            self._deduce(e.args[0])
        elif e.op != "ignore_loop_partition":
            self.generic_visit(e)

    def visit_BinOp(self, e: BinOp) -> None:
        if self.hinted and e.op in _COMPARE:
            self._deduce(e)
        else:
            self.generic_visit(e)

    def _deduce(self, cond: PrimExpr) -> None:
        if not any(n is self.var for n in walk(cond)):
            return
        found = deduce_bound(self.var, cond, self.hint, self.relax)
        if found is not None:
            self.partitions[(id(cond), True)] = (cond, found)
        elif isinstance(cond, BinOp) and cond.op == "eq":
            # no bound for ==: try a >= b and a <= b
            ge = deduce_bound(self.var, BinOp("ge", cond.a, cond.b, BOOL), self.hint, self.relax)
            le = deduce_bound(self.var, BinOp("le", cond.a, cond.b, BOOL), self.hint, self.relax)
            both = intersect_all([ge or NOTHING, le or NOTHING])
            if not both.is_empty:
                self.partitions[(id(cond), True)] = (cond, both)
                return
        inv = inverse(cond)
        if inv is not None:
            found = deduce_bound(self.var, inv, self.hint, self.relax)
            if found is not None:
                self.partitions[(id(cond), False)] = (cond, found)
