"""Every CUDA module of the corpora, retargeted to opencl (opencl_corpus.py), built, and run
on an OpenCL device — pocl, a CPU device, from the test extra — through tvm-ffi:

* the block-level corpus and the cross-thread reductions (tests/corpus/sblock, simt),
  compared with the outputs TVM computed on the CPU (as test_gpu_corpus.py does on a GPU);
* the dlight-scheduled workloads of bench/scheduled/cuda (scheduled by TVM 0.27 for
  sm_90: 1024 threads and 48 KiB of shared memory a block), compared with NumPy;
* the samples and the modules TVM printed (tests/corpus/tvm, tvm_tests), on seeded random
  inputs, compared with the SIMT interpreter (tirc.testing.simt) running the same
  opencl-targeted module (C math functions called by name, ``expf``, as the TIR
  intrinsics they compute).

The build half runs everywhere; the run half is marked ``opencl`` and skips, saying why,
without pyopencl or an OpenCL device, and for float16 modules on a device without
cl_khr_fp16. A module tirc refuses for opencl is listed in REFUSED with the reason."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import TESTS
from opencl_corpus import OPENCL, expected_cases, retarget_text, text_cases

# Modules tirc refuses for opencl, with a part of the message: PTX and warp instructions
# have no OpenCL form; the others are refused for cuda too (a global allocation in a
# kernel, host code writing device memory, modules printed after the split whose kernels
# are not in the module, an out-of-bounds constant store).
REFUSED = {
    "argmax_64": "allocated in 'global' memory inside device code",
    "alloc_scopes": "allocated in 'global' memory inside device code",
    "decl_buffer_aliasing": "allocated in 'global' memory inside device code",
    "cuda_intrinsics_sync": "T.tvm_warp_activemask is not supported in OpenCL device code",
    "cuda_launch_thread_with_forms": "host code of",
    "loops_thread_binding": "host code of",
    "targets_cuda_llvm": "host code of",
    "lowered_dyn_smem_02_split_host_device": "no device image of this build defines it",
    "lowered_reduce_sum_05_split_host_device": "no device image of this build defines it",
    "lowered_vec_math_02_split_host_device": "no device image of this build defines it",
    "lowered_vector_add_04_split_host_device": "no device image of this build defines it",
    "lowered_reduce_sum_06_device_finalized": "is called but not compiled for this target",
    "lowered_vec_math_03_device_finalized": "is called but not compiled for this target",
    "lowered_vector_add_05_device_finalized": "is called but not compiled for this target",
    "test_target_codegen_cuda_fp8__3": "a vector of 6 lanes (float16x6) is not supported",
    "test_tir_ptx_cp_async__1": "is a PTX instruction of CUDA device code",
    "test_tir_ptx_ldmatrix__1": "is a PTX instruction of CUDA device code",
    "test_tir_ptx_scalar_f32_math__1": "is a PTX instruction of CUDA device code",
    "test_tir_ptx_mma__8": "outside the buffer",
    **{f"test_tir_ptx_mma__{i}": "is a PTX instruction of CUDA device code"
       for i in range(1, 18) if i != 8},
}
# Modules that build but whose run would be undefined: a CPU function delegating a region
# to the device target, writing its CPU buffer from a kernel (an OpenCL driver takes the
# host pointer for a cl_mem)
NOT_RUN = {"attr_statements": "a CPU function's buffer is written by an OpenCL kernel"}
DIMS = {"n": 1000, "m": 96, "k": 64}  # symbolic dimensions of the text cases

EXPECTED = [pytest.param(root, entry, id=f"{root.name}/{entry['name']}")
            for root, entry in expected_cases()]
TEXT = [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in text_cases()]


def _compile(text: str, name: str, filename: str, load: bool = True):
    import tirc
    return tirc.compile(text, target=OPENCL, name=name, filename=filename, load=load)


def _source(case) -> tuple[str, str]:
    if isinstance(case, tuple):
        root, entry = case
        return (root / f"{entry['name']}.tir").read_text(), entry["name"]
    return retarget_text(case.read_text()), case.stem


def test_every_cuda_module_of_the_corpora_builds_for_opencl_or_is_refused_by_name():
    """The build half, which needs no device: each module gives OpenCL C (NAME.cl) for
    each of its kernels, or a located error that REFUSED expects."""
    from tirc.diagnostics import CompileError, Diagnostic
    built, refused = [], []
    for case in [*expected_cases(), *text_cases()]:
        text, name = _source(case)
        try:
            compiled = _compile(text, name, f"{name}.tir", load=False)
        except (Diagnostic, CompileError) as e:
            assert name in REFUSED, f"{name}: {e}"
            assert REFUSED[name] in str(e), f"{name}: {e}"
            refused.append(name)
            continue
        assert name not in REFUSED, f"{name} builds now: take it out of REFUSED"
        if compiled.kernels:
            assert set(compiled.opencl) == {"opencl"}, name
            source = compiled.opencl["opencl"]
            for kernel in compiled.kernels:
                assert f"__kernel void {kernel['symbol']}(" in source, (name, kernel)
        built.append(name)
    assert sorted(refused) == sorted(REFUSED)
    assert len(built) >= 130, len(built)


def _device():
    pytest.importorskip("pyopencl", reason="pyopencl is not installed (pip install 'tirc[opencl]')")
    from tirc import runtime as rt
    dev = rt.device("opencl", 0)
    if not dev.exists:
        pytest.skip("no OpenCL device (pip install 'tirc[opencl]' brings pocl, a CPU device)")
    return dev


def _skip_fp16(dtypes) -> None:
    from tirc.runtime import opencldrv
    if any(str(d) == "float16" for d in dtypes) and not opencldrv.has_fp16(0):
        pytest.skip("float16: the OpenCL device has no cl_khr_fp16")


@pytest.mark.opencl
@pytest.mark.parametrize("root,entry", EXPECTED)
def test_corpus_module_on_opencl_matches_tvm_cpu(root, entry):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    dev = _device()
    if entry["name"] in REFUSED:
        pytest.skip(f"refused for opencl: {REFUSED[entry['name']]}")
    from tirc import runtime as rt
    expected = np.load(root / entry["npz"])
    inputs = [expected[f"arg{i}"] for i in range(len(entry["params"]))]
    _skip_fp16(a.dtype for a in inputs)
    compiled = _compile((root / f"{entry['name']}.tir").read_text(), entry["name"],
                        f"{entry['name']}.tir")
    arrays = [rt.from_numpy(a, dev) for a in inputs]
    compiled[entry["func"]](*[tvm_ffi.from_dlpack(a) for a in arrays])
    dev.synchronize()
    for i, (before, array) in enumerate(zip(inputs, arrays)):
        got = array.to_numpy()
        if i in entry["outputs"]:
            np.testing.assert_allclose(got.astype("float64"), expected[f"out{i}"].astype("float64"),
                                       rtol=max(entry["rtol"], 1e-5), atol=max(entry["atol"], 1e-5),
                                       err_msg=f"{entry['name']}: output {i}")
        else:
            assert np.array_equal(got, before), f"{entry['name']}: input {i} was changed"


BENCH = TESTS.parent / "bench" / "scheduled"
BENCH_TARGET = OPENCL + " -max_shared_memory_per_block=49152"
BENCH_CASES = [pytest.param(m, id=f"bench/{m['name']}")
               for m in json.loads((BENCH / "index.json").read_text())["modules"]
               if m["target"]["kind"] == "cuda"]
# 2048^3 multiply-adds take about 40 s on pocl on two cores; dl_gpu_matmul (sblock) runs the
# same dlight Matmul rule on 64x80x96
BENCH_SLOW = {"dl_matmul": "2048x2048x2048 takes about 40 s on a CPU OpenCL device"}


def _numpy_reference(name: str, args: list[np.ndarray]) -> np.ndarray:
    """What bench/gpu_kernels.py checks these workloads against."""
    a = [x.astype(np.float64) for x in args[:-1]]
    if name == "dl_matmul":
        return a[0] @ a[1]
    if name == "dl_gemv":
        return a[0] @ a[1].T
    if name == "dl_softmax":
        e = np.exp(a[0] - a[0].max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    x, g, b = a  # dl_layernorm
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5) * g + b


def test_the_dlight_bench_modules_build_for_opencl():
    for case in BENCH_CASES:
        (m,) = case.values
        compiled = _compile_target((BENCH / m["file"]).read_text(), m["name"], BENCH_TARGET)
        assert compiled.kernels, m["name"]


@pytest.mark.opencl
@pytest.mark.parametrize("module", BENCH_CASES)
def test_dlight_bench_module_on_opencl_matches_numpy(module):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    dev = _device()
    if module["name"] in BENCH_SLOW:
        pytest.skip(BENCH_SLOW[module["name"]])
    from tirc import runtime as rt
    compiled = _compile_target((BENCH / module["file"]).read_text(), module["name"], BENCH_TARGET,
                               load=True)
    rng = np.random.default_rng(0)
    values = [rng.uniform(-1, 1, p["shape"]).astype("float32") for p in module["params"]]
    arrays = [rt.from_numpy(v, dev) for v in values]
    compiled[module["func"]](*[tvm_ffi.from_dlpack(a) for a in arrays])
    (out,) = module["outputs"]
    np.testing.assert_allclose(arrays[out].to_numpy(), _numpy_reference(module["name"], values),
                               rtol=1e-3, atol=1e-5 if module["name"] == "dl_softmax" else 1e-3)


def _compile_target(text: str, name: str, target: str, load: bool = False):
    import tirc
    return tirc.compile(text, target=target, name=name, filename=f"{name}.tir", load=load)


def _inputs(params: list[dict]):
    from tirc.run import RunError, RunOptions, make_inputs
    for p in params:
        if p["kind"] == "buffer" and re.search(r"x\d+$", p["dtype"]):
            pytest.skip(f"parameter '{p['name']}' has the vector dtype {p['dtype']}: runtime "
                        "arrays take scalar element types")
    try:
        return make_inputs(params, RunOptions(random=True, seed=0, dims=DIMS))
    except RunError as e:
        pytest.skip(f"no inputs: {e}")


_MATH = {"exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
         "tanh", "sinh", "cosh", "erf", "pow", "fabs", "floor", "ceil"}


def _math_intrinsics(text: str) -> str:
    """C and CUDA math functions called by name (``T.call_pure_extern("float32", "__expf",
    x)``, as TVM's CUDA intrinsic rules write them) as the TIR intrinsics they compute
    (``T.exp(x)``), which the interpreter models."""
    def one(m: re.Match) -> str:
        name = m.group(2)
        base = name[2:] if name.startswith("__") else name
        for stem in (base, base[:-1] if base.endswith("f") else None,
                     base[1:] if base.startswith("h") else None):
            if stem in _MATH:
                return f"T.{stem}("
            if stem == "exp10":
                return f"T.pow(T.{m.group(1)}(10), "
        return m.group(0)
    return re.sub(r'T\.call_pure_extern\("(\w+)", "(\w+)", ', one, text)


def _reference(text: str, filename: str, func: str, values: list) -> list:
    """The outputs of ``func`` on ``values`` as the SIMT interpreter computes them."""
    from tirc.testing import simt
    ref = [np.copy(v) if isinstance(v, np.ndarray) else v for v in values]
    simt.run(_math_intrinsics(text), func, ref, target=OPENCL, filename=filename)
    return ref


@pytest.mark.opencl
@pytest.mark.parametrize("path", TEXT)
def test_printed_module_on_opencl_matches_the_interpreter(path):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    dev = _device()
    if path.stem in REFUSED:
        pytest.skip(f"refused for opencl: {REFUSED[path.stem]}")
    if path.stem in NOT_RUN:
        pytest.skip(f"not run: {NOT_RUN[path.stem]}")
    from tirc import runtime as rt
    text = retarget_text(path.read_text())
    compiled = _compile(text, path.stem, str(path))
    ran = 0
    for f in compiled.manifest["functions"]:
        params = f["params"] or []
        values = _inputs(params)
        _skip_fp16(p["dtype"] for p in params)
        on = dev if '"kind": "opencl"' in f["target"] else rt.device("cpu")
        expected = _reference(text, str(path), f["name"], values)
        arrays = [rt.from_numpy(v, on) if isinstance(v, np.ndarray) else v for v in values]
        compiled[f["name"]](*[tvm_ffi.from_dlpack(a) if isinstance(a, rt.Array) else a
                              for a in arrays])
        on.synchronize()
        for i, (want, array) in enumerate(zip(expected, arrays)):
            if not isinstance(array, rt.Array):
                continue
            got = array.to_numpy()
            if got.dtype.kind not in "biu":  # floats, bfloat16 and float8 included
                np.testing.assert_allclose(got.astype("float64"), want.astype("float64"),
                                           rtol=1e-4, atol=1e-5, equal_nan=True,
                                           err_msg=f"{path.stem}.{f['name']}: argument {i}")
            else:
                assert np.array_equal(got, want), f"{path.stem}.{f['name']}: argument {i}"
        ran += 1
    assert ran, path.stem
