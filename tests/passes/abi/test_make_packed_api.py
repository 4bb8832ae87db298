"""MakePackedAPI, stated as TIR before and after (the host ABI: docs/codegen-runtime.md).

The expected modules follow TVM 0.27's MakePackedAPI (same builtins, struct fields, type
indices and assertion messages); where tirc differs, the pass docstring says so.
"""
from __future__ import annotations

import pytest

from conftest import pass_checker
from tirc.diagnostics import Diagnostic
from tirc.ir.equal import assert_structural_equal
from tirc.ir.printer import print_module, quote
from tirc.ir.stmt import AssertStmt, LetStmt
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.abi.make_packed_api import make_packed_api
from tirc.passes.pass_context import PassContext
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
CTX = PassContext(parse_target("llvm"))


def messages(signature: str):
    """TVM's assertion message parts: the head, the signature, what was expected."""
    def msg(head: str, expected: str | None = None) -> str:
        tail = "`" if expected is None else "`,\n  expected " + expected
        return "[" + ", ".join(quote(p) for p in (head, " when calling:\n  `", signature, tail)) + "]"
    return msg


def run(before: str):
    mod = verify(parse(HEADER + before, "before.tir"))
    after = make_packed_api(mod, CTX)
    verify(after)
    # What the pass writes prints and parses back to the same module.
    assert_structural_equal(parse(print_module(after), "printed.tir"), after)
    return mod, after


check = pass_checker(lambda mod: make_packed_api(mod, CTX), reprint=True, with_input=True)


def test_cpu_function_with_2d_buffer_and_scalars():
    """Constant shape, compact strides, float and int scalars; void: result is None."""
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def scale(A: T.Buffer((16, 32), "float32"), s: T.float32, k: T.int32):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        for i, j in T.grid(16, 32):
            A[i, j] = A[i, j] * s + T.Cast("float32", k)
