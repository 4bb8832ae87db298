"""LiftThreadBinding: rules beyond TVM's own test (tests/passes/blocks/test_sblock_pass_pairs.py runs
that one). Expected modules are TVM 0.27's output for the same input unless a test says
otherwise."""
from __future__ import annotations

import pytest

from conftest import pass_checker
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.blocks.lift_thread_binding import lift_thread_binding
from tirc.passes.prepare.verify import verify

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"


check = pass_checker(lift_thread_binding, verify_input=False, verify_output=False)


def test_tags_meeting_at_one_loop_nest_by_tag_length_and_merge_annotations():
    before = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for i in range(2):
            for tx in T.thread_binding(4, thread="threadIdx.x"):
                for ty in T.thread_binding(2, thread="threadIdx.y"):
                    for v in T.thread_binding(2, thread="vthread.x"):
                        A[bx * 32 + i * 16 + ty * 8 + tx * 2 + v] = T.float32(1.0)
        for i in range(2):
            for tx in T.thread_binding(4, thread="threadIdx.x", annotations={"pragma_auto_unroll_max_step": 16}):
                for ty in T.thread_binding(2, thread="threadIdx.y"):
                    for v in T.thread_binding(2, thread="vthread.x", annotations={"k": 1}):
                        A[bx * 32 + i * 16 + ty * 8 + tx * 2 + v] = A[bx * 32 + i * 16 + ty * 8 + tx * 2 + v] + T.float32(1.0)
"""
    expected = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for vthread_x in T.thread_binding(2, thread="vthread.x", annotations={"k": 1}):
        for blockIdx_x in T.thread_binding(2, thread="blockIdx.x"):
            for threadIdx_y in T.thread_binding(2, thread="threadIdx.y"):
                for threadIdx_x in T.thread_binding(4, thread="threadIdx.x", annotations={"pragma_auto_unroll_max_step": 16}):
                    for i in range(2):
                        A[blockIdx_x * 32 + i * 16 + threadIdx_y * 8 + threadIdx_x * 2 + vthread_x] = T.float32(1.0)
                    for i in range(2):
                        A[blockIdx_x * 32 + i * 16 + threadIdx_y * 8 + threadIdx_x * 2 + vthread_x] = A[blockIdx_x * 32 + i * 16 + threadIdx_y * 8 + threadIdx_x * 2 + vthread_x] + T.float32(1.0)
"""
    check(before, expected)


def test_nested_loops_of_one_tag_and_each_kernel_on_its_own():
    # The second kernel's threadIdx.x stays under its serial loop: it is the only one.
    before = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[bx * 32 + tx] = T.float32(1.0)
        for i in range(2):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                for tx2 in T.thread_binding(32, thread="threadIdx.x"):
                    A[bx * 32 + tx2] = A[bx * 32 + tx] + T.float32(1.0)
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for i in range(4):
            for tx in T.thread_binding(16, thread="threadIdx.x"):
                B[bx * 16 + tx] = T.float32(1.0)
"""
    expected = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for blockIdx_x in T.thread_binding(2, thread="blockIdx.x"):
        for threadIdx_x in T.thread_binding(32, thread="threadIdx.x"):
            A[blockIdx_x * 32 + threadIdx_x] = T.float32(1.0)
            for i in range(2):
                A[blockIdx_x * 32 + threadIdx_x] = A[blockIdx_x * 32 + threadIdx_x] + T.float32(1.0)
    for blockIdx_x in T.thread_binding(4, thread="blockIdx.x"):
        for i in range(4):
            for threadIdx_x in T.thread_binding(16, thread="threadIdx.x"):
                B[blockIdx_x * 16 + threadIdx_x] = T.float32(1.0)
"""
    check(before, expected)


def test_loops_of_one_tag_with_different_extents_are_an_error():
    # TVM 0.27 lifts both into one loop of extent 32: the inner body, written for 16
    # threads, would run on 32 (UnifyThreadBinding's check never sees the two loops).
    text = HEADER + """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[bx * 32 + tx] = T.float32(1.0)
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            A[bx * 32 + tx] = T.float32(2.0)
"""
    with pytest.raises(Diagnostic, match="'threadIdx.x' in one kernel must have the same "
                                         "extent; this one has 16, an earlier one 32") as err:
        lift_thread_binding(parse(text, "before.tir"))
    assert err.value.span.line == 10  # the second loop


def test_plain_tir_is_left_as_written():
    text = HEADER + """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[bx * 32 + tx] = T.float32(1.0)
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[bx * 32 + tx] = T.float32(2.0)
"""
    mod = parse(text)
    assert lift_thread_binding(mod).functions["main"] is mod.functions["main"]


def test_a_loop_of_another_dtype_reads_the_lifted_variable_through_a_cast():
    # dlight binds an argmax's write-back to an int64 threadIdx.x after the reduction's
    # int32 one. TVM 0.27 substitutes the int32 variable as it is (T.LT(threadIdx_x,
    # T.int64(1)): operands of two dtypes, which tirc's code generators refuse).
    before = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[bx * 32 + tx] = T.float32(1.0)
        for tx in T.thread_binding(T.int64(32), thread="threadIdx.x"):
            if tx < T.int64(1):
                A[T.Cast("int32", tx)] = T.float32(2.0)
"""
    expected = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for blockIdx_x in T.thread_binding(2, thread="blockIdx.x"):
        for threadIdx_x in T.thread_binding(32, thread="threadIdx.x"):
            A[blockIdx_x * 32 + threadIdx_x] = T.float32(1.0)
            if T.Cast("int64", threadIdx_x) < T.int64(1):
                A[T.Cast("int32", T.Cast("int64", threadIdx_x))] = T.float32(2.0)
"""
    check(before, expected)
    verify(lift_thread_binding(parse(HEADER + before)))
