"""Resource usage of cubins: read by the cubin stage from nvJitLink's ``-verbose`` info
log (``tirc/backends/cuda/cubin.py``), recorded per kernel and arch in ``NAME.json``,
printed by ``--resource-usage`` as ``nvcc --resource-usage`` does, and the warning for
a block whose registers cannot fit one SM (``tirc/backends/cuda/resource_usage.py``). The log parser
and the report run everywhere; builds need nvJitLink; the figures are compared with
``ptxas -c -v`` where a ptxas is installed (the project itself never runs it)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap

import pytest
from click.testing import CliRunner

from conftest import ROOT
from tirc.backends.cuda import cubin as nvptx_cubin
from tirc.backends.cuda.cubin import FIELDS, parse_info_log
from tirc.build.stages import build
from tirc.driver import cli
from tirc.backends.cuda.resource_usage import block_registers, nvcc_report, register_overflows

SAMPLES = ROOT / "samples"
CUDA_SAMPLES = sorted(p for p in SAMPLES.glob("*.tir") if p.name != "cpu_matmul.tir")
needs_nvjitlink = pytest.mark.skipif(not nvptx_cubin.available(),
                                     reason="nvJitLink is not installed")

# nvJitLink 13.5's info log of device_call_add for sm_90 (a device function, then the
# kernel; the linker's report of the linked cubin last), and one of two kernels
LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for add
ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'main_kernel' for 'sm_90'
ptxas info    : Function properties for main_kernel
ptxas         .     8 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 24 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 1.779 ms
info    : 0 bytes gmem
info    : Function properties for 'main_kernel':
info    : used 32 registers, used 6 barriers, 24 stack, 2048 bytes smem, 552 bytes cmem[0], 0 bytes lmem
"""
LOG_TWO = """\
ptxas info    : Compiling entry function 'k1' for 'sm_80'
ptxas info    : Function properties for k1
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 368 bytes cmem[0]
ptxas info    : Compiling entry function 'k0' for 'sm_80'
ptxas info    : Function properties for k0
ptxas         .     0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 512 bytes smem, 372 bytes cmem[0]
"""


def test_info_log_kernel_figures():
    usage = parse_info_log(LOG)
    assert list(usage) == ["main_kernel"]  # the device function reports no registers
    # the linked cubin's registers, stack, smem and cmem; ptxas's spills
    assert usage["main_kernel"] == {"registers": 32, "spill_stores": 12, "spill_loads": 20,
                                    "stack_frame": 24, "shared_memory": 2048,
                                    "constant_memory": 552}
    # without the linker's lines: ptxas's figures, 0 for what it leaves out
    two = parse_info_log(LOG_TWO)
    assert list(two) == ["k1", "k0"]
    assert two["k1"] == {"registers": 12, "spill_stores": 0, "spill_loads": 0, "stack_frame": 0,
                         "shared_memory": 0, "constant_memory": 368}
    assert two["k0"]["registers"] == 255 and two["k0"]["spill_stores"] == 4
    assert two["k0"]["shared_memory"] == 512
    assert parse_info_log("") == {}


def test_nvcc_report_form():
    kernels = [{"name": "k0", "symbol": "k0", "resource_usage": {
        "sm_90": dict(parse_info_log(LOG_TWO)["k0"]), "sm_80": parse_info_log(LOG_TWO)["k1"]}},
        {"name": "cpu_only"}]
    assert nvcc_report(kernels) == [
        "ptxas info    : Compiling entry function 'k0' for 'sm_80'",
        "ptxas info    : Function properties for k0",
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
        "ptxas info    : Used 12 registers, 368 bytes cmem[0]",
        "ptxas info    : Compiling entry function 'k0' for 'sm_90'",
        "ptxas info    : Function properties for k0",
        "    0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads",
        "ptxas info    : Used 255 registers, 512 bytes smem, 372 bytes cmem[0]",
    ]


