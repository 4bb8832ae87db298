"""Index analysis for ThreadSync: which values differ between the threads of a kernel,
and when two shared-memory accesses provably never touch the same element from two
different threads (so no barrier has to order them).

An index is split into a linear form over the kernel's *varying* variables (its
``threadIdx`` axes and the loop variables inside it, with ``let``s that depend on them
substituted) plus a constant and the remaining thread-invariant terms. Two accesses are
disjoint across threads when their forms have the same coefficients and invariant terms,
the form is injective on (thread, iteration) tuples (every thread axis appears, and each
coefficient exceeds the spread of the smaller ones: a mixed-radix numbering), and their
constants differ by less than the smallest step that numbering can take. Identical
per-thread indices (``s[tx]`` written and read) are the case of equal constants. With
different constants and known extents the test is exact: the accesses are disjoint when
no steps along the axes (each less than its extent) add up to the difference, so the
unrolled tile loads ``s[tx * 64 + l * 16 + ty]``, ``l = 0..3``, need no barrier between
them. ``v // k`` and ``v % k`` count as two axes (extents ``ceil(E / k)`` and ``k``)
which together number ``v``.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

from tirc.ir.attrs import THREAD_EXTENT
from tirc.ir.expr import BinOp, Broadcast, BufferLoad, Call, IntImm, PrimExpr, Ramp, Var
from tirc.ir.ops import INTRINSICS
from tirc.ir.stmt import AttrStmt, For, IterVar, Stmt
from tirc.ir.visitor import walk, walk_statements
from tirc.records import record

LANES = -1  # the key of a vector index's lane axis in a form's coefficients


@record(frozen=True)
class _Form:
    coeffs: tuple[tuple[int, int], ...]  # (id of a varying variable, coefficient), sorted
    const: int
    rest: tuple[tuple[int, PrimExpr], ...]  # (scale, thread-invariant term)


def _const(e) -> int | None:
    return e.value if isinstance(e, IntImm) else None


class ThreadIndices:
    """What varies inside one kernel (rooted at its outermost thread scope)."""

    def __init__(self, root: Stmt):
        self.ranges: dict[int, int | None] = {}  # varying variables -> extent, if known
        self.threads: list[int] = []
        self.lets: dict[int, PrimExpr] = {}  # varying lets, substituted by their values
        self.divergent: set[int] = set()  # variables whose value differs between threads
        self.derived: dict[tuple[str, int, int], int] = {}  # (op, var, k) -> axis key (< -1)
        # Forms are kept (group_of) while no variable they read is bound again: binding one
        # (a variable used before its binding, or bound twice) starts a new generation.
        self.generation = 0
        self.read: set[int] = set()  # variables the kept forms read
        self._kept: dict[tuple, tuple] = {}  # indices -> (generation, group, const)
        for n in walk_statements(root):
            var = extent = None
            if isinstance(n, AttrStmt) and n.key == THREAD_EXTENT and isinstance(n.node, IterVar):
                var, extent, tag = n.node.var, n.value, n.node.thread_tag
            elif isinstance(n, For) and n.kind == "thread_binding":
                var, extent, tag = n.loop_var, n.extent, n.thread_tag or ""
            if var is not None and tag.startswith("threadIdx"):
                self.ranges[id(var)] = _const(extent)
                self.threads.append(id(var))
                self.divergent.add(id(var))

    # -- scopes the planner enters ------------------------------------------------------
    def _rebinding(self, var: Var) -> None:
        if id(var) in self.read or id(var) in self.ranges or id(var) in self.lets:
            self.generation += 1

    def bind_let(self, var: Var, value: PrimExpr) -> None:
        self._rebinding(var)
        if self.varies(value):
            self.lets[id(var)] = value
        if self.is_divergent(value):
            self.divergent.add(id(var))

    def bind_loop(self, s: For) -> None:
        self._rebinding(s.loop_var)
        self.ranges[id(s.loop_var)] = _const(s.extent)
        if self.is_divergent(s.min, s.extent, s.step):
            self.divergent.add(id(s.loop_var))

    # -- dependence -------------------------------------------------------------------------
    def _depends(self, e: PrimExpr, ids, loads: str, more=()) -> bool:
        """Whether ``e`` mentions a variable of ``ids`` (or of ``more``), a load that counts
        (``"all"``: a loaded value may change over time; ``"local"``: per-thread memory)
        or an impure call."""
        for n in walk(e):
            if isinstance(n, Var) and (id(n) in ids or id(n) in more):
                return True
            if isinstance(n, BufferLoad) and (loads == "all" or n.buffer.scope in ("local", "warp")):
                return True
            if isinstance(n, Call):
                intr = INTRINSICS.get(n.op) if isinstance(n.op, str) else None
                if intr is None or not intr.pure:
                    return True
        return False

    def is_divergent(self, *exprs) -> bool:
        """Whether some thread may see a different value (a barrier under it deadlocks)."""
        return any(self._depends(e, self.divergent, "local") for e in exprs if e is not None)

    def varies(self, e: PrimExpr) -> bool:
        return self._depends(e, self.ranges, "all", self.lets)

    # -- linear forms -------------------------------------------------------------------------
    def _linear(self, e: PrimExpr, scale: int, coeffs: dict[int, int], acc: list) -> bool:
        """Add ``scale * e`` to ``coeffs`` / ``acc = [const, rest]``; False if not linear."""
        if isinstance(e, Var) and id(e) in self.lets:
            return self._linear(self.lets[id(e)], scale, coeffs, acc)
        if isinstance(e, Var) and id(e) in self.ranges:
            coeffs[id(e)] = coeffs.get(id(e), 0) + scale
            return True
        if isinstance(e, IntImm):
            acc[0] += scale * e.value
            return True
        if isinstance(e, BinOp) and e.op in ("add", "sub"):
            return (self._linear(e.a, scale, coeffs, acc)
                    and self._linear(e.b, scale if e.op == "add" else -scale, coeffs, acc))
        if isinstance(e, BinOp) and e.op == "mul":
            for c, x in ((e.a, e.b), (e.b, e.a)):
                if isinstance(c, IntImm):
                    return self._linear(x, scale * c.value, coeffs, acc)
        derived = self._derived(e)
        if derived is not None:
            coeffs[derived] = coeffs.get(derived, 0) + scale
            return True
        if self.varies(e):
            return False
        acc[1].append((scale, e))
        return True

    def _derived(self, e: PrimExpr) -> int | None:
        """``v // k`` or ``v % k`` (floor division of a varying variable of known extent
        by a positive constant) as an axis of its own; the two together number ``v``."""
        if not (isinstance(e, BinOp) and e.op in ("floordiv", "floormod")
                and isinstance(e.a, Var) and id(e.a) in self.ranges and isinstance(e.b, IntImm)):
            return None
        extent, k = self.ranges[id(e.a)], e.b.value
        if extent is None or k <= 0:
            return None
        key = (e.op, id(e.a), k)
        if key not in self.derived:
            self.derived[key] = -2 - len(self.derived)
            self.ranges[self.derived[key]] = -(-extent // k) if e.op == "floordiv" else min(k, extent)
        return self.derived[key]

    def _covers(self, coeffs: dict, t: int) -> bool:
        """Whether the form numbers thread axis ``t`` (itself, or its quotient and remainder)."""
        if coeffs.get(t, 0) != 0:
            return True
        return any(op == "floordiv" and v == t and coeffs.get(d, 0) != 0
                   and coeffs.get(self.derived.get(("floormod", t, k)), 0) != 0
                   for (op, v, k), d in self.derived.items())

    def form(self, indices: tuple[PrimExpr, ...] | None) -> tuple[_Form, dict[int, int]] | None:
        """The linear form of a flat index, with the lane count of a vector index's lanes."""
        if indices is None or len(indices) != 1:
            return None
        e, coeffs, acc = indices[0], {}, [0, []]
        if isinstance(e, Ramp):
            if not isinstance(e.stride, IntImm):
                return None
            if e.stride.value != 0 and e.lanes > 1:
                coeffs[LANES] = e.stride.value
            e = e.base
        elif isinstance(e, Broadcast):
            e = e.value
        if not self._linear(e, 1, coeffs, acc):
            return None
        lanes = {LANES: indices[0].lanes} if LANES in coeffs else {}
        key = tuple(sorted((k, c) for k, c in coeffs.items() if c != 0))
        return _Form(key, acc[0], tuple(acc[1])), lanes

    def group_of(self, indices: tuple[PrimExpr, ...] | None) -> tuple[tuple | None, int]:
        """``indices``' form as ``(group, const)``: two accesses are disjoint (:meth:`disjoint`)
        only in the same group (same coefficients, invariant terms and lanes), by their
        constants' distance (:meth:`collides`); group None: no form, disjoint from nothing.
        Kept per index while the variables it reads keep their bindings."""
        kept = self._kept.get(indices) if indices is not None else None
        if kept is not None and kept[0] == self.generation:
            return kept[1], kept[2]
        found = self.form(indices)
        if found is None:
            out = (None, 0)
        else:
            form, lanes = found
            out = ((form.coeffs, form.rest, tuple(lanes.items())), form.const)
        if indices is not None:
            self.read.update(id(n) for e in indices for n in walk(e) if isinstance(n, Var))
            self._kept[indices] = (self.generation, *out)
        return out

    def collides(self, group: tuple, const: int, consts: list[int]) -> bool:
        """Whether an access of ``group`` (:meth:`group_of`) at ``const`` is not disjoint
        from one at some constant of ``consts`` (sorted, not empty), as :meth:`disjoint`
        decides for each: ``d`` apart, disjoint when ``|d|`` is less than the gap (``d ==
        0`` or an unknown extent), else when ``d`` is not reachable along the axes, which
        only a distance within their spread can be (only those constants are tried)."""
        coeffs, rest, lanes = group
        lanes = dict(lanes)
        axes = [(abs(c), lanes.get(k, self.ranges.get(k))) for k, c in coeffs]
        gap = self._gap(_Form(coeffs, 0, rest), lanes)
        if any(extent is None for _, extent in axes):
            return const - consts[0] >= gap or consts[-1] - const >= gap
        axes.sort(reverse=True)
        if all(extent >= 1 for _, extent in axes):
            spread = sum(coef * (extent - 1) for coef, extent in axes)
            near = range(bisect_left(consts, const - spread), bisect_right(consts, const + spread))
        else:  # a loop without iterations: every constant, as disjoint tries them
            near = range(len(consts))
        for i in near:
            d = const - consts[i]
            if (gap == 0) if d == 0 else _reachable(d, axes):
                return True
        return False

    def _gap(self, form: _Form, lanes: dict[int, int]) -> int:
        """The smallest nonzero distance between two elements the form names for distinct
        (thread, iteration, lane) tuples; 0 when two such tuples may share an element."""
        coeffs = dict(form.coeffs)
        if any(not self._covers(coeffs, t) and self.ranges[t] != 1 for t in self.threads):
            return 0  # threads that differ only along a missing axis share elements
        axes = sorted((abs(c), lanes.get(k, self.ranges.get(k))) for k, c in coeffs.items())
        spread, gap = 0, None
        for i, (coef, extent) in enumerate(axes):
            if coef <= spread or (extent is None and i != len(axes) - 1):
                return 0
            gap = coef - spread if gap is None else min(gap, coef - spread)
            spread += coef * ((extent or 1) - 1)
        return gap if gap is not None else 1

    def disjoint(self, a: tuple[PrimExpr, ...] | None, b: tuple[PrimExpr, ...] | None) -> bool:
        """Whether no element accessed through ``a`` by one thread (in one iteration) is
        accessed through ``b`` by another thread or in another iteration."""
        fa, fb = self.form(a), self.form(b)
        if fa is None or fb is None:
            return False
        (fa, lanes_a), (fb, lanes_b) = fa, fb
        if fa.coeffs != fb.coeffs or fa.rest != fb.rest or lanes_a != lanes_b:
            return False
        distance = fb.const - fa.const
        axes = [(abs(c), lanes_a.get(k, self.ranges.get(k))) for k, c in fa.coeffs]
        if distance == 0 or any(extent is None for _, extent in axes):
            return abs(distance) < self._gap(fa, lanes_a)
        return not _reachable(distance, sorted(axes, reverse=True))


def _reachable(distance: int, axes: list[tuple[int, int]], budget: int = 4096) -> bool:
    """Whether ``distance`` is ``sum(coef * d)`` for some steps ``|d| < extent`` along
    ``axes`` (``(coef, extent)``, largest coefficient first): whether two (thread,
    iteration, lane) tuples reach elements that far apart. Searched depth first, keeping
    only steps the smaller axes can still make up; True (a conflict) when the search
    would take more than ``budget`` steps."""
    spreads = [0] * (len(axes) + 1)  # spreads[i]: the largest sum axes[i:] can make
    for i in range(len(axes) - 1, -1, -1):
        coef, extent = axes[i]
        spreads[i] = spreads[i + 1] + coef * (extent - 1)
    steps = [0]

    def search(i: int, rest: int) -> bool:
        steps[0] += 1
        if steps[0] > budget:
            return True
        if i == len(axes):
            return rest == 0
        coef, extent = axes[i]
        low = max(-(extent - 1), -((spreads[i + 1] - rest) // coef))
        high = min(extent - 1, (rest + spreads[i + 1]) // coef)
        return any(search(i + 1, rest - coef * d) for d in range(low, high + 1))

    return search(0, distance)
