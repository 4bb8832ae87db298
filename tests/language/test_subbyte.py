"""Sub-byte integer dtypes (int1, int2, int4, uint2, uint4), packed as DLPack lays them
out: ``8 // bits`` elements to a byte, element ``i`` of a byte in its bits
``[i * bits, (i + 1) * bits)`` (little bit-endian, dlpack.h), the way TVM's CUDA code
reads them (``*((int*)A + i / 8)`` for an ``int4x8`` at element ``i``).

TVM 0.27's own LLVM backend is no reference here: it steps over an int4 buffer one byte
per element for a scalar access (``getelementptr i4``) while a vector access reads
packed nibbles, so its CPU results disagree with its CUDA ones. The values below are
computed from DLPack's layout with NumPy.

What builds: whole-byte accesses (a contiguous vector of ``lanes * bits`` a multiple of
8 at an element index provably a multiple of ``8 // bits``) are one load or store; a
scalar or other vector load reads its byte(s) and shifts; a store of part of a byte is
a read-modify-write: plain in a GPU thread's ``local`` memory, two atomic byte
operations (``and``, ``or``) on the CPU, and refused elsewhere on the GPU (no 8-bit
``atom`` in PTX). Scalable vectors of sub-byte elements are refused.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ptxas_check, TESTS
from test_backend_llvm_ir import filecheck, llvm_ir
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.ir.dtype import parse_dtype
from tirc.frontend.parse import parse

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def func(body: str, params: str) -> str:
    return HEAD + "@T.prim_func\ndef f(" + params + "):\n" + textwrap.indent(textwrap.dedent(body), "    ")


def _error(text: str, tmp_path, target: str = "llvm", host: str | None = None) -> Diagnostic:
    with pytest.raises(Diagnostic) as info:
        build(text, target, host, tmp_path / "out", "m", filename="t.tir")
    err = info.value
    assert err.span is not None and err.span.file == "t.tir", str(err)
    return err


def _line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


# -- dtype facts -------------------------------------------------------------------------
@pytest.mark.parametrize("name, bits, packs, signed", [
    ("int4", 4, 2, True), ("uint4", 4, 2, False), ("int2", 2, 4, True), ("uint2", 2, 4, False),
    ("int1", 1, 8, True),
])
def test_sub_byte_dtypes(name, bits, packs, signed):
    d = parse_dtype(name)
    assert d.is_subbyte and d.bits == bits and d.packs == packs and d.is_int == signed
    v = parse_dtype(name + "x8")
    assert v.lanes == 8 and v.element() == d and str(v) == name + "x8"


def test_uint1_is_still_bool_and_bytes_are_not_sub_byte():
    assert parse_dtype("uint1") == parse_dtype("bool") and not parse_dtype("bool").is_subbyte
    assert not parse_dtype("int8").is_subbyte and parse_dtype("int8").packs == 1


def test_widths_that_do_not_divide_a_byte_are_refused_where_written():
    text = func("A[0] = 0", 'A: T.Buffer((4,), "int3")')
    with pytest.raises(Diagnostic) as info:
        parse(text, "t.tir")
    assert "sub-byte integer dtype 'int3' is not supported" in info.value.message
    assert info.value.span.line == _line_of(text, "def f")


# -- LLVM IR -----------------------------------------------------------------------------
def test_whole_byte_vector_access_is_one_load_and_store(tmp_path):
    filecheck(llvm_ir(func("""
        for i in range(8):
            B[T.Ramp(i * 8, 1, 8)] = A[T.Ramp(i * 8, 1, 8)]
        """, 'A: T.Buffer((64,), "int4"), B: T.Buffer((64,), "int4")')), r"""
        CHECK: for_body
        CHECK: [[W:%.+]] = load i32, ptr
        CHECK: [[V:%.+]] = bitcast i32 [[W]] to <8 x i4>
        CHECK: [[S:%.+]] = bitcast <8 x i4> [[V]] to i32
        CHECK: store i32 [[S]], ptr
        CHECK-NOT: atomicrmw
        """, tmp_path)


def test_a_let_bound_index_is_seen_through(tmp_path):
    filecheck(llvm_ir(func("""
        for i in range(4):
            j: T.int32 = i * 16
            B[T.Ramp(j, 1, 16)] = A[T.Ramp(j, 1, 16)]
        """, 'A: T.Buffer((64,), "int4"), B: T.Buffer((64,), "int4")')), r"""
        CHECK: for_body
        CHECK: load i64, ptr
        CHECK: bitcast i64 {{.*}} to <16 x i4>
        """, tmp_path)


def test_scalar_and_unaligned_accesses_read_the_byte_and_shift(tmp_path):
    filecheck(llvm_ir(func("""
        for i in range(63):
            C[i] = T.Cast("int32", A[i + 1])
        """, 'A: T.Buffer((64,), "int4"), C: T.Buffer((64,), "int32")')), r"""
        CHECK: for_body
        CHECK: lshr i64 {{.*}}, 1
        CHECK: [[B:%.+]] = load i8, ptr
        CHECK: [[X:%.+]] = lshr i8 [[B]],
        CHECK: trunc i8 [[X]] to i4
        CHECK: sext i4
        """, tmp_path)


def test_a_partial_byte_store_on_the_cpu_is_two_atomic_byte_operations(tmp_path):
    filecheck(llvm_ir(func("""
        for i in T.parallel(64):
            A[i] = T.Cast("uint4", C[i])
        """, 'C: T.Buffer((64,), "int32"), A: T.Buffer((64,), "uint4")')), r"""
        CHECK: atomicrmw and ptr {{.*}}, i8 {{.*}} monotonic
        CHECK: atomicrmw or ptr {{.*}}, i8 {{.*}} monotonic
        """, tmp_path)


def test_a_partial_byte_store_in_local_memory_is_a_plain_read_modify_write(tmp_path):
    # each thread fills its own local int4 fragment nibble by nibble (as TVM's
    # m16n8k64 mma modules do), then stores it as two 32-bit words; LLVM folds the
    # read-modify-writes of the nibble pairs into byte copies
    text = func("""
        with T.launch_thread("blockIdx.x", 1) as bx:
            L = T.alloc_local((16,), "int4")
            tx = T.launch_thread("threadIdx.x", 32)
            for i in range(16):
                L[i] = A[tx * 16 + i]
            for i in range(2):
                B[T.Ramp(tx * 16 + i * 8, 1, 8)] = L[T.Ramp(i * 8, 1, 8)]
        """, 'A: T.Buffer((512,), "int4"), B: T.Buffer((512,), "int4")')
    result = build(text, "cuda -arch=sm_80", "llvm", tmp_path, "m", device_format="ptx")
    (image,) = result.images.values()
    ptx = open(image).read()
    assert "atom" not in ptx
    filecheck(ptx, r"""
        CHECK: .local .align 16 .b8 __local_depot0[{{8|16}}];
        CHECK: ld.global.b8 [[B:%rs[0-9]+]], [
        CHECK: st.local.b8 [{{.*}}], [[B]];
        CHECK: ld.local.v2.b32
        CHECK: st.global.b8
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


# -- run on the CPU through tvm-ffi, with DLPack's packed layout --------------------------
PRODUCER = r'''
import ctypes, sys
import numpy as np, tvm_ffi
from ctypes import POINTER, c_int64
from tirc.runtime import dlpack as dl


class Packed:
    """A DLPack producer of sub-byte dtype (code, bits, lanes) over ``base``'s bytes."""

    def __init__(self, base, shape, dtype, byte_offset=0):
        self.base, self.shape, self.dtype, self.byte_offset = base, shape, dtype, byte_offset

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        shape = (c_int64 * len(self.shape))(*self.shape)
        m = dl.DLManagedTensor()
        t = m.dl_tensor
        t.data, t.device, t.ndim = self.base.ctypes.data, dl.DLDevice(1, 0), len(self.shape)
        t.dtype = dl.DLDataType(*self.dtype)
        t.shape, t.strides, t.byte_offset = ctypes.cast(shape, POINTER(c_int64)), None, self.byte_offset
        m.deleter = dl._delete_managed
        address = ctypes.addressof(m)
        dl._LIVE[address] = (m, shape, None, self)
        return dl._capsule_new(address, b"dltensor", dl._capsule_destructor)


def packed(base, n, dtype, byte_offset=0):
    return tvm_ffi.from_dlpack(Packed(base, (n,), dtype, byte_offset))


def pack(v, bits):
    v = np.asarray(v, np.int64) & ((1 << bits) - 1)
    per = 8 // bits
    out = np.zeros(len(v) // per, np.int64)
    for k in range(per):
        out |= v[k::per] << (k * bits)
    return out.astype(np.uint8)


def unpack(b, bits, signed):
    per = 8 // bits
    out = np.empty(len(b) * per, np.int64)
    for k in range(per):
        out[k::per] = (b.astype(np.int64) >> (k * bits)) & ((1 << bits) - 1)
    return np.where(out >= 1 << (bits - 1), out - (1 << bits), out) if signed else out


def attempt(name, call):
    try:
        call()
        print(name, "OK")
    except (TypeError, ValueError) as e:
        print(name, type(e).__name__, " ".join(str(e).split()))
'''

RUN = PRODUCER + r'''
lib = tvm_ffi.load_module(sys.argv[1])
rng = np.random.default_rng(0)
a = rng.integers(-8, 8, 64)
A, B = pack(a, 4), np.zeros(32, np.uint8)
lib["add_one"](packed(A, 64, (0, 4, 1)), packed(B, 64, (0, 4, 1)))
print("add_one", np.array_equal(unpack(B, 4, True), (a + 1 + 8) % 16 - 8))
C = np.zeros(64, np.int32)
lib["widen"](packed(A, 64, (0, 4, 1)), tvm_ffi.from_dlpack(C))
print("widen", np.array_equal(C[:63], a[1:]) and C[63] == 0)
c = rng.integers(0, 1000, 64).astype(np.int32)
U = np.full(32, 0xA5, np.uint8)
lib["narrow"](tvm_ffi.from_dlpack(c), packed(U, 64, (1, 4, 1)))
print("narrow", np.array_equal(unpack(U, 4, False), c & 15))
m = rng.integers(0, 2, 256)
M, N = pack(m, 1), np.zeros(32, np.uint8)
lib["bits"](packed(M, 256, (0, 1, 1)), packed(N, 256, (0, 1, 1)))
print("bits", np.array_equal(N, M ^ 0xFF))
attempt("wrong_bits", lambda: lib["widen"](packed(A, 64, (0, 8, 1)), tvm_ffi.from_dlpack(C)))
attempt("wrong_code", lambda: lib["widen"](packed(A, 64, (1, 4, 1)), tvm_ffi.from_dlpack(C)))
attempt("offset", lambda: lib["widen"](packed(A, 64, (0, 4, 1), byte_offset=1), tvm_ffi.from_dlpack(C)))
P = np.zeros(40, np.uint8)
P[8:] = A
attempt("view", lambda: lib["view"](packed(P, 64, (0, 4, 1), byte_offset=8), tvm_ffi.from_dlpack(C)))
print("view_values", np.array_equal(C, a))
'''

CPU = """
    @I.ir_module
    class Module:
        @T.prim_func
        def add_one(A: T.Buffer((64,), "int4"), B: T.Buffer((64,), "int4")):
            for i in range(8):
                B[T.Ramp(i * 8, 1, 8)] = A[T.Ramp(i * 8, 1, 8)] + T.Broadcast(T.int4(1), 8)

        @T.prim_func
        def widen(A: T.Buffer((64,), "int4"), C: T.Buffer((64,), "int32")):
            for i in range(63):
                C[i] = T.Cast("int32", A[i + 1])
            C[63] = 0

        @T.prim_func
        def narrow(C: T.Buffer((64,), "int32"), A: T.Buffer((64,), "uint4")):
            for i in T.parallel(64):
                A[i] = T.Cast("uint4", C[i])

        @T.prim_func
        def bits(M: T.Buffer((256,), "int1"), N: T.Buffer((256,), "int1")):
            for i in range(8):
                N[T.Ramp(i * 32, 1, 32)] = T.bitwise_not(M[T.Ramp(i * 32, 1, 32)])

        @T.prim_func
        def view(a: T.handle, C: T.Buffer((64,), "int32")):
            off = T.int64()
            A = T.match_buffer(a, (64,), "int4", elem_offset=off)
            for i in range(64):
                C[i] = T.Cast("int32", A[i])
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_packed_int4_and_int1_run_through_tvm_ffi(tmp_path):
    pytest.importorskip("numpy")
    pytest.importorskip("tvm_ffi")
    build(HEAD + textwrap.dedent(CPU), "llvm", None, tmp_path, "m", shared=True)
    proc = subprocess.run([sys.executable, "-c", RUN, str(tmp_path / "m.so")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"child died ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    for name in ("add_one", "widen", "narrow", "bits", "view_values"):
        assert out[name] == "True", (name, proc.stdout)
    assert out["wrong_bits"].startswith("TypeError Mismatched A.dtype") and "expected int4" in out["wrong_bits"]
    assert out["wrong_code"].startswith("TypeError Mismatched A.dtype")
    assert out["offset"].startswith("ValueError Invalid A.byte_offset") and "expected 0" in out["offset"]
    assert out["view"] == "OK"


# -- the GPU: TVM's int4/int1 mma modules and what is refused ---------------------------
def test_c_header_declares_packed_buffers_as_bytes(tmp_path):
    build(HEAD + textwrap.dedent(CPU), "llvm", None, tmp_path, "m", abi="c")
    assert "int32_t add_one(uint8_t* A, uint8_t* B);" in (tmp_path / "m.h").read_text()


def test_partial_byte_store_to_shared_memory_on_the_gpu_is_refused(tmp_path):
    text = func("""
        with T.launch_thread("blockIdx.x", 1) as bx:
            tx = T.launch_thread("threadIdx.x", 32)
            A[tx] = T.int4(1)
        """, 'A: T.Buffer((32,), "int4")')
    err = _error(text, tmp_path, "cuda -arch=sm_80", "llvm")
    assert "a store of part of a byte of sub-byte buffer 'A' (int4, scope 'global')" in err.message
    assert "no byte atomics" in err.message
    assert err.span.line == _line_of(text, "A[tx] =")


def test_unaligned_vector_store_on_the_gpu_is_refused(tmp_path):
    text = func("""
        with T.launch_thread("blockIdx.x", 1) as bx:
            tx = T.launch_thread("threadIdx.x", 32)
            A[T.Ramp(tx * 8 + 1, 1, 8)] = T.Broadcast(T.int4(1), 8)
        """, 'A: T.Buffer((300,), "int4")')
    err = _error(text, tmp_path, "cuda -arch=sm_80", "llvm")
    assert "a store of part of a byte of sub-byte buffer 'A'" in err.message
    assert err.span.line == _line_of(text, "A[T.Ramp")


def test_address_of_a_packed_element_is_refused(tmp_path):
    text = func("""
        B[0] = T.reinterpret("int64", T.address_of(A[3]))
        """, 'A: T.Buffer((32,), "int4"), B: T.Buffer((1,), "int64")')
    err = _error(text, tmp_path)
    assert "the address of an element of sub-byte buffer 'A' (int4) is not supported" in err.message


def test_mma_offset_from_a_packed_pointer_is_refused(tmp_path):
    text = func("""
        with T.launch_thread("blockIdx.x", 1) as bx:
            Accum = T.alloc_local((2,), "int32")
            MultiA = T.alloc_local((16,), "int4")
            MultiB = T.alloc_local((16,), "int4")
            tx = T.launch_thread("threadIdx.x", 32)
            T.ptx_legacy.mma("m8n8k32", "row", "col", "int4", "int4", "int32", MultiA.data, 8, MultiB.data, 0, Accum.data, 0, T.bool(False))
            C[tx] = Accum[0]
        """, 'C: T.Buffer((32,), "int32")')
    err = _error(text, tmp_path, "cuda -arch=sm_80", "llvm")
    assert "(A's offset) must be 0 with a pointer to packed int4 elements" in err.message
    assert err.span.line == _line_of(text, "T.ptx_legacy.mma")


def test_constant_elem_offset_inside_a_byte_is_refused(tmp_path):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(a: T.handle, C: T.Buffer((8,), "int32")):
            A = T.match_buffer(a, (8,), "int4", elem_offset=3)
            for i in range(8):
                C[i] = T.Cast("int32", A[i])
        """)
    err = _error(text, tmp_path)
    assert "has elem_offset 3, not a multiple of the 2 elements a byte holds" in err.message


