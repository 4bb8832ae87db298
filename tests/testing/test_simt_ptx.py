"""The SIMT interpreter's PTX instructions. The warp-wide ``T.ptx_legacy.mma``
(tirc/testing/simt_mma.py): the mma modules of TVM's own tests, run on the CPU, compute
what TVM's tests check on a GPU, C = A B^T (A row-major M x K, B given as N x K: the "col"
layout). The scalar ``T.ptx.add/mul/max``: TVM's scalar f32 math module, bit for bit.
``ldmatrix`` and ``cp.async`` (tirc/testing/simt_copy.py): TVM's modules of both give what
TVM's tests expect."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tirc.frontend.parse import parse
from tirc.testing import simt
from tirc.testing.evaluate import Unsupported
from conftest import TESTS

CORPUS = TESTS / "corpus" / "tvm_tests"
INDEX = json.loads((CORPUS / "index.json").read_text())

# the modules' m, n, k and types: test_tir_ptx_mma__N.tir
MODULES = {1: "f64 m8n8k4", 4: "s8 m8n8k16", 5: "s8u8 m8n8k16", 9: "f16 m16n8k16 -> f16",
           10: "f16 m16n8k16 -> f32", 11: "s8 m16n8k16", 12: "s8u8 m16n8k16",
           13: "s8 m16n8k32", 14: "s8u8 m16n8k32"}


def _arrays(fn, rng):
    out = []
    for p in fn.params:
        b = fn.buffer_of(p)
        shape, dt = tuple(int(s.value) for s in b.shape), str(b.dtype)
        if dt.startswith("float"):
            out.append(rng.uniform(-1, 1, shape).astype(dt))
        else:
            lo = -128 if dt == "int8" else 0
            out.append(rng.integers(lo, 128 if dt == "int8" else 256, shape).astype(dt))
    out[-1][:] = 0
    return out


@pytest.mark.parametrize("number", sorted(MODULES), ids=[MODULES[n] for n in sorted(MODULES)])
def test_tvm_mma_module_computes_a_matmul(number):
    name = f"test_tir_ptx_mma__{number}.tir"
    text = (CORPUS / name).read_text()
    a, b, c = _arrays(parse(text, name).functions["main"], np.random.default_rng(number))
    simt.run(text, "main", [a, b, c], INDEX[name]["target"], INDEX[name]["host"], filename=name)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    if c.dtype == np.int32:
        np.testing.assert_array_equal(c, want.astype(np.int64))
    elif c.dtype == np.float16:
        np.testing.assert_allclose(c, want, rtol=2e-3, atol=2e-3)
    else:
        np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-6)


# int4/uint4 modules: their A and B are passed packed, two elements to a byte (element
# 0 in the low nibble, DLPack's layout, which the interpreter reads as the code does).
# TVM's m16n8k64 tests (15, 16) fill 16 x 64 fragments but call the m8n8k32 mma, which
# reads the first 8 elements of each and writes two of the four accumulators: C's first
# 8 rows are A[:8, :32] B[:, :32]^T and the rest stays 0.
INT4_MODULES = {6: "s4 m8n8k32", 7: "s4u4 m8n8k32", 15: "s4 m16n8k64 (calls m8n8k32)",
                16: "s4u4 m16n8k64 (calls m8n8k32)"}


def _pack4(v: np.ndarray) -> np.ndarray:
    flat = v.reshape(-1).astype(np.int64) & 15
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


@pytest.mark.parametrize("number", sorted(INT4_MODULES), ids=[INT4_MODULES[n] for n in sorted(INT4_MODULES)])
def test_tvm_int4_mma_module_computes_a_matmul(number):
    name = f"test_tir_ptx_mma__{number}.tir"
    text = (CORPUS / name).read_text()
    fn = parse(text, name).functions["main"]
    rng = np.random.default_rng(number)
    values = []
    for p in fn.params[:2]:
        b = fn.buffer_of(p)
        shape = tuple(int(s.value) for s in b.shape)
        values.append(rng.integers(-8, 8, shape) if str(b.dtype) == "int4" else rng.integers(0, 16, shape))
    a, b = values
    c = np.zeros(tuple(int(s.value) for s in fn.buffer_of(fn.params[2]).shape), np.int32)
    simt.run(text, "main", [_pack4(a), _pack4(b), c], INDEX[name]["target"], INDEX[name]["host"],
             filename=name)
    want = np.zeros_like(c)
    want[:8] = a[:8, :32] @ b[:, :32].T
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("number", [15, 16])
def test_int4_m16n8k64_mma_computes_a_matmul(number):
    """TVM's m16n8k64 modules with the m16n8k64 mma their fragments are laid out for."""
    name = f"test_tir_ptx_mma__{number}.tir"
    text = (CORPUS / name).read_text().replace('T.ptx_legacy.mma("m8n8k32"', 'T.ptx_legacy.mma("m16n8k64"')
    rng = np.random.default_rng(number)
    a = rng.integers(-8, 8, (16, 64))
    b = rng.integers(-8, 8, (8, 64)) if number == 15 else rng.integers(0, 16, (8, 64))
    c = np.zeros((16, 8), np.int32)
    simt.run(text, "main", [_pack4(a), _pack4(b), c], INDEX[name]["target"], INDEX[name]["host"],
             filename=name)
    np.testing.assert_array_equal(c, a @ b.T)


_HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"


def test_mma_by_part_of_a_warp_is_not_interpreted():
    text = _HEAD + textwrap.dedent("""
    @T.prim_func
    def main(A: T.Buffer((32,), "float64"), C: T.Buffer((64,), "float64")):
        with T.launch_thread("blockIdx.x", 1) as bx:
            Accum = T.alloc_local((2,), "float64")
            M = T.alloc_local((1,), "float64")
            tx = T.launch_thread("threadIdx.x", 32)
            M[0] = A[tx]
            Accum[0] = T.float64(0.0)
            Accum[1] = T.float64(0.0)
            if tx < 16:
                T.ptx_legacy.mma("m8n8k4", "row", "col", "float64", "float64", "float64", M.data, 0, M.data, 0, Accum.data, 0, T.bool(False))
            C[tx * 2] = Accum[0]
            C[tx * 2 + 1] = Accum[1]
    """)
    with pytest.raises(Unsupported, match="run by part of a warp"):
        simt.run(text, "main", [np.ones(32), np.zeros(64)])


def test_vector_element_of_a_local_buffer_at_a_constant_index():
    """A store and a load of element 0 of a local int8x4 buffer, the same index in every
    thread (TVM's mma tests fill their fragments so): the interpreter took the vector's
    lanes for threads and failed to broadcast them."""
    text = _HEAD + textwrap.dedent("""
    @T.prim_func
    def main(A: T.Buffer((128,), "int8"), B: T.Buffer((128,), "int8")):
        with T.launch_thread("blockIdx.x", 1) as bx:
            V = T.alloc_local((1,), "int8x4")
            tx = T.launch_thread("threadIdx.x", 32)
            V[0] = A[T.Ramp(tx * 4, 1, 4)]
            B[T.Ramp(tx * 4, 1, 4)] = V[0] + T.Broadcast(T.int8(1), 4)
    """)
    a = np.arange(128).astype(np.int8)
    b = np.zeros(128, np.int8)
    simt.run(text, "main", [a, b])
    np.testing.assert_array_equal(b, a + np.int8(1))


