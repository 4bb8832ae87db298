"""Every CUDA module of the corpora, retargeted to rocm as test_opencl_corpus.py retargets
them to opencl (opencl_corpus.py: the samples, the modules TVM 0.27 printed, the
block-level te / schedule / dlight corpus, the SIMT corpus of cross-thread reductions)
and the dlight-scheduled bench workloads (bench/scheduled/cuda), built once each for
``rocm -mcpu=gfx90a -max_num_threads=1024`` (the corpus was scheduled for CUDA's 1024
threads a block). Device code only (``device_only``): the host side of a launch is the
CUDA one's, tested with the samples in test_rocm_launch.py.

Each module gives one code object that ld.lld linked (an ELF shared object for AMDGPU)
whose AMDHSA metadata lists exactly the kernels the manifest states, with the manifest's
LDS sizes and kernarg sizes; or a located error that REFUSED expects.

And side by side with TVM 0.27 (tests/corpus/rocm_tvm, printed by gen_rocm_tvm.py: TVM's
``target.build.rocm`` needs ROCm's device bitcode, so TVM's lowered device modules are
compared, taken through ``tvm.tirx.build``'s steps short of code generation): the same
kernels, the same argument sizes (8-byte pointers, scalars at their size), and LDS as
LLVM lays TVM's static shared buffers out (each at a 16-byte boundary), but where
LDS_DIFFERS says why not."""
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
# form; float64 tan, cos, sin and pow need ROCm's device library, which tirc does not
# link (TVM links ocml); the others are refused for cuda and opencl too (a global
# allocation in a kernel, host code writing device memory, an out-of-bounds constant store).
REFUSED = {
    "argmax_64": "allocated in 'global' memory inside device code",
    "alloc_scopes": "allocated in 'global' memory inside device code",
    "decl_buffer_aliasing": "allocated in 'global' memory inside device code",
    "cuda_launch_thread_with_forms": "host code of",
    "loops_thread_binding": "host code of",
    "targets_cuda_llvm": "host code of",
    **{f"test_target_codegen_cuda_fastmath__{i}": _F64 for i in (18, 21, 24, 29)},
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


TVM = {e["name"]: e for e in json.loads((TESTS / "corpus" / "rocm_tvm" / "index.json").read_text())
       if "kernels" in e}
# Where tirc's LDS is smaller than TVM's buffers laid out, and why
_DEAD = ("the reduction's second result (the max beside the argmax) is never read: LLVM "
         "drops its LDS array")
LDS_DIFFERS = {
    **{f"argmax_{kind}_{i}_{v}": _DEAD for kind in ("dlight", "warp", "tree")
       for i in ("i32", "i64") for v in ("float32", "float16", "int32")},
    "argmax_relax_dlight": _DEAD,
    "dl_gpu_matmul": "tirc sizes a flattened strided tile to its last element + 1 (574 and "
                     "1150 floats), TVM to its padded shape (576 and 1152)",
    "dl_gpu_matmul_dyn": "as dl_gpu_matmul",
    "cuda_intrinsics_sync": "its shared array is never read: LLVM drops it",
}


def _param_bytes(dtype: str) -> int:
    from tirc.ir.dtype import DataType
    if dtype == "handle":
        return 8
    d = DataType(dtype)
    return d.bits * d.lanes // 8


def _tvm_lds(shared: list) -> int:
    """TVM's static shared buffers as LLVM lays them out: each at a 16-byte boundary."""
    end = 0
    for _, size in shared:
        end = (end + 15) // 16 * 16 + size
    return end


def compare_with_tvm(name: str, kernels: list[dict]) -> bool:
    """Whether ``name`` has TVM's figures; a failed assertion where they differ."""
    theirs = TVM.get(name)
    if theirs is None:
        return False
    tk = {k["symbol"]: k for k in theirs["kernels"]}
    assert sorted(tk) == sorted(k["symbol"] for k in kernels), name
    for k in kernels:
        t = tk[k["symbol"]]
        assert [a["size"] for a in k["rocm"]["args"]] == [_param_bytes(d) for d in t["params"]], \
            (name, k["symbol"])
        if name in LDS_DIFFERS:
            assert k["rocm"]["lds_bytes"] < _tvm_lds(t["shared"]), (name, k["symbol"])
        else:
            assert k["rocm"]["lds_bytes"] == _tvm_lds(t["shared"]), (name, k["symbol"])
    return True


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
    refused, unbuilt, lds_kernels, compared = [], [], 0, []
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
            if name not in UNDEFINED_KERNELS and compare_with_tvm(name, kernels):
                compared.append(name)
        built[corpus] = built.get(corpus, 0) + 1
    assert sorted(refused) == sorted(REFUSED)
    # modules TVM printed after SplitHostDevice launch kernels they do not define: a full
    # build refuses them in host code, for every GPU target ("kernel ... is launched but no
    # device image of this build defines it", "function ... is called but not compiled for
    # this target"); their device code builds
    assert sorted(unbuilt) == sorted(UNDEFINED_KERNELS), unbuilt
    # 204 built: the samples, the modules TVM printed (tests/corpus/tvm, tvm_tests), the
    # block-level and SIMT corpora, the dlight bench workloads; 30 refused (REFUSED)
    assert built == {"samples": 6, "tvm": 29, "tvm_tests": 121, "simt/sblock": 44,
                     "bench": 4}, built
    assert lds_kernels >= 40, lds_kernels
    # TVM built 189 of these to device modules (not the samples it refuses, the bench
    # workloads, nor the modules whose kernels are not defined); every one compared
    assert len(compared) == 189, len(compared)
    assert set(LDS_DIFFERS) <= set(compared)
