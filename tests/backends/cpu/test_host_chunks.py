"""The host object made in chunks side by side (``build(..., jobs=N)``, ``tirc build -j N``
on one input: ``backends.cpu_chunks``, ``tirc.backends.forked``): how a module is cut, and that
the object of N chunks does what the object of one does (packed and C ABI, CPU and CUDA
modules, errors), with the module-wide state defined once."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from conftest import ROOT
from test_cuda_launch import CALLER, fake_driver  # noqa: F401 (a fixture)
from tirc.backends.cpu.chunks import chunks
from tirc.build.stages import build, split_module
from tirc.build.options import bind_target_from
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

# Four exported functions; ``twice`` (private) is called by two of them, which must
# therefore share a chunk; ``check`` fails on a negative input; ``par`` uses libgomp.
CPU = HEAD + textwrap.dedent("""
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def twice(x: T.float32) -> T.float32:
            return x * T.float32(2)

        @T.prim_func
        def first(A: T.Buffer((8,), "float32")):
            for i in range(8):
                A[i] = Module.twice(A[i])

        @T.prim_func
        def par(A: T.Buffer((64,), "float32")):
            for i in T.parallel(64):
                A[i] = A[i] + T.float32(1)

        @T.prim_func
        def check(A: T.Buffer((4,), "int32")):
            for i in range(4):
                assert A[i] >= 0, "check: negative input"
                A[i] = A[i] * 3

        @T.prim_func
        def last(A: T.Buffer((8,), "float32")):
            for i in range(8):
                A[i] = Module.twice(A[i]) + T.float32(1)
    """)


def host_module(text: str, target: str = "llvm"):
    mod = run_pipeline(parse(text, "m.tir"), PassContext(bind_target_from(target, None)))
    return split_module(mod)[0]


# -- cutting a module -----------------------------------------------------------------------
def test_callers_of_a_private_function_share_its_chunk():
    host = host_module(CPU)
    parts = [list(p.functions) for p in chunks(host, 4)]
    assert sorted(sum(parts, [])) == sorted(host.functions)
    together = next(p for p in parts if "twice" in p)
    assert {"first", "last"} <= set(together)
    assert 2 <= len(parts) <= 4
    assert parts == [list(p.functions) for p in chunks(host, 4)]  # same module, same cut


def exported_functions(count: int):
    """The host module of ``count`` independent exported functions f0, f1, ..."""
    funcs = "".join(f"""
        @T.prim_func
        def f{i}(A: T.Buffer((4,), "float32")):
            A[0] = T.float32({i})