def test_tvm_scalar_f32_math_module():
    """T.ptx.add.rn/mul.rn/max of .f32 (TVM's test_tir_ptx_scalar_f32_math, which checks
    the results bit for bit); max returns the number of a NaN and a number."""
    name = "test_tir_ptx_scalar_f32_math__1.tir"
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(32).astype("float32"), rng.standard_normal(32).astype("float32")
    a[3], b[5] = np.nan, np.nan
    c_add, c_mul, c_max = (np.zeros(32, "float32") for _ in range(3))
    simt.run((CORPUS / name).read_text(), "default_function", [a, b, c_add, c_mul, c_max],
             INDEX[name]["target"], INDEX[name]["host"], filename=name)
    np.testing.assert_array_equal(c_add, a + b)
    np.testing.assert_array_equal(c_mul, a * b)
    np.testing.assert_array_equal(c_max, np.fmax(a, b))
    assert c_max[3] == b[3] and c_max[5] == a[5]


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_tvm_ldmatrix_module(num, trans):
    """TVM's ldmatrix test (its module with the other num/trans it specializes): the 8x8
    matrices it loads land in B as TVM's test expects (transposed each with .trans); the
    rest of B comes from registers ldmatrix did not write."""
    name = "test_tir_ptx_ldmatrix__1.tir"
    text = (CORPUS / name).read_text().replace("ldmatrix(T.bool(False), 1,", f"ldmatrix(T.bool({trans}), {num},")
    a = np.random.default_rng(num).random((16, 16)).astype("float16")
    b = np.zeros((16, 16), "float16")
    simt.run(text, "default_function", [a, b], INDEX[name]["target"], INDEX[name]["host"], filename=name)
    # matrix i holds rows 8 (i % 2).., columns 8 (i // 2)..
    for i in range(num):
        rows, cols = slice(8 * (i % 2), 8 * (i % 2) + 8), slice(8 * (i // 2), 8 * (i // 2) + 8)
        want = a[rows, cols].T if trans else a[rows, cols]
        np.testing.assert_array_equal(b[rows, cols], want)


def test_tvm_cp_async_module():
    name = "test_tir_ptx_cp_async__1.tir"
    a = np.random.default_rng(0).standard_normal((32, 128)).astype("float16")
    b = np.zeros((32, 128), "float16")
    simt.run((CORPUS / name).read_text(), "default_function", [a, b], INDEX[name]["target"],
             INDEX[name]["host"], filename=name)
    np.testing.assert_array_equal(b, a)


def test_cp_async_zero_fills_under_a_false_predicate():
    text = _HEAD + textwrap.dedent("""
    @T.prim_func
    def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
        with T.launch_thread("blockIdx.x", 1) as bx:
            S = T.alloc_shared((256,), "float32")
            tx = T.launch_thread("threadIdx.x", 32)
            for i in range(2):
                T.s_tir.cp_async_raw("float32", S.data, tx * 8 + i * 4, A.data, tx * 8 + i * 4, 16, tx % 2 == 0)
            T.ptx.cp("async", "commit_group", "")
            T.ptx.cp(0, "async", "wait_group", "")
            for i in range(8):
                B[tx * 8 + i] = S[tx * 8 + i]
    """)
    a = np.arange(256, dtype="float32") + 1
    b = np.full(256, -1, "float32")
    simt.run(text, "main", [a, b])
    want = np.where((np.arange(256) // 8) % 2 == 0, a, 0)
    np.testing.assert_array_equal(b, want)


def test_cp_async_past_the_source_is_out_of_bounds():
    text = _HEAD + textwrap.dedent("""
    @T.prim_func
    def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        with T.launch_thread("blockIdx.x", 1) as bx:
            S = T.alloc_shared((128,), "float32")
            tx = T.launch_thread("threadIdx.x", 32)
            T.s_tir.cp_async_raw("float32", S.data, tx * 4, A.data, tx * 4 + 2, 16)
            T.ptx.cp("async", "wait_all", "")
            B[tx] = S[tx]
    """)
    with pytest.raises(simt.OutOfBounds, match="out-of-bounds read of global buffer 'A'"):
        simt.run(text, "main", [np.ones(128, "float32"), np.zeros(128, "float32")])
