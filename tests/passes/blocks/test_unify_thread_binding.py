"""UnifyThreadBinding: rules beyond TVM's own tests (tests/passes/blocks/test_sblock_pass_pairs.py runs
those), and how the thread-binding passes fit tirc's pipeline. Expected modules are TVM
0.27's output for the same input unless a test says otherwise."""
from __future__ import annotations

import pytest

from conftest import pass_checker, TESTS
from tirc.diagnostics import Diagnostic
from tirc.ir.stmt import AttrStmt, For, IterVar
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.passes.blocks.unify_thread_binding import unify_thread_binding
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"


check = pass_checker(unify_thread_binding, verify_input=False, verify_output=False)


def test_thread_loops_move_to_the_top_of_their_kernel_in_the_order_met():
    before = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for i in range(4):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                A[bx * 32 + i * 8 + tx] = T.float32(0.0)
            for j in range(2):
                for by in T.thread_binding(3, thread="blockIdx.y"):
                    for tx in T.thread_binding(8, thread="threadIdx.x"):
                        A[bx * 32 + i * 8 + tx] = A[bx * 32 + i * 8 + tx] + T.Cast("float32", by + j)
"""
    expected = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for blockIdx_x in T.thread_binding(2, thread="blockIdx.x"):
        for threadIdx_x in T.thread_binding(8, thread="threadIdx.x"):
            for blockIdx_y in T.thread_binding(3, thread="blockIdx.y"):
                for i in range(4):
                    A[blockIdx_x * 32 + i * 8 + threadIdx_x] = T.float32(0.0)
                    for j in range(2):
                        A[blockIdx_x * 32 + i * 8 + threadIdx_x] = A[blockIdx_x * 32 + i * 8 + threadIdx_x] + T.Cast("float32", blockIdx_y + j)
"""
    check(before, expected)


def test_annotations_of_a_thread_loop_merge_into_the_loop_taking_its_place():
    # TVM 0.27 replaces the serial loop's annotations with the thread loop's, dropping
    # "software_pipeline_stage"; tirc keeps both (the thread loop's value wins a key).
    before = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x", annotations={"pragma_auto_unroll_max_step": 16, "k": 1}):
            for i in T.serial(4, annotations={"software_pipeline_stage": [0, 1], "k": 0}):
                A[bx * 32 + i * 8 + tx] = T.float32(0.0)
"""
    expected = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for blockIdx_x in T.thread_binding(2, thread="blockIdx.x"):
        for threadIdx_x in T.thread_binding(8, thread="threadIdx.x"):
            for i in T.serial(4, annotations={"k": 1, "pragma_auto_unroll_max_step": 16, "software_pipeline_stage": [0, 1]}):
                A[blockIdx_x * 32 + i * 8 + threadIdx_x] = T.float32(0.0)
"""
    check(before, expected)


def test_axes_of_one_tag_starting_at_different_values_are_an_error():
    text = HEADER + """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(0, 32, thread="threadIdx.x"):
            A[bx * 32 + tx] = T.float32(1.0)
        for tx in T.thread_binding(1, 33, thread="threadIdx.x"):
            A[bx * 32 + tx - 1] = T.float32(2.0)
"""
    with pytest.raises(Diagnostic, match="'threadIdx.x' in one kernel must start at the same "
                                         "value; this one starts at 1, an earlier one at 0") as err:
        unify_thread_binding(parse(text, "before.tir"))
    assert err.value.span.line == 10


def test_plain_tir_launch_threads_are_left_as_written():
    text = HEADER + """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    ty = T.launch_thread("threadIdx.x", 32)
    A[bx * 32 + tx] = A[bx * 32 + ty]
"""
    mod = parse(text)
    assert unify_thread_binding(mod).functions["main"] is mod.functions["main"]


SCHEDULED = HEADER + """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    A_shared = T.sblock_alloc_buffer((64,), scope="shared")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.sblock("load"):
                v = T.axis.spatial(64, tx)
                T.reads(A[bx * 64 + v])
                T.writes(A_shared[v])
                A_shared[v] = A[bx * 64 + v]
        for i in range(2):
            for tx in T.thread_binding(64, thread="threadIdx.x", annotations={"pragma_auto_unroll_max_step": 16, "pragma_unroll_explicit": 1}):
                with T.sblock("store"):
                    v = T.axis.spatial(256, bx * 64 + tx)
                    T.reads(A_shared[(tx + i) % 64])
                    T.writes(B[v])
                    B[v] = A_shared[(tx + i) % 64] * T.float32(2.0)
"""


def _lower(stop_after: str):
    ctx = PassContext(parse_target("cuda -arch=sm_80", host="llvm"))
    return run_pipeline(parse(SCHEDULED, "scheduled.tir"), ctx, stop_after)


def test_pipeline_launches_each_thread_tag_once_per_kernel():
    body = _lower("LowerThreadBindings").functions["main"].body
    launches = [n.node.thread_tag for n in walk(body)
                if isinstance(n, AttrStmt) and isinstance(n.node, IterVar)]
    assert launches == ["blockIdx.x", "threadIdx.x"]
    assert not any(isinstance(n, For) and n.kind == "thread_binding" for n in walk(body))


def test_loop_pragmas_of_a_thread_loop_do_not_become_kernel_inputs():
    # The thread loop's pragmas end on a unit loop (T.attr(var, ...) around it after
    # LowerOpaqueBlock); UnrollLoop consumes them, so the kernel takes only the buffers.
    mod = _lower("LowerDeviceKernelLaunch")
    kernel = next(f for name, f in mod.functions.items() if name != "main")
    assert [p.name for p in kernel.params] == ["A_ptr", "B_ptr"]
    assert not any(isinstance(n, AttrStmt) and n.key.startswith("pragma_")
                   for f in mod.functions.values() for n in walk(f.body))


def test_tvm_error_case_names_both_extents():
    from pathlib import Path
    path = TESTS / "corpus" / "sblock_passes" / "UnifyThreadBinding" / \
        "two_thread_x_in_same_kernel_not_equal.error.tir"
    with pytest.raises(Diagnostic, match="'threadIdx.x' in one kernel must have the same "
                                         "extent; this one has 64, an earlier one 128") as err:
        unify_thread_binding(parse(path.read_text(), path.name))
    assert err.value.span.line == 12  # for j1 in T.thread_binding(64, ...)
