"""AnnotateDeviceRegions: kernel regions of host code are wrapped in a target region."""
from __future__ import annotations

import pytest

from split_helpers import DEV, FULL, HOST, check, run
from tirc.diagnostics import Diagnostic
from tirc.passes.split.annotate_device_regions import annotate_device_regions


def test_outermost_thread_scopes_are_wrapped_with_the_device_target():
    before = f"""
@T.prim_func
def f(A: T.Buffer((1024,), "float32"), n: T.int32):
    T.func_attr({{"target": {FULL}}})
    m: T.int32 = n * 2
    with T.launch_thread("blockIdx.x", 8) as bx:
        tx = T.launch_thread("threadIdx.x", 128)
        A[bx * 128 + tx] = T.Cast("float32", m)
    bx_1 = T.launch_thread("blockIdx.x", 4)
    A[bx_1] = T.float32(1.0)
"""
    expected = f"""
@T.prim_func
def f(A: T.Buffer((1024,), "float32"), n: T.int32):
    T.func_attr({{"target": {FULL}}})
    m: T.int32 = n * 2
    with T.attr({DEV}, "target", 0):
        bx = T.launch_thread("blockIdx.x", 8)
        tx = T.launch_thread("threadIdx.x", 128)
        A[bx * 128 + tx] = T.Cast("float32", m)
    with T.attr({DEV}, "target", 0):
        bx_1 = T.launch_thread("blockIdx.x", 4)
        A[bx_1] = T.float32(1.0)
"""
    check([annotate_device_regions], before, expected)


def test_device_functions_and_existing_regions_are_left_alone():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def sub(x: T.float32) -> T.float32:
        T.func_attr({{"target": {DEV}}})
        return x

    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        T.func_attr({{"target": {FULL}}})
        with T.attr({DEV}, "target", 0):
            tx = T.launch_thread("threadIdx.x", 4)
            A[tx] = Module.sub(A[tx])
"""
    check([annotate_device_regions], before, before)


def test_thread_axis_in_a_cpu_function_is_an_error():
    before = f"""
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.func_attr({{"target": {HOST}}})
    tx = T.launch_thread("threadIdx.x", 4)
    A[tx] = T.float32(0.0)
"""
    with pytest.raises(Diagnostic, match="thread axis 'threadIdx.x' in a function for the CPU target 'llvm'"):
        run([annotate_device_regions], before)