"""
    msg = messages('scale(A: Tensor([16, 32], float32), s: float32, k: int32)')
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def scale(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
        T.func_attr({{"calling_conv": 1, "global_symbol": "__tvm_ffi_scale", "target": T.target({{"kind": "llvm"}})}})
        assert num_args == 3, ("TypeError", {msg('Expected 3 arguments')})
        assert not T.isnullptr(args), ("TypeError", {msg('args pointer is NULL')})
        A_type_index: T.let[T.int32] = T.tvm_struct_get(args, 0, 13, "int32")
        assert A_type_index == 7 or A_type_index == 70, ("TypeError", {msg('Mismatched type on argument #0', 'Tensor')})
        A_handle: T.let[T.handle] = T.handle_add_byte_offset(T.tvm_struct_get(args, 0, 15, "handle"), T.Select(A_type_index == 70, 24, 0))
        s_type_index: T.let[T.int32] = T.tvm_struct_get(args, 1, 13, "int32")
        assert s_type_index == 3 or s_type_index == 1 or s_type_index == 2, ("TypeError", {msg('Mismatched type on argument #1', 'float')})
        s: T.let[T.float32] = T.Select(s_type_index == 3, T.Cast("float32", T.tvm_struct_get(args, 1, 15, "float64")), T.Cast("float32", T.tvm_struct_get(args, 1, 15, "int64")))
        k_type_index: T.let[T.int32] = T.tvm_struct_get(args, 2, 13, "int32")
        assert k_type_index == 1 or k_type_index == 2, ("TypeError", {msg('Mismatched type on argument #2', 'int')})
        assert T.tvm_struct_get(args, 2, 15, "int64") >= T.int64(-2147483648) and T.tvm_struct_get(args, 2, 15, "int64") <= T.int64(2147483647), ("ValueError", {msg('Out-of-range value on argument #2 (k: int32)', 'a value from -2147483648 to 2147483647')})
        k: T.let[T.int32] = T.Cast("int32", T.tvm_struct_get(args, 2, 15, "int64"))
        assert not T.isnullptr(A_handle), ("TypeError", {msg('Mismatched type on argument #0', 'Tensor')})
        assert 2 == T.tvm_struct_get(A_handle, 0, 4, "int32"), ("ValueError", {msg('Mismatched A.ndim on argument #0', '2')})
        assert T.tvm_struct_get(A_handle, 0, 5, "uint8") == T.uint8(2) and T.tvm_struct_get(A_handle, 0, 6, "uint8") == T.uint8(32) and T.tvm_struct_get(A_handle, 0, 7, "uint16") == T.uint16(1), ("TypeError", {msg('Mismatched A.dtype on argument #0', 'float32')})
        A_shape: T.let[T.handle] = T.tvm_struct_get(A_handle, 0, 2, "handle")
        A_strides: T.let[T.handle] = T.tvm_struct_get(A_handle, 0, 3, "handle")
        assert T.tvm_struct_get(A_handle, 0, 10, "int32") == 1, ("ValueError", {msg('Mismatched A.device_type on argument #0', 'cpu')})
        dev_id: T.let[T.int32] = T.tvm_struct_get(A_handle, 0, 9, "int32")
        assert T.tvm_struct_get(A_shape, 0, 17, "int64") == T.int64(16), ("ValueError", {msg('Invalid A.shape[0] on argument #0', '16')})
        assert T.tvm_struct_get(A_shape, 1, 17, "int64") == T.int64(32), ("ValueError", {msg('Invalid A.shape[1] on argument #0', '32')})
        if not T.isnullptr(A_strides):
            assert T.int64(1) == T.tvm_struct_get(A_strides, 1, 17, "int64") and T.int64(32) == T.tvm_struct_get(A_strides, 0, 17, "int64"), ("ValueError", {msg('Mismatched A.strides on argument #0', 'to be compact array')})
        assert T.uint64(0) == T.tvm_struct_get(A_handle, 0, 8, "uint64"), ("ValueError", {msg('Invalid A.byte_offset on argument #0', '0')})
        assert not T.isnullptr(T.tvm_struct_get(A_handle, 0, 1, "handle")), ("ValueError", {msg('A data pointer is NULL on argument #0', 'non-NULL data pointer')})
        A: T.let[T.handle("float32")] = T.tvm_struct_get(A_handle, 0, 1, "handle")
        A_1 = T.decl_buffer((16, 32), "float32", data=A)
        with T.attr("default", "device_id", dev_id):
            with T.attr("default", "device_type", 1):
                for i in range(16):
                    for j in range(32):
                        A_1[i, j] = A_1[i, j] * s + T.Cast("float32", k)
                T.tvm_struct_set(result, 0, 13, 0)
                T.tvm_struct_set(result, 0, 14, 0)
                T.tvm_struct_set(result, 0, 15, T.int64(0))
                return 0
"""
    check(before, expected)


def test_symbolic_shape_bound_once_and_checked_after():
    """n is bound from A.shape[0] (a LetStmt) and B.shape[0] must match it."""
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def add(a: T.handle, b: T.handle):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        n = T.int32()
        A = T.match_buffer(a, (n,), "int8")
        B = T.match_buffer(b, (n,), "int8")
        for i in range(n):
            B[i] = A[i] + B[i]
