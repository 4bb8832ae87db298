#!/usr/bin/env python
"""Regenerate the TVM-printed TIR corpus in tests/corpus/tvm/.

Run with the TVM 0.27 venv python, e.g.:

    /tmp/tvmenv/bin/python tests/corpus/gen_tvm_corpus.py

Every corpus file is *exactly* the text returned by ``mod.script()`` (TVM 0.27),
written without an added trailing newline.  Each source below is parsed with
``tvm.script.from_source``, printed, and the printed text is re-parsed and
re-printed; the generator aborts unless that second print is byte-identical to
the first (i.e. the file is a fixed point of TVM's parse/print).

Two families of files:
  * hand-written TVMScript inputs (SOURCES), printed once by TVM;
  * outputs of TVM lowering passes (PIPELINES), snapshotted after chosen passes.

This module is not a test module: it defines no ``test_*`` functions and pytest
should not import it (it needs TVM, which the tirc test environment lacks).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import tvm
from tvm import s_tir, tirx
from tvm.script import from_source
from tvm.tirx import compilation_pipeline as tir_pipeline

OUT_DIR = Path(__file__).resolve().parent / "tvm"

# Explicit host triple so that the printed target is not machine specific
# (a bare {"kind": "llvm"} gets the build's mtriple, e.g. x86_64-conda-linux-gnu).
HOST = '{"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu"}'
LLVM = '{"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu"}'

# --------------------------------------------------------------------------
# Hand-written sources.  Written in TVMScript without import lines; `I` and `T`
# are provided by from_source.  Lowered (non-block) TIR only.
# --------------------------------------------------------------------------
SOURCES: dict[str, str] = {}

SOURCES["bare_prim_func_public"] = '''
@T.prim_func
def scale(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in range(128):
        B[i] = A[i] * T.float32(2.0)
'''

SOURCES["bare_prim_func_private"] = '''
@T.prim_func(private=True)
def helper(x: T.float32, y: T.float32) -> T.float32:
    return x * y + T.float32(1.0)
'''

SOURCES["bare_prim_func_empty_body"] = '''
@T.prim_func
def nothing(A: T.Buffer((4,), "float32")):
    T.evaluate(0)
'''

SOURCES["module_single_func"] = '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((16,), "int32")):
        for i in range(16):
            A[i] = i
'''

SOURCES["module_private_helpers_calls"] = f'''
@I.ir_module
class Module:
    @T.prim_func
    def zeta(A: T.Buffer((16,), "float32"), n: T.int32):
        T.func_attr({{"target": T.target({LLVM}), "tir.noalias": True}})
        r: T.int32 = Module.helper(n, 2)
        A[0] = Module.fhelper(A, T.float32(1.0))
        Module.void_helper(A.data, r)
        A[1] = T.Cast("float32", Module.helper(Module.helper(n, 1), r))

    @T.prim_func(private=True)
    def helper(a: T.int32, b: T.int32) -> T.int32:
        if a > b:
            return a - b
        return a + b

    @T.prim_func(private=True)
    def fhelper(X: T.Buffer((16,), "float32"), s: T.float32) -> T.float32:
        return X[0] * s

    @T.prim_func(private=True)
    def void_helper(p: T.handle("float32"), k: T.int32):
        X = T.decl_buffer((16,), "float32", data=p)
        X[k] = T.float32(0.0)

    @T.prim_func
    def alpha(A: T.Buffer((16,), "float32")):
        A[0] = T.float32(1.0)
'''

SOURCES["module_function_order"] = '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        A[0] = Module.b_func(1) + Module.Zeta(2) + Module._under(3) + Module.B2(4)

    @T.prim_func(private=True)
    def b_func(x: T.int32) -> T.int32:
        return x

    @T.prim_func(private=True)
    def Zeta(x: T.int32) -> T.int32:
        return x + 1

    @T.prim_func(private=True)
    def _under(x: T.int32) -> T.int32:
        return x + 2

    @T.prim_func(private=True)
    def B2(x: T.int32) -> T.int32:
        return x + 3
'''

SOURCES["func_attr_global_symbol_and_keys"] = f'''
@I.ir_module
class Module:
    @T.prim_func
    def renamed(A: T.Buffer((8,), "float32")):
        T.func_attr({{"tir.noalias": True, "global_symbol": "renamed_symbol", "target": T.target({LLVM}), "a_custom_attr": 3, "b_str_attr": "hello", "c_list_attr": [1, 2, 3]}})
        A[0] = T.float32(0.0)

    @T.prim_func
    def same_name(A: T.Buffer((8,), "float32")):
        T.func_attr({{"global_symbol": "same_name", "tir.noalias": True}})
        A[0] = T.float32(0.0)
'''

SOURCES["targets_cuda_llvm"] = f'''
@I.ir_module
class Module:
    @T.prim_func
    def cuda_sm80(A: T.Buffer((8,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_80"}})}})
        A[0] = T.float32(0.0)

    @T.prim_func
    def cuda_sm90(A: T.Buffer((8,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_90"}})}})
        A[0] = T.float32(0.0)

    @T.prim_func
    def cuda_sm90a_opts(A: T.Buffer((8,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_90a", "max_shared_memory_per_block": 49152, "max_threads_per_block": 1024}})}})
        A[0] = T.float32(0.0)

    @T.prim_func
    def cuda_sm80_host(A: T.Buffer((8,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_80", "host": {HOST}}})}})
        A[0] = T.float32(0.0)

    @T.prim_func
    def cuda_sm90_host(A: T.Buffer((8,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_90", "host": {HOST}}})}})
        A[0] = T.float32(0.0)

    @T.prim_func
    def llvm_plain(A: T.Buffer((8,), "float32")):
        T.func_attr({{"target": T.target({LLVM})}})
        A[0] = T.float32(0.0)

    @T.prim_func
    def llvm_mcpu(A: T.Buffer((8,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu", "mcpu": "skylake-avx512", "mattr": ["+avx2", "+fma"]}})}})
        A[0] = T.float32(0.0)
'''

SOURCES["cuda_vector_add"] = '''
@T.prim_func
def vector_add(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"}), "tir.noalias": True})
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            C[bx * 128 + tx] = A[bx * 128 + tx] + B[bx * 128 + tx]
'''

SOURCES["cuda_vector_add_launch_thread"] = '''
@T.prim_func
def vector_add(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90"}), "tir.noalias": True})
    bx = T.launch_thread("blockIdx.x", 8)
    tx = T.launch_thread("threadIdx.x", 128)
    C[bx * 128 + tx] = A[bx * 128 + tx] + B[bx * 128 + tx]
'''

SOURCES["cuda_launch_thread_with_forms"] = '''
@T.prim_func
def launch_forms(A: T.Buffer((1024,), "float32"), n: T.int32):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
    A[0] = T.float32(1.0)
    bx = T.env_thread("blockIdx.x")
    with T.launch_thread(bx, 4):
        ty = T.launch_thread("threadIdx.y", 2)
        tx = T.launch_thread("threadIdx.x", 32)
        A[bx * 64 + ty * 32 + tx] = T.float32(0.0)
        with T.launch_thread("vthread", 2) as vt:
            A[vt] = T.float32(2.0)
    by = T.launch_thread("blockIdx.y", n)
    A[by] = T.float32(3.0)
'''

SOURCES["cuda_shared_reduction"] = f'''
@T.prim_func
def reduce_sum(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256,), "float32")):
    T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_90", "host": {HOST}}}), "tir.noalias": True}})
    for bx in T.thread_binding(256, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            S = T.alloc_shared((128,), "float32")
            acc = T.alloc_local((1,), "float32")
            acc[0] = T.float32(0.0)
            for k in range(2):
                acc[0] = acc[0] + A[bx, k * 128 + tx]
            S[tx] = acc[0]
            T.tvm_storage_sync("shared")
            for s in T.unroll(7):
                if tx < T.shift_right(64, s):
                    S[tx] = S[tx] + S[tx + T.shift_right(64, s)]
                T.tvm_storage_sync("shared")
            if tx == 0:
                B[bx] = S[0]
'''

SOURCES["buffers_symbolic_match_buffer"] = '''
@T.prim_func
def sym(a: T.handle, b: T.handle, d: T.handle):
    T.func_attr({"tir.noalias": True})
    n = T.int32()
    m = T.int32()
    s0 = T.int32()
    s1 = T.int32()
    A = T.match_buffer(a, (n, m), "float32")
    B = T.match_buffer(b, (n, m), "float32", strides=(s0, s1))
    D = T.match_buffer(d, (n * 2, 8), "int8", offset_factor=16)
    for i, j in T.grid(n, m):
        B[i, j] = A[i, j]
    for i in range(n * 2):
        D[i, 0] = T.int8(1)
'''

SOURCES["buffers_symbolic_scalar_param"] = '''
@T.prim_func
def sym_param(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n, 4), "float16")
    for i in range(n):
        A[i] = T.Cast("float32", B[i, 0])
'''

SOURCES["buffers_symbolic_int64_typevar"] = '''
@T.prim_func
def sym64(a: T.handle, c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, T.int64(4)), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i, T.int64(0)]
'''

SOURCES["buffers_strides_offset_scope"] = '''
@T.prim_func
def buffers(A: T.Buffer((16, 16), "float32", strides=(32, 1), elem_offset=3), B: T.Buffer((4,), "float32", scope="shared"), C: T.Buffer((4,), "float32", align=128, offset_factor=4), D: T.Buffer((2, 3, 4), "int8"), E: T.Buffer((8,), "float32", scope="local")):
    A[0, 0] = B[0] + C[0] + E[0]
    D[1, 2, 3] = T.int8(0)
'''

SOURCES["alloc_scopes"] = '''
@T.prim_func
def allocs(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "int8")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    S0 = T.alloc_shared((128,), "float32")
    S1 = T.alloc_shared((128,), "int8")
    S2 = T.alloc_buffer((8, 16), "float16", scope="shared")
    S3 = T.alloc_buffer((128,), "float32", scope="shared.dyn")
    L1 = T.alloc_buffer((4, 4), "float32", scope="local")
    L2 = T.alloc_local((4,), "int32")
    G1 = T.alloc_buffer((64,), "float32", scope="global")
    G2 = T.alloc_buffer((64,), "bfloat16")
    W = T.alloc_buffer((32,), "float32", scope="warp")
    S0[tx] = A[tx]
    S1[tx] = B[bx * 128 + tx]
    S2[tx // 16, tx % 16] = T.Cast("float16", S0[tx])
    S3[tx] = A[tx]
    L1[0, 1] = S3[tx]
    L2[0] = T.Cast("int32", S1[tx])
    G1[0] = L1[0, 1]
    G2[0] = T.Cast("bfloat16", G1[0])
    W[0] = T.Cast("float32", G2[0])
    B[tx] = T.Cast("int8", L2[0])
'''

SOURCES["decl_buffer_aliasing"] = '''
@T.prim_func
def decls(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "int32"), p: T.handle("float16")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
    tx = T.launch_thread("threadIdx.x", 32)
    X = T.alloc_buffer((64,), "float32")
    Y = T.decl_buffer((8, 8), "float32", data=X.data)
    Z = T.decl_buffer((16,), "int32", data=X.data)
    W = T.decl_buffer((32,), "float16", data=A.data, elem_offset=4)
    P = T.decl_buffer((16,), "float16", data=p)
    S = T.decl_buffer((128,), "float32", scope="shared")
    SD = T.alloc_buffer((256,), "float32", scope="shared.dyn")
    D1 = T.decl_buffer((64,), "float32", data=SD.data, scope="shared.dyn")
    D2 = T.decl_buffer((32,), "float16", data=SD.data, scope="shared.dyn")
    L = T.alloc_local((4,), "int32")
    L2 = T.decl_buffer((2, 2), "int32", data=L.data, scope="local")
    Y[1, 2] = A[0]
    Z[3] = B[0]
    W[0] = T.float16(1.0)
    P[tx] = W[0]
    S[tx] = Y[1, 2]
    D1[tx] = S[tx]
    D2[tx] = T.Cast("float16", D1[tx])
    L2[1, 1] = Z[3]
    B[tx] = L[3]
'''

SOURCES["local_scalars_let_mutable"] = '''
@T.prim_func
def scalars(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "int32"), n: T.int32):
    i: T.int32 = 0
    s: T.float32 = T.float32(0.0)
    while i < n:
        s = s + A[i]
        i = i + 1
    k: T.let[T.int32] = n * 2
    h: T.let[T.float16] = T.Cast("float16", s)
    m: T.int32 = n + 3
    u: T.uint8
    u = T.uint8(200)
    acc = T.alloc_local((1,), "int64")
    acc[0] = T.int64(0)
    for j in range(n):
        acc[0] = acc[0] + T.Cast("int64", B[j])
    cnt: T.int32 = 0
    while cnt < 10 and s > T.float32(0.0):
        s = s * T.float32(0.5)
        cnt = cnt + 1
    A[0] = s + T.Cast("float32", h)
    B[0] = k + m + T.Cast("int32", u) + T.Cast("int32", acc[0]) + cnt
'''

SOURCES["loops_all_kinds"] = '''
@T.prim_func
def loops(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((8, 8), "float32"), n: T.int32):
    for i in range(16):
        B[i] = A[i]
    for i in T.serial(16):
        B[i] = A[i]
    for i in T.serial(0, 16, annotations={"pragma_unroll_explicit": 0}):
        B[i] = A[i]
    for i in range(2, 10):
        B[i] = A[i]
    for i in T.serial(2, n):
        B[i] = A[i]
    for i in range(0, 16, 2):
        B[i] = A[i]
    for i in T.parallel(4):
        for j in T.vectorized(4):
            B[i * 4 + j] = A[i * 4 + j] * T.float32(2.0)
    for i in T.parallel(2, 10):
        B[i] = A[i]
    for i in T.vectorized(2, 6):
        B[i] = A[i]
    for i in T.unroll(4):
        B[i] = A[i]
    for i in T.unroll(4, annotations={"pragma_auto_unroll_max_step": 16}):
        B[i] = A[i]
    for i, j in T.grid(8, 8):
        C[i, j] = A[i * 8 + j]
    for i in range(8):
        for j in range(8):
            C[i, j] = C[i, j] + T.float32(1.0)
    for i in range(8):
        B[i] = A[i]
        for j in range(8):
            C[i, j] = T.float32(0.0)
    for i in range(n):
        if i > 10:
            break
        if i == 3:
            continue
        B[i] = A[i]
'''

SOURCES["loops_thread_binding"] = '''
@T.prim_func
def tb(A: T.Buffer((4096,), "float32")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90"})})
    for bz in T.thread_binding(2, thread="blockIdx.z"):
        for by in T.thread_binding(2, thread="blockIdx.y"):
            for bx in T.thread_binding(4, thread="blockIdx.x"):
                for tz in T.thread_binding(2, thread="threadIdx.z"):
                    for ty in T.thread_binding(4, thread="threadIdx.y"):
                        for tx in T.thread_binding(32, thread="threadIdx.x"):
                            A[((((bz * 2 + by) * 4 + bx) * 2 + tz) * 4 + ty) * 32 % 4096 + tx] = T.float32(1.0)
    for vt in T.thread_binding(2, thread="vthread.x"):
        A[vt] = T.float32(0.0)
    for tx in T.thread_binding(2, 34, thread="threadIdx.x", annotations={"pragma_x": 1}):
        A[tx] = T.float32(2.0)
'''

SOURCES["control_if_else_while"] = '''
@T.prim_func
def ctrl(A: T.Buffer((64,), "int32"), n: T.int32, flag: T.bool):
    if n > 0:
        A[0] = 1
    if n > 0:
        A[1] = 1
    else:
        A[1] = 2
    if n < 0:
        A[2] = -1
    else:
        if n == 0:
            A[2] = 0
        else:
            A[2] = 1
    if flag:
        A[3] = 1
    if not flag and n != 5:
        A[4] = 1
    i: T.int32 = 0
    while i < n:
        if i % 2 == 0:
            A[i] = i
        else:
            A[i] = -i
        i = i + 1
    while T.bool(True):
        if i >= 100:
            break
        i = i * 2
'''

SOURCES["attr_statements"] = f'''
@T.prim_func
def attrs(A: T.Buffer((16,), "float32"), n: T.int32):
    T.func_attr({{"target": T.target({LLVM})}})
    with T.attr(T.target({{"kind": "cuda", "arch": "sm_80"}}), "target", 0):
        A[0] = T.float32(1.0)
    with T.attr(0, "compute_scope", "attrs_compute_"):
        A[1] = T.float32(2.0)
    with T.attr(0, "pragma_a", 1):
        A[2] = T.float32(3.0)
        with T.attr(0, "pragma_b", 1):
            A[3] = T.float32(3.0)
    with T.attr(A.data, "storage_alignment", 128):
        A[4] = T.float32(4.0)
    with T.attr("default", "device_type", 2):
        A[5] = T.float32(5.0)
    if n > 0:
        with T.attr(A.data, "storage_alignment", 64):
            A[6] = T.float32(6.0)
    if n > 1:
        with T.attr(0, "pragma_c", n):
            A[7] = T.float32(7.0)
    T.attr("default", "device_id", n)
    A[8] = T.float32(8.0)
'''

SOURCES["attr_thread_extent"] = '''
@T.prim_func
def thread_extent(A: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
    tx = T.env_thread("threadIdx.x")
    bx = T.env_thread("blockIdx.x")
    T.launch_thread(bx, 2)
    T.launch_thread(tx, 64)
    A[bx * 64 + tx] = T.float32(0.0)
'''

SOURCES["target_nvptx"] = '''
@T.prim_func
def scale(A: T.Buffer((64,), "float32")):
    T.func_attr({"target": T.target({"kind": "nvptx", "mcpu": "sm_86", "host": {"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu"}})})
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        A[tx] = A[tx] * T.float32(2)
'''

SOURCES["asserts"] = '''
@T.prim_func
def asserts(A: T.Buffer((16,), "float32"), n: T.int32):
    assert n > 0, "n must be positive"
    T.Assert(n < 100, "too big")
    assert n != 7, ("ValueError", ["bad n: ", "7"])
    A[0] = T.float32(0.0)
'''

SOURCES["expr_arith_int"] = '''
@T.prim_func
def arith(A: T.Buffer((48,), "int32"), x: T.int32, y: T.int32, z: T.int32):
    A[0] = x + y
    A[1] = x - y
    A[2] = x * y
    A[3] = x // y
    A[4] = x % y
    A[5] = T.truncdiv(x, y)
    A[6] = T.truncmod(x, y)
    A[7] = T.floordiv(x, y)
    A[8] = T.floormod(x, y)
    A[9] = T.min(x, y) + T.max(x, y)
    A[10] = -x
    A[11] = (x + y) * (x - y)
    A[12] = x - (y - x)
    A[13] = x - y - x
    A[14] = x * (y // 2)
    A[15] = x * y // 2
    A[16] = x // (y * z)
    A[17] = x // y * z
    A[18] = x % y % z
    A[19] = x % (y % z)
    A[20] = -(x + y)
    A[21] = x * y * z
    A[22] = x * (y * z)
    A[23] = x - (y + z)
    A[24] = x + (y - z)
    A[25] = x + y + z
    A[26] = x + (y + z)
    A[27] = x * -1 + -5
    A[28] = x - -3
    A[29] = 0 - x
    A[30] = 2147483647
    A[31] = -2147483648
    A[32] = T.ceildiv(x, 4)
    A[33] = T.min(T.max(x, 0), 255)
    A[34] = (x + 1) // (y - 1) % 7
    A[35] = T.abs(x)
    A[36] = T.Div(x, 3) + T.truncmod(x, 3)
'''

SOURCES["expr_const_binops"] = '''
@T.prim_func
def const_ops(A: T.Buffer((32,), "int32"), F: T.Buffer((4,), "float32"), Bo: T.Buffer((10,), "bool")):
    A[0] = T.Add(1, 2)
    A[1] = T.Sub(1, 2)
    A[2] = T.Mul(3, 4)
    A[3] = T.FloorDiv(7, 2)
    A[4] = T.FloorMod(7, 2)
    A[5] = T.Div(7, 2)
    A[9] = T.LShift(1, 3)
    A[10] = T.RShift(64, 2)
    A[11] = T.BitwiseAnd(6, 3)
    A[12] = T.BitwiseOr(6, 3)
    A[13] = T.BitwiseXor(6, 3)
    A[14] = T.BitwiseNot(6)
    A[15] = T.Add(T.Mul(2, 3), 4)
    A[16] = T.Add(1, 2) * T.Sub(5, 3)
    Bo[0] = T.LT(1, 2)
    Bo[1] = T.LE(1, 2)
    Bo[2] = T.GT(1, 2)
    Bo[3] = T.GE(1, 2)
    Bo[4] = T.EQ(1, 2)
    Bo[5] = T.NE(1, 2)
    Bo[6] = T.And(T.bool(True), T.bool(False))
    Bo[7] = T.Or(T.bool(True), T.bool(False))
    Bo[8] = T.Not(T.bool(True))
    F[0] = T.Add(T.float32(1.0), T.float32(2.0))
    F[1] = T.Div(T.float32(1.0), T.float32(2.0))
    F[2] = T.Mul(T.float32(1.5), T.float32(-2.0))
'''

SOURCES["expr_compare_logic"] = '''
@T.prim_func
def logic(A: T.Buffer((16,), "int32"), x: T.int32, y: T.int32, z: T.int32, b: T.bool, c: T.bool):
    A[0] = T.Cast("int32", x == y) + T.Cast("int32", x != y) + T.Cast("int32", x > y) + T.Cast("int32", x >= y)
    A[1] = T.Cast("int32", x < y) + T.Cast("int32", x <= y)
    A[2] = T.Cast("int32", x < y and y < 3 or not b)
    A[3] = T.Cast("int32", T.And(x < y, T.Or(b, T.Not(c))))
    A[4] = T.Cast("int32", not (x < y and y < z))
    A[5] = T.Cast("int32", (x < y or y < z) and z < x)
    A[6] = T.Cast("int32", b and c and not b)
    A[7] = T.Cast("int32", b or c or b)
    A[8] = T.Cast("int32", b == c)
    A[9] = T.Cast("int32", b != c)
    A[10] = T.Cast("int32", not not b)
    A[11] = T.Cast("int32", T.likely(x < y))
    A[12] = T.if_then_else(x < y and b, x, y)
    A[13] = T.Select(x <= y, x, y)
    A[14] = T.Select(b, T.if_then_else(c, 1, 2), 3)
'''

SOURCES["expr_bitwise_shift"] = '''
@T.prim_func
def bits(A: T.Buffer((24,), "int32"), U: T.Buffer((8,), "uint32"), L: T.Buffer((4,), "int64"), x: T.int32, y: T.int32, z: T.int32, u: T.uint32, w: T.int64):
    A[0] = x & y
    A[1] = x | y
    A[2] = x ^ y
    A[3] = ~x
    A[4] = x << 2
    A[5] = x >> y
    A[6] = x & y | x ^ y
    A[7] = (x | y) & z
    A[8] = x << y + 1
    A[9] = (x + y) << 1
    A[10] = x ^ y ^ z
    A[11] = x ^ (y ^ z)
    A[12] = ~(x + y)
    A[13] = T.shift_left(x, 1) + T.shift_right(x, 1)
    A[14] = T.bitwise_and(x, 3) + T.bitwise_or(x, 3) + T.bitwise_xor(x, 3) + T.bitwise_not(x)
    A[15] = (x >> 4) & 15
    A[16] = x >> 4 & 15
    A[17] = x & 255 << 8
    A[18] = T.popcount(x) + T.clz(x)
    A[19] = x << 1 << 2
    A[20] = x << (1 << 2)
    U[0] = u >> T.uint32(3)
    U[1] = u & T.uint32(4294967295)
    U[2] = ~u
    L[0] = w << T.int64(32) | T.Cast("int64", x)
    L[1] = T.Cast("int64", x) * T.int64(1099511627776)
'''

SOURCES["expr_float_math"] = '''
@T.prim_func
def fmath(F: T.Buffer((32,), "float32"), D: T.Buffer((8,), "float64"), H: T.Buffer((4,), "float16"), fx: T.float32, fy: T.float32, dx: T.float64, hx: T.float16):
    F[0] = fx / fy
    F[1] = T.Div(fx, T.float32(3.0))
    F[2] = T.exp(fx) + T.log(fx) + T.sqrt(fx) + T.tanh(fx) + T.pow(fx, T.float32(2.0)) + T.fabs(fx)
    F[3] = T.sigmoid(fx) + T.exp2(fx) + T.exp10(fx) + T.log2(fx) + T.log10(fx) + T.log1p(fx)
    F[4] = T.sin(fx) + T.cos(fx) + T.tan(fx) + T.asin(fx) + T.acos(fx) + T.atan(fx)
    F[5] = T.sinh(fx) + T.cosh(fx) + T.asinh(fx) + T.acosh(fx) + T.atanh(fx)
    F[6] = T.floor(fx) + T.ceil(fx) + T.round(fx) + T.trunc(fx) + T.nearbyint(fx)
    F[7] = T.rsqrt(fx) + T.erf(fx)
    F[8] = T.fma(fx, fy, T.float32(1.0))
    F[9] = T.atan2(fx, fy) + T.fmod(fx, fy) + T.hypot(fx, fy) + T.copysign(fx, fy) + T.nextafter(fx, fy)
    F[10] = T.abs(fx)
    F[11] = T.min(fx, fy) + T.max(fx, fy)
    F[12] = -fx
    F[13] = fx * (fy + T.float32(1.0)) - fx / (fy - T.float32(1.0))
    F[14] = T.if_then_else(fx < fy, fx, T.float32(0.0))
    F[15] = T.Select(fx <= fy, fx, T.float32(-1.5))
    F[16] = T.Cast("float32", T.isnan(fx)) + T.Cast("float32", T.isinf(fx)) + T.Cast("float32", T.isfinite(fx))
    F[17] = T.ldexp(fx, T.Cast("float32", 2))
    D[0] = T.exp(dx) + T.sqrt(dx)
    D[1] = T.Cast("float64", fx) * dx
    H[0] = T.exp(hx) * T.float16(0.5)
    H[1] = T.max(hx, T.float16(0.0))
'''

SOURCES["expr_cast_reinterpret"] = '''
@T.prim_func
def casts(A: T.Buffer((8,), "int32"), F: T.Buffer((8,), "float32"), x: T.int32, fx: T.float32, h: T.float16, w: T.int64):
    A[0] = T.Cast("int32", fx)
    A[1] = T.Cast("int32", w)
    A[2] = T.Cast("int32", T.Cast("int8", x))
    A[3] = T.reinterpret("int32", fx)
    A[4] = T.Cast("int32", T.Cast("uint16", x) + T.uint16(1))
    F[0] = T.Cast("float32", x)
    F[1] = T.Cast("float32", h)
    F[2] = T.reinterpret("float32", x)
    F[3] = T.Cast("float32", T.Cast("bfloat16", fx))
    F[4] = T.Cast("float32", T.Cast("float8_e4m3fn", fx))
    F[5] = T.Cast("float32", x == 0)
'''

SOURCES["literals_float_formats"] = '''
@T.prim_func
def float_lits(F: T.Buffer((24,), "float32"), D: T.Buffer((16,), "float64"), H: T.Buffer((8,), "float16")):
    F[0] = T.float32(1.0)
    F[1] = T.float32(0.5)
    F[2] = T.float32(-2.25)
    F[3] = T.float32(0.1)
    F[4] = T.float32(1e-30)
    F[5] = T.float32(1e-5)
    F[6] = T.float32(0.0001)
    F[7] = T.float32(100000.0)
    F[8] = T.float32(1e20)
    F[9] = T.float32(-0.0)
    F[10] = T.float32(3.4028234663852886e+38)
    F[11] = T.float32("inf")
    F[12] = T.float32("-inf")
    F[13] = T.float32("nan")
    F[14] = T.float32(123.456)
    F[15] = T.float32(1e-7)
    F[16] = T.float32(2)
    F[17] = T.Add(T.float32(0.1), T.float32(0.2))
    D[0] = T.float64(0.1)
    D[1] = T.float64(1.0e-300)
    D[2] = T.float64(3.141592653589793)
    D[3] = T.float64(1e10)
    D[4] = T.float64(1e17)
    D[5] = T.float64("inf")
    D[6] = T.float64("-inf")
    D[7] = T.float64(-1e-10)
    H[0] = T.float16(1.0)
    H[1] = T.float16(0.3)
    H[2] = T.float16(-65504.0)
    H[3] = T.float16("inf")
'''

SOURCES["literals_int_formats"] = '''
@T.prim_func
def int_lits(A: T.Buffer((8,), "int32"), L: T.Buffer((8,), "int64"), U: T.Buffer((8,), "uint64"), S: T.Buffer((4,), "int8"), Bo: T.Buffer((4,), "bool")):
    A[0] = 0
    A[1] = -1
    A[2] = 2147483647
    A[3] = -2147483648
    A[4] = T.int32(5)
    L[0] = T.int64(0)
    L[1] = T.int64(-1)
    L[2] = T.int64(9223372036854775807)
    L[3] = T.int64(-9223372036854775808)
    L[4] = T.int64(1099511627776)
    U[0] = T.uint64(0)
    U[1] = T.uint64(4294967296)
    U[2] = T.uint64(9223372036854775807)
    S[0] = T.int8(-128)
    S[1] = T.int8(127)
    Bo[0] = T.bool(True)
    Bo[1] = T.bool(False)
    Bo[2] = T.bool(1)
'''

SOURCES["strings_and_extern_calls"] = '''
@T.prim_func
def externs(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32"), n: T.int32):
    T.evaluate(T.call_extern("int32", "printf", "hello %d", n))
    T.call_extern("void", "my_fn", A.data, n)
    T.call_extern("void", "my_fn2", A.data, B.data, T.float32(1.5), "a b", "apos'", "back\\\\slash", "tab\\t", "q\\"uote", "")
    B[0] = T.call_pure_extern("int32", "abs", n)
    A[0] = T.call_extern("float32", "my_float", A[1], T.Cast("float32", n))
    A[1] = T.call_pure_extern("float32", "__expf", A[2])
    T.call_packed("my_packed_func", A.data, n)
    A[2] = T.call_intrin("float32", "tirx.exp", A[5])
    T.evaluate(A[3] + T.float32(1.0))
    T.evaluate(T.address_of(A[4]))
    T.evaluate(T.tvm_access_ptr(T.type_annotation("float32"), A.data, 0, 16, 1))
'''

# Calls of tvm-ffi's global registry from host code: run by tests/backends/cpu/test_packed_calls.py
# against the values TVM 0.27's own build gives (recorded there).
SOURCES["call_packed_host"] = '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), B: T.Buffer((2,), "int32"), n: T.int32):
        T.func_attr({"target": T.target({"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu"})})
        B[0] = T.call_packed("tirc_test.record", A.data, n, "hello", T.float32(2.5))
        T.evaluate(T.call_packed("tirc_test.record", A.data, n + 1, "again", T.float32(0.5)))
        B[1] = T.call_packed("tirc_test.record", A.data, 7, "third", T.float32(1))
'''

# A public function calling another public one (TVM 0.27's own build stops at an
# internal error on it; tirc calls the callee's packed symbol): tests/backends/cpu/test_packed_calls.py.
SOURCES["module_public_calls_public"] = '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), B: T.Buffer((1,), "int32"), n: T.int32):
        T.func_attr({"target": T.target({"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu"})})
        Module.fill(A, n)
        B[0] = Module.twice(n)
        A[3] = A[3] + T.float32(1)

    @T.prim_func
    def fill(X: T.Buffer((4,), "float32"), x: T.int32):
        T.func_attr({"target": T.target({"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu"})})
        assert x < 100, "x is too large"
        for i in range(4):
            X[i] = T.Cast("float32", x + i)

    @T.prim_func
    def twice(x: T.int32) -> T.int32:
        T.func_attr({"target": T.target({"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu"})})
        return x * 2
'''

SOURCES["cuda_intrinsics_sync"] = '''
@T.prim_func
def cuda_intrins(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_shared((128,), "float32")
    D = T.alloc_buffer((128,), "float32", scope="shared.dyn")
    S[tx] = A[bx * 128 + tx]
    T.tvm_storage_sync("shared")
    D[tx] = S[127 - tx]
    T.tvm_storage_sync("shared.dyn")
    T.tvm_storage_sync("warp")
    mask: T.let[T.uint32] = T.tvm_warp_activemask()
    v: T.let[T.float32] = T.tvm_warp_shuffle(mask, D[tx], 0, 32, 32)
    v2: T.let[T.float32] = T.tvm_warp_shuffle_down(mask, v, 16, 32, 32)
    B[bx * 128 + tx] = v2 + T.call_pure_extern("float32", "__expf", v)
'''

SOURCES["vector_ramp_broadcast"] = '''
@T.prim_func
def vec(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((16, 4), "float32"), H: T.Buffer((64,), "float16"), I32: T.Buffer((64,), "int32")):
    for i in T.serial(16):
        B[T.Ramp(i * 4, 1, 4)] = A[T.Ramp(i * 4, 1, 4)] + T.Broadcast(T.float32(1.0), 4)
    B[T.Ramp(0, 2, 4)] = T.Broadcast(A[0], 4)
    v: T.float32x4 = A[T.Ramp(8, 1, 4)]
    B[T.Ramp(8, 1, 4)] = v * T.Broadcast(T.float32(3.0), 4)
    w: T.let[T.float32x4] = A[T.Ramp(16, 1, 4)]
    B[T.Ramp(16, 1, 4)] = T.Select(w > T.Broadcast(T.float32(0.0), 4), w, T.Broadcast(T.float32(0.0), 4))
    C[1, T.Ramp(0, 1, 4)] = A[T.Ramp(0, 1, 4)]
    H[T.Ramp(0, 1, 8)] = T.Cast("float16x8", A[T.Ramp(0, 1, 8)])
    I32[T.Ramp(0, 1, 4)] = T.Ramp(0, 1, 4) * T.Broadcast(2, 4)
    B[0] = T.Shuffle([A[T.Ramp(0, 1, 4)]], [3])
    B[T.Ramp(32, 1, 4)] = T.Shuffle([A[T.Ramp(0, 1, 4)], A[T.Ramp(4, 1, 4)]], [0, 2, 4, 6])
'''

SOURCES["vector_dtypes_scalars"] = '''
@T.prim_func
def vec_dtypes(A: T.Buffer((64,), "float32"), H: T.Buffer((64,), "float16"), I: T.Buffer((64,), "int8"), x: T.float32x4, y: T.int32x4, z: T.float16x8):
    A[T.Ramp(0, 1, 4)] = x
    H[T.Ramp(0, 1, 8)] = z
    I[T.Ramp(0, 1, 4)] = T.Cast("int8x4", y)
    a: T.float32x4 = A[T.Ramp(4, 1, 4)]
    b: T.int8x16 = I[T.Ramp(16, 1, 16)]
    c: T.let[T.float16x4] = H[T.Ramp(8, 1, 4)]
    A[T.Ramp(8, 1, 4)] = a
    H[T.Ramp(16, 1, 4)] = c
    I[T.Ramp(32, 1, 16)] = b
'''


def _dtypes_source() -> str:
    dts = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
           "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float8_e3m4", "float8_e4m3",
           "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"]
    params = ", ".join(f'B_{d}: T.Buffer((4,), "{d}"), s_{d}: T.{d}' for d in dts)
    body = []
    for d in dts:
        if d == "bool":
            body += [f"    B_{d}[0] = T.bool(True)", f"    B_{d}[1] = T.bool(False)",
                     f"    B_{d}[2] = s_{d}", f"    B_{d}[3] = s_int32 > 0"]
        elif d.startswith(("int", "uint")):
            body += [f"    B_{d}[0] = T.{d}(7)", f"    B_{d}[1] = s_{d}",
                     f'    B_{d}[2] = T.Cast("{d}", s_int32)']
            if d.startswith("int"):
                body.append(f"    B_{d}[3] = T.{d}(-7)")
            else:
                body.append(f"    B_{d}[3] = s_{d} + T.{d}(1)")
        else:
            body += [f"    B_{d}[0] = T.{d}(1.5)", f"    B_{d}[1] = s_{d}",
                     f'    B_{d}[2] = T.Cast("{d}", s_float32)']
            # TVM 0.27 rejects negative literals for *fnuz / e8m0 ("unsigned") formats
            if "fnuz" not in d and "e8m0" not in d:
                body.append(f"    B_{d}[3] = T.{d}(-2.0)")
    return f"\n@T.prim_func\ndef dtypes_all({params}):\n" + "\n".join(body) + "\n"


SOURCES["dtypes_all"] = _dtypes_source()

SOURCES["handles_pointers"] = '''
@T.prim_func
def handles(p: T.handle, q: T.handle("float32"), r: T.handle("int8", "shared"), n: T.int32):
    A = T.decl_buffer((16,), "float32", data=q)
    R = T.decl_buffer((16,), "int8", data=r, scope="shared")
    A[0] = T.Cast("float32", R[n])
    T.call_extern("void", "consume", p, q, r)
'''

SOURCES["cuda_gemm_tiled_lowered"] = f'''
@T.prim_func
def gemm(A: T.Buffer((1024, 1024), "float16"), B: T.Buffer((1024, 1024), "float16"), C: T.Buffer((1024, 1024), "float32")):
    T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_80", "host": {HOST}}}), "tir.noalias": True}})
    for by in T.thread_binding(32, thread="blockIdx.y"):
        for bx in T.thread_binding(32, thread="blockIdx.x"):
            for ty in T.thread_binding(8, thread="threadIdx.y"):
                for tx in T.thread_binding(32, thread="threadIdx.x"):
                    As = T.alloc_shared((32, 32), "float16")
                    Bs = T.alloc_shared((32, 32), "float16")
                    acc = T.alloc_local((4,), "float32")
                    for i in T.unroll(4):
                        acc[i] = T.float32(0.0)
                    for ko in range(32):
                        for l in T.unroll(4):
                            As[ty * 4 + l, tx] = A[by * 32 + ty * 4 + l, ko * 32 + tx]
                            Bs[ty * 4 + l, tx] = B[ko * 32 + ty * 4 + l, bx * 32 + tx]
                        T.tvm_storage_sync("shared")
                        for ki in range(32):
                            for i in T.unroll(4):
                                acc[i] = acc[i] + T.Cast("float32", As[ty * 4 + i, ki]) * T.Cast("float32", Bs[ki, tx])
                        T.tvm_storage_sync("shared")
                    for i in T.unroll(4):
                        C[by * 32 + ty * 4 + i, bx * 32 + tx] = acc[i]
'''

# --------------------------------------------------------------------------
# Pipelines: inputs run through (a subset of) TVM's s_tir default pipeline;
# the printed module is snapshotted after selected passes.
# --------------------------------------------------------------------------

VADD_INPUT = f'''
@I.ir_module
class Module:
    @T.prim_func
    def vector_add(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_80", "host": {HOST}}}), "tir.noalias": True}})
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                C[bx * 128 + tx] = A[bx * 128 + tx] + B[bx * 128 + tx]
'''

REDUCE_INPUT = f'''
@I.ir_module
class Module:
    @T.prim_func
    def reduce_sum(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_90", "host": {HOST}}}), "tir.noalias": True}})
        for bx in T.thread_binding(256, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                S = T.alloc_shared((128,), "float32")
                acc = T.alloc_local((1,), "float32")
                acc[0] = T.float32(0.0)
                for k in range(2):
                    acc[0] = acc[0] + A[bx, k * 128 + tx]
                S[tx] = acc[0]
                for s in T.unroll(7):
                    if tx < T.shift_right(64, s):
                        S[tx] = S[tx] + S[tx + T.shift_right(64, s)]
                if tx == 0:
                    B[bx] = S[0]
'''

VEC_MATH_INPUT = f'''
@I.ir_module
class Module:
    @T.prim_func
    def vec_math(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_80", "host": {HOST}}}), "tir.noalias": True}})
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                for v in T.vectorized(4):
                    B[bx * 512 + tx * 4 + v] = T.exp(A[bx * 512 + tx * 4 + v]) * T.float32(0.5) + T.sqrt(A[bx * 512 + tx * 4 + v])
'''

DYN_SHARED_INPUT = f'''
@I.ir_module
class Module:
    @T.prim_func
    def dyn_smem(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float16"), C: T.Buffer((1024,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "cuda", "arch": "sm_90", "host": {HOST}}}), "tir.noalias": True}})
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                X = T.alloc_buffer((128,), "float32", scope="shared.dyn")
                Y = T.alloc_buffer((128,), "float16", scope="shared.dyn")
                X[tx] = A[bx * 128 + tx]
                Y[tx] = B[bx * 128 + tx]
                C[bx * 128 + tx] = X[127 - tx] + T.Cast("float32", Y[127 - tx])
'''


def _s_tir_passes():
    """(name, pass) list mirroring tvm.s_tir.pipeline.default_s_tir_pipeline,
    up to SplitHostDevice (MakePackedAPI output references `metadata[...]`
    and does not re-parse, so it is not part of the corpus)."""
    t, s = tirx.transform, s_tir.transform
    return [
        ("CanonicalizeLoop", s.CanonicalizeLoop()),
        ("LowerCrossThreadReduction", s.LowerCrossThreadReduction()),
        ("LowerInitBlock", s.LowerInitBlock()),
        ("PlanAndUpdateBufferAllocationLocation", s.PlanAndUpdateBufferAllocationLocation()),
        ("ConvertBlocksToOpaque", s.ConvertBlocksToOpaque()),
        ("LiftThreadBinding", s.LiftThreadBinding()),
        ("ManifestSharedMemoryLocalStage", s.ManifestSharedMemoryLocalStage()),
        ("CompactBufferAllocation", s.CompactBufferAllocation()),
        ("LowerAutoCopy", s.LowerAutoCopy()),
        ("UnifyThreadBinding", s.UnifyThreadBinding()),
        ("LowerMatchBuffer", s.LowerMatchBuffer()),
        ("StmtSimplify0", s.StmtSimplify()),
        ("InjectPermutedLayout", s.InjectPermutedLayout()),
        ("AnnotateIrregularLoop", s.AnnotateIrregularLoop()),
        ("InjectSoftwarePipeline", s.InjectSoftwarePipeline()),
        ("TransformMmaBufferLayout", s.TransformMmaBufferLayout()),
        ("LowerOpaqueBlock", s.LowerOpaqueBlock()),
        ("FlattenBuffer", t.FlattenBuffer()),
        ("BF16ComputeLegalize", t.BF16ComputeLegalize()),
        ("NarrowDataType", t.NarrowDataType(32)),
        ("LoopPartition", s.LoopPartition()),
        ("VectorizeLoop", t.VectorizeLoop(True)),
        ("InjectVirtualThread", s.InjectVirtualThread()),
        ("InjectDoubleBuffer", s.InjectDoubleBuffer()),
        ("StorageRewrite", t.StorageRewrite()),
        ("HoistIfThenElse", s.HoistIfThenElse()),
        ("UnrollLoop", t.UnrollLoop()),
        ("RenormalizeSplitPattern", s.RenormalizeSplitPattern()),
        ("StmtSimplify", t.StmtSimplify()),
        ("RemoveNoOp", t.RemoveNoOp()),
        ("RewriteUnsafeSelect", s.RewriteUnsafeSelect()),
        ("CommonSubexprElim", t.CommonSubexprElim()),
        ("FP8ComputeLegalize", t.FP8ComputeLegalize()),
        ("VerifyMemory", t.VerifyMemory()),
        ("AnnotateEntryFunc", t.AnnotateEntryFunc()),
        ("ThreadSync_shared", s.ThreadSync("shared")),
        ("ThreadSync_shared_dyn", s.ThreadSync("shared.dyn")),
        ("ThreadSync_warp", s.ThreadSync("warp")),
        ("InferFragment", s.InferFragment()),
        ("LowerThreadAllreduce", s.LowerThreadAllreduce()),
        ("MergeSharedMemoryAllocations", s.MergeSharedMemoryAllocations()),
        ("SplitHostDevice", t.SplitHostDevice()),
    ]


# pipeline name -> (input source, {pass name after which to snapshot: file stem})
# Special snapshot key "DeviceFinalize": the *_kernel functions after
# tvm.tirx.compilation_pipeline.finalize_device_passes() (LowerWarpMemory,
# StmtSimplify, LowerIntrin), as a separate module.
PIPELINES = {
    "vector_add": (VADD_INPUT, {
        "LowerOpaqueBlock": "lowered_vector_add_01_lower_opaque_block",
        "FlattenBuffer": "lowered_vector_add_02_flatten_buffer",
        "CommonSubexprElim": "lowered_vector_add_03_cse",
        "SplitHostDevice": "lowered_vector_add_04_split_host_device",
        "DeviceFinalize": "lowered_vector_add_05_device_finalized",
    }),
    "reduce_sum": (REDUCE_INPUT, {
        "LowerOpaqueBlock": "lowered_reduce_sum_01_lower_opaque_block",
        "FlattenBuffer": "lowered_reduce_sum_02_flatten_buffer",
        "UnrollLoop": "lowered_reduce_sum_03_unroll_loop",
        "ThreadSync_shared": "lowered_reduce_sum_04_thread_sync",
        "SplitHostDevice": "lowered_reduce_sum_05_split_host_device",
        "DeviceFinalize": "lowered_reduce_sum_06_device_finalized",
    }),
    "vec_math": (VEC_MATH_INPUT, {
        "VectorizeLoop": "lowered_vec_math_01_vectorize_loop",
        "SplitHostDevice": "lowered_vec_math_02_split_host_device",
        "DeviceFinalize": "lowered_vec_math_03_device_finalized",
    }),
    "dyn_smem": (DYN_SHARED_INPUT, {
        "MergeSharedMemoryAllocations": "lowered_dyn_smem_01_merge_shared_memory",
        "SplitHostDevice": "lowered_dyn_smem_02_split_host_device",
    }),
}


# Files whose text re-parses but whose re-print differs (TVM printer/parser
# asymmetries, see NOTES.md).  Everything else is a byte-exact fixed point.
NOT_FIXED_POINT = {
    # ThreadSync inserts tvm_storage_sync("shared") with one argument; the
    # parser's T.tvm_storage_sync expands it to ("shared", T.bool(False), -1).
    "lowered_reduce_sum_04_thread_sync",
    "lowered_reduce_sum_05_split_host_device",
    "lowered_reduce_sum_06_device_finalized",
    "lowered_dyn_smem_01_merge_shared_memory",
    "lowered_dyn_smem_02_split_host_device",
}

# --------------------------------------------------------------------------

def _check_fixed_point(name: str, text: str) -> bool:
    """Re-parse `text` (must succeed); return True iff re-printing is identical."""
    try:
        again = from_source(text).script()
    except Exception as err:  # noqa: BLE001
        raise RuntimeError(f"{name}: printed text does not re-parse:\n{err}") from err
    return again == text


def _render_sources() -> dict[str, str]:
    out = {}
    for name, src in SOURCES.items():
        try:
            mod = from_source(src)
        except Exception as err:  # noqa: BLE001
            raise RuntimeError(f"{name}: source does not parse:\n{err}") from err
        out[name] = mod.script()
    return out


def _render_pipelines() -> dict[str, str]:
    out = {}
    for pname, (src, snaps) in PIPELINES.items():
        mod = from_source(src)
        out[f"lowered_{pname}_00_input"] = mod.script()
        with tvm.transform.PassContext(opt_level=3):
            for pass_name, p in _s_tir_passes():
                mod = p(mod)
                if pass_name in snaps:
                    out[snaps[pass_name]] = mod.script()
            if "DeviceFinalize" in snaps:
                dev = tvm.IRModule({gv: f for gv, f in mod.functions.items()
                                    if gv.name_hint.endswith("_kernel")})
                dev = tir_pipeline.finalize_device_passes()(dev)
                out[snaps["DeviceFinalize"]] = dev.script()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 if any file on disk differs")
    args = ap.parse_args(argv)

    texts = {}
    texts.update(_render_sources())
    texts.update(_render_pipelines())
    not_fixed = sorted(n for n, t in texts.items() if not _check_fixed_point(n, t))
    unexpected = [n for n in not_fixed if n not in NOT_FIXED_POINT]
    if unexpected:
        raise RuntimeError(f"print(parse(text)) != text for: {unexpected}")
    stale = [n for n in NOT_FIXED_POINT if n not in not_fixed]
    if stale:
        print(f"note: now fixed points, remove from NOT_FIXED_POINT: {stale}")

    if args.check:
        bad = [n for n, t in texts.items()
               if not (args.out / f"{n}.tir").exists()
               or (args.out / f"{n}.tir").read_text() != t]
        for n in bad:
            print(f"differs: {n}.tir")
        return 1 if bad else 0

    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.tir"):
        if old.stem not in texts:
            old.unlink()
    for name, text in sorted(texts.items()):
        (args.out / f"{name}.tir").write_text(text)  # exact script() text
    print(f"wrote {len(texts)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
