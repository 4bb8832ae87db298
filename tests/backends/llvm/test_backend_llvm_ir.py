"""The shared TIR -> LLVM lowering and the CPU backend, checked on the emitted LLVM IR
with FileCheck patterns (the ``filecheck`` package), not golden files."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tirc.backends.cpu.backend import generate, lower_to_llvm
from tirc.backends.registry import get_backend
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def lowered(text: str, target: str = "llvm"):
    t = parse_target(target)
    return run_pipeline(parse(HEAD + textwrap.dedent(text), "t.tir"), PassContext(t)), t


def llvm_ir(text: str, target: str = "llvm") -> str:
    """The module as lowered, before optimisation."""
    return lower_to_llvm(*lowered(text, target))[0]


def optimized_ir(text: str, target: str = "llvm") -> str:
    return generate(*lowered(text, target)).llvm_ir


def filecheck(ir_text: str, checks: str, tmp_path) -> None:
    check_file = tmp_path / "checks.txt"
    check_file.write_text(textwrap.dedent(checks))
    proc = subprocess.run([sys.executable, "-m", "filecheck", str(check_file)], input=ir_text,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n--- IR ---\n" + ir_text


ADD = """
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def helper(X: T.Buffer((8,), "float32"), s: T.float32):
            for i in range(8):
                X[i] = X[i] * s

        @T.prim_func
        def f(A: T.Buffer((8,), "float32")):
            Module.helper(A, T.float32(2))
"""


def test_packed_entry_and_internal_helper(tmp_path):
    filecheck(llvm_ir(ADD), """
        CHECK: target triple = "x86_64
        CHECK: define internal void @"helper"(ptr %"X", float %"s")
        CHECK: define external i32 @"__tvm_ffi_f"(ptr %"self_handle", ptr %"args", i32 %"num_args", ptr %"result")
        CHECK: icmp eq i32 %"num_args", 1
        CHECK: br i1 {{.*}}, label %"assert_ok{{[0-9]+}}", label %"[[FAIL:assert_fail[0-9]+]]"
        CHECK: br i1 {{.*}}, label %"assert_ok{{[0-9]+}}", label %"[[FAIL]]"
        CHECK: [[FAIL]]:
        CHECK-NEXT: %"error_kind" = phi  ptr [@".str.{{[0-9]+}}", %"entry"], [@".str.{{[0-9]+}}", %"assert_ok{{[0-9]+}}"]
        CHECK-NEXT: %"error_part0" = phi  ptr [@".str.{{[0-9]+}}", %"entry"], [@".str.{{[0-9]+}}", %"assert_ok{{[0-9]+}}"]
        CHECK-NEXT: %"error_part3" = phi  ptr [@".str.{{[0-9]+}}", %"entry"], [@".str.{{[0-9]+}}", %"assert_ok{{[0-9]+}}"]
        CHECK: store ptr %"error_part0", ptr
        CHECK: call void @"TVMFFIErrorSetRaisedFromCStrParts"(ptr %"error_kind", ptr %"error_parts", i32 4)
        CHECK-NEXT: ret i32 -1
        CHECK: call void @"helper"(ptr
        CHECK: ret i32 0
    """, tmp_path)


THREE = """
    @I.ir_module
    class Module:
        @T.prim_func
        def add3(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"),
                 C: T.Buffer((16,), "float32")):
            for i in range(16):
                assert A[i] >= T.float32(0), "add3: negative input"
                C[i] = A[i] + B[i]

        @T.prim_func
        def sub3(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"),
                 C: T.Buffer((16,), "float32")):
            for i in range(16):
                C[i] = A[i] - B[i]
"""


def test_argument_check_messages_share_their_parts():
    # MakePackedAPI's ~30 messages per function each repeat the signature: raised in
    # parts (TVMFFIErrorSetRaisedFromCStrParts, as TVM's own codegen), the object holds
    # each signature once and each other part once per module, not once per check
    obj = bytes(generate(*lowered(THREE), keep_ir=False).object)
    assert obj.count(b"add3(A: Tensor([16], float32)") == 1
    assert obj.count(b"sub3(A: Tensor([16], float32)") == 1
    assert obj.count(b"Mismatched A.ndim on argument #0\0") == 1  # both functions
    assert obj.count(b"add3: negative input\0") == 1  # a one-part message, padded


def test_error_strings_are_private_constants(tmp_path):
    filecheck(llvm_ir(ADD), """
        CHECK: @".str.0" = private unnamed_addr constant [10 x i8] c"TypeError\\00"
    """, tmp_path)


def test_floordiv_and_floormod(tmp_path):
    filecheck(llvm_ir("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32"), b: T.int32):
            A[0] = T.floordiv(A[1], b)
            A[2] = T.floormod(A[3], b)
            A[1] = T.truncdiv(A[1], b)
        """), """
        CHECK: sdiv i32
        CHECK-NEXT: srem i32
        CHECK: icmp slt i32
        CHECK: sub i32
        CHECK: srem i32
        CHECK: select
        CHECK: sdiv i32
    """, tmp_path)


def test_unsigned_compare_and_shift(tmp_path):
    filecheck(llvm_ir("""
        @T.prim_func
        def f(A: T.Buffer((4,), "uint32"), B: T.Buffer((4,), "int8")):
            if A[0] < A[1]:
                A[2] = T.shift_right(A[3], T.uint32(2))
            B[0] = T.shift_right(B[1], T.int8(1))
        """), """
        CHECK: icmp ult i32
        CHECK: lshr i32
        CHECK: ashr i8
    """, tmp_path)