def test_int4_m16n8k64_mma_of_a_tvm_module_assembles(tmp_path):
    """TVM's m16n8k64 int4 module with the m16n8k64 mma (tests/testing/test_simt_ptx.py runs it):
    four A, two B registers of packed nibbles, copied to them as bytes."""
    from pathlib import Path
    path = TESTS / "corpus" / "tvm_tests" / "test_tir_ptx_mma__15.tir"
    text = path.read_text().replace('T.ptx_legacy.mma("m8n8k32"', 'T.ptx_legacy.mma("m16n8k64"')
    result = build(text, "cuda -arch=sm_80", "llvm", tmp_path, "m", device_format="ptx")
    (image,) = result.images.values()
    ptx = open(image).read()
    filecheck(ptx, r"""
        CHECK: mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}, {{{.*}}};
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


def test_shared_int4_tile_runs_on_the_simt_interpreter(tmp_path):
    """Whole-byte stores into a shared int4 tile (128 bytes for 256 elements), a barrier,
    then nibble loads in reverse: the PTX stores 32-bit words and assembles, and the SIMT
    interpreter (tirc/testing/simt_subbyte.py) gives the reversed input."""
    np = pytest.importorskip("numpy")
    from tirc.testing import simt
    text = func("""
        with T.launch_thread("blockIdx.x", 1) as bx:
            S = T.alloc_buffer((256,), "int4", scope="shared")
            tx = T.launch_thread("threadIdx.x", 32)
            S[T.Ramp(tx * 8, 1, 8)] = A[T.Ramp(tx * 8, 1, 8)]
            T.tvm_storage_sync("shared")
            for i in range(8):
                C[tx * 8 + i] = T.Cast("int32", S[255 - tx * 8 - i])
        """, 'A: T.Buffer((256,), "int4"), C: T.Buffer((256,), "int32")')
    a = np.random.default_rng(1).integers(-8, 8, 256)
    c = np.zeros(256, np.int32)
    simt.run(text, "f", [((a[0::2] & 15) | ((a[1::2] & 15) << 4)).astype(np.uint8), c])
    np.testing.assert_array_equal(c, a[::-1])
    result = build(text, "cuda -arch=sm_80", "llvm", tmp_path, "m", device_format="ptx")
    (image,) = result.images.values()
    ptx = open(image).read()
    filecheck(ptx, r"""
        CHECK: .shared .align 16 .b8 f_kernel_S[128];
        CHECK: st.shared.b32
        CHECK: bar.sync
        CHECK: ld.shared.b8
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


def test_a_packed_call_gets_a_sub_byte_tensor_at_its_byte_offset(tmp_path):
    """``T.tvm_stack_make_array`` over an int4 buffer from element 4: the callee's tensor
    is int4 and starts 2 bytes in (DLPack's byte_offset of packed elements)."""
    np = pytest.importorskip("numpy")
    tvm_ffi = pytest.importorskip("tvm_ffi")
    scope: dict = {}
    exec(PRODUCER, scope)  # noqa: S102 (the test's own DLPack producer)
    seen = []

    @tvm_ffi.register_global_func("tirc_test.subbyte_seen", override=True)
    def _seen(t):
        seen.append((str(t.dtype), tuple(t.shape), t.data_ptr()))

    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((16,), "int4")):
            T.call_packed("tirc_test.subbyte_seen", T.tvm_stack_make_array(A.data, T.tvm_stack_make_shape(8), 0, 1, T.int4(0), 4))
        """)
    build(text, "llvm", None, tmp_path, "m", shared=True)
    base = np.arange(8, dtype=np.uint8)
    tvm_ffi.load_module(str(tmp_path / "m.so"))["f"](scope["packed"](base, 16, (0, 4, 1)))
    assert seen == [("int4", (8,), base.ctypes.data + 2)]
    err = _error(text.replace("T.int4(0), 4)", "T.int4(0), 3)"), tmp_path)
    assert "packed 4-bit elements at an element offset not provably a multiple of 2" in err.message


def test_reinterpret_of_eight_packed_nibbles_is_their_word(tmp_path):
    filecheck(llvm_ir(func("""
        for i in range(8):
            C[i] = T.reinterpret("int32", A[T.Ramp(i * 8, 1, 8)])
        """, 'A: T.Buffer((64,), "int4"), C: T.Buffer((8,), "int32")')), r"""
        CHECK: for_body
        CHECK: [[W:%.+]] = load i32, ptr
        CHECK: [[V:%.+]] = bitcast i32 [[W]] to <8 x i4>
        CHECK: bitcast <8 x i4> [[V]] to i32
        """, tmp_path)


def test_masked_access_of_packed_elements_is_refused(tmp_path):
    text = func("""
        for i in range(4):
            B[T.Ramp(i * 8, 1, 8)] = T.masked_load("int4x8", A, T.Ramp(i * 8, 1, 8), T.get_active_lane_mask("uint1x8", i * 8, 30))
        """, 'A: T.Buffer((32,), "int4"), B: T.Buffer((32,), "int4")')
    err = _error(text, tmp_path)
    assert err.span.line == _line_of(text, "T.masked_load")
    assert "of packed sub-byte elements (buffer 'A', int4) is not supported" in err.message
