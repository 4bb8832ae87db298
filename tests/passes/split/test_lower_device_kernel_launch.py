"""LowerDeviceKernelLaunch: launches with grid, block and dynamic shared memory sizes."""
from __future__ import annotations

import pytest

from split_helpers import DEV, FULL, check, run
from tirc.diagnostics import Diagnostic
from tirc.passes.split.lower_device_kernel_launch import lower_device_kernel_launch
from tirc.passes.split.split_host_device import split_host_device

KERNEL = '"calling_conv": 2, "target": {dev}, "tirx.is_global_func": True'.format(dev=DEV)


def test_launch_sizes_are_written_in_terms_of_the_call():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer(("n",), "float32")):
        n = T.int32()
        T.func_attr({{"target": {FULL}}})
        Module.f_kernel(A.data, n)

    @T.prim_func
    def f_kernel(A_ptr: T.handle("float32"), m: T.int32):
        T.func_attr({{{KERNEL}}})
        A = T.decl_buffer((m,), "float32", data=A_ptr)
        bx = T.launch_thread("blockIdx.x", (m + 127) // 128)
        tx = T.launch_thread("threadIdx.x", 128)
        S = T.alloc_buffer((256,), "float32", scope="shared.dyn")
        S[tx] = A[bx * 128 + tx]
        A[bx * 128 + tx] = S[127 - tx]
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer(("n",), "float32")):
        n = T.int32()
        T.func_attr({{"target": {FULL}}})
        T.call_ffi_kernel("f_kernel", A.data, n, (n + 127) // 128, 128, T.int64(1024), launch_params=["blockIdx.x", "threadIdx.x", "tirx.use_dyn_shared_memory"], ret_ty="int32")

    @T.prim_func
    def f_kernel(A_ptr: T.handle("float32"), m: T.int32):
        T.func_attr({{{KERNEL}, "tirx.kernel_launch_params": ["blockIdx.x", "threadIdx.x", "tirx.use_dyn_shared_memory"]}})
        A = T.decl_buffer((m,), "float32", data=A_ptr)
        bx = T.launch_thread("blockIdx.x", (m + 127) // 128)
        tx = T.launch_thread("threadIdx.x", 128)
        S = T.alloc_buffer((256,), "float32", scope="shared.dyn")
        S[tx] = A[bx * 128 + tx]
        A[bx * 128 + tx] = S[127 - tx]
"""
    check([lower_device_kernel_launch], before, expected)


def test_too_many_threads_per_block_is_an_error():
    before = f"""
@T.prim_func
def f(A: T.Buffer((4096,), "float32")):
    T.func_attr({{"target": {FULL}}})
    with T.attr({DEV}, "target", 0):
        tx = T.launch_thread("threadIdx.x", 2048)
        A[tx] = T.float32(0.0)
"""
    with pytest.raises(Diagnostic, match="uses 2048 threads per block; target 'cuda -arch=sm_90' allows 1024"):
        run([split_host_device, lower_device_kernel_launch], before)


def test_extent_depending_on_device_values_is_an_error():
    before = f"""
@T.prim_func
def f(A: T.Buffer((64,), "int32")):
    T.func_attr({{"target": {FULL}}})
    with T.attr({DEV}, "target", 0):
        bx = T.launch_thread("blockIdx.x", 4)
        k: T.int32 = A[bx]
        tx = T.launch_thread("threadIdx.x", k)
        A[tx] = 0
"""
    with pytest.raises(Diagnostic, match="depends on 'k', which the host does not know"):
        run([split_host_device, lower_device_kernel_launch], before)


def test_device_subroutine_called_from_host_is_an_error():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def dev(x: T.int32) -> T.int32:
        T.func_attr({{"target": {DEV}}})
        return x

    @T.prim_func
    def f(A: T.Buffer((4,), "int32")):
        T.func_attr({{"target": {FULL}}})
        A[0] = Module.dev(1)
"""
    with pytest.raises(Diagnostic, match="'dev' is device code .* but is called from host code in 'f'"):
        run([lower_device_kernel_launch], before)