"""
    msg = messages('add(A: Tensor([n], int8), B: Tensor([n], int8))')
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def add(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
        T.func_attr({{"calling_conv": 1, "global_symbol": "__tvm_ffi_add", "target": T.target({{"kind": "llvm"}})}})
        assert num_args == 2, ("TypeError", {msg('Expected 2 arguments')})
        assert not T.isnullptr(args), ("TypeError", {msg('args pointer is NULL')})
        A_type_index: T.let[T.int32] = T.tvm_struct_get(args, 0, 13, "int32")
        assert A_type_index == 7 or A_type_index == 70, ("TypeError", {msg('Mismatched type on argument #0', 'Tensor')})
        A_handle: T.let[T.handle] = T.handle_add_byte_offset(T.tvm_struct_get(args, 0, 15, "handle"), T.Select(A_type_index == 70, 24, 0))
        B_type_index: T.let[T.int32] = T.tvm_struct_get(args, 1, 13, "int32")
        assert B_type_index == 7 or B_type_index == 70, ("TypeError", {msg('Mismatched type on argument #1', 'Tensor')})
        B_handle: T.let[T.handle] = T.handle_add_byte_offset(T.tvm_struct_get(args, 1, 15, "handle"), T.Select(B_type_index == 70, 24, 0))
        assert not T.isnullptr(A_handle), ("TypeError", {msg('Mismatched type on argument #0', 'Tensor')})
        assert 1 == T.tvm_struct_get(A_handle, 0, 4, "int32"), ("ValueError", {msg('Mismatched A.ndim on argument #0', '1')})
        assert T.tvm_struct_get(A_handle, 0, 5, "uint8") == T.uint8(0) and T.tvm_struct_get(A_handle, 0, 6, "uint8") == T.uint8(8) and T.tvm_struct_get(A_handle, 0, 7, "uint16") == T.uint16(1), ("TypeError", {msg('Mismatched A.dtype on argument #0', 'int8')})
        A_shape: T.let[T.handle] = T.tvm_struct_get(A_handle, 0, 2, "handle")
        A_strides: T.let[T.handle] = T.tvm_struct_get(A_handle, 0, 3, "handle")
        assert T.tvm_struct_get(A_handle, 0, 10, "int32") == 1, ("ValueError", {msg('Mismatched A.device_type on argument #0', 'cpu')})
        dev_id: T.let[T.int32] = T.tvm_struct_get(A_handle, 0, 9, "int32")
        assert T.tvm_struct_get(A_shape, 0, 17, "int64") >= T.int64(0) and T.tvm_struct_get(A_shape, 0, 17, "int64") <= T.int64(2147483647), ("ValueError", {msg('Out-of-range A.shape[0] on argument #0', 'a value from 0 to 2147483647 (n is int32)')})
        n: T.let[T.int32] = T.Cast("int32", T.tvm_struct_get(A_shape, 0, 17, "int64"))
        assert not T.isnullptr(B_handle), ("TypeError", {msg('Mismatched type on argument #1', 'Tensor')})
        assert 1 == T.tvm_struct_get(B_handle, 0, 4, "int32"), ("ValueError", {msg('Mismatched B.ndim on argument #1', '1')})
        assert T.tvm_struct_get(B_handle, 0, 5, "uint8") == T.uint8(0) and T.tvm_struct_get(B_handle, 0, 6, "uint8") == T.uint8(8) and T.tvm_struct_get(B_handle, 0, 7, "uint16") == T.uint16(1), ("TypeError", {msg('Mismatched B.dtype on argument #1', 'int8')})
        B_shape: T.let[T.handle] = T.tvm_struct_get(B_handle, 0, 2, "handle")
        B_strides: T.let[T.handle] = T.tvm_struct_get(B_handle, 0, 3, "handle")
        assert T.tvm_struct_get(B_handle, 0, 10, "int32") == 1, ("ValueError", {msg('Mismatched B.device_type on argument #1', 'cpu')})
        assert dev_id == T.tvm_struct_get(B_handle, 0, 9, "int32"), ("ValueError", {msg('Mismatched B.device_id on argument #1', 'to match A.device_id')})
        if not T.isnullptr(A_strides):
            assert n == 0 or (n == 1 or T.int64(1) == T.tvm_struct_get(A_strides, 0, 17, "int64")), ("ValueError", {msg('Mismatched A.strides on argument #0', 'to be compact array')})
        assert T.uint64(0) == T.tvm_struct_get(A_handle, 0, 8, "uint64"), ("ValueError", {msg('Invalid A.byte_offset on argument #0', '0')})
        assert T.Cast("int64", n) == T.tvm_struct_get(B_shape, 0, 17, "int64"), ("ValueError", {msg('Mismatched B.shape[0] on argument #1', 'to match A.shape[0]')})
        if not T.isnullptr(B_strides):
            assert n == 0 or (n == 1 or T.int64(1) == T.tvm_struct_get(B_strides, 0, 17, "int64")), ("ValueError", {msg('Mismatched B.strides on argument #1', 'to be compact array')})
        assert T.uint64(0) == T.tvm_struct_get(B_handle, 0, 8, "uint64"), ("ValueError", {msg('Invalid B.byte_offset on argument #1', '0')})
        assert n == 0 or not T.isnullptr(T.tvm_struct_get(A_handle, 0, 1, "handle")), ("ValueError", {msg('A data pointer is NULL on argument #0', 'non-NULL data pointer')})
        assert n == 0 or not T.isnullptr(T.tvm_struct_get(B_handle, 0, 1, "handle")), ("ValueError", {msg('B data pointer is NULL on argument #1', 'non-NULL data pointer')})
        A: T.let[T.handle("int8")] = T.tvm_struct_get(A_handle, 0, 1, "handle")
        A_1 = T.decl_buffer((n,), "int8", data=A)
        B: T.let[T.handle("int8")] = T.tvm_struct_get(B_handle, 0, 1, "handle")
        B_1 = T.decl_buffer((n,), "int8", data=B)
        with T.attr("default", "device_id", dev_id):
            with T.attr("default", "device_type", 1):
                for i in range(n):
                    B_1[i] = A_1[i] + B_1[i]
                T.tvm_struct_set(result, 0, 13, 0)
                T.tvm_struct_set(result, 0, 14, 0)
                T.tvm_struct_set(result, 0, 15, T.int64(0))
                return 0
"""
    check(before, expected)


