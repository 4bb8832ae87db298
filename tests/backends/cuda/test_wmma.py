"""The WMMA builtins (``T.tvm_load_matrix_sync``, ``T.tvm_mma_sync``, ...) in CUDA device
code: each call is the ``wmma`` instruction ``nvcuda::wmma`` compiles to (the layouts of
``wmma.mma`` from InferFragment's attributes), fragments stay in registers, ptxas accepts
the PTX for the module's arch (when ptxas is installed), and misuse is a located error."""
from __future__ import annotations

import json

import pytest

from conftest import TESTS, ptxas_check
from test_ptx_intrinsics import HEAD, _build, _error, filecheck

CORPUS = TESTS / "corpus" / "tensor_core"
INDEX = json.loads((CORPUS / "index.json").read_text())

# module -> the wmma instructions its PTX holds, in order of first appearance
CHECKS = {
    "wmma_f16_f32": ["wmma.load.a.sync.aligned.row.m16n16k16.f16", "wmma.load.b.sync.aligned.row.m16n16k16.f16",
                     "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32", "wmma.store.d.sync.aligned.row.m16n16k16.f32"],
    "wmma_f16_f16": ["wmma.load.a.sync.aligned.row.m16n16k16.f16", "wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16",
                     "wmma.store.d.sync.aligned.row.m16n16k16.f16"],
    "wmma_f16_f32_bcol": ["wmma.load.b.sync.aligned.col.m16n16k16.f16",
                          "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"],
    "wmma_s8_s32": ["wmma.load.a.sync.aligned.row.m16n16k16.s8",
                    "wmma.mma.sync.aligned.row.row.m16n16k16.s32.s8.s8.s32",
                    "wmma.store.d.sync.aligned.row.m16n16k16.s32"],
    "wmma_u8_s32_bcol": ["wmma.load.b.sync.aligned.col.m16n16k16.u8",
                         "wmma.mma.sync.aligned.row.col.m16n16k16.s32.u8.u8.s32"],
    "wmma_f16_f32_m32n8k16": ["wmma.load.a.sync.aligned.row.m32n8k16.f16",
                              "wmma.load.b.sync.aligned.col.m32n8k16.f16",
                              "wmma.mma.sync.aligned.row.col.m32n8k16.f32.f32"],
    "wmma_s8_s32_m8n32k16": ["wmma.load.a.sync.aligned.row.m8n32k16.s8 {%r{{[0-9]+}}}",
                             "wmma.load.b.sync.aligned.row.m8n32k16.s8 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}",
                             "wmma.mma.sync.aligned.row.row.m8n32k16.s32.s8.s8.s32"],
    "dlight_matmul_f16_nopipe": ["wmma.load.a.sync.aligned.row.m16n16k16.f16",
                                 "wmma.load.b.sync.aligned.col.m16n16k16.f16",
                                 "wmma.mma.sync.aligned.row.col.m16n16k16.f16.f16",
                                 "wmma.store.d.sync.aligned.row.m16n16k16.f16"],
    "dlight025_matmul_f16_f32_256x128x256_nopipe": ["wmma.load.a.sync.aligned.row.m16n16k16.f16",
                                                    "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32",
                                                    "wmma.store.d.sync.aligned.row.m16n16k16.f32"],
    "dlight025_matmul_int8_128x128x256_nopipe": ["wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.s8.s32"],
    "dlight_matmul_int8_3d2d_dyn_nopipe": ["wmma.load.a.sync.aligned.row.m16n16k16.s8",
                                           "wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.s8.s32"],
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_corpus_module_is_wmma_ptx(name, tmp_path):
    text = (CORPUS / f"{name}.tir").read_text()
    images = _build(text, tmp_path, filename=f"{name}.tir")
    ptx = next(iter(images.values()))
    filecheck(ptx, "".join(f"CHECK: {c}\n" for c in CHECKS[name]), tmp_path)
    assert ".local" not in ptx  # the fragments are registers
    ptxas_check(ptx, "sm_80", tmp_path)


# the software-pipelined modules: the same instructions as their _nopipe twins
PIPELINED = {
    "dlight_matmul_f16": CHECKS["dlight_matmul_f16_nopipe"],
    "dlight_matmul_int8": CHECKS["dlight025_matmul_int8_128x128x256_nopipe"],
    "dlight_matmul_int8_3d2d_dyn": CHECKS["dlight_matmul_int8_3d2d_dyn_nopipe"],
    "dlight025_matmul_f16_128x256x512": CHECKS["dlight_matmul_f16_nopipe"],
    "dlight025_matmul_f16_f32_256x128x256": CHECKS["dlight025_matmul_f16_f32_256x128x256_nopipe"],
    "dlight025_matmul_int8_128x128x256": CHECKS["dlight025_matmul_int8_128x128x256_nopipe"],
}


@pytest.mark.parametrize("name", sorted(PIPELINED))
def test_pipelined_corpus_module_is_wmma_ptx(name, tmp_path):
    # a fragment with one version per stage is indexed by the iteration modulo the
    # versions; UnrollFragmentVersions unrolls the loop by that period, so the fragments
    # are registers, not a thread's local memory
    text = (CORPUS / f"{name}.tir").read_text()
    images = _build(text, tmp_path, filename=f"{name}.tir")
    ptx = next(iter(images.values()))
    filecheck(ptx, "".join(f"CHECK: {c}\n" for c in PIPELINED[name]), tmp_path)
    assert ".local" not in ptx
    ptxas_check(ptx, "sm_80", tmp_path)


def test_pipelined_corpus_modules_are_listed_with_what_they_need():
    pipelined = sorted(n for n, e in INDEX.items() if e.get("needs"))
    assert pipelined == ["dlight025_matmul_f16_128x256x512.tir", "dlight025_matmul_f16_f32_256x128x256.tir",
                         "dlight025_matmul_int8_128x128x256.tir", "dlight_matmul_f16.tir",
                         "dlight_matmul_int8.tir", "dlight_matmul_int8_3d2d_dyn.tir"]
    assert all((CORPUS / n.replace(".tir", "_nopipe.tir")).exists() for n in pipelined)
    assert sorted(f"{n}.tir" for n in PIPELINED) == pipelined


TILE = """
@T.prim_func
def main(A: T.Buffer((256,), "{t}"), C: T.Buffer((256,), "{acc}")):
    tx = T.launch_thread("threadIdx.x", 32)
    Af = T.alloc_buffer((256,), "{t}", scope="wmma.matrix_a")
    Bf = T.alloc_buffer((256,), "{t}", scope="wmma.matrix_b")
    Cf = T.alloc_buffer((256,), "{acc}", scope="wmma.accumulator")
    T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, T.float32(0))
    T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("{t}"), A.data, 0, 256, 1), 16, "row_major")
    T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("{t}"), A.data, 0, 256, 1), 16, "col_major")
    {mma}
    T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("{acc}"), C.data, 0, 256, 2), 16, "row_major")
"""
MMA = "T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)"


def _tile(t="float16", acc="float32", mma=MMA):
    return TILE.format(t=t, acc=acc, mma=mma)


def test_fill_of_an_f16_accumulator_repeats_the_half_through_each_register(tmp_path):
    ptx = next(iter(_build(HEAD + _tile(acc="float16").replace("T.float32(0)", "T.float32(1)"),
                           tmp_path).values()))
    # 1.0 in f16 is 0x3C00; two to a register
    filecheck(ptx, "CHECK: 1006648320\nCHECK: wmma.mma.sync.aligned.row.col.m16n16k16.f16.f16\n", tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


@pytest.mark.parametrize("text, target, message", [
    (_tile(), "cuda -arch=sm_61", "T.tvm_fill_fragment (wmma.f16) needs sm_70 or newer, and the "
                                  "target's arch is sm_61"),
    (_tile("int8", "int32"), "cuda -arch=sm_70", "(wmma.s8) needs sm_72 or newer"),
    (_tile(mma="T.tvm_mma_sync(Cf.data, 0, Bf.data, 0, Af.data, 0, Cf.data, 0)"), "cuda -arch=sm_80",
     "argument 3 ('Bf') is a wmma.matrix_b fragment; this operand takes wmma.matrix_a"),
    (_tile("int8", "float32"), "cuda -arch=sm_80", "int8 multiplicands accumulate in int32, not float32"),
    (_tile().replace('16, "col_major")', '16, "transposed")'), "cuda -arch=sm_80",
     "must be \"row_major\" or \"col_major\", not 'transposed'"),
    (_tile().replace("T.tvm_fill_fragment(Cf.data, 16, 16, 16", "T.tvm_fill_fragment(Cf.data, 8, 8, 4"),
     "cuda -arch=sm_80", "no WMMA shape m8n8k4"),
    (_tile("bfloat16"), "cuda -arch=sm_80", "bfloat16 WMMA fragments ('Af') are not supported by tirc"),
    (_tile(mma=MMA.replace("tvm_mma_sync", "tvm_bmma_sync")), "cuda -arch=sm_80",
     "T.tvm_bmma_sync (1-bit WMMA) is not supported by tirc"),
    (_tile().replace('tx = T.launch_thread("threadIdx.x", 32)', ""), "llvm", "is a PTX instruction of CUDA device code and cannot run in 'main'"),
])
def test_misuse_is_a_located_error(text, target, message, tmp_path):
    err = _error(text, tmp_path, target)
    assert message in err.message, err.message
