"""`tirc build --target rocm` end to end: its outputs (NAME.hsaco beside NAME.o, the
manifest, the header, the depfile), --resource-usage, the Python API, a module mixing
llvm, cuda, opencl and rocm functions in one host object, `tirc targets`, and the errors:
located, exit status 1 or 2, no output written."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from conftest import ROOT
from tirc.backends.rocm import hsaco
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

    @T.prim_func
    def scale_rocm(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target({"host": {"kind": "llvm"}, "kind": "rocm", "mcpu": "gfx1100"})})
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                B[bx * 128 + tx] = A[bx * 128 + tx] * T.float32(0.5)
'''


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_build_writes_the_code_object_beside_the_object(tmp_path):
    r = run("build", ROOT / "samples" / "two_kernels.tir", "--target", "rocm -mcpu=gfx90a",
            "-o", tmp_path, "-MD")
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["two_kernels.d", "two_kernels.h", "two_kernels.hsaco", "two_kernels.json",
                     "two_kernels.o"]
    data = (tmp_path / "two_kernels.hsaco").read_bytes()
    manifest = json.loads((tmp_path / "two_kernels.json").read_text())
    meta = hsaco.kernels(data)
    assert [k["image"] for k in manifest["kernels"]] == ["two_kernels.hsaco"] * 2
    for k in manifest["kernels"]:
        assert k["target_summary"].startswith("rocm")
        assert k["rocm"]["lds_bytes"] == meta[k["symbol"]]["lds_bytes"] > 0
        assert k["rocm"]["args"] == [{"kind": "global_buffer", "offset": 0, "size": 8},
                                     {"kind": "global_buffer", "offset": 8, "size": 8}]
        assert set(k["resource_usage"]) == {"gfx90a"}
    # two_kernels' static shared arrays: 128 floats; 256 floats and 256 int32
    assert [k["rocm"]["lds_bytes"] for k in manifest["kernels"]] == [512, 2048]
    assert [k["rocm"]["max_flat_workgroup_size"] for k in manifest["kernels"]] == [128, 256]
    assert "two_kernels.hsaco" in (tmp_path / "two_kernels.d").read_text()
    assert "__tvm_ffi_two_kernels" in (tmp_path / "two_kernels.h").read_text()
    assert data in (tmp_path / "two_kernels.o").read_bytes()  # embedded as it is


def test_same_input_same_bytes(tmp_path):
    for out in ("a", "b"):
        assert run("build", ROOT / "samples" / "shared_reduction.tir", "--target", "rocm",
                   "-o", tmp_path / out).exit_code == 0
    for name in ("shared_reduction.hsaco", "shared_reduction.o", "shared_reduction.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_resource_usage_reads_the_code_object(tmp_path):
    r = run("build", ROOT / "samples" / "shared_reduction.tir", "--target", "rocm -mcpu=gfx942",
            "-o", tmp_path, "--resource-usage")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    i = lines.index("amdgpu info   : Function properties for reduce_sum_kernel on gfx942")
    assert lines[i + 1].startswith("    VGPRs: ") and "SGPRs: " in lines[i + 1]
    assert lines[i + 2] == "    LDS: 1024 bytes, scratch: 0 bytes per work-item"


def test_code_object_metadata_as_llvm_readelf_reads_it(tmp_path):
    """The metadata parser against LLVM's own reader (when the system has one)."""
    readelf = shutil.which("llvm-readelf")
    if readelf is None:
        pytest.skip("no llvm-readelf")
    assert run("build", ROOT / "samples" / "shared_reduction.tir", "--target", "rocm -mcpu=gfx1100",
               "-o", tmp_path).exit_code == 0
    path = tmp_path / "shared_reduction.hsaco"
    notes = subprocess.run([readelf, "--notes", str(path)], capture_output=True, text=True,
                           check=True).stdout
    k = hsaco.kernels(path.read_bytes())["reduce_sum_kernel"]
    for key, value in (("group_segment_fixed_size", k["lds_bytes"]),
                       ("vgpr_count", k["vgprs"]), ("sgpr_count", k["sgprs"]),
                       ("kernarg_segment_size", k["kernarg_bytes"]),
                       ("wavefront_size", 32), ("max_flat_workgroup_size", 256)):
        assert re.search(rf"\.{key}:\s+{value}\n", notes), key
    assert re.search(r"amdhsa\.target:\s+amdgcn-amd-amdhsa--gfx1100\n", notes)


def test_python_api_gives_the_code_objects():
    import tirc
    c = tirc.compile((ROOT / "samples" / "vector_add.tir").read_text(), target="rocm -mcpu=gfx90a",
                     name="v", load=False)
    assert set(c.hsaco) == {"gfx90a"} and c.hsaco["gfx90a"][:4] == b"\x7fELF"
    assert "gfx90a (code object)" in repr(c)
    assert c.files["v.hsaco"] == c.hsaco["gfx90a"]