def test_value_returning_function_stores_result():
    """Every return stores type index, padding and value into result, then returns 0."""
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def clamp(x: T.int64, lo: T.float32) -> T.float32:
        T.func_attr({"target": T.target({"kind": "llvm"})})
        if x < T.int64(0):
            return lo
        return T.Cast("float32", x)
"""
    msg = messages('clamp(x: int64, lo: float32)')
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def clamp(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
        T.func_attr({{"calling_conv": 1, "global_symbol": "__tvm_ffi_clamp", "target": T.target({{"kind": "llvm"}})}})
        assert num_args == 2, ("TypeError", {msg('Expected 2 arguments')})
        assert not T.isnullptr(args), ("TypeError", {msg('args pointer is NULL')})
        x_type_index: T.let[T.int32] = T.tvm_struct_get(args, 0, 13, "int32")
        assert x_type_index == 1 or x_type_index == 2, ("TypeError", {msg('Mismatched type on argument #0', 'int')})
        x: T.let[T.int64] = T.tvm_struct_get(args, 0, 15, "int64")
        lo_type_index: T.let[T.int32] = T.tvm_struct_get(args, 1, 13, "int32")
        assert lo_type_index == 3 or lo_type_index == 1 or lo_type_index == 2, ("TypeError", {msg('Mismatched type on argument #1', 'float')})
        lo: T.let[T.float32] = T.Select(lo_type_index == 3, T.Cast("float32", T.tvm_struct_get(args, 1, 15, "float64")), T.Cast("float32", T.tvm_struct_get(args, 1, 15, "int64")))
        if x < T.int64(0):
            T.tvm_struct_set(result, 0, 13, 3)
            T.tvm_struct_set(result, 0, 14, 0)
            T.tvm_struct_set(result, 0, 15, T.Cast("float64", lo))
            return 0
        T.tvm_struct_set(result, 0, 13, 3)
        T.tvm_struct_set(result, 0, 14, 0)
        T.tvm_struct_set(result, 0, 15, T.Cast("float64", T.Cast("float32", x)))
        return 0
"""
    check(before, expected)


def test_cuda_with_host_function_after_split():
    """Tensors of a cuda function with a host live on the GPU (device type 2); the
    kernel (calling_conv 2) and its launch stay as they are."""
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def copy(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target({"arch": "sm_90", "host": {"kind": "llvm"}, "kind": "cuda"})})
        T.call_ffi_kernel("copy_kernel", B.data, A.data, 8, 128, launch_params=["blockIdx.x", "threadIdx.x"], ret_ty="int32")

    @T.prim_func
    def copy_kernel(B_ptr: T.handle("float32"), A_ptr: T.handle("float32")):
        T.func_attr({"calling_conv": 2, "target": T.target({"arch": "sm_90", "kind": "cuda"}), "tirx.is_global_func": True, "tirx.kernel_launch_params": ["blockIdx.x", "threadIdx.x"], "tirx.noalias": True})
        B = T.decl_buffer((1024,), "float32", data=B_ptr)
        A = T.decl_buffer((1024,), "float32", data=A_ptr)
        bx = T.launch_thread("blockIdx.x", 8)
        tx = T.launch_thread("threadIdx.x", 128)
        B[bx * 128 + tx] = A[bx * 128 + tx]
