"""Warp intrinsics and extern calls in device code (NVPTX backend), as TVM's CUDA code
generator maps them; found by building the TVM corpus's cuda_intrinsics_sync.tir, which
used to stop with "T.tvm_warp_activemask is not supported by the LLVM backend"."""
from __future__ import annotations

import textwrap

import pytest

from tirc.backends.cuda import libdevice as libdevice_module
from test_backend_nvptx import HEAD, _libdevice_path, filecheck, images
from tirc.diagnostics import Diagnostic
from conftest import TESTS

CORPUS = TESTS / "corpus" / "tvm"


@pytest.fixture
def libdevice(monkeypatch):
    path = _libdevice_path()
    if path is None:
        pytest.skip("no libdevice.10.bc on this machine")
    monkeypatch.setattr(libdevice_module, "locate", lambda: path)


def test_tvm_corpus_warp_intrinsics_and_fast_exp(tmp_path, libdevice):
    """TVM 0.27's own text: __syncwarp, activemask, __shfl_sync, __shfl_down_sync, __expf."""
    text = (CORPUS / "cuda_intrinsics_sync.tir").read_text()
    filecheck(images(text, "cuda -arch=sm_80")["sm_80"].ptx, r"""
        CHECK: .visible .entry cuda_intrins_kernel(
        CHECK: bar.sync 0;
        CHECK: bar.sync 0;
        CHECK-NEXT: bar.warp.sync -1;
        CHECK-NEXT: activemask.b32 [[MASK:%r[0-9]+]];
        CHECK: shfl.sync.idx.b32 [[V:%r[0-9]+]], {{%r[0-9]+}}, 0, 31, [[MASK]];
        CHECK-NEXT: shfl.sync.down.b32 {{%r[0-9]+}}, [[V]], 16, 31, [[MASK]];
        CHECK: ex2.approx.f32
    """, tmp_path)


def test_shuffle_widths_clamps_and_dtypes(tmp_path):
    """The third operand packs (warp_size - width) << 8 with the clamp (0 for up); 64-bit
    values move as two 32-bit shuffles, 8-bit ones widened."""
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((32,), "float64"), B: T.Buffer((32,), "int8"), C: T.Buffer((32,), "int32")):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                A[tx] = T.tvm_warp_shuffle_up(T.uint32(4294967295), A[tx], 1, 16, 32)
                B[tx] = T.tvm_warp_shuffle_xor(T.uint32(4294967295), B[tx], 2, 16, 32)
                C[tx] = T.tvm_warp_shuffle(T.uint32(4294967295), C[tx], tx + 1, 32, 32)
    """)
    filecheck(images(text)["sm_90"].ptx, r"""
        CHECK: shfl.sync.up.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 4096, -1;
        CHECK-NEXT: shfl.sync.up.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 4096, -1;
        CHECK: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2, 4127, -1;
        CHECK: shfl.sync.idx.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, 31, -1;
    """, tmp_path)


def test_vector_shuffle_is_a_diagnostic():
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((128,), "float32")):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                A[T.Ramp(tx * 4, 1, 4)] = T.tvm_warp_shuffle(T.uint32(4294967295), A[T.Ramp(tx * 4, 1, 4)], 0, 32, 32)
    """)
    with pytest.raises(Diagnostic, match=r"T\.tvm_warp_shuffle of a vector \(float32x4\)") as e:
        images(text, filename="v.tir")
    assert e.value.span is not None and e.value.span.line == 7


EXTERNS = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float64")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = T.call_pure_extern("float32", "expf", A[tx]) + T.call_pure_extern("float32", "__fdividef", A[tx], T.float32(3.0))
            B[tx] = T.call_extern("float64", "exp", B[tx])
""")


def test_cuda_math_names_resolve_to_libdevice(tmp_path, libdevice):
    ptx = images(EXTERNS)["sm_90"].ptx
    assert "__nv_" not in ptx and ".extern .func" not in ptx  # linked and inlined
    filecheck(ptx, r"""
        CHECK: .visible .entry f_kernel(
        CHECK-DAG: div.approx.f32
        CHECK-DAG: ex2.approx.ftz.f32
    """, tmp_path)


def test_unknown_device_extern_is_a_diagnostic(libdevice):
    text = EXTERNS.replace('"exp", B[tx]', '"my_exp", B[tx]')
    with pytest.raises(Diagnostic, match=r"unknown extern function 'my_exp' on the GPU") as e:
        images(text, filename="e.tir")
    assert e.value.span is not None and e.value.span.line == 8