def test_a_module_mixing_llvm_cuda_opencl_and_rocm(tmp_path):
    src = tmp_path / "mixed.tir"
    src.write_text(MIXED)
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        r = run("build", src, "-o", out, "-j", jobs)
        assert r.exit_code == 0, r.output
        assert sorted(p.name for p in out.iterdir()) == [
            "mixed.cl", "mixed.h", "mixed.hsaco", "mixed.json", "mixed.o", "mixed.ptx"]
        kernels = json.loads((out / "mixed.json").read_text())["kernels"]
        assert [(k["name"], k["image"]) for k in kernels] == [
            ("scale_cuda_kernel", "mixed.ptx"), ("scale_opencl_kernel", "mixed.cl"),
            ("scale_rocm_kernel", "mixed.hsaco")]
        assert kernels[2]["rocm"]["wavefront_size"] == 32  # gfx1100: wave32
        obj = (out / "mixed.o").read_bytes()
        assert b"libamdhip64.so" in obj and b"libcuda.so.1" in obj and b"libOpenCL.so.1" in obj


def test_errors_are_located_and_leave_no_output(tmp_path):
    out = tmp_path / "out"
    src = tmp_path / "bad.tir"
    src.write_text('# from tvm.script import tirx as T\n\n@T.prim_func\n'
                   'def f(A: T.Buffer((32,), "float64")):\n'
                   '    for tx in T.thread_binding(32, thread="threadIdx.x"):\n'
                   '        A[tx] = T.sin(A[tx])\n')
    r = run("build", src, "--target", "rocm", "-o", out)
    assert r.exit_code == 1
    assert f"{src}:6:17: error: T.sin of float64 is not available on target rocm" in r.output
    assert "Traceback" not in r.output
    src.write_text(src.read_text().replace("T.sin(A[tx])", 'T.call_extern("float64", "foo", A[tx])'))
    r = run("build", src, "--target", "rocm", "-o", out)
    assert r.exit_code == 1 and "unknown extern function 'foo' on target rocm" in r.output
    r = run("build", ROOT / "samples" / "vector_add.tir", "--target", "rocm -arch=sm_80", "-o", out)
    assert r.exit_code == 2 and "unknown option 'arch' for target kind 'rocm'" in r.output
    r = run("build", ROOT / "samples" / "vector_add.tir", "--target", "rocm -mcpu=gfx90a "
            "-thread_warp_size=32", "-o", out)
    assert r.exit_code == 2 and "gfx90a runs wavefronts of 64 work-items" in r.output
    r = run("build", ROOT / "samples" / "vector_add.tir", "--target", "rocm", "--device-format",
            "cubin", "-o", out)
    assert r.exit_code == 1 and "--device-format cubin: the module's device targets are rocm, " \
        "which writes hsaco" in r.output
    r = run("build", ROOT / "samples" / "device_call_let.tir", "--target", "rocm", "-o", out)
    assert r.exit_code == 1 and "target 'rocm' allows 256" in r.output
    assert not out.exists() or not any(out.iterdir())


def test_a_missing_linker_is_an_error_naming_it(tmp_path, monkeypatch):
    from tirc.backends.rocm import link
    monkeypatch.setattr(link, "_LINKER", [])
    monkeypatch.setattr(link, "linker", lambda: None)
    r = run("build", ROOT / "samples" / "vector_add.tir", "--target", "rocm", "-o", tmp_path / "o")
    assert r.exit_code == 1
    assert "vector_add.tir:" in r.output and "needs the linker ld.lld, which was not found: pip " \
        "install 'tirc[rocm]'" in r.output
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_tirc_targets_lists_rocm():
    r = run("targets")
    assert r.exit_code == 0
    block = r.output.split("\nrocm  ", 1)[1].split("\n\n", 1)[0]
    for option in ("-mcpu=<str>  default gfx900", "-mtriple=<str>  default amdgcn-amd-amdhsa",
                   "-max_num_threads=<int>  default 256",
                   "-thread_warp_size=<int>  default 64 [derived]",
                   "-max_shared_memory_per_block=<int>  default 65536 [derived]",
                   "one of: gfx900,", "gfx90a", "gfx942", "gfx1030", "gfx1100"):
        assert option in block, option