"""
    msg = messages('copy(A: Tensor([1024], float32), B: Tensor([1024], float32))')
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def copy(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
        T.func_attr({{"calling_conv": 1, "global_symbol": "__tvm_ffi_copy", "target": T.target({{"arch": "sm_90", "host": {{"kind": "llvm"}}, "kind": "cuda"}})}})
        assert num_args == 2, ("TypeError", {msg('Expected 2 arguments')})
        assert not T.isnullptr(args), ("TypeError", {msg('args pointer is NULL')})
        A_type_index: T.let[T.int32] = T.tvm_struct_get(args, 0, 13, "int32")
        assert A_type_index == 7 or A_type_index == 70, ("TypeError", {msg('Mismatched type on argument #0', 'Tensor')})
        A_handle: T.let[T.handle] = T.handle_add_byte_offset(T.tvm_struct_get(args, 0, 15, "handle"), T.Select(A_type_index == 70, 24, 0))
        B_type_index: T.let[T.int32] = T.tvm_struct_get(args, 1, 13, "int32")
        assert B_type_index == 7 or B_type_index == 70, ("TypeError", {msg('Mismatched type on argument #1', 'Tensor')})
        B_handle: T.let[T.handle] = T.handle_add_byte_offset(T.tvm_struct_get(args, 1, 15, "handle"), T.Select(B_type_index == 70, 24, 0))
        assert not T.isnullptr(A_handle), ("TypeError", {msg('Mismatched type on argument #0', 'Tensor')})
        assert 1 == T.tvm_struct_get(A_handle, 0, 4, "int32"), ("ValueError", {msg('Mismatched A.ndim on argument #0', '1')})
        assert T.tvm_struct_get(A_handle, 0, 5, "uint8") == T.uint8(2) and T.tvm_struct_get(A_handle, 0, 6, "uint8") == T.uint8(32) and T.tvm_struct_get(A_handle, 0, 7, "uint16") == T.uint16(1), ("TypeError", {msg('Mismatched A.dtype on argument #0', 'float32')})
        A_shape: T.let[T.handle] = T.tvm_struct_get(A_handle, 0, 2, "handle")
        A_strides: T.let[T.handle] = T.tvm_struct_get(A_handle, 0, 3, "handle")
        assert T.tvm_struct_get(A_handle, 0, 10, "int32") == 2, ("ValueError", {msg('Mismatched A.device_type on argument #0', 'cuda')})
        dev_id: T.let[T.int32] = T.tvm_struct_get(A_handle, 0, 9, "int32")
        assert not T.isnullptr(B_handle), ("TypeError", {msg('Mismatched type on argument #1', 'Tensor')})
        assert 1 == T.tvm_struct_get(B_handle, 0, 4, "int32"), ("ValueError", {msg('Mismatched B.ndim on argument #1', '1')})
        assert T.tvm_struct_get(B_handle, 0, 5, "uint8") == T.uint8(2) and T.tvm_struct_get(B_handle, 0, 6, "uint8") == T.uint8(32) and T.tvm_struct_get(B_handle, 0, 7, "uint16") == T.uint16(1), ("TypeError", {msg('Mismatched B.dtype on argument #1', 'float32')})
        B_shape: T.let[T.handle] = T.tvm_struct_get(B_handle, 0, 2, "handle")
        B_strides: T.let[T.handle] = T.tvm_struct_get(B_handle, 0, 3, "handle")
        assert T.tvm_struct_get(B_handle, 0, 10, "int32") == 2, ("ValueError", {msg('Mismatched B.device_type on argument #1', 'cuda')})
        assert dev_id == T.tvm_struct_get(B_handle, 0, 9, "int32"), ("ValueError", {msg('Mismatched B.device_id on argument #1', 'to match A.device_id')})
        assert T.tvm_struct_get(A_shape, 0, 17, "int64") == T.int64(1024), ("ValueError", {msg('Invalid A.shape[0] on argument #0', '1024')})
        if not T.isnullptr(A_strides):
            assert T.int64(1) == T.tvm_struct_get(A_strides, 0, 17, "int64"), ("ValueError", {msg('Mismatched A.strides on argument #0', 'to be compact array')})
        assert T.uint64(0) == T.tvm_struct_get(A_handle, 0, 8, "uint64"), ("ValueError", {msg('Invalid A.byte_offset on argument #0', '0')})
        assert T.tvm_struct_get(B_shape, 0, 17, "int64") == T.int64(1024), ("ValueError", {msg('Invalid B.shape[0] on argument #1', '1024')})
        if not T.isnullptr(B_strides):
            assert T.int64(1) == T.tvm_struct_get(B_strides, 0, 17, "int64"), ("ValueError", {msg('Mismatched B.strides on argument #1', 'to be compact array')})
        assert T.uint64(0) == T.tvm_struct_get(B_handle, 0, 8, "uint64"), ("ValueError", {msg('Invalid B.byte_offset on argument #1', '0')})
        assert not T.isnullptr(T.tvm_struct_get(A_handle, 0, 1, "handle")), ("ValueError", {msg('A data pointer is NULL on argument #0', 'non-NULL data pointer')})
        assert not T.isnullptr(T.tvm_struct_get(B_handle, 0, 1, "handle")), ("ValueError", {msg('B data pointer is NULL on argument #1', 'non-NULL data pointer')})
        A: T.let[T.handle("float32")] = T.tvm_struct_get(A_handle, 0, 1, "handle")
        A_1 = T.decl_buffer((1024,), "float32", data=A)
        B: T.let[T.handle("float32")] = T.tvm_struct_get(B_handle, 0, 1, "handle")
        B_1 = T.decl_buffer((1024,), "float32", data=B)
        with T.attr("default", "device_id", dev_id):
            with T.attr("default", "device_type", 2):
                T.call_ffi_kernel("copy_kernel", B, A, 8, 128, launch_params=["blockIdx.x", "threadIdx.x"], ret_ty="int32")
                T.tvm_struct_set(result, 0, 13, 0)
                T.tvm_struct_set(result, 0, 14, 0)
                T.tvm_struct_set(result, 0, 15, T.int64(0))
                return 0

    @T.prim_func
    def copy_kernel(B_ptr: T.handle("float32"), A_ptr: T.handle("float32")):
        T.func_attr({{"calling_conv": 2, "target": T.target({{"arch": "sm_90", "kind": "cuda"}}), "tirx.is_global_func": True, "tirx.kernel_launch_params": ["blockIdx.x", "threadIdx.x"], "tirx.noalias": True}})
        B = T.decl_buffer((1024,), "float32", data=B_ptr)
        A = T.decl_buffer((1024,), "float32", data=A_ptr)
        bx = T.launch_thread("blockIdx.x", 8)
        tx = T.launch_thread("threadIdx.x", 128)
        B[bx * 128 + tx] = A[bx * 128 + tx]
"""
    mod, after = check(before, expected)
    assert after["copy_kernel"] is mod["copy_kernel"]


