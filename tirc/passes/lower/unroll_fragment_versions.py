"""UnrollFragmentVersions: a loop whose WMMA fragment indices cycle with its variable is
unrolled by the period, so every fragment index is fixed in each copy (docs/pipeline.md).

InjectSoftwarePipeline gives a fragment buffer one version per stage in flight: the
pipelined loop loads fragment ``(i + 1) % 2 * 2 + k`` while its MMA reads ``i % 2 * 2 +
k``. The code generators hold a fragment buffer as a per-thread array of registers, which
stays in registers only where every index is a constant after LLVM's own unrolling of
small loops; an index that varies with an outer loop's variable keeps the whole array in
local memory (``ld.local``/``st.local``, a stack frame). TVM's CUDA source has the same
arrays, and nvcc unrolls such loops.

A ``serial`` loop with a constant ``min`` and extent whose body calls a WMMA builtin with
a fragment index that takes the loop variable modulo a constant (directly or through a
``let`` in the body) is rewritten, for the smallest period ``N`` (2, 3 or 4, not above the extent) with
which every such index of ``i = j * N + r`` simplifies, for each ``r``, to one without
``j`` (any ``N`` does where the extent is below ``2 * N``: the loop is unrolled whole): a loop over ``j`` (``extent // N`` iterations; none when that is 1) of the ``N``
copies of the body, then the ``extent % N`` remaining iterations, each with the loop
variable a constant. The fragment indices of the copies are simplified. A loop with no
such period stays as it is (still correct, its fragments in local memory).

Runs after LowerOpaqueBlock (loops) and before Simplify, which folds the copies' other
indices. Preconditions: FlattenBuffer. Guarantees: every variable and buffer is still
defined once (the copies' definitions are renewed).
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.expr import BinOp, Call, IntImm, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.renew import substitute
from tirc.ir.ssa import convert_ssa
from tirc.ir.stmt import For, LetStmt, SeqStmt, Stmt, seq
from tirc.ir.visitor import Mutator, walk
from tirc.ir import wmma_ops
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, imm
from tirc.passes.pass_context import PassContext

PERIODS = (2, 3, 4)
# the fragment index arguments of each builtin
_INDEX_ARGS = {wmma_ops.FILL: (4,), wmma_ops.LOAD: (4,), wmma_ops.STORE: (4,),
               wmma_ops.MMA: (1, 3, 5, 7), wmma_ops.BMMA: (1, 3, 5, 7)}


def _fragment_indices(body: Stmt) -> list[PrimExpr]:
    out = []
    for node in walk(body):
        if isinstance(node, Call) and node.op in _INDEX_ARGS:
            out += [node.args[i] for i in _INDEX_ARGS[node.op] if i < len(node.args)]
    return out


def _uses(e: PrimExpr, var_ids: set[int]) -> bool:
    return any(isinstance(n, Var) and id(n) in var_ids for n in walk(e))


def _inlined(e: PrimExpr, lets: dict[int, PrimExpr]) -> PrimExpr:
    """``e`` with the body's let-bound variables replaced by their values."""
    for _ in range(len(lets) + 1):
        if not _uses(e, set(lets)):
            return e
        e = substitute(e, lets)
    return e


def _cycles(e: PrimExpr, var: Var) -> bool:
    """Whether ``e`` takes the loop variable modulo something (``i % 2``): a version."""
    return any(isinstance(n, BinOp) and n.op == "floormod" and _uses(n.a, {id(var)})
               for n in walk(e))


def _period(loop: For) -> int | None:
    """The smallest period with which the loop's fragment indices stop depending on it."""
    lets = {id(n.var): n.value for n in walk(loop.body) if isinstance(n, LetStmt)}
    var = loop.loop_var
    indices = [_inlined(e, lets) for e in _fragment_indices(loop.body)]
    varying = [e for e in indices if _uses(e, {id(var)})]
    if not any(_cycles(e, var) for e in varying):
        return None
    extent, dt = loop.extent.value, var.dtype
    for n in PERIODS:
        if n > extent:
            break
        outer = Var(var.name + "_outer", dt)
        ana = Analyzer()
        ana.bind_range(outer, imm(dt, 0), imm(dt, max(extent // n, 1)))
        if all(not _uses(ana.simplify(substitute(e, {id(var): _value(loop, outer, n, r)})), {id(outer)})
               for e in varying for r in range(n)):
            return n
    return None


def _value(loop: For, outer: Var, n: int, r: int) -> PrimExpr:
    """The loop variable in copy ``r`` of outer iteration ``outer``."""
    dt = loop.loop_var.dtype
    return binop("add", binop("mul", outer, imm(dt, n)), imm(dt, loop.min.value + r))


class _SimplifyIndices(Mutator):
    """The fragment index arguments simplified, knowing the outer loop's range."""

    def __init__(self, ana: Analyzer):
        self.ana = ana

    def visit_Call(self, e: Call):
        e = self.generic_visit(e)
        positions = _INDEX_ARGS.get(e.op) if isinstance(e.op, str) else None
        if not positions:
            return e
        args = tuple(self.ana.simplify(a) if i in positions else a for i, a in enumerate(e.args))
        return e if all(a is b for a, b in zip(args, e.args)) else replace(e, args=args)


def _unroll(loop: For, n: int) -> Stmt:
    var, dt = loop.loop_var, loop.loop_var.dtype
    extent = loop.extent.value
    count, tail = divmod(extent, n)
    ana = Analyzer()
    parts = []
    if count == 1:
        copies = [substitute(loop.body, {id(var): imm(dt, loop.min.value + r)}) for r in range(n)]
        parts.append(_SimplifyIndices(ana).visit(seq(copies, loop.span)))
    elif count > 1:
        outer = Var(var.name + "_outer", dt, None, var.span)
        ana.bind_range(outer, imm(dt, 0), imm(dt, count))
        copies = [substitute(loop.body, {id(var): _value(loop, outer, n, r)}) for r in range(n)]
        body = _SimplifyIndices(ana).visit(seq(copies, loop.span))
        parts.append(For(outer, imm(dt, 0), imm(dt, count), loop.kind, body, span=loop.span))
    for r in range(tail):
        value = imm(dt, loop.min.value + count * n + r)
        parts.append(_SimplifyIndices(Analyzer()).visit(substitute(loop.body, {id(var): value})))
    return seq(parts, loop.span)


class _Loops(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_For(self, s: For):
        s = (yield from self.descend(s))
        if s.kind != "serial" or not isinstance(s.min, IntImm) or not isinstance(s.extent, IntImm):
            return s
        if s.step is not None and not (isinstance(s.step, IntImm) and s.step.value == 1):
            return s
        n = _period(s)
        return s if n is None else _unroll(s, n)

    def visit_SeqStmt(self, s: SeqStmt):
        new = (yield from self.descend(s))
        return s if new is s else seq(new.stmts, s.span)  # a loop may become a sequence


def unroll_fragment_versions(mod: IRModule, ctx: PassContext) -> IRModule:
    """Unroll the loops whose fragment indices cycle with their variable."""
    functions = {}
    for name, func in mod.functions.items():
        body = _Loops().visit(func.body)
        functions[name] = func if body is func.body else func.with_body(convert_ssa(body))
    if all(functions[n] is f for n, f in mod.functions.items()):
        return mod
    return replace(mod, functions=functions)
