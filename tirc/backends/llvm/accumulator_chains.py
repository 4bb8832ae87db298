"""Which float multiply-adds must stay two operations: the adds of a serial loop's
accumulator chain when the loop has too few chains to hide an FMA's latency.

A CPU target with FMA lets ``a * b + c`` contract to one fused multiply-add (the
``contract`` flag, as TVM's CPU code allows). That helps where the loop's speed is bound
by how many operations issue per cycle (a register tile: many independent
accumulators). It hurts where the loop is bound by the latency of one accumulator: in
``acc = acc + A[i, k] * B[k, j]`` each iteration waits for the previous one's result,
and the chain then runs at an FMA's latency per step (4 cycles on current x86 cores)
instead of an add's (3), the multiply being off the chain. The rule, decided on the TIR:

- an *accumulation* is a store ``X[idx] = X[idx] + a * b`` (either operand order, float)
  directly in the body of a serial loop (not under a nested loop), with ``idx`` not
  depending on the loop variable: the same location is read and written each iteration;
- a loop with fewer than :data:`THROUGHPUT_CHAINS` accumulations is latency-bound on
  them, and their adds are not contracted; with more, every add contracts as before.

Nothing changes the order or the rounding of the sum: an uncontracted chain rounds the
product, as a target without FMA does. The result is the set of ``id()`` of the adds
not to contract, which the LLVM lowering reads (``llvm_expr.float_arith``).
"""
from __future__ import annotations

from tirc.ir.expr import BinOp, BufferLoad, PrimExpr
from tirc.ir.equal import structural_equal
from tirc.ir.stmt import BufferStore, For, SeqStmt, Stmt, While
from tirc.ir.visitor import walk

# Independent accumulator chains from which a loop is taken as throughput-bound: an FMA's
# latency (4 cycles) times the FMA units (2) of current x86 and AArch64 cores, halved
# since each chain also has loads to wait for.
THROUGHPUT_CHAINS = 4


def latency_bound_adds(body: Stmt) -> set[int]:
    """The ``id()`` of the float adds of ``body`` that must not contract (module docstring)."""
    out: set[int] = set()
    for loop in _statements(body, into_loops=True):
        if isinstance(loop, For) and loop.kind == "serial":
            adds = [a for s in _statements(loop.body, into_loops=False)
                    if isinstance(s, BufferStore)
                    and (a := _accumulation(s, loop.loop_var)) is not None]
            if 0 < len(adds) < THROUGHPUT_CHAINS:
                out.update(id(a) for a in adds)
    return out


def _statements(s: Stmt, into_loops: bool):
    """The statements under ``s`` (``s`` included; nested loops' bodies only when
    ``into_loops``), through sequences, lets, ifs, attributes and declarations."""
    todo = [s]
    while todo:
        s = todo.pop()
        yield s
        if isinstance(s, SeqStmt):
            todo.extend(reversed(s.stmts))
        elif into_loops or not isinstance(s, (For, While)):
            for name in ("body", "then_case", "else_case"):
                child = getattr(s, name, None)
                if isinstance(child, Stmt):
                    todo.append(child)


def _accumulation(s: BufferStore, loop_var) -> BinOp | None:
    """The add of ``X[idx] = X[idx] + a * b`` with ``idx`` invariant in ``loop_var``."""
    v = s.value
    if not (isinstance(v, BinOp) and v.op == "add" and v.dtype.is_float):
        return None
    for acc, other in ((v.a, v.b), (v.b, v.a)):
        if (isinstance(acc, BufferLoad) and acc.buffer is s.buffer
                and _is_float_mul(other) and len(acc.indices) == len(s.indices)
                and all(structural_equal(x, y) for x, y in zip(acc.indices, s.indices))
                and not any(_uses(i, loop_var) for i in s.indices)):
            return v
    return None


def _is_float_mul(e: PrimExpr) -> bool:
    return isinstance(e, BinOp) and e.op == "mul" and e.dtype.is_float


def _uses(e: PrimExpr, var) -> bool:
    return any(n is var for n in walk(e))
