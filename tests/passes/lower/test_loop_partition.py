"""LoopPartition (tirc/passes/lower/loop_partition.py). TVM's own cases are in
test_sblock_pass_pairs.py; here: the default configuration of TVM's pipeline, the
symbolic cases run on the IR evaluator against the loop as written (every part of a
partitioned loop within the loop's range, none overlapping), and the pipeline."""
from __future__ import annotations

import numpy as np
import pytest

from tirc.ir.equal import assert_structural_equal
from tirc.ir.expr import Call
from tirc.ir.stmt import AttrStmt, For
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.lower.loop_partition import loop_partition
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target
from tirc.testing.evaluate import run

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"


def _parse(text: str):
    return verify(parse(HEADER + text, "t.tir"))


def _loops(mod) -> list[For]:
    return [n for n in walk(mod["main"].body) if isinstance(n, For)]


def _calls(mod, op: str) -> int:
    return sum(1 for n in walk(mod["main"].body) if isinstance(n, Call) and n.op == op)


CONST = """
@T.prim_func
def main(A: T.Buffer((1600,), "float32")):
    for i, j in T.grid(11, 160):
        if T.likely(i * 160 + j < 1600):
            A[i * 160 + j] = T.float32(1.0)
"""


def test_constant_loops_are_left_alone_by_default():
    """TVM's default pipeline runs LoopPartition with partition_const_loop off: a loop of
    constant range is not split, only its T.likely is dropped."""
    out = loop_partition(_parse(CONST))
    expected = _parse(CONST.replace("T.likely(i * 160 + j < 1600)", "i * 160 + j < 1600"))
    assert_structural_equal(out, expected)


def test_constant_loops_split_when_configured():
    out = verify(loop_partition(_parse(CONST), partition_const_loop=True))
    assert [(l.loop_var.name, l.extent.value) for l in _loops(out)] == [
        ("i", 10), ("j", 160), ("j", 160)]
    assert _calls(out, "likely") == 0


# a symbolic loop: partitioned by default (TVM's CandidateSelector)
TAIL = """
@T.prim_func
def main(n: T.int32, A: T.Buffer((64,), "int32")):
    for i, j in T.grid((n + 3) // 4, 4):
        if T.likely(i * 4 + j < n):
            A[i * 4 + j] = A[i * 4 + j] + 1
        else:
            A[63] = A[63] + 1
"""


@pytest.mark.parametrize("n", [-9, -1, 0, 1, 3, 4, 13, 16, 60])
def test_symbolic_tail_runs_the_same_iterations(n):
    mod = _parse(TAIL)
    out = verify(loop_partition(mod))
    assert len(_loops(out)) == 4 and _calls(out, "likely") == 0
    a, b = np.zeros(64, "int32"), np.zeros(64, "int32")
    run(mod, "main", [n, a])
    run(out, "main", [n, b])
    assert (a == b).all()


# TVM's multi_loop case with stores: with m > n + 1 TVM's steady state has a negative
# extent and its tail starts below 0 (n=2, m=5: j = -2..1 where the loop has 0..1);
# tirc clamps the bounds it cannot order (found porting the pass: a weaker prover gave
# overlapping parts).
MULTI = """
@T.prim_func
def main(n: T.int32, m: T.int32, A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
    for i, j, k in T.grid(4, n, m):
        if T.likely(i * m + j + k < n):
            A[j] = A[j] + 1
        else:
            B[j] = B[j] + 1
"""


@pytest.mark.parametrize("n,m", [(2, 5), (6, 1), (6, 2), (0, 3), (5, 0), (10, 3), (3, 3)])
def test_parts_stay_in_range_and_apart(n, m):
    mod = _parse(MULTI)
    out = verify(loop_partition(mod))
    assert len(_loops(out)) > 3  # the j loop was partitioned
    want = [np.zeros(64, "int32") for _ in range(2)]
    got = [np.zeros(64, "int32") for _ in range(2)]
    run(mod, "main", [n, m, *want])
    run(out, "main", [n, m, *got])
    assert all((w == g).all() for w, g in zip(want, got))


HINTED = """
@T.prim_func
def main(A: T.Buffer((160,), "int32")):
    for i in T.serial(160, annotations={"pragma_loop_partition_hint": 1}):
        if i < 10:
            A[i] = 1
        else:
            if T.ignore_loop_partition(i < 150):
                A[i] = 2
            else:
                A[i] = 3
"""


def test_hinted_loop_through_the_pipeline():
    """A scheduled loop annotated pragma_loop_partition_hint is partitioned on every
    condition but the ignored one; the hint and T.ignore_loop_partition are gone."""
    mod = run_pipeline(parse(HEADER + HINTED, "t.tir"), PassContext(parse_target("llvm")),
                       stop_after="LoopPartition")
    loops = _loops(mod)
    assert [l.extent.value for l in loops] == [10, 150]
    assert not any(isinstance(n, AttrStmt) and n.key == "pragma_loop_partition_hint"
                   for n in walk(mod["main"].body))
    assert _calls(mod, "ignore_loop_partition") == 0
    a, b = np.zeros(160, "int32"), np.zeros(160, "int32")
    run(_parse(HINTED.replace("T.ignore_loop_partition(i < 150)", "i < 150")), "main", [a])
    run(mod, "main", [b])
    assert (a == b).all()


def test_each_part_defines_its_own_variables():
    out = verify(loop_partition(_parse(CONST), partition_const_loop=True))
    defined = [l.loop_var for l in _loops(out)]
    assert len({id(v) for v in defined}) == len(defined)


KERNEL = """
@T.prim_func
def main(A: T.Buffer((1000,), "float32"), n: T.int32):
    T.func_attr({"target": T.target({"arch": "sm_80", "kind": "cuda"})})
    bx = T.launch_thread("blockIdx.x", (n + 127) // 128)
    tx = T.launch_thread("threadIdx.x", 128)
    if T.likely(bx * 128 + tx < n):
        A[bx * 128 + tx] = A[bx * 128 + tx] + T.float32(1.0)
"""


def test_block_scope_of_symbolic_extent():
    """A blockIdx scope is not copied: inside the innermost launch, blocks of the steady
    state run the body with the test decided, the others the body as written (threadIdx
    relaxed over its extent). Run on the SIMT interpreter through the whole pipeline."""
    from tirc.ir.stmt import IfThenElse
    from tirc.testing import simt
    out = verify(loop_partition(_parse(KERNEL)))
    branch = [n for n in walk(out["main"].body) if isinstance(n, IfThenElse)][0]
    assert branch.else_case is not None and _calls(out, "likely") == 0
    for n in (1, 100, 128, 300, 1000):
        a = np.zeros(1000, "float32")
        simt.run(HEADER + KERNEL, "main", [a, n])
        assert (a[:n] == 1).all() and a.sum() == n
