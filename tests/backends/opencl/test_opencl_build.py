"""`tirc build --target opencl` end to end: its outputs (NAME.cl beside NAME.o, the manifest,
the header, the depfile), a module mixing llvm, cuda and opencl functions in one host
object, and the errors: located, exit status 1, no output written."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ROOT
from tirc.driver import cli

MIXED = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def scale_cpu(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target({"kind": "llvm"})})
        for i in T.parallel(1024):
            B[i] = A[i] * T.float32(0.5)

    @T.prim_func
    def scale_cuda(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target({"arch": "sm_80", "host": {"kind": "llvm"}, "kind": "cuda"})})
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                B[bx * 128 + tx] = A[bx * 128 + tx] * T.float32(0.5)

    @T.prim_func
    def scale_opencl(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target({"host": {"kind": "llvm"}, "kind": "opencl"})})
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                B[bx * 128 + tx] = A[bx * 128 + tx] * T.float32(0.5)
'''


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_build_writes_the_opencl_source_beside_the_object(tmp_path):
    r = run("build", ROOT / "samples" / "two_kernels.tir", "--target", "opencl", "-o", tmp_path, "-MD")
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["two_kernels.cl", "two_kernels.d", "two_kernels.h", "two_kernels.json",
                     "two_kernels.o"]
    source = (tmp_path / "two_kernels.cl").read_text()
    manifest = json.loads((tmp_path / "two_kernels.json").read_text())
    assert [k["image"] for k in manifest["kernels"]] == ["two_kernels.cl"] * 2
    for k in manifest["kernels"]:
        assert f"__kernel void {k['symbol']}(" in source
        assert k["opencl"]["params"] == ["__global float* restrict A_ptr",
                                         "__global float* restrict B_ptr"] or k["opencl"]["params"]
        assert k["target_summary"].startswith("opencl")
    assert "two_kernels.cl" in (tmp_path / "two_kernels.d").read_text()
    assert "__tvm_ffi_two_kernels" in (tmp_path / "two_kernels.h").read_text()
    # the source is in the object too, NUL-terminated, as the launch builds it
    assert source.encode() + b"\0" in (tmp_path / "two_kernels.o").read_bytes()


def test_same_input_same_bytes(tmp_path):
    for out in ("a", "b"):
        assert run("build", ROOT / "samples" / "shared_reduction.tir", "--target", "opencl",
                   "-o", tmp_path / out).exit_code == 0
    for name in ("shared_reduction.cl", "shared_reduction.o", "shared_reduction.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_module_mixing_llvm_cuda_and_opencl(tmp_path):
    src = tmp_path / "mixed.tir"
    src.write_text(MIXED)
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        r = run("build", src, "-o", out, "-j", jobs)
        assert r.exit_code == 0, r.output
        assert sorted(p.name for p in out.iterdir()) == ["mixed.cl", "mixed.h", "mixed.json",
                                                         "mixed.o", "mixed.ptx"]
        kernels = json.loads((out / "mixed.json").read_text())["kernels"]
        assert [(k["name"], k["image"]) for k in kernels] == [
            ("scale_cuda_kernel", "mixed.ptx"), ("scale_opencl_kernel", "mixed.cl")]


@pytest.mark.opencl
def test_the_mixed_module_runs_its_cpu_and_opencl_functions():
    pytest.importorskip("pyopencl", reason="pyopencl is not installed (pip install 'tirc[opencl]')")
    import tirc
    import tvm_ffi
    from tirc import runtime as rt
    dev = rt.device("opencl", 0)
    if not dev.exists:
        pytest.skip("no OpenCL device")
    c = tirc.compile(MIXED, name="mixed")
    a = np.arange(1024, dtype="float32")
    for name, on in (("scale_opencl", dev), ("scale_cpu", rt.cpu())):
        x, y = rt.from_numpy(a, on), rt.empty((1024,), "float32", on)
        c[name](tvm_ffi.from_dlpack(x), tvm_ffi.from_dlpack(y))
        assert np.array_equal(y.to_numpy(), a * 0.5), name
    x, y = rt.from_numpy(a, dev), rt.empty((1024,), "float32", dev)
    with pytest.raises(ValueError, match="expected cuda"):
        c["scale_cuda"](tvm_ffi.from_dlpack(x), tvm_ffi.from_dlpack(y))


def test_errors_are_located_and_leave_no_output(tmp_path):
    src = tmp_path / "bad.tir"
    src.write_text('# from tvm.script import tirx as T\n\n@T.prim_func\n'
                   'def f(A: T.Buffer((32,), "uint32")):\n'
                   '    for tx in T.thread_binding(32, thread="threadIdx.x"):\n'
                   '        A[tx] = T.tvm_warp_activemask()\n')
    out = tmp_path / "out"
    r = run("build", src, "--target", "opencl", "-o", out)
    assert r.exit_code == 1
    assert f"{src}:6:17: error: T.tvm_warp_activemask is not supported in OpenCL device code " \
           "(target 'opencl')" in r.output
    assert "Traceback" not in r.output
    assert not out.exists() or not any(out.iterdir())
    r = run("build", ROOT / "samples" / "vector_add.tir", "--target", "opencl -arch=sm_80", "-o", out)
    assert r.exit_code == 2 and "unknown option 'arch' for target kind 'opencl'" in r.output
    r = run("build", ROOT / "samples" / "vector_add.tir", "--target", "opencl", "--device-format",
            "cubin", "-o", out)
    assert r.exit_code == 1 and "--device-format cubin: the module's device targets are opencl, " \
        "which writes cl" in r.output
    r = run("build", ROOT / "samples" / "device_call_let.tir", "--target", "opencl", "-o", out)
    assert r.exit_code == 1 and "target 'opencl' allows 256" in r.output
    assert not out.exists() or not any(out.iterdir())


def test_tirc_targets_lists_opencl():
    r = run("targets")
    assert r.exit_code == 0
    block = r.output.split("\nopencl  ", 1)[1].split("\n\n", 1)[0]
    for option in ("-max_num_threads=<int>  default 256", "-thread_warp_size=<int>  default 1",
                   "-max_shared_memory_per_block=<int>  default 16384",
                   "-texture_spatial_limit=<int>", "-image_base_address_alignment=<int>"):
        assert option in block


def test_a_bad_opencl_option_in_the_text_is_located(tmp_path):
    src = tmp_path / "bad.tir"
    src.write_text('# from tvm.script import tirx as T\n\n@T.prim_func\n'
                   'def f(A: T.Buffer((4,), "float32")):\n'
                   '    T.func_attr({"target": T.target({"kind": "opencl", "arch": "sm_80"})})\n'
                   '    A[0] = T.float32(1)\n')
    r = run("build", src, "-o", tmp_path / "out")
    assert r.exit_code == 1
    assert f"{src}:5:37: error: invalid target: unknown option 'arch' for target kind " \
           "'opencl'" in r.output