def test_a_bad_rocm_option_in_the_text_is_located(tmp_path):
    src = tmp_path / "bad.tir"
    src.write_text('# from tvm.script import tirx as T\n\n@T.prim_func\n'
                   'def f(A: T.Buffer((4,), "float32")):\n'
                   '    T.func_attr({"target": T.target({"kind": "rocm", "mcpu": "gfx12"})})\n'
                   '    A[0] = T.float32(1)\n')
    r = run("build", src, "-o", tmp_path / "out")
    assert r.exit_code == 1
    assert f"{src}:5:37: error: invalid target: invalid value 'gfx12' for option 'mcpu' of " \
           "'rocm'" in r.output


def test_tirc_run_says_it_has_no_rocm_device():
    r = run("run", ROOT / "samples" / "vector_add.tir", "--target", "rocm", "--dim", "n=100",
            "--random")
    assert r.exit_code == 1
    assert "'vector_add' is compiled for an AMD GPU (rocm (host llvm)): tirc run has no ROCm " \
           "device" in r.output


CMAKE_PROJECT = """
cmake_minimum_required(VERSION 3.20)
project(rocm_sample LANGUAGES C)
find_package(tirc REQUIRED)
tirc_add_library(amd_kernels SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/vector_add.tir
                 TARGET "rocm -mcpu=gfx90a" HOST llvm)
add_executable(sample main.c)
target_link_libraries(sample PRIVATE amd_kernels)
"""
CMAKE_MAIN = r"""
#include <stdio.h>
#include "vector_add.h"
int main(void) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, c[4];
  if (vector_add(a, b, c, 4) != 0) printf("vector_add failed: %s\n", vector_add_last_error());
  else printf("vector_add ran\n");
  return 0;
}
"""


def test_a_cmake_project_builds_and_links_a_rocm_module(tmp_path):
    """tirc_add_library with a rocm TARGET: the code object beside the object, the program
    links without ROCm and its launch fails cleanly where there is no HIP runtime."""
    from test_cmake import CMAKE, _project, _run, tool
    if CMAKE is None or tool("ninja") is None or tool("cc") is None:
        pytest.skip("cmake, ninja or a C compiler is missing")
    _project(tmp_path)  # writes tmp_path/tirc, this checkout's tirc
    src = tmp_path / "proj"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CMAKE_PROJECT)
    (src / "main.c").write_text(CMAKE_MAIN)
    shutil.copy(ROOT / "samples" / "vector_add.tir", src / "vector_add.tir")
    build = tmp_path / "build"
    _run(CMAKE, "-S", src, "-B", build, "-G", "Ninja", f"-Dtirc_DIR={ROOT / 'tirc' / 'cmake'}",
         f"-DTIRC_EXECUTABLE={tmp_path / 'tirc'}")
    _run(CMAKE, "--build", build)
    out = build / "tirc" / "amd_kernels"
    assert sorted(p.name for p in out.iterdir()) == [
        "vector_add.d", "vector_add.h", "vector_add.hsaco", "vector_add.json", "vector_add.o"]
    ran = _run(build / "sample").stdout
    assert ran == "vector_add ran\n" or ran.startswith(
        "vector_add failed: RuntimeError: the HIP runtime (libamdhip64.so) could not be loaded")


TWO_ARCHS = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def a(A: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target({"kind": "rocm", "mcpu": "gfx90a", "host": {"kind": "llvm"}})})
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                A[bx * 128 + tx] = A[bx * 128 + tx] * T.float32(0.5)

    @T.prim_func
    def b(A: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target({"kind": "rocm", "mcpu": "gfx1100", "host": {"kind": "llvm"}})})
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                A[bx * 128 + tx] = A[bx * 128 + tx] * T.float32(2)
'''


def test_two_rocm_targets_give_two_code_objects(tmp_path):
    src = tmp_path / "two.tir"
    src.write_text(TWO_ARCHS)
    r = run("build", src, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    kernels = json.loads((tmp_path / "out" / "two.json").read_text())["kernels"]
    assert [(k["name"], k["image"], k["rocm"]["wavefront_size"]) for k in kernels] == [
        ("a_kernel", "two.hsaco", 64), ("b_kernel", "two.2.hsaco", 32)]
    for image, arch in (("two.hsaco", "gfx90a"), ("two.2.hsaco", "gfx1100")):
        meta = hsaco.metadata((tmp_path / "out" / image).read_bytes())
        assert meta["amdhsa.target"] == f"amdgcn-amd-amdhsa--{arch}"


def test_lineinfo_is_a_warning_for_rocm(tmp_path):
    r = run("build", ROOT / "samples" / "vector_add.tir", "--target", "rocm", "-lineinfo",
            "-o", tmp_path)
    assert r.exit_code == 0, r.output
    assert "warning: -lineinfo: AMDGPU code objects are built without line information" in r.output
    assert (tmp_path / "vector_add.hsaco").exists()
