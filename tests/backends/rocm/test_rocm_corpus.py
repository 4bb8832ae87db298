"""Every CUDA module of the corpora, retargeted to rocm as test_opencl_corpus.py retargets
them to opencl (opencl_corpus.py: the samples, the modules TVM 0.27 printed, the
block-level te / schedule / dlight corpus, the SIMT corpus of cross-thread reductions)
and the dlight-scheduled bench workloads (bench/scheduled/cuda), built once each for
``rocm -mcpu=gfx90a -max_num_threads=1024`` (the corpus was scheduled for CUDA's 1024
threads a block). Device code only (``device_only``): the host side of a launch is the
CUDA one's, tested with the samples in test_rocm_launch.py.

Each module gives one code object that ld.lld linked (an ELF shared object for AMDGPU)
whose AMDHSA metadata lists exactly the kernels the manifest states, with the manifest's
LDS sizes and kernarg sizes; or a located error that REFUSED expects."""
from __future__ import annotations

import json
import struct

import pytest

from conftest import TESTS
from opencl_corpus import expected_cases, retarget_text, text_cases
from tirc.backends.rocm import hsaco

ROCM = "rocm -mcpu=gfx90a -max_num_threads=1024"
_TARGET = {"kind": "rocm", "mcpu": "gfx90a", "max_num_threads": 1024}
BENCH = TESTS.parent / "bench" / "scheduled"

_F64 = ("tirc links no device library (TVM links ROCm's ocml)")
# Modules tirc refuses for rocm, with a part of the message: PTX instructions have no AMDGPU
# form; float64 transcendental functions need ROCm's device library, which tirc does not
# link (TVM links ocml); the others are refused for cuda and opencl too (a global
# allocation in a kernel, host code writing device memory, an out-of-bounds constant store).
REFUSED = {
    "argmax_64": "allocated in 'global' memory inside device code",
    "alloc_scopes": "allocated in 'global' memory inside device code",
    "decl_buffer_aliasing": "allocated in 'global' memory inside device code",
    "cuda_launch_thread_with_forms": "host code of",
    "loops_thread_binding": "host code of",
    "targets_cuda_llvm": "host code of",
    **{f"test_target_codegen_cuda_fastmath__{i}": _F64 for i in (3, 6, 9, 12, 15, 18, 21, 24,
                                                                  27, 29)},
    "test_tir_ptx_cp_async__1": "is a PTX instruction of CUDA device code",
    "test_tir_ptx_ldmatrix__1": "is a PTX instruction of CUDA device code",
    "test_tir_ptx_scalar_f32_math__1": "is a PTX instruction of CUDA device code",
    "test_tir_ptx_mma__8": "outside the buffer",
    **{f"test_tir_ptx_mma__{i}": "is a PTX instruction of CUDA device code"
       for i in range(1, 18) if i != 8},
}

UNDEFINED_KERNELS = [f"lowered_{m}" for m in (
    "dyn_smem_02_split_host_device", "reduce_sum_05_split_host_device",
    "vec_math_02_split_host_device", "vector_add_04_split_host_device",
    "reduce_sum_06_device_finalized", "vec_math_03_device_finalized",
    "vector_add_05_device_finalized")]


def _cases():
    for root, entry in expected_cases():
        yield entry["name"], (root / f"{entry['name']}.tir").read_text(), "simt/sblock"
    for p in text_cases():
        yield p.stem, retarget_text(p.read_text(), _TARGET), p.parent.name
    for m in json.loads((BENCH / "index.json").read_text())["modules"]:
        if m["target"]["kind"] == "cuda":
            yield m["name"], (BENCH / m["file"]).read_text(), "bench"


def check_code_object(data: bytes, kernels: list[dict], where: str) -> None:
    """``data`` is a linked AMDGPU code object whose metadata states ``kernels`` (the
    manifest's), their LDS and kernarg sizes."""
    assert data[:4] == b"\x7fELF" and struct.unpack_from("<HH", data, 16) == (3, 224), where
    meta = hsaco.kernels(data)
    assert sorted(meta) == sorted(k["symbol"] for k in kernels), where
    for k in kernels:
        m = meta[k["symbol"]]
        assert m["symbol"] == k["symbol"] + ".kd", where
        assert k["rocm"]["lds_bytes"] == m["lds_bytes"], (where, k["symbol"])
        assert k["rocm"]["kernarg_bytes"] == m["kernarg_bytes"] >= 8 * sum(
            p["dtype"] == "handle" for p in k["params"]), (where, k["symbol"])
        assert k["rocm"]["wavefront_size"] == 64, where


def test_every_cuda_module_of_the_corpora_builds_for_rocm_or_is_refused_by_name(tmp_path):
    from tirc.build.stages import build
    from tirc.diagnostics import CompileError, Diagnostic
    built: dict[str, int] = {}
    refused, unbuilt, lds_kernels = [], [], 0
    for name, text, corpus in _cases():
        try:
            result = build(text, ROCM, None, tmp_path, name, filename=f"{name}.tir",
                           write=False, device_only=True)
        except (Diagnostic, CompileError) as e:
            assert name in REFUSED, f"{name}: {e}"
            assert REFUSED[name] in str(e), f"{name}: {e}"
            refused.append(name)
            continue
        assert name not in REFUSED, f"{name} builds now: take it out of REFUSED"
        images = {p.name: d for p, d in result.outputs.items() if p.suffix == ".hsaco"}
        kernels = [k for k in result.manifest["kernels"] if k.get("image")]
        if len(kernels) != len(result.manifest["kernels"]):
            unbuilt.append(name)
        if kernels:
            assert set(images) == {f"{name}.hsaco"}, name
            check_code_object(images[f"{name}.hsaco"], kernels, name)
            lds_kernels += sum(k["rocm"]["lds_bytes"] > 0 for k in kernels)
        built[corpus] = built.get(corpus, 0) + 1
    assert sorted(refused) == sorted(REFUSED)
    # modules TVM printed after SplitHostDevice launch kernels they do not define: a full
    # build refuses them in host code, for every GPU target ("kernel ... is launched but no
    # device image of this build defines it", "function ... is called but not compiled for
    # this target"); their device code builds
    assert sorted(unbuilt) == sorted(UNDEFINED_KERNELS), unbuilt
    # 198 built: the samples, the modules TVM printed (tests/corpus/tvm, tvm_tests), the
    # block-level and SIMT corpora, the dlight bench workloads; 36 refused (REFUSED)
    assert built == {"samples": 6, "tvm": 29, "tvm_tests": 115, "simt/sblock": 44,
                     "bench": 4}, built
    assert lds_kernels >= 40, lds_kernels