def test_vectorized_loop_emits_vector_code(tmp_path):
    text = """
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
            for i in range(16):
                for j in T.vectorized(4):
                    B[i * 4 + j] = A[i * 4 + j] + T.float32(1)
        """
    filecheck(llvm_ir(text), """
        CHECK: load <4 x float>, ptr
        CHECK: fadd <4 x float>
        CHECK: store <4 x float>
    """, tmp_path)
    filecheck(optimized_ir(text), "CHECK: <4 x float>\n", tmp_path)


def test_parallel_loop_is_outlined_to_gomp(tmp_path):
    filecheck(llvm_ir("""
        @T.prim_func
        def f(A: T.Buffer((1024,), "float32"), n: T.int32):
            for i in T.parallel(n):
                A[i] = A[i] * T.float32(2)
        """), """
        CHECK: define external i32 @"__tvm_ffi_f"
        CHECK: call i32 @"__tirc_gomp_load"()
        CHECK: getelementptr [3 x ptr], ptr @"__tirc_gomp", i32 0, i32 0
        CHECK: call void %{{.*}}(ptr @"__tvm_ffi_f.parallel{{[0-9]+}}", ptr %"parallel_data", i32 0, i32 0)
        CHECK: define internal void @"__tvm_ffi_f.parallel{{[0-9]+}}"(ptr %".1")
        CHECK: getelementptr [3 x ptr], ptr @"__tirc_gomp", i32 0, i32 1
        CHECK: getelementptr [3 x ptr], ptr @"__tirc_gomp", i32 0, i32 2
        CHECK: ret void
        CHECK: define internal i32 @"__tirc_gomp_load"()
        CHECK: call i32 @"setenv"
        CHECK: call ptr @"dlopen"
    """, tmp_path)


def test_num_cores_sets_the_thread_count(tmp_path):
    filecheck(llvm_ir("""
        @T.prim_func
        def f(A: T.Buffer((64,), "float32")):
            for i in T.parallel(64):
                A[i] = T.float32(0)
        """, "llvm -num-cores=3"), 'CHECK: call void %{{.*}}(ptr @"__tvm_ffi_f.parallel{{.*}}, i32 3, i32 0)\n',
        tmp_path)


def test_math_functions(tmp_path):
    filecheck(llvm_ir("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), D: T.Buffer((4,), "float64"), H: T.Buffer((4,), "float16")):
            A[0] = T.exp(A[1]) + T.tanh(A[2])
            D[0] = T.erf(D[1]) + T.sqrt(D[2])
            H[0] = T.tanh(H[1])
        """), """
        CHECK: call float @"llvm.exp.f32"(float
        CHECK: call float @"tanhf"(float
        CHECK: call double @"erf"(double
        CHECK: call double @"llvm.sqrt.f64"(double
        CHECK: fpext half
        CHECK-NEXT: call float @"tanhf"
        CHECK-NEXT: fptrunc float
    """, tmp_path)


def test_vector_libm_call_goes_lane_by_lane(tmp_path):
    filecheck(llvm_ir("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in T.vectorized(4):
                A[i] = T.erf(A[i])
        """), """
        CHECK: load <4 x float>
        CHECK-COUNT-4: call float @"erff"(float
        CHECK: store <4 x float>
    """, tmp_path)


def test_small_allocations_on_the_stack_large_on_the_heap(tmp_path):
    filecheck(llvm_ir("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), n: T.int32):
            S = T.alloc_buffer((16,), "float32")
            L = T.alloc_buffer((100000,), "float32")
            S[0] = A[0]
            L[0] = S[0]
            A[1] = L[0]
        """), """
        CHECK: alloca float, i64 16, align 64
        CHECK: call ptr @"malloc"(i64 400000)
        CHECK: icmp ne ptr
        CHECK: call void @"free"(ptr
    """, tmp_path)


def test_extern_calls_declare_c_symbols(tmp_path):
    filecheck(llvm_ir("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = T.call_extern("float32", "cbrtf", A[1])
            A[1] = T.call_pure_extern("float32", "cbrtf", A[2])
        """), """
        CHECK: call float @"cbrtf"(float
        CHECK: call float @"cbrtf"(float
        CHECK: declare float @"cbrtf"(float
    """, tmp_path)


def test_kernel_launch_without_device_images_is_a_diagnostic():
    text = (HEAD + '@T.prim_func\ndef f(A: T.Buffer((256,), "float32")):\n'
            '    for bx in T.thread_binding(2, thread="blockIdx.x"):\n'
            '        for tx in T.thread_binding(128, thread="threadIdx.x"):\n'
            '            A[bx * 128 + tx] = T.float32(0)\n')
    t = parse_target("cuda")
    mod = run_pipeline(parse(text, "k.tir"), PassContext(t.with_host(parse_target("llvm"))))
    host = {n: f for n, f in mod.functions.items() if not f.attrs["target"].is_device or f.attrs["target"].host}
    from tirc.ir.function import IRModule
    with pytest.raises(Diagnostic, match="a GPU kernel launch needs the kernel's device image"):
        generate(IRModule(host), parse_target("llvm"))


def test_registry_is_keyed_by_target_kind():
    assert get_backend("llvm").name == "cpu"
    assert get_backend("cuda").name == "nvptx"
    assert get_backend("rocm").name == "amdgpu"
    with pytest.raises(Diagnostic, match="no code generator for target kind 'metal'"):
        get_backend("metal")