""" for i in range(count))
    return host_module(HEAD + "@I.ir_module\nclass Module:"
                       + textwrap.dedent(funcs).replace("\n", "\n    "))


def test_exported_functions_are_cut_in_module_order():
    host = exported_functions(7)
    parts = [list(p.functions) for p in chunks(host, 3)]
    assert sum(parts, []) == list(host.functions)
    assert [len(p) for p in parts] == [3, 2, 2] or [len(p) for p in parts] == [2, 3, 2]
    assert [list(p.functions) for p in chunks(host, 1)] == [list(host.functions)]
    assert len(chunks(host, 50)) == 7


# -- the objects -------------------------------------------------------------------------
@needs_cc
@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_packed_cpu_module_in_chunks_runs_as_whole(tmp_path, jobs):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    np = pytest.importorskip("numpy")
    build(CPU, "llvm", None, tmp_path, "m", shared=True, jobs=jobs)
    m = tvm_ffi.load_module(str(tmp_path / "m.so"))
    a = np.arange(8, dtype="float32")
    m["first"](a)
    np.testing.assert_array_equal(a, np.arange(8) * 2)
    m["last"](a)
    np.testing.assert_array_equal(a, np.arange(8) * 4 + 1)
    b = np.zeros(64, "float32")
    m["par"](b)
    np.testing.assert_array_equal(b, np.ones(64))
    c = np.array([1, 2, 3, 4], "int32")
    m["check"](c)
    np.testing.assert_array_equal(c, [3, 6, 9, 12])
    with pytest.raises(RuntimeError, match="check: negative input"):
        m["check"](np.array([1, -2, 3, 4], "int32"))


def test_chunked_objects_are_reproducible(tmp_path):
    one = build(CPU, "llvm", None, tmp_path / "a", "m", jobs=3)
    two = build(CPU, "llvm", None, tmp_path / "b", "m", jobs=3)
    assert (tmp_path / "a" / "m.o").read_bytes() == (tmp_path / "b" / "m.o").read_bytes()
    assert [p.name for p in one.files] == [p.name for p in two.files]


def test_exported_symbols_do_not_depend_on_chunks(tmp_path):
    if shutil.which("nm") is None:
        pytest.skip("needs nm")

    def exported(jobs: int) -> list[str]:
        build(CPU, "llvm", None, tmp_path / str(jobs), "m", jobs=jobs)
        out = subprocess.run(["nm", "-g", "--defined-only", str(tmp_path / str(jobs) / "m.o")],
                             capture_output=True, text=True, check=True).stdout
        return sorted(line.split()[-1] for line in out.splitlines())

    assert exported(3) == exported(1)


@needs_cc
def test_c_api_module_in_chunks_has_one_last_error(tmp_path):
    from test_c_abi import APP, DEMO, EXPECTED
    build(DEMO, "llvm", None, tmp_path, "demo", abi="c", jobs=4)
    (tmp_path / "app.c").write_text(APP)
    exe = tmp_path / "app"
    subprocess.run(["cc", "-Wall", "-Werror", "-o", str(exe), str(tmp_path / "app.c"),
                    str(tmp_path / "demo.o"), "-lm", "-lgomp"], check=True, cwd=tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    assert out.stdout == EXPECTED  # errors of every chunk reach the one demo_last_error()


# arch -> (target, cross compiler, qemu, sysroot): the chunks' objects are joined by
# elf_join for every ELF64 triple, each with its own relocations (TLS included: the C
# API's error buffer is thread-local and used from every chunk)
CROSS = {
    "aarch64": ("llvm -mtriple=aarch64-linux-gnu", "aarch64-linux-gnu-gcc", "qemu-aarch64",
                "/usr/aarch64-linux-gnu"),
    "riscv64": ("llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c",
                "riscv64-linux-gnu-gcc", "qemu-riscv64", "/usr/riscv64-linux-gnu"),
}


@pytest.mark.parametrize("arch", sorted(CROSS))
def test_c_api_module_in_chunks_runs_on_other_arches(tmp_path, arch):
    from test_c_abi import APP, DEMO, EXPECTED
    target, gcc, qemu, sysroot = CROSS[arch]
    if not (shutil.which(gcc) and shutil.which(qemu) and os.path.isdir(sysroot)):
        pytest.skip(f"needs {qemu} and {gcc} (apt-get install qemu-user gcc-{arch}-linux-gnu)")
    build(DEMO, target, None, tmp_path, "demo", abi="c", jobs=4)
    (tmp_path / "app.c").write_text(APP)
    exe = tmp_path / "app"
    subprocess.run([gcc, "-o", str(exe), str(tmp_path / "app.c"), str(tmp_path / "demo.o"),
                    "-lm", "-lgomp"], check=True, cwd=tmp_path)
    out = subprocess.run([qemu, "-L", sysroot, str(exe)], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout == EXPECTED


def test_triples_join_cannot_read_are_lowered_whole(tmp_path):
    # a Mach-O object is not cut: -j changes nothing in it
    target = "llvm -mtriple=x86_64-apple-darwin"
    build(CPU, target, None, tmp_path / "one", "m", jobs=1)
    build(CPU, target, None, tmp_path / "three", "m", jobs=3)
    one = (tmp_path / "one" / "m.o").read_bytes()
    assert one[:4] == b"\xcf\xfa\xed\xfe"  # Mach-O 64
    assert (tmp_path / "three" / "m.o").read_bytes() == one


CUDA = HEAD + textwrap.dedent("""
    @I.ir_module
    class Module:
        @T.prim_func
        def k0(A: T.Buffer((256,), "float32")):
            for tx in T.thread_binding(256, thread="threadIdx.x"):
                A[tx] = A[tx] + T.float32(1)

        @T.prim_func
        def k1(A: T.Buffer((256,), "float32")):
            for bx in T.thread_binding(2, thread="blockIdx.x"):
                for tx in T.thread_binding(128, thread="threadIdx.x"):
                    A[bx * 128 + tx] = A[bx * 128 + tx] * T.float32(2)

        @T.prim_func
        def k2(A: T.Buffer((256,), "float32")):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                A[tx] = T.float32(0)
    """)

CALL_ALL = CALLER.split("f = tvm_ffi.load_module")[0] + textwrap.dedent("""
    m = tvm_ffi.load_module(sys.argv[1])
    a = tvm_ffi.from_dlpack(FakeCuda(np.ones(256, np.float32), 0))
    for name in sys.argv[2:]:
        try:
            m[name](a)
            print("OK", flush=True)
        except Exception as e:
            print(type(e).__name__ + ":", e, flush=True)
