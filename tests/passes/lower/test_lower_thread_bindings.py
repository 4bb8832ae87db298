"""LowerThreadBindings: thread-bound loops become T.launch_thread scopes."""
from __future__ import annotations

from split_helpers import FULL, check
from tirc.passes.lower.lower_thread_bindings import lower_thread_bindings


def test_thread_bindings_become_launch_threads():
    before = f"""
@T.prim_func
def f(A: T.Buffer((1024,), "float32")):
    T.func_attr({{"target": {FULL}}})
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            A[bx * 128 + tx] = T.float32(0.0)
"""
    expected = f"""
@T.prim_func
def f(A: T.Buffer((1024,), "float32")):
    T.func_attr({{"target": {FULL}}})
    bx = T.launch_thread("blockIdx.x", 8)
    tx = T.launch_thread("threadIdx.x", 128)
    A[bx * 128 + tx] = T.float32(0.0)
"""
    check([lower_thread_bindings], before, expected)


def test_nonzero_start_shifts_the_thread_variable():
    before = f"""
@T.prim_func
def f(A: T.Buffer((1024,), "float32")):
    T.func_attr({{"target": {FULL}}})
    for tx in T.thread_binding(4, 68, thread="threadIdx.x"):
        A[tx] = T.float32(0.0)
"""
    expected = f"""
@T.prim_func
def f(A: T.Buffer((1024,), "float32")):
    T.func_attr({{"target": {FULL}}})
    tx_1 = T.launch_thread("threadIdx.x", 64)
    tx: T.int32 = tx_1 + 4
    A[tx] = T.float32(0.0)
"""
    check([lower_thread_bindings], before, expected)