def test_register_fit():
    # per warp: registers x 32 rounded up to 256; a block: its warps' sum
    assert block_registers(1024, 64, 256) == 65536
    assert block_registers(1024, 65, 256) == 32 * 2304
    assert block_registers(100, 33, 256) == 4 * 1280

    def kernel(registers, block, launches=()):
        figures = {f: 0 for f in FIELDS} | {"registers": registers}
        return {"name": "k", "block": block, "launches": [{"block": b} for b in launches],
                "resource_usage": {"sm_80": figures, "sm_90": figures}}

    assert register_overflows([kernel(64, [1024, 1, 1])]) == []
    found = register_overflows([kernel(65, [32, 32, 1])])
    assert [k for k, _ in found] == ["k", "k"]
    assert ("kernel 'k' uses 65 registers per thread on sm_80: a block of 1024 threads needs "
            "73728 registers, more than the 65536 of one SM") in found[0][1]
    # a symbolic block: the constant sizes of the launch sites, the largest
    assert register_overflows([kernel(128, ["n", 1, 1], [[256, 1, 1], ["m", 1, 1]])]) == []
    assert len(register_overflows([kernel(128, ["n", 1, 1], [[256, 1, 1], [1024, 1, 1]])])) == 2
    assert register_overflows([kernel(255, ["n", 1, 1], [["n", 1, 1]])]) == []  # unknown
    assert register_overflows([{"name": "k", "block": [1024, 1, 1]}]) == []  # no cubin


# -- builds ----------------------------------------------------------------------------------
@needs_nvjitlink
def test_manifest_records_usage_per_arch_for_cubins_only(tmp_path):
    text = (SAMPLES / "two_kernels.tir").read_text()
    r = build(text, "cuda -arch=sm_80,sm_90", "llvm", tmp_path / "c", "two_kernels",
              device_format="cubin")
    kernels = json.loads((tmp_path / "c" / "two_kernels.json").read_text())["kernels"]
    assert kernels == r.manifest["kernels"]
    for k in kernels:
        assert sorted(k["resource_usage"]) == ["sm_80", "sm_90"]
        for figures in k["resource_usage"].values():
            assert sorted(figures) == sorted(FIELDS) and figures["registers"] > 0
    # static shared memory: 128 floats in the first kernel, 256 floats and 256 ints in the
    # second (a kernel without dynamic shared memory keeps its static buffers)
    assert kernels[0]["resource_usage"]["sm_80"]["shared_memory"] == 512
    assert kernels[1]["resource_usage"]["sm_80"]["shared_memory"] == 2048
    assert kernels[1]["dynamic_shared_memory"] == 0
    build(text, "cuda -arch=sm_80", "llvm", tmp_path / "p", "two_kernels")
    ptx_kernels = json.loads((tmp_path / "p" / "two_kernels.json").read_text())["kernels"]
    assert all("resource_usage" not in k for k in ptx_kernels)


SPILL_KERNEL = """\
.version 7.0
.target sm_80
.address_size 64

.visible .entry spill(.param .u64 p)
.maxnreg 24
{
  .reg .f32 %f<98>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
"""


def _spill_ptx(n: int = 48) -> str:
    """48 values live at once under ``.maxnreg 24``: ptxas must spill."""
    body = [f"  ld.volatile.global.f32 %f{i}, [%rd1+{4 * i}];" for i in range(n)]
    body.append(f"  mov.f32 %f{n}, 0f00000000;")
    body += [f"  fma.rn.f32 %f{n + 1 + i}, %f{i}, %f{n - 1 - i}, %f{n + i};" for i in range(n)]
    body += [f"  st.global.f32 [%rd1], %f{2 * n};", "  ret;", "}", ""]
    return SPILL_KERNEL + "\n".join(body)


@needs_nvjitlink
def test_spills_and_stack_frame_of_a_kernel_that_spills():
    usage = nvptx_cubin.compile_cubin(_spill_ptx(), "sm_80").resources["spill"]
    assert usage["registers"] <= 24
    assert usage["spill_stores"] > 0 and usage["spill_loads"] > 0
    assert usage["stack_frame"] >= usage["spill_stores"] // 2


