"""The NVPTX backend: PTX of every CUDA sample checked with FileCheck patterns (the
``filecheck`` package), device builds through ``build()`` and the CLI, libdevice and
nvJitLink gating. No GPU needed; ``ptxas`` and nvJitLink checks skip without them."""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import tirc.backends.cuda.nvptx as nvptx
from tirc.backends.cuda import libdevice
from conftest import ptxas_check, TESTS
from tirc.build.stages import build, split_module
from tirc.build.options import bind_target_from
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline

ROOT = TESTS.parent
SAMPLES = ROOT / "samples"
CUDA_SAMPLES = ["device_call_add", "device_call_let", "shared_reduction", "two_kernels",
                "vector_add", "multi_target"]
HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def images(text: str, target: str = "cuda -arch=sm_90", filename: str = "t.tir"):
    """The device images of a module, by arch."""
    mod = run_pipeline(parse(text, filename), PassContext(bind_target_from(target, None)))
    _, devices = split_module(mod)
    return {img.arch: img for img in (nvptx.generate(m, t) for t, m in devices.items())}


def sample_ptx(name: str, arch: str = "sm_90") -> str:
    return images((SAMPLES / f"{name}.tir").read_text(), filename=f"{name}.tir")[arch].ptx


def filecheck(text: str, checks: str, tmp_path) -> None:
    check_file = tmp_path / "checks.txt"
    check_file.write_text(textwrap.dedent(checks))
    proc = subprocess.run([sys.executable, "-m", "filecheck", str(check_file)], input=text,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n--- PTX ---\n" + text


@pytest.fixture
def no_libdevice(monkeypatch):
    monkeypatch.setattr(libdevice, "locate", lambda: None)


def _libdevice_path() -> str | None:
    found = libdevice.locate()
    if found:
        return found
    local = Path("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")  # only to exercise linking
    return str(local) if local.exists() else None


# -- the samples --------------------------------------------------------------------------
def test_seed000_device_call_add(tmp_path):
    filecheck(sample_ptx("device_call_add"), r"""
        CHECK: .version 7.8
        CHECK: .target sm_90
        CHECK: .address_size 64
        CHECK: .func  (.param .b32 func_retval0) add(
        CHECK: add.s32
        CHECK: .visible .entry main_kernel(
        CHECK-NEXT: .param .u64 .ptr .global .align {{[0-9]+}} main_kernel_param_0,
        CHECK: .maxntid 128, 1, 1
        CHECK-DAG: mov.u32 {{%r[0-9]+}}, %ctaid.x;
        CHECK-DAG: mov.u32 {{%r[0-9]+}}, %tid.x;
        CHECK: ld.global
        CHECK: call.uni (retval0), add, (param0, param1);
        CHECK: st.global.b32
    """, tmp_path)


def test_seed000_device_call_let(tmp_path):
    filecheck(sample_ptx("device_call_let"), r"""
        CHECK: .target sm_90
        CHECK: .func  (.param .b32 func_retval0) add(
        CHECK: add.f32
        CHECK: .visible .entry main_kernel(
        CHECK: .maxntid 1024, 1, 1
        CHECK: mov.u32 {{%r[0-9]+}}, %tid.x;
        CHECK: call.uni (retval0), add,
        CHECK: add.f32 {{%r[0-9]+}}, {{%r[0-9]+}}, 0f40400000;
        CHECK: st.global.b32
    """, tmp_path)


def test_static_shared_memory_and_barriers(tmp_path):
    filecheck(sample_ptx("shared_reduction"), r"""
        CHECK: .visible .entry reduce_sum_kernel(
        CHECK: .maxntid 256, 1, 1
        CHECK: .shared .align 16 .b8 reduce_sum_kernel_red[1024];
        CHECK: ld.global
        CHECK: st.shared.b32
        CHECK-COUNT-9: bar.sync 0;
        CHECK-NOT: bar.sync
        CHECK: ld.shared.b32
        CHECK: st.global.b32
    """, tmp_path)


def test_static_shared_memory_and_two_kernels(tmp_path):
    # no dynamic allocation and less than 48 KiB: each kernel keeps its static arrays
    filecheck(sample_ptx("two_kernels"), r"""
        CHECK-NOT: buf_dyn_shmem
        CHECK: .visible .entry two_kernels_kernel(
        CHECK: .maxntid 128, 1, 1
        CHECK: .shared .align 16 .b8 two_kernels_kernel_stage[512];
        CHECK: bar.sync 0;
        CHECK: .visible .entry two_kernels_kernel_1(
        CHECK: .maxntid 256, 1, 1
        CHECK: .shared .align 16 .b8 two_kernels_kernel_1_tile[1024];
        CHECK: .shared .align 16 .b8 two_kernels_kernel_1_flags[1024];
        CHECK: st.shared.b32
        CHECK: bar.sync 0;
        CHECK: ld.shared.b32
    """, tmp_path)


REUSED_DYN_SHMEM = """# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def reuse(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
        for bx in T.thread_binding(16, thread="blockIdx.x"):
            for tx in T.thread_binding(256, thread="threadIdx.x"):
                a = T.alloc_buffer((256,), scope="shared.dyn")
                b = T.alloc_buffer((256,), "int32", scope="shared.dyn")
                c = T.alloc_buffer((1024,), "float16", scope="shared.dyn")
                a[tx] = A[bx * 256 + tx]
                b[tx] = tx
                T.tvm_storage_sync("shared")
                B[bx * 256 + tx] = a[255 - tx] + T.Cast("float32", b[tx])
                T.tvm_storage_sync("shared")
                c[tx * 4] = T.Cast("float16", B[bx * 256 + tx])
                T.tvm_storage_sync("shared")
                B[bx * 256 + tx] = T.Cast("float32", c[1020 - tx * 4])
"""


def test_dynamic_shared_memory_reused_by_liveness(tmp_path):
    # a and b (1 KiB each) are alive together, side by side; c (2 KiB of float16, born
    # after both died) lies over both: one 2 KiB buffer, c's accesses from offset 0
    mod = run_pipeline(parse(REUSED_DYN_SHMEM, "reuse.tir"),
                       PassContext(bind_target_from("cuda -arch=sm_90", None)))
    assert [k.sizes.dynamic_shared_memory for k in mod.facts.kernels] == [2048]
    ptx = images(REUSED_DYN_SHMEM)["sm_90"].ptx
    filecheck(ptx, r"""
        CHECK: .extern .shared .align 16 .b8 buf_dyn_shmem[];
        CHECK: .visible .entry reuse_kernel(
        CHECK: mov.b64 [[BASE:%rd[0-9]+]], buf_dyn_shmem;
        CHECK: st.shared.b32 [{{%rd[0-9]+}}+1024]
        CHECK: st.shared.b32 [{{%rd[0-9]+}}]
        CHECK: bar.sync 0;
        CHECK: bar.sync 0;
        CHECK: add.s64 [[C:%rd[0-9]+]], [[BASE]], {{%rd[0-9]+}};
        CHECK-NEXT: st.shared.b16 [[[C]]]
        CHECK: bar.sync 0;
        CHECK: ld.shared.b16
    """, tmp_path)
    _ptxas(ptx, "sm_90", tmp_path)


def test_vector_add_noalias_and_symbolic_size(tmp_path):
    filecheck(sample_ptx("vector_add"), r"""
        CHECK: .visible .entry vector_add_kernel(
        CHECK-COUNT-3: .param .u64 .ptr .global
        CHECK-NEXT: .param .u32 vector_add_kernel_param_3
        CHECK: .maxntid 256, 1, 1
        CHECK: setp.ge.s32
        CHECK: ld.global.nc.b32
        CHECK: add.f32
        CHECK: st.global.b32
    """, tmp_path)


def test_multi_target_gives_one_image_per_arch(tmp_path):
    imgs = images((SAMPLES / "multi_target.tir").read_text())
    assert sorted(imgs) == ["sm_80", "sm_90"]
    filecheck(imgs["sm_80"].ptx, """
        CHECK: .version 7.0
        CHECK: .target sm_80
        CHECK: .visible .entry scale_sm80_kernel(
        CHECK-NOT: scale_sm90
    """, tmp_path)
    filecheck(imgs["sm_90"].ptx, """
        CHECK: .version 7.8
        CHECK: .target sm_90
        CHECK: .visible .entry scale_sm90_kernel(
    """, tmp_path)
    assert imgs["sm_80"].kernels == ("scale_sm80_kernel",)


def test_scalar_kernel_parameters_and_non_constant_block_count(tmp_path):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(a: T.handle, n: T.int32):
            A = T.match_buffer(a, (n,), "float32")
            for bx in T.thread_binding((n + 127) // 128, thread="blockIdx.x"):
                for tx in T.thread_binding(128, thread="threadIdx.x"):
                    if bx * 128 + tx < n:
                        A[bx * 128 + tx] = A[bx * 128 + tx] + T.float32(1)
    """)
    filecheck(images(text)["sm_90"].ptx, r"""
        CHECK: .visible .entry f_kernel(
        CHECK-DAG: .param .u64 .ptr .global .align {{[0-9]+}} f_kernel_param_{{[0-9]}}
        CHECK-DAG: .param .{{[bu]}}32 f_kernel_param_{{[0-9]}}
        CHECK: .maxntid 128, 1, 1
        CHECK: setp
        CHECK: ld.global.b32
        CHECK: st.global.b32
    """, tmp_path)


def test_local_memory_two_dimensional_blocks_and_native_math(tmp_path, no_libdevice):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float64")):
            for ty in T.thread_binding(4, thread="threadIdx.y"):
                for tx in T.thread_binding(16, thread="threadIdx.x"):
                    acc = T.alloc_buffer((2,), "float32", scope="local")
                    acc[0] = T.sqrt(A[ty * 16 + tx]) + T.floor(A[ty * 16 + tx])
                    acc[1] = T.fabs(acc[0])
                    A[ty * 16 + tx] = acc[0] + acc[1]
                    B[ty * 16 + tx] = T.fma(B[ty * 16 + tx], B[ty * 16 + tx], T.float64(1))
    """)
    filecheck(images(text)["sm_90"].ptx, r"""
        CHECK: .maxntid 16, 4, 1
        CHECK-DAG: mov.u32 {{%r[0-9]+}}, %tid.y;
        CHECK-DAG: sqrt.rn.f32
        CHECK-DAG: cvt.rmi.f32.f32
        CHECK-DAG: abs.f32
        CHECK-DAG: fma.rn.f64
        CHECK-NOT: call
    """, tmp_path)


# -- libdevice ----------------------------------------------------------------------------
MATH = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float64")):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            A[tx] = T.exp(A[tx]) + T.tanh(A[tx]) + T.pow(A[tx], T.float32(3))
            B[tx] = T.erf(B[tx])
""")


def test_math_without_libdevice_is_a_diagnostic(no_libdevice):
    with pytest.raises(Diagnostic, match=r"the math function T\.exp needs libdevice") as e:
        images(MATH, filename="m.tir")
    assert e.value.span is not None and e.value.span.line == 7


def test_math_through_libdevice(tmp_path, monkeypatch):
    path = _libdevice_path()
    if path is None:
        pytest.skip("no libdevice.10.bc on this machine")
    monkeypatch.setattr(libdevice, "locate", lambda: path)
    img = images(MATH)["sm_90"]
    assert "__nvvm_reflect" not in img.ptx
    assert "__nv_" not in img.ptx  # linked in and inlined, not left as calls
    filecheck(img.ptx, r"""
        CHECK: .visible .entry f_kernel(
        CHECK: ex2.approx
    """, tmp_path)
    _ptxas(img.ptx, "sm_90", tmp_path)


def test_the_optimiser_sees_libdevice_inlined_into_the_kernels(monkeypatch):
    path = _libdevice_path()
    if path is None:
        pytest.skip("no libdevice.10.bc on this machine")
    monkeypatch.setattr(libdevice, "locate", lambda: path)
    seen = []
    real = libdevice.link

    def link(parsed, path, machine, pieces=False):
        real(parsed, path, machine, pieces)
        seen.append(sorted(f.name for f in parsed.functions if f.name.startswith("__nv")))
    monkeypatch.setattr(libdevice, "link", link)
    images(MATH)
    # not libdevice's 350 functions for -O3 to drop, nor the four MATH calls for -O3 to
    # work on once for all their callers: only the reflect query, inlined with them
    assert seen == [["__nvvm_reflect"]]


# -- properties -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", CUDA_SAMPLES)
def test_same_bytes_twice(name):
    text = (SAMPLES / f"{name}.tir").read_text()
    first, second = images(text), images(text)
    assert {a: i.ptx for a, i in first.items()} == {a: i.ptx for a, i in second.items()}


def test_global_barrier_is_a_diagnostic():
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((128,), "float32")):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                A[tx] = T.float32(1)
                T.evaluate(T.tvm_storage_sync("global"))
    """)
    with pytest.raises(Diagnostic, match=r'tvm_storage_sync\("global"\) is not supported'):
        images(text)


def _ptxas(ptx: str, arch: str, tmp_path) -> None:
    if not ptxas_check(ptx, arch, tmp_path):
        pytest.skip("ptxas is not installed (optional)")


@pytest.mark.parametrize("name", CUDA_SAMPLES)
def test_ptxas_assembles_every_sample(name, tmp_path):
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed (optional)")
    for arch, img in images((SAMPLES / f"{name}.tir").read_text()).items():
        _ptxas(img.ptx, arch, tmp_path)


# -- build() and the CLI ----------------------------------------------------------------------
def test_device_only_build_writes_one_ptx_per_arch(tmp_path):
    src = SAMPLES / "multi_target.tir"
    r = build(src.read_text(), out_dir=tmp_path, name="multi_target", filename=str(src),
              device_only=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["multi_target.json", "multi_target.sm_80.ptx",
                                                          "multi_target.sm_90.ptx"]
    assert [p.name for p in r.files] == ["multi_target.sm_80.ptx", "multi_target.sm_90.ptx",
                                         "multi_target.json"]
    assert ".target sm_80" in (tmp_path / "multi_target.sm_80.ptx").read_text()


def test_cli_device_only_and_the_full_build(tmp_path):
    src = SAMPLES / "shared_reduction.tir"
    full = tmp_path / "full"
    r = CliRunner().invoke(cli, ["build", str(src), "--target", "cuda -arch=sm_90", "-o", str(full)])
    assert r.exit_code == 0, r.output
    assert {"shared_reduction.o", "shared_reduction.ptx"} <= {p.name for p in full.iterdir()}
    out = tmp_path / "out"
    for d in (out, tmp_path / "again"):
        r = CliRunner().invoke(cli, ["build", str(src), "--target", "cuda -arch=sm_90", "-o", str(d),
                                     "--device-only"])
        assert r.exit_code == 0, r.output
        assert sorted(p.name for p in d.iterdir()) == ["shared_reduction.json", "shared_reduction.ptx"]
    assert (out / "shared_reduction.ptx").read_bytes() == (tmp_path / "again" / "shared_reduction.ptx").read_bytes()


def test_cli_device_only_misuse(tmp_path):
    src = SAMPLES / "cpu_matmul.tir"
    r = CliRunner().invoke(cli, ["build", str(src), "--device-only", "--shared", "-o", str(tmp_path)])
    assert r.exit_code == 2
    r = CliRunner().invoke(cli, ["build", str(src), "--target", "llvm", "--device-only", "-o", str(tmp_path)])
    assert r.exit_code == 1 and "no device functions" in r.output


def test_cubin_through_nvjitlink(tmp_path):
    from tirc.backends.cuda import cubin as nvptx_cubin
    src = SAMPLES / "two_kernels.tir"
    kwargs = dict(target="cuda -arch=sm_90", out_dir=tmp_path, name="two_kernels",
                  device_only=True, device_format="cubin")
    if not nvptx_cubin.available():
        with pytest.raises(Diagnostic, match="needs nvJitLink"):
            build(src.read_text(), **kwargs)
        assert not any(tmp_path.iterdir())
        pytest.skip("nvJitLink (libnvJitLink.so) is not installed; checked its diagnostic")
    build(src.read_text(), **kwargs)
    assert (tmp_path / "two_kernels.cubin").read_bytes()[:4] == b"\x7fELF"


BF16_KERNEL = HEAD + """
@T.prim_func
def scale(A: T.Buffer((256,), "bfloat16"), B: T.Buffer((256,), "bfloat16"), s: T.bfloat16):
    T.func_attr({"tir.noalias": True})
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            B[bx * 128 + tx] = A[bx * 128 + tx] * s + T.bfloat16(1.0)
"""


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_bfloat16_kernel_builds_for_every_arch(arch, tmp_path):
    """bfloat16 kernels for sm_80 and newer used to stop with "dtype bfloat16 cannot be
    compiled by the LLVM backend": BF16StorageLegalize left them alone as bf16-native,
    but the NVPTX backend has no bfloat type (found by mutating the TVM corpus's
    alloc_scopes.tir). Every arch now stores bfloat16 as 16-bit integers and computes
    in float32."""
    filecheck(images(BF16_KERNEL, f"cuda -arch={arch}")[arch].ptx, r"""
        CHECK: .visible .entry scale_kernel(
        CHECK: ld.global.nc.b16
        CHECK: fma.rn.f32
        CHECK: st.global.b16
    """, tmp_path)


def test_string_in_device_code_is_a_global_constant(tmp_path):
    """A string an expression of a kernel uses is a constant in the global address space,
    where the kernel's pointers are; it was created in the generic one, and LLVM refused
    the module (an internal error)."""
    text = HEAD + textwrap.dedent("""
    @T.prim_func
    def main(A: T.Buffer((32,), "int32")):
        with T.launch_thread("blockIdx.x", 1) as bx:
            tx = T.launch_thread("threadIdx.x", 32)
            A[tx] = T.Select(T.isnullptr("abc"), 1, 0)
    """)
    ptx = images(text, "cuda -arch=sm_80")["sm_80"].ptx
    filecheck(ptx, r"""
        CHECK: .global .align 1 .b8 [[S:.*str.*]][4] = {97, 98, 99};
        CHECK: mov.b64 %rd{{[0-9]+}}, [[S]];
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)
