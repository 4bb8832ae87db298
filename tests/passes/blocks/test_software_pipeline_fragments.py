"""InjectSoftwarePipeline on WMMA fragments: a fragment that stays in flight across stages
gets one version per stage, and the fragment index of each T.tvm_load_matrix_sync,
T.tvm_mma_sync (and T.tvm_fill_fragment) moves by a version's fragments. The expected
module is what TVM 0.27's ``tvm.s_tir.transform.InjectSoftwarePipeline()`` prints for
BEFORE (a (32, 16) matrix_a holds two 16x16 fragments, so its index moves by 2 a
version; the shared copy it loads from by 256 elements)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.ir.equal import assert_structural_equal
from tirc.ir.printer import print_module
from tirc.passes.blocks.inject_software_pipeline import inject_software_pipeline
from tirc.passes.prepare.verify import verify
from tirc.testing import simt

DATA = Path(__file__).parent / "software_pipeline_fragments"

BEFORE = '''# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 64), "float16"), B: T.Buffer((64, 16), "float16"), C: T.Buffer((16, 16), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        with T.sblock("root"):
            T.reads(A[0:16, 0:64], B[0:64, 0:16])
            T.writes(C[0:16, 0:16])
            Acc = T.sblock_alloc_buffer((16, 16), "float32", scope="wmma.accumulator")
            with T.sblock("fill"):
                T.reads()
                T.writes(Acc[0:16, 0:16])
                T.tvm_fill_fragment(Acc.data, 16, 16, 16, 0, T.float32(0.0))
            for k in T.serial(4, annotations={"software_pipeline_stage": [0, 1, 1, 2], "software_pipeline_order": [0, 1, 2, 3]}):
                with T.sblock("step"):
                    T.reads(A[0:16, k * 16:k * 16 + 16], B[k * 16:k * 16 + 16, 0:16], Acc[0:16, 0:16])
                    T.writes(Acc[0:16, 0:16])
                    A_sh = T.sblock_alloc_buffer((16, 16), "float16", scope="shared")
                    Af = T.sblock_alloc_buffer((32, 16), "float16", scope="wmma.matrix_a")
                    Bf = T.sblock_alloc_buffer((16, 16), "float16", scope="wmma.matrix_b")
                    with T.sblock("copy"):
                        T.reads(A[0:16, k * 16:k * 16 + 16])
                        T.writes(A_sh[0:16, 0:16])
                        for i, j in T.grid(16, 16):
                            A_sh[i, j] = A[i, k * 16 + j]
                    with T.sblock("load_a"):
                        T.reads(A_sh[0:16, 0:16])
                        T.writes(Af[16:32, 0:16])
                        T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 1, T.tvm_access_ptr(T.type_annotation("float16"), A_sh.data, 0, 256, 1), 16, "row_major")
                    with T.sblock("load_b"):
                        T.reads(B[k * 16:k * 16 + 16, 0:16])
                        T.writes(Bf[0:16, 0:16])
                        T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), B.data, k * 256, 256, 1), 16, "row_major")
                    with T.sblock("mma"):
                        T.reads(Af[16:32, 0:16], Bf[0:16, 0:16], Acc[0:16, 0:16])
                        T.writes(Acc[0:16, 0:16])
                        T.tvm_mma_sync(Acc.data, 0, Af.data, 1, Bf.data, 0, Acc.data, 0)
            with T.sblock("store"):
                T.reads(Acc[0:16, 0:16])
                T.writes(C[0:16, 0:16])
                T.tvm_store_matrix_sync(Acc.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")
'''

# printed by TVM 0.27 (tvm.s_tir.transform.InjectSoftwarePipeline()) for BEFORE
AFTER = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((16, 64), "float16"), B: T.Buffer((64, 16), "float16"), C: T.Buffer((16, 16), "float32")):
        # with T.sblock("root"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.sblock("root"):
                T.reads(A[0:16, 0:64], B[0:64, 0:16])
                T.writes(C[0:16, 0:16])
                Acc = T.sblock_alloc_buffer((16, 16), scope="wmma.accumulator")
                with T.sblock("fill"):
                    T.reads()
                    T.writes(Acc[0:16, 0:16])
                    T.tvm_fill_fragment(Acc.data, 16, 16, 16, 0, T.float32(0.0))
                with T.sblock(""):
                    T.reads(A[0:16, 0:64], B[-16:80, 0:16], Acc[0:16, 0:16])
                    T.writes(Acc[0:16, 0:16])
                    A_sh = T.sblock_alloc_buffer((2, 16, 16), "float16", scope="shared")
                    Af = T.sblock_alloc_buffer((2, 32, 16), "float16", scope="wmma.matrix_a")
                    Bf = T.sblock_alloc_buffer((2, 16, 16), "float16", scope="wmma.matrix_b")
                    with T.sblock(""):
                        T.reads(A[0:16, 0:32], A_sh[0:2, 0:16, 0:16], B[-16:16, 0:16])
                        T.writes(A_sh[0:2, 0:16, 0:16], Af[0:2, 16:32, 0:16], Bf[0:2, 0:16, 0:16])
                        for k in T.unroll(2):
                            with T.sblock("copy"):
                                T.where(k < 4)
                                T.reads(A[0:16, k * 16:k * 16 + 16])
                                T.writes(A_sh[0:2, 0:16, 0:16])
                                for i, j in T.grid(16, 16):
                                    A_sh[k % 2, i, j] = A[i, k * 16 + j]
                            with T.sblock("load_a"):
                                T.where(k == 1 and k - 1 < 4)
                                T.reads(A_sh[0:2, 0:16, 0:16])
                                T.writes(Af[0:2, 16:32, 0:16])
                                T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 1 + (k - 1) % 2 * 2, T.tvm_access_ptr(T.type_annotation("float16"), A_sh.data, (k - 1) % 2 * 256, 256, 1), 16, "row_major")
                            with T.sblock("load_b"):
                                T.where(k == 1 and k - 1 < 4)
                                T.reads(B[(k - 1) * 16:(k - 1) * 16 + 16, 0:16])
                                T.writes(Bf[0:2, 0:16, 0:16])
                                T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, (k - 1) % 2, T.tvm_access_ptr(T.type_annotation("float16"), B.data, (k - 1) * 256, 256, 1), 16, "row_major")
                    with T.sblock(""):
                        T.reads(A[0:16, 32:64], A_sh[0:2, 0:16, 0:16], B[16:48, 0:16], Af[0:2, 16:32, 0:16], Bf[0:2, 0:16, 0:16], Acc[0:16, 0:16])
                        T.writes(A_sh[0:2, 0:16, 0:16], Af[0:2, 16:32, 0:16], Bf[0:2, 0:16, 0:16], Acc[0:16, 0:16])
                        for k in range(2):
                            with T.sblock("copy"):
                                T.where(k + 2 < 4)
                                T.reads(A[0:16, (k + 2) * 16:(k + 2) * 16 + 16])
                                T.writes(A_sh[0:2, 0:16, 0:16])
                                for i, j in T.grid(16, 16):
                                    A_sh[(k + 2) % 2, i, j] = A[i, (k + 2) * 16 + j]
                            with T.sblock("load_a"):
                                T.where(k + 2 - 1 < 4)
                                T.reads(A_sh[0:2, 0:16, 0:16])
                                T.writes(Af[0:2, 16:32, 0:16])
                                T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 1 + (k - 1 + 2) % 2 * 2, T.tvm_access_ptr(T.type_annotation("float16"), A_sh.data, (k - 1 + 2) % 2 * 256, 256, 1), 16, "row_major")
                            with T.sblock("load_b"):
                                T.where(k + 2 - 1 < 4)
                                T.reads(B[(k - 1 + 2) * 16:(k - 1 + 2) * 16 + 16, 0:16])
                                T.writes(Bf[0:2, 0:16, 0:16])
                                T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, (k - 1 + 2) % 2, T.tvm_access_ptr(T.type_annotation("float16"), B.data, (k - 1 + 2) * 256, 256, 1), 16, "row_major")
                            with T.sblock("mma"):
                                T.where(k + 2 - 2 < 4)
                                T.reads(Af[0:2, 16:32, 0:16], Bf[0:2, 0:16, 0:16], Acc[0:16, 0:16])
                                T.writes(Acc[0:16, 0:16])
                                T.tvm_mma_sync(Acc.data, 0, Af.data, 1 + (k - 2 + 2) % 2 * 2, Bf.data, (k - 2 + 2) % 2, Acc.data, 0)
                    with T.sblock(""):
                        T.reads(A_sh[0:2, 0:16, 0:16], B[48:80, 0:16], Af[0:2, 16:32, 0:16], Bf[0:2, 0:16, 0:16], Acc[0:16, 0:16])
                        T.writes(Af[0:2, 16:32, 0:16], Bf[0:2, 0:16, 0:16], Acc[0:16, 0:16])
                        for k in T.unroll(2):
                            with T.sblock("load_a"):
                                T.where(k + 4 - 1 < 4)
                                T.reads(A_sh[0:2, 0:16, 0:16])
                                T.writes(Af[0:2, 16:32, 0:16])
                                T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 1 + (k - 1 + 4) % 2 * 2, T.tvm_access_ptr(T.type_annotation("float16"), A_sh.data, (k - 1 + 4) % 2 * 256, 256, 1), 16, "row_major")
                            with T.sblock("load_b"):
                                T.where(k + 4 - 1 < 4)
                                T.reads(B[(k - 1 + 4) * 16:(k - 1 + 4) * 16 + 16, 0:16])
                                T.writes(Bf[0:2, 0:16, 0:16])
                                T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, (k - 1 + 4) % 2, T.tvm_access_ptr(T.type_annotation("float16"), B.data, (k - 1 + 4) * 256, 256, 1), 16, "row_major")
                            with T.sblock("mma"):
                                T.where(k + 4 - 2 < 4)
                                T.reads(Af[0:2, 16:32, 0:16], Bf[0:2, 0:16, 0:16], Acc[0:16, 0:16])
                                T.writes(Acc[0:16, 0:16])
                                T.tvm_mma_sync(Acc.data, 0, Af.data, 1 + (k - 2 + 4) % 2 * 2, Bf.data, (k - 2 + 4) % 2, Acc.data, 0)
                with T.sblock("store"):
                    T.reads(Acc[0:16, 0:16])
                    T.writes(C[0:16, 0:16])
                    T.tvm_store_matrix_sync(Acc.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")
'''


def test_fragment_indices_follow_tvm():
    result = inject_software_pipeline(verify(parse(BEFORE, "before.tir")))
    assert_structural_equal(result, parse(AFTER, "after.tir"))


# C[k] = A[:, 16k:16k+16] B[16k:16k+16, :]: each iteration fills, multiplies into and
# (a stage later) stores its own accumulator, so the fill too must reach the version the
# store reads (TVM leaves a T.tvm_fill_fragment's index as it is).
PER_STEP = '''# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 64), "float16"), B: T.Buffer((64, 16), "float16"), C: T.Buffer((4, 16, 16), "float32")):
    T.func_attr({"global_symbol": "main", "tirx.noalias": True})
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            for k in T.serial(4, annotations={"software_pipeline_stage": [0, 0, 0, 0, 1], "software_pipeline_order": [0, 1, 2, 3, 4]}):
                with T.sblock("step"):
                    T.reads(A[0:16, k * 16:k * 16 + 16], B[k * 16:k * 16 + 16, 0:16])
                    T.writes(C[k, 0:16, 0:16])
                    Af = T.sblock_alloc_buffer((16, 16), "float16", scope="wmma.matrix_a")
                    Bf = T.sblock_alloc_buffer((16, 16), "float16", scope="wmma.matrix_b")
                    Cf = T.sblock_alloc_buffer((16, 16), "float32", scope="wmma.accumulator")
                    with T.sblock("fill"):
                        T.reads()
                        T.writes(Cf[0:16, 0:16])
                        T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, T.float32(0.0))
                    with T.sblock("load_a"):
                        T.reads(A[0:16, k * 16:k * 16 + 16])
                        T.writes(Af[0:16, 0:16])
                        T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, k * 16, 1024, 1), 64, "row_major")
                    with T.sblock("load_b"):
                        T.reads(B[k * 16:k * 16 + 16, 0:16])
                        T.writes(Bf[0:16, 0:16])
                        T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), B.data, k * 256, 256, 1), 16, "row_major")
                    with T.sblock("mma"):
                        T.reads(Af[0:16, 0:16], Bf[0:16, 0:16], Cf[0:16, 0:16])
                        T.writes(Cf[0:16, 0:16])
                        T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)
                    with T.sblock("store"):
                        T.reads(Cf[0:16, 0:16])
                        T.writes(C[k, 0:16, 0:16])
                        T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, k * 256, 256, 2), 16, "row_major")
'''


def test_a_filled_fragment_in_flight_computes_each_step():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (16, 64)).astype("float16")
    b = rng.uniform(-1, 1, (64, 16)).astype("float16")
    c = np.zeros((4, 16, 16), "float32")
    simt.run(PER_STEP, "main", [a, b, c], "cuda -arch=sm_80", "llvm", filename="per_step.tir")
    for k in range(4):
        want = a[:, 16 * k:16 * k + 16].astype(np.float64) @ b[16 * k:16 * k + 16].astype(np.float64)
        np.testing.assert_allclose(c[k], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("edit, message", [
    # a version of Bf (16 x 24) is one and a half fragments
    (('Bf = T.sblock_alloc_buffer((16, 16)', 'Bf = T.sblock_alloc_buffer((16, 24)'),
     "holds 384 elements, not a whole number of fragments of 256 elements"),
    # a call the pass does not know takes a versioned fragment's data
    (('                        T.tvm_mma_sync(Acc.data, 0, Af.data, 1, Bf.data, 0, Acc.data, 0)',
      '                        for _ in range(1):\n'
      '                            T.tvm_mma_sync(Acc.data, 0, Af.data, 1, Bf.data, 0, Acc.data, 0)\n'
      '                            T.evaluate(T.call_extern("int32", "peek", Bf.data))'),
     "T.call_extern takes the data of 'Bf', which software pipelining gives 2 versions"),
])
def test_a_fragment_version_it_cannot_index_is_a_located_error(edit, message):
    text = BEFORE.replace(*edit)
    assert text != BEFORE
    mod = verify(parse(text, "before.tir"))
    with pytest.raises(Diagnostic, match=message) as err:
        inject_software_pipeline(mod)
    assert err.value.span is not None and err.value.span.line > 1


def test_a_pointer_reaches_the_version_its_loop_from_one_wrote():
    # iteration k writes A_sh[(k - 1) % 2] and, a stage later (as k - 1), loads it through
    # T.tvm_access_ptr; TVM 0.27 offsets that pointer by (k - 1) % 2 (the loop's start left
    # out), the version the same iteration is writing
    text = BEFORE.replace("T.serial(4, annotations", "T.serial(1, 5, annotations")
    out = print_module(inject_software_pipeline(verify(parse(text, "before.tir"))))
    assert "A_sh[(k - 1) % 2, i, j] = A[i, k * 16 + j]" in out
    assert ("T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 1 + (k - 1 - 1) % 2 * 2, T.tvm_access_ptr("
            'T.type_annotation("float16"), A_sh.data, (k - 1 - 1) % 2 * 256, 256, 1)') in out


# ldmatrix into, and mma from, registers in flight: their offsets count elements, a 32nd of
# them (a thread's share) for an m16n8k8.matrixA/B buffer (TVM's treatment of these scopes)
PTX_BEFORE = '''# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((64, 16), "float16"), B: T.Buffer((64, 8), "float16"), C: T.Buffer((32, 4), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        with T.sblock("root"):
            T.reads(A[0:64, 0:16], B[0:64, 0:8])
            T.writes(C[0:32, 0:4])
            Cw = T.sblock_alloc_buffer((32, 4), "float32", scope="warp")
            for k in T.serial(4, annotations={"software_pipeline_stage": [0, 0, 1], "software_pipeline_order": [0, 1, 2]}):
                with T.sblock("step"):
                    T.reads(A[k * 16:k * 16 + 16, 0:16], B[k * 16:k * 16 + 16, 0:8], Cw[0:32, 0:4])
                    T.writes(Cw[0:32, 0:4])
                    Aw = T.sblock_alloc_buffer((16, 16), "float16", scope="m16n8k8.matrixA")
                    Bw = T.sblock_alloc_buffer((32, 4), "float16", scope="warp")
                    with T.sblock("ld_a"):
                        T.reads(A[k * 16:k * 16 + 16, 0:16])
                        T.writes(Aw[0:16, 0:16])
                        T.ptx_legacy.ldmatrix(T.bool(False), 4, ".b16", Aw.data, 0, A.data, k * 256)
                    with T.sblock("ld_b"):
                        T.reads(B[k * 16:k * 16 + 16, 0:8])
                        T.writes(Bw[0:32, 0:4])
                        T.ptx_legacy.ldmatrix(T.bool(True), 2, ".b16", Bw.data, 0, B.data, k * 128)
                    with T.sblock("mma"):
                        T.reads(Aw[0:16, 0:16], Bw[0:32, 0:4], Cw[0:32, 0:4])
                        T.writes(Cw[0:32, 0:4])
                        T.ptx_legacy.mma("m16n8k16", "row", "col", "fp16", "fp16", "fp32", Aw.data, 0, Bw.data, 0, Cw.data, 0, T.bool(False))
            with T.sblock("store"):
                T.reads(Cw[0:32, 0:4])
                T.writes(C[0:32, 0:4])
                for i, j in T.grid(32, 4):
                    C[i, j] = Cw[i, j]
'''

# printed by TVM 0.27 (tvm.s_tir.transform.InjectSoftwarePipeline()) for PTX_BEFORE
PTX_AFTER = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((64, 16), "float16"), B: T.Buffer((64, 8), "float16"), C: T.Buffer((32, 4), "float32")):
        # with T.sblock("root"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.sblock("root"):
                T.reads(A[0:64, 0:16], B[0:64, 0:8])
                T.writes(C[0:32, 0:4])
                Cw = T.sblock_alloc_buffer((32, 4), scope="warp")
                with T.sblock(""):
                    T.reads(A[0:64, 0:16], B[0:64, 0:8], Cw[0:32, 0:4])
                    T.writes(Cw[0:32, 0:4])
                    Aw = T.sblock_alloc_buffer((2, 16, 16), "float16", scope="m16n8k8.matrixA")
                    Bw = T.sblock_alloc_buffer((2, 32, 4), "float16", scope="warp")
                    with T.sblock(""):
                        T.reads(A[0:16, 0:16], B[0:16, 0:8])
                        T.writes(Aw[T.FloorMod(0, 2), 0:16, 0:16], Bw[T.FloorMod(0, 2), 0:32, 0:4])
                        with T.sblock("ld_a"):
                            T.reads(A[T.Mul(0, 16):T.Mul(0, 16) + 16, 0:16])
                            T.writes(Aw[T.FloorMod(0, 2), 0:16, 0:16])
                            T.ptx_legacy.ldmatrix(T.bool(False), 4, ".b16", Aw.data, T.FloorMod(0, 2) * 8, A.data, T.Mul(0, 256))
                        with T.sblock("ld_b"):
                            T.reads(B[T.Mul(0, 16):T.Mul(0, 16) + 16, 0:8])
                            T.writes(Bw[T.FloorMod(0, 2), 0:32, 0:4])
                            T.ptx_legacy.ldmatrix(T.bool(True), 2, ".b16", Bw.data, T.FloorMod(0, 2) * 128, B.data, T.Mul(0, 128))
                    with T.sblock(""):
                        T.reads(A[16:64, 0:16], B[16:64, 0:8], Aw[0:2, 0:16, 0:16], Bw[0:2, 0:32, 0:4], Cw[0:32, 0:4])
                        T.writes(Aw[0:2, 0:16, 0:16], Bw[0:2, 0:32, 0:4], Cw[0:32, 0:4])
                        for k in range(3):
                            with T.sblock("ld_a"):
                                T.where(k + 1 < 4)
                                T.reads(A[(k + 1) * 16:(k + 1) * 16 + 16, 0:16])
                                T.writes(Aw[(k + 1) % 2, 0:16, 0:16])
                                T.ptx_legacy.ldmatrix(T.bool(False), 4, ".b16", Aw.data, (k + 1) % 2 * 8, A.data, (k + 1) * 256)
                            with T.sblock("ld_b"):
                                T.where(k + 1 < 4)
                                T.reads(B[(k + 1) * 16:(k + 1) * 16 + 16, 0:8])
                                T.writes(Bw[(k + 1) % 2, 0:32, 0:4])
                                T.ptx_legacy.ldmatrix(T.bool(True), 2, ".b16", Bw.data, (k + 1) % 2 * 128, B.data, (k + 1) * 128)
                            with T.sblock("mma"):
                                T.where(k + 1 - 1 < 4)
                                T.reads(Aw[(k - 1 + 1) % 2, 0:16, 0:16], Bw[(k - 1 + 1) % 2, 0:32, 0:4], Cw[0:32, 0:4])
                                T.writes(Cw[0:32, 0:4])
                                T.ptx_legacy.mma("m16n8k16", "row", "col", "fp16", "fp16", "fp32", Aw.data, (k - 1 + 1) % 2 * 8, Bw.data, (k - 1 + 1) % 2 * 128, Cw.data, 0, T.bool(False))
                    with T.sblock("mma"):
                        T.reads(Aw[T.FloorMod(3, 2), 0:16, 0:16], Bw[T.FloorMod(3, 2), 0:32, 0:4], Cw[0:32, 0:4])
                        T.writes(Cw[0:32, 0:4])
                        T.ptx_legacy.mma("m16n8k16", "row", "col", "fp16", "fp16", "fp32", Aw.data, T.FloorMod(3, 2) * 8, Bw.data, T.FloorMod(3, 2) * 128, Cw.data, 0, T.bool(False))
                with T.sblock("store"):
                    T.reads(Cw[0:32, 0:4])
                    T.writes(C[0:32, 0:4])
                    for i, j in T.grid(32, 4):
                        C[i, j] = Cw[i, j]
'''


def test_ptx_register_offsets_follow_tvm():
    result = inject_software_pipeline(verify(parse(PTX_BEFORE, "before.tir")))
    assert_structural_equal(result, parse(PTX_AFTER, "after.tir"))


def test_ldmatrix_from_a_versioned_shared_buffer_reaches_its_version():
    # A_sh (copied in stage 0, read by ldmatrix through its data in stage 1) has two
    # versions; TVM 0.27 offsets only ldmatrix's registers and reads version 0 throughout
    text = PTX_BEFORE.replace(
        '"software_pipeline_stage": [0, 0, 1], "software_pipeline_order": [0, 1, 2]',
        '"software_pipeline_stage": [0, 1, 1, 2], "software_pipeline_order": [0, 1, 2, 3]'
    ).replace(
        '''                    with T.sblock("ld_a"):
                        T.reads(A[k * 16:k * 16 + 16, 0:16])''',
        '''                    A_sh = T.sblock_alloc_buffer((16, 16), "float16", scope="shared")
                    with T.sblock("copy"):
                        T.reads(A[k * 16:k * 16 + 16, 0:16])
                        T.writes(A_sh[0:16, 0:16])
                        for i, j in T.grid(16, 16):
                            A_sh[i, j] = A[k * 16 + i, j]
                    with T.sblock("ld_a"):
                        T.reads(A_sh[0:16, 0:16])'''
    ).replace('Aw.data, 0, A.data, k * 256)', 'Aw.data, 0, A_sh.data, 0)')
    out = print_module(inject_software_pipeline(verify(parse(text, "before.tir"))))
    assert "A_sh[k % 2, i, j] = A[k * 16 + i, j]" in out
    assert 'T.ptx_legacy.ldmatrix(T.bool(False), 4, ".b16", Aw.data, (k - 1) % 2 * 8, A_sh.data, (k - 1) % 2 * 256)' in out


def test_dlight_inner_pipeline_follows_tvm():
    # tests/corpus/tensor_core/dlight_matmul_int8.tir after tirc's passes up to
    # LowerMatchBuffer (its target attribute left out), without the outer loop's pipeline
    # annotations: TVM 0.27 fails an internal check on the nested pipelines (the outer one
    # versions fragments the inner one versioned); the after file is what it prints for
    # the inner pipeline alone
    before = verify(parse((DATA / "dlight_matmul_int8_inner.before.tir").read_text(), "before.tir"))
    after = parse((DATA / "dlight_matmul_int8_inner.after.tir").read_text(), "after.tir")
    assert_structural_equal(inject_software_pipeline(before), after)