""")


def test_cuda_module_in_chunks_embeds_its_image_once(tmp_path):
    build(CUDA, "cuda -arch=sm_90", None, tmp_path / "one", "m", jobs=1)
    build(CUDA, "cuda -arch=sm_90", None, tmp_path / "three", "m", jobs=3)
    ptx = (tmp_path / "three" / "m.ptx").read_bytes()
    assert ptx == (tmp_path / "one" / "m.ptx").read_bytes()
    obj = (tmp_path / "three" / "m.o").read_bytes()
    assert obj.count(ptx) == 1
    if shutil.which("nm"):
        out = subprocess.run(["nm", str(tmp_path / "three" / "m.o")], capture_output=True,
                             text=True, check=True).stdout
        defined = [line.split()[-1] for line in out.splitlines() if " U " not in line]
        assert defined.count("__tirc_cuda_load0") == 1
        assert defined.count("__tirc_cuda_ready0") == 1
        assert "t __tirc_cuda_load0" in out  # internal again after the link


@needs_cc
def test_cuda_launches_from_every_chunk_share_one_loaded_module(tmp_path, fake_driver):  # noqa: F811
    pytest.importorskip("tvm_ffi")
    build(CUDA, "cuda -arch=sm_90", None, tmp_path, "m", shared=True, jobs=3)
    proc = subprocess.run([sys.executable, "-c", CALL_ALL, str(tmp_path / "m.so"), "k2", "k0", "k1"],
                          capture_output=True, text=True, env={**os.environ, **fake_driver,
                                                               "FAKE_N_INDEX": "-1"}, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "cuInit", "retain 0", "load sm_90",
        "launch k2_kernel 1 1 1 64 1 1 0", "OK",
        "launch k0_kernel 1 1 1 256 1 1 0", "OK",
        "launch k1_kernel 2 1 1 128 1 1 0", "OK"]


# -- errors ------------------------------------------------------------------------------
TWO_SIGNATURES = HEAD + textwrap.dedent("""
    @I.ir_module
    class Module:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = T.call_extern("float32", "foo", A[1])

        @T.prim_func
        def g(A: T.Buffer((4,), "int32")):
            A[0] = T.call_extern("int32", "foo", A[1])
    """)


@pytest.mark.parametrize("jobs", [1, 2])
def test_one_symbol_with_two_signatures_in_two_chunks(tmp_path, jobs):
    with pytest.raises(Diagnostic, match="'foo' is used with two different signatures") as e:
        build(TWO_SIGNATURES, "llvm", None, tmp_path, "m", jobs=jobs)
    assert e.value.span is not None and e.value.span.line == 12
    assert not list(tmp_path.iterdir())


def test_a_diagnostic_in_a_child_comes_back_located(tmp_path):
    bad = CPU.replace("A[i] = A[i] + T.float32(1)", 'A[i] = T.call_extern("float32", "foo", A[i])')
    bad = bad.replace("return x * T.float32(2)", 'return T.call_extern("float32", "foo", x, x)')
    with pytest.raises(Diagnostic, match="two different signatures"):
        build(bad, "llvm", None, tmp_path, "m", jobs=4)


def test_cli_j_on_one_input_builds_it_in_chunks(tmp_path):
    src = tmp_path / "m.tir"
    src.write_text(CPU)
    r = CliRunner().invoke(cli, ["build", str(src), "-o", str(tmp_path / "cli"), "-j", "3"])
    assert r.exit_code == 0, r.output
    build(CPU, "llvm", None, tmp_path / "api", "m", jobs=3)
    assert (tmp_path / "cli" / "m.o").read_bytes() == (tmp_path / "api" / "m.o").read_bytes()


def test_plan_cuts_large_modules_even_for_one_process(monkeypatch):
    from tirc.backends.cpu import chunks as cpu_chunks
    host = host_module(CPU)  # 5 functions, 3 components
    assert len(cpu_chunks.plan(host, 1)) == 1
    # a few chunks per process, as far as the components go: one each
    assert len(cpu_chunks.plan(host, 2)) == 3
    assert sorted(f for p in cpu_chunks.plan(host, 2) for f in p.functions) == \
        sorted(host.functions)
    monkeypatch.setattr(cpu_chunks, "CHUNK_FUNCTIONS", 2)
    assert len(cpu_chunks.plan(host, 1)) == 3  # 5 functions, 2 a chunk


@needs_cc
def test_many_chunks_in_one_process_run_as_whole(tmp_path, monkeypatch):
    from tirc.backends.cpu import chunks as cpu_chunks
    tvm_ffi = pytest.importorskip("tvm_ffi")
    np = pytest.importorskip("numpy")
    monkeypatch.setattr(cpu_chunks, "CHUNK_FUNCTIONS", 1)
    build(CPU, "llvm", None, tmp_path, "m", shared=True, jobs=1)
    m = tvm_ffi.load_module(str(tmp_path / "m.so"))
    a = np.arange(8, dtype="float32")
    m["last"](a)
    np.testing.assert_array_equal(a, np.arange(8) * 2 + 1)
    with pytest.raises(RuntimeError, match="check: negative input"):
        m["check"](np.array([-1, 2, 3, 4], "int32"))


# -- host chunks started beside the device code (build._start_host) -------------------------
BAD_DEVICE = CUDA.replace("A[tx] = T.float32(0)",
                          'A[tx] = T.call_extern("float32", "no_such_function", A[tx])')


@pytest.fixture
def forked_pids(monkeypatch):
    """The process ids of the children the build forks (libdevice cut by none yet: a CUDA
    build with -j N whose text calls math functions starts cutting it while it parses,
    when the library is found)."""
    import tirc.backends.forked
    from tirc.backends.cuda import libdevice
    monkeypatch.setattr(libdevice, "_PIECES", {})
    monkeypatch.setattr(libdevice, "_CUTTING", {})
    pids, fork = [], tirc.backends.forked._fork

    def recording(task):
        pid, fd = fork(task)
        pids.append(pid)
        return pid, fd

    monkeypatch.setattr(tirc.backends.forked, "_fork", recording)
    return pids


def _libdevice_found() -> bool:
    from tirc.backends.cuda import libdevice
    return libdevice.locate() is not None


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_a_device_code_error_ends_the_host_chunks_started_beside_it(tmp_path, forked_pids):
    with pytest.raises(Diagnostic, match="unknown extern function 'no_such_function'"):
        build(BAD_DEVICE, "cuda -arch=sm_90", None, tmp_path, "m", jobs=3)
    # one that cuts libdevice, two that take the components through the passes and
    # compile their kernels (the bad one fails there and is left out), two that take host
    # chunks; the device stage compiles the one kernel left itself, and fails
    cut = 1 if _libdevice_found() else 0
    assert len(forked_pids) == cut + 4 and all(_reaped(p) for p in forked_pids)
    assert not any(tmp_path.iterdir())  # nothing written


def test_a_build_stopped_after_the_device_code_ends_the_started_host_chunks(tmp_path,
                                                                            forked_pids):
    build(CUDA, "cuda -arch=sm_90", None, tmp_path, "m", jobs=3, stop_after="device-codegen")
    # two processes for the passes, two for the host chunks, two for the device code (a
    # build that stops early compiles no kernels with the passes; no math: no libdevice)
    assert len(forked_pids) == 6 and all(_reaped(p) for p in forked_pids)
    assert not any(tmp_path.iterdir())


def test_the_costliest_chunks_go_out_first_and_join_in_module_order(monkeypatch):
    from tirc.backends.cpu import backend as cpu_backend
    from tirc.backends.cpu import chunks as cpu_chunks
    from tirc.target.kinds import parse_target
    target = parse_target("llvm")
    host = host_module(CPU)
    parts = cpu_chunks.plan(host, 2)
    costs = [cpu_chunks.cost(p) for p in parts]
    assert len(set(costs[1:])) > 1  # an order to keep
    taken = []
    lower = cpu_backend.lower_collected

    def recording(part, *args):
        taken.append(list(part.functions))
        return lower(part, *args)
    monkeypatch.setattr(cpu_backend, "lower_collected", recording)
    here = cpu_backend.Chunked(parts, host, target, "m", None, 1).finish()  # all in this process
    # the first chunk (the module-wide state) first, then the others, the costliest first
    rest = sorted(parts[1:], key=lambda p: -cpu_chunks.cost(p))
    assert taken == [list(p.functions) for p in [parts[0]] + rest]
    # two processes take them as they come: the same object
    shared = cpu_backend.Chunked(parts, host, target, "m", None, 2).finish()
    assert bytes(shared.object) == bytes(here.object)


def test_cuda_module_started_beside_its_device_code_builds_as_in_one_piece(tmp_path):
    build(CUDA, "cuda -arch=sm_90", None, tmp_path / "one", "m", jobs=1)
    result = build(CUDA, "cuda -arch=sm_90", None, tmp_path / "two", "m", jobs=2)
    assert (tmp_path / "two" / "m.ptx").read_bytes() == (tmp_path / "one" / "m.ptx").read_bytes()
    assert json.loads((tmp_path / "two" / "m.json").read_text()) == \
        json.loads((tmp_path / "one" / "m.json").read_text())
    assert result.files