@needs_nvjitlink
def test_resource_usage_flag(tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, ["build", str(SAMPLES / "shared_reduction.tir"), "--target",
                            "cuda -arch=sm_80,sm_90", "--device-format", "cubin",
                            "--resource-usage", "-q", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[:3] == [
        "ptxas info    : Compiling entry function 'reduce_sum_kernel' for 'sm_80'",
        "ptxas info    : Function properties for reduce_sum_kernel",
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"]
    assert re.fullmatch(r"ptxas info    : Used \d+ registers, 1024 bytes smem, \d+ bytes cmem\[0\]",
                        lines[3])
    assert lines[4] == "ptxas info    : Compiling entry function 'reduce_sum_kernel' for 'sm_90'"
    assert len(lines) == 8
    r = runner.invoke(cli, ["build", str(SAMPLES / "vector_add.tir"), "--target", "cuda",
                            "--resource-usage", "-o", str(tmp_path / "p")])
    assert r.exit_code == 2 and "--device-format cubin or fatbin" in r.output


@needs_nvjitlink
def test_register_overflow_is_a_warning_at_the_kernel(tmp_path, monkeypatch):
    """The build's plumbing: what the cubin stage reports reaches the check, and the
    warning points at the kernel. (ptxas keeps a kernel with a constant block size
    within one SM through .maxntid, so a real cubin over the limit needs a block size
    known only at launch; the figures are stood in for here.)"""
    real = nvptx_cubin.compile_cubin

    def heavy(ptx, arch, name="module", span=None, line_info=False):
        cubin = real(ptx, arch, name, span, line_info)
        return nvptx_cubin.Cubin(cubin.data, arch, {s: {**f, "registers": 128}
                                                    for s, f in cubin.resources.items()})

    monkeypatch.setattr(nvptx_cubin, "compile_cubin", heavy)
    src = tmp_path / "wide.tir"
    src.write_text(textwrap.dedent("""\
        # from tvm.script import tirx as T
        @T.prim_func
        def wide(A: T.Buffer((1024,), "float32")):
            for tx in T.thread_binding(1024, thread="threadIdx.x"):
                A[tx] = A[tx] * T.float32(2)
    """))
    r = CliRunner().invoke(cli, ["build", str(src), "--target", "cuda -arch=sm_80",
                                 "--device-format", "cubin", "-o", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output  # a warning: the build goes on
    assert f"{src}:4:5: warning: kernel 'wide_kernel' uses 128 registers per thread on " \
           "sm_80: a block of 1024 threads needs 131072 registers" in r.output
    assert "for tx in T.thread_binding(1024" in r.output  # the source line, with a caret


@needs_nvjitlink
@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas to compare with")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_figures_match_ptxas(arch, tmp_path):
    """``ptxas -c -v`` (what nvJitLink runs on PTX) on the same PTX gives the same
    registers, spills and stack frame; on sm_80 also the same shared and constant memory.
    On sm_90 the linked cubin's shared memory includes the 1 KiB the arch reserves for
    a block using shared memory and its constant bank the kernel parameters, which
    ptxas's report leaves out: there ours is at least ptxas's. (Written against ptxas
    13.0 and nvJitLink 13.5, which agree; a ptxas of another release may allocate
    registers differently.)"""
    checked = 0
    cases = [(p.read_text(), p.name) for p in CUDA_SAMPLES]
    for text, name in cases:
        out = tmp_path / name
        ptx_build = build(text, f"cuda -arch={arch}", "llvm", out / "ptx", device_only=True)
        ours = {k["symbol"]: k["resource_usage"][arch]
                for k in build(text, f"cuda -arch={arch}", "llvm", out / "cubin",
                               device_only=True, device_format="cubin").manifest["kernels"]
                if k["target"] is not None and arch in k.get("resource_usage", {})}
        for ptx in ptx_build.images.values():
            checked += _compare(ptx.read_text(), arch, ours, tmp_path)
    if arch == "sm_80":
        ptx = _spill_ptx()
        checked += _compare(ptx, arch, nvptx_cubin.compile_cubin(ptx, arch).resources, tmp_path)
    assert checked >= len(CUDA_SAMPLES)


def _compare(ptx: str, arch: str, ours: dict, tmp_path) -> int:
    if f".target {arch}" not in ptx:
        return 0
    src = tmp_path / "in.ptx"
    src.write_text(ptx)
    proc = subprocess.run(["ptxas", "-c", "-v", f"-arch={arch}", str(src), "-o",
                           str(tmp_path / "out.cubin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    theirs, current = {}, None
    for line in proc.stderr.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = theirs.setdefault(m.group(1), {})
            continue
        for value, what in re.findall(r"(\d+) (?:bytes )?(stack frame|spill stores|spill loads|"
                                      r"registers|smem|cmem\[0\])", line):
            current[what] = int(value)
    n = 0
    for symbol, t in theirs.items():
        if "registers" not in t:
            continue  # a device function
        o = ours[symbol]
        assert (o["registers"], o["spill_stores"], o["spill_loads"], o["stack_frame"]) == (
            t["registers"], t["spill stores"], t["spill loads"], t["stack frame"]), symbol
        if arch == "sm_80":
            assert (o["shared_memory"], o["constant_memory"]) == (t.get("smem", 0),
                                                                 t.get("cmem[0]", 0)), symbol
        else:
            assert o["shared_memory"] >= t.get("smem", 0), symbol
            assert o["constant_memory"] >= t.get("cmem[0]", 0), symbol
        n += 1
    return n