def test_private_functions_kernels_and_device_only_functions_untouched():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def helper(x: T.int32) -> T.int32:
        T.func_attr({"target": T.target({"kind": "llvm"})})
        return x + 1

    @T.prim_func
    def kernel(A_ptr: T.handle("float32")):
        T.func_attr({"calling_conv": 2, "target": T.target({"arch": "sm_90", "kind": "cuda"})})
        A = T.decl_buffer((32,), "float32", data=A_ptr)
        tx = T.launch_thread("threadIdx.x", 32)
        A[tx] = T.float32(0.0)

    @T.prim_func
    def device_only(x: T.int32) -> T.int32:
        T.func_attr({"target": T.target({"arch": "sm_90", "kind": "cuda"})})
        return x

    @T.prim_func
    def already(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
        T.func_attr({"calling_conv": 1, "target": T.target({"kind": "llvm"})})
        return 0
"""
    mod, after = run(before)
    assert after is mod


def test_message_names_argument_and_signature_like_tvm():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((1024,), "float32"), n: T.int32):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        A[0] = T.Cast("float32", n)
"""
    _, after = run(before)
    texts = {"".join(s.message): s.kind for s in walk(after["main"].body) if isinstance(s, AssertStmt)}
    want = ("Invalid A.shape[0] on argument #0 when calling:\n"
            "  `main(A: Tensor([1024], float32), n: int32)`,\n  expected 1024")
    assert texts[want] == "ValueError"
    assert texts["Mismatched type on argument #1 when calling:\n"
                 "  `main(A: Tensor([1024], float32), n: int32)`,\n  expected int"] == "TypeError"
    assert after["main"].attrs["global_symbol"] == "__tvm_ffi_main"
    assert after["main"].attrs["calling_conv"] == 1


def _lets(func) -> dict[str, object]:
    return {s.var.name: s.value for s in walk(func.body) if isinstance(s, LetStmt)}


def test_declared_strides_and_elem_offset_variable_are_bound():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def view(a: T.handle):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        n = T.int32()
        s = T.int32()
        off = T.int32()
        A = T.match_buffer(a, (n, 4), "float32", strides=(s, 1), elem_offset=off)
        A[0, 0] = T.float32(1.0)
"""
    _, after = run(before)
    f = after["view"]
    lets = _lets(f)
    assert {"n", "s", "off"} <= set(lets)
    msgs = ["".join(s.message) for s in walk(f.body) if isinstance(s, AssertStmt)]
    assert any(m.startswith("Invalid A.strides[1] on argument #0") for m in msgs)
    assert any(m.startswith("Misaligned A.byte_offset on argument #0") and m.endswith("a multiple of 4")
               for m in msgs)
    # Declared strides are checked per dimension, not as a compact array.
    assert not any("compact" in m for m in msgs)


def test_bool_and_handle_parameters_and_handle_bound_when_used():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4,), "bool"), flag: T.bool, p: T.handle):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        if flag:
            A[0] = T.isnullptr(p)
"""
    _, after = run(before)
    f = after["f"]
    text = print_module(after)
    assert "flag_type_index == 2 or flag_type_index == 1" in text
    assert "p_type_index == 0 or p_type_index == 4 or p_type_index == 7 or p_type_index >= 64" in text
    # bool tensors are DLPack kDLBool (6) with 8 bits.
    assert 'T.tvm_struct_get(A_handle, 0, 5, "uint8") == T.uint8(6)' in text
    assert 'T.tvm_struct_get(A_handle, 0, 6, "uint8") == T.uint8(8)' in text
    assert set(_lets(f)) >= {"flag", "p", "A_handle", "dev_id"}


def test_buffer_handle_parameter_used_in_body_is_bound_to_the_dltensor():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        A = T.match_buffer(a, (4,), "float32")
        T.evaluate(T.call_extern("int32", "use", a))
"""
    _, after = run(before)
    lets = _lets(after["f"])
    assert lets["a"] is not None and getattr(lets["a"], "name", None) == "A_handle"


def test_empty_constant_buffer_has_no_null_data_check():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((0,), "float32")):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        T.evaluate(0)
"""
    _, after = run(before)
    msgs = ["".join(s.message) for s in walk(after["f"].body) if isinstance(s, AssertStmt)]
    assert not any("data pointer is NULL" in m for m in msgs)


def test_zero_argument_function():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def f() -> T.int32:
        T.func_attr({"target": T.target({"kind": "llvm"})})
        return 7
"""
    msg = messages("f()")
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def f(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
        T.func_attr({{"calling_conv": 1, "global_symbol": "__tvm_ffi_f", "target": T.target({{"kind": "llvm"}})}})
        assert num_args == 0, ("TypeError", {msg("Expected 0 arguments")})
        T.tvm_struct_set(result, 0, 13, 1)
        T.tvm_struct_set(result, 0, 14, 0)
        T.tvm_struct_set(result, 0, 15, T.int64(7))
        return 0
"""
    check(before, expected)


@pytest.mark.parametrize("text, message", [
    ("""
    @T.prim_func
    def f(x: T.float32x4):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        T.evaluate(0)
""", "parameter 'x' of vector type float32x4 cannot be passed through the packed API"),
    ("""
    @T.prim_func
    def f(x: T.float32) -> T.float32x4:
        T.func_attr({"target": T.target({"kind": "llvm"})})
        return T.Broadcast(x, 4)
""", "a packed function cannot return a vector (float32x4)"),
])
def test_diagnostics(text, message):
    mod = verify(parse(HEADER + "@I.ir_module\nclass Module:" + text, "bad.tir"))
    with pytest.raises(Diagnostic) as err:
        make_packed_api(mod, CTX)
    assert err.value.message == message
    assert err.value.span is not None and err.value.span.file == "bad.tir"
    assert err.value.span.line > 3  # inside the function, not the module header


def test_shape_expression_may_use_a_variable_bound_by_a_later_argument():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        n = T.int32()
        A = T.match_buffer(a, (n * 2,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        A[0] = B[0]
"""
    _, after = run(before)
    f = after["f"]
    assert "n" in _lets(f)
    msgs = ["".join(s.message) for s in walk(f.body) if isinstance(s, AssertStmt)]
    # the variable shown as the field it comes from, as TVM 0.27's message does
    # ("expected B.shape[0] + 1" in its test_forward_reference_symbolic_shape)
    assert any(m.startswith("Invalid A.shape[0] on argument #0")
               and m.endswith("expected B.shape[0] * 2") for m in msgs)


def test_shape_texts_in_messages_keep_precedence_and_tvmscript_constants():
    """The signature shows shapes as TVMScript writes them (int64 constants as
    ``T.int64(2)``, parentheses where precedence needs them), and what a check expects
    shows each variable as the field it came from, with plain integers: the forms of
    TVM 0.27's messages (``n * T.int64(2) + T.int64(1)``, ``expected B.shape[0] + 1``).
    The old renderer printed ``(n + 1) * 2`` as ``n + 1 * 2``."""
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        n = T.int64()
        A = T.match_buffer(a, ((n + T.int64(1)) * T.int64(2),), "float32")
        B = T.match_buffer(b, (n,), "float32")
        A[0] = B[0]
"""
    _, after = run(before)
    msgs = ["".join(s.message) for s in walk(after["f"].body) if isinstance(s, AssertStmt)]
    assert ("Invalid A.shape[0] on argument #0 when calling:\n"
            "  `f(A: Tensor([(n + T.int64(1)) * T.int64(2)], float32), B: Tensor([n], float32))`,"
            "\n  expected (B.shape[0] + 1) * 2") in msgs


def test_calls_of_exported_functions_are_rewritten_only_where_the_body_has_one(monkeypatch):
    """MakePackedAPI rewrites calls of exported functions only in bodies that hold one
    (found in the walk that also finds the parameters the body uses); the modules are
    those made when every body is rewritten, on the samples and the TVM corpus
    (module_public_calls_public.tir has such calls)."""
    from conftest import ROOT, SAMPLES, TVM_CORPUS
    from tirc.build.options import bind_target_from
    from tirc.passes.abi import make_packed_api as mpa
    from tirc.passes.pipeline import run_pipeline
    ctx = PassContext(bind_target_from("cuda -arch=sm_90", "llvm"))
    real = mpa._uses
    rewritten = 0
    for path in SAMPLES + TVM_CORPUS:
        try:
            before = run_pipeline(parse(path.read_text(), str(path)), ctx, stop_after="VerifyMemory")
        except Diagnostic:
            continue
        fast = make_packed_api(before, ctx)
        monkeypatch.setattr(mpa, "_uses", lambda body, symbols: (real(body, symbols)[0], True))
        general = make_packed_api(before, ctx)
        monkeypatch.setattr(mpa, "_uses", real)
        assert print_module(fast) == print_module(general), path.name
        rewritten += path.name == "module_public_calls_public.tir"
    assert rewritten == 1 and (ROOT / "tests/corpus/tvm/module_public_calls_public.tir").exists()
