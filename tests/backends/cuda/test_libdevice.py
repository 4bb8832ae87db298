"""libdevice (tirc.backends.cuda.libdevice): its text cut into pieces, and linking it by
the piece gives the PTX that linking all of it gives."""
from __future__ import annotations

import os
import textwrap

import pytest
from llvmlite import binding as llvm

import tirc.backends.cuda.nvptx as nvptx
from tirc.backends.cuda import libdevice
from test_backend_nvptx import HEAD, _libdevice_path
from tirc.build.stages import build, split_module
from tirc.build.options import bind_target_from
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline

LIBRARY = textwrap.dedent("""\
    ; ModuleID = 'lib'
    target triple = "nvptx64-nvidia-gpulibs"

    %struct.pair = type { i32, i32 }

    @table = internal addrspace(1) global [2 x i32] [i32 1, i32 2], align 4

    ; Function Attrs: alwaysinline nounwind
    define float @__nv_a(float %x) #0 {
      %1 = call float @__internal_b(float %x)
      ret float %1
    }

    ; Function Attrs: alwaysinline nounwind
    define internal float @__internal_b(float %x) #0 {
      %1 = call i32 @__nvvm_reflect(ptr null)
      ret float %x
    }

    define float @__nv_c(float %x) {
      %1 = call float @__nv_c(float %x)
      ret float %1
    }

    declare i32 @__nvvm_reflect(ptr)

    attributes #0 = { alwaysinline nounwind }
    """)


def test_the_text_is_cut_into_definitions_and_the_rest():
    pieces = libdevice.cut(LIBRARY)
    assert list(pieces.definitions) == ["__nv_a", "__internal_b", "__nv_c"]
    assert pieces.definitions["__nv_a"].startswith("; Function Attrs: alwaysinline nounwind\n"
                                                   "define float @__nv_a(")
    assert pieces.definitions["__nv_c"].startswith("define float @__nv_c(")
    assert all(text.endswith("\n}\n") for text in pieces.definitions.values())
    assert pieces.calls == {"__nv_a": {"__internal_b"}, "__internal_b": set(), "__nv_c": set()}
    assert "define" not in pieces.common
    for kept in ("%struct.pair", "@table", "declare i32 @__nvvm_reflect", "attributes #0"):
        assert kept in pieces.common
    # all of them are the text again, the definitions last
    everything = pieces.text({"__nv_a", "__nv_c"})
    assert sorted(everything.splitlines()) == sorted(LIBRARY.splitlines())
    parsed = llvm.parse_assembly(everything)
    assert [f.name for f in parsed.functions if not f.is_declaration] == list(pieces.definitions)


def test_a_function_comes_with_what_it_calls_in_the_library_order():
    pieces = libdevice.cut(LIBRARY)
    text = pieces.text({"__nv_a", "not_in_the_library"})
    assert text.index("@__nv_a(") < text.index("define internal float @__internal_b(")
    assert "@__nv_c(" not in text
    assert pieces.text(set()) == pieces.common


MATH = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float64")):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            A[tx] = T.exp(A[tx]) + T.tanh(A[tx]) + T.sin(A[tx]) * T.cos(A[tx]) + T.pow(A[tx], T.float32(3))
            B[tx] = T.erf(B[tx]) + T.log1p(B[tx]) + T.sin(B[tx])
""")


# three kernels calling libdevice: under -j N, three chunks that link it by the piece
THREE_KERNELS = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            B[tx] = T.exp(A[tx])
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            A[tx] = T.sin(B[tx])
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            B[tx] = T.cos(A[tx])
""")


def test_linking_by_the_piece_gives_the_ptx_of_linking_all(monkeypatch):
    path = _libdevice_path()
    if path is None:
        pytest.skip("no libdevice.10.bc on this machine")
    monkeypatch.setattr(libdevice, "locate", lambda: path)
    target = bind_target_from("cuda -arch=sm_90", None)
    mod = run_pipeline(parse(MATH, "m.tir"), PassContext(target))
    (device_target, device), = split_module(mod)[1].items()
    whole, pieced = (nvptx._generate(device, device_target, "m", True, False, nvptx._untimed,
                                     None, pieces) for pieces in (False, True))
    # all inlined but the slow path of a double's trigonometric reduction (noinline)
    assert "__nv_" not in whole.ptx and ".func" in whole.ptx
    assert whole.ptx == pieced.ptx


@pytest.mark.parametrize("pieces", [False, True])
def test_an_unreadable_libdevice_is_a_diagnostic(pieces, tmp_path, monkeypatch):
    broken = tmp_path / "libdevice.10.bc"
    broken.write_bytes(b"not bitcode")
    monkeypatch.setattr(libdevice, "locate", lambda: str(broken))
    target = bind_target_from("cuda -arch=sm_90", None)
    mod = run_pipeline(parse(MATH, "m.tir"), PassContext(target))
    (device_target, device), = split_module(mod)[1].items()
    with pytest.raises(Diagnostic, match="cannot read libdevice at .*libdevice.10.bc"):
        nvptx._generate(device, device_target, "m", False, False, nvptx._untimed, None, pieces)


@pytest.fixture
def library(tmp_path, monkeypatch):
    """LIBRARY as a bitcode file, with no cut of it made or started in this process."""
    path = tmp_path / "libdevice.10.bc"
    path.write_bytes(llvm.parse_assembly(LIBRARY).as_bitcode())
    monkeypatch.setattr(libdevice, "_PIECES", {})
    monkeypatch.setattr(libdevice, "_CUTTING", {})
    return str(path)


def test_a_cut_started_in_another_process_is_the_cut_made_here(library):
    here = libdevice.cut(str(libdevice._parse(library)))
    started = libdevice.start_cut(library)
    assert started is not None
    assert libdevice.start_cut(library) is None  # once per process
    assert libdevice.cut_once(library) == here
    assert libdevice._CUTTING == {}
    started.kill()  # collected already: nothing to end
    assert libdevice.cut_once(library) == here


def test_a_cut_started_and_not_needed_is_ended(library):
    started = libdevice.start_cut(library)
    pid = started.started.children[0][0]
    started.kill()
    assert libdevice._CUTTING == {}
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # ended and reaped
    assert libdevice.cut_once(library).definitions.keys() == {"__nv_a", "__internal_b", "__nv_c"}


def test_an_unreadable_libdevice_cut_in_another_process_is_a_diagnostic(tmp_path, monkeypatch):
    broken = tmp_path / "libdevice.10.bc"
    broken.write_bytes(b"not bitcode")
    monkeypatch.setattr(libdevice, "_PIECES", {})
    monkeypatch.setattr(libdevice, "_CUTTING", {})
    libdevice.start_cut(str(broken))
    with pytest.raises(Diagnostic, match="cannot read libdevice at .*libdevice.10.bc"):
        libdevice.cut_once(str(broken))


def test_an_unreadable_libdevice_fails_only_the_builds_that_link_it(tmp_path, monkeypatch):
    broken = tmp_path / "libdevice.10.bc"
    broken.write_bytes(b"not bitcode")
    monkeypatch.setattr(libdevice, "_PIECES", {})
    monkeypatch.setattr(libdevice, "_CUTTING", {})
    monkeypatch.setattr(libdevice, "locate", lambda: str(broken))
    # the math is in a comment: cut ahead, but nothing links the library
    text = THREE_KERNELS.replace("T.exp", "T.fabs").replace("T.sin", "T.fabs").replace(
        "T.cos", "T.fabs") + "# T.exp(x)\n"
    serial = build(text, "cuda -arch=sm_90", "llvm", out_dir=tmp_path / "1", name="m",
                   write=False)
    forked = build(text, "cuda -arch=sm_90", "llvm", out_dir=tmp_path / "2", name="m", jobs=2,
                   write=False)
    def ptx(result):
        return {path.name: data for path, data in result.outputs.items() if path.suffix == ".ptx"}
    assert ptx(forked) == ptx(serial) and ptx(serial)
    for jobs in (1, 2):
        with pytest.raises(Diagnostic, match="cannot read libdevice"):
            build(THREE_KERNELS, "cuda -arch=sm_90", "llvm", out_dir=tmp_path / "3", name="m",
                  jobs=jobs, write=False)


def test_a_build_with_jobs_cuts_libdevice_beside_the_parse(library, tmp_path, monkeypatch):
    monkeypatch.setattr(libdevice, "locate", lambda: library)
    started = []
    start = libdevice.start_cut
    monkeypatch.setattr(libdevice, "start_cut", lambda path: started.append(path) or start(path))
    build(THREE_KERNELS, "cuda -arch=sm_90", "llvm", out_dir=tmp_path, name="m", write=False)
    assert started == [] and libdevice._PIECES == {}  # -j 1 links the whole library
    build(THREE_KERNELS, "cuda -arch=sm_90", "llvm", out_dir=tmp_path, name="m", jobs=2,
          write=False)
    assert started == [library]
    assert libdevice._CUTTING == {} and library in libdevice._PIECES  # collected


def test_a_build_whose_text_calls_no_math_cuts_nothing(library, tmp_path, monkeypatch):
    from tirc.backends.cuda.nvptx import may_call_libdevice
    assert may_call_libdevice("B[i] = T.exp(A[i])") and may_call_libdevice(
        'T.call_pure_extern("float32", "__expf", x)')
    assert not may_call_libdevice("B[i] = T.max(A[i], T.float32(0)) + T.exponent_bias")
    monkeypatch.setattr(libdevice, "locate", lambda: library)
    started = []
    start = libdevice.start_cut
    monkeypatch.setattr(libdevice, "start_cut", lambda path: started.append(path) or start(path))
    plain = THREE_KERNELS.replace("T.exp", "T.fabs").replace("T.sin", "T.fabs").replace(
        "T.cos", "T.fabs")
    build(plain, "cuda -arch=sm_90", "llvm", out_dir=tmp_path, name="m", jobs=2, write=False)
    assert started == [] and libdevice._PIECES == {}


def test_a_cut_a_build_does_not_use_is_ended(library, tmp_path, monkeypatch):
    monkeypatch.setattr(libdevice, "locate", lambda: library)
    build(THREE_KERNELS, "cuda -arch=sm_90", "llvm", out_dir=tmp_path, name="m", jobs=2,
          write=False, line_info=True)  # one LLVM module with its .loc lines, linked whole
    assert libdevice._CUTTING == {} and libdevice._PIECES == {}


def test_a_build_that_fails_ends_the_cut_it_started(library, tmp_path, monkeypatch):
    monkeypatch.setattr(libdevice, "locate", lambda: library)
    started = []
    start = libdevice.start_cut
    monkeypatch.setattr(libdevice, "start_cut", lambda path: started.append(path) or start(path))
    with pytest.raises(Diagnostic, match="expected"):
        build("@I.ir_module\nclass M:\n    x = T.exp(\n", "cuda -arch=sm_90", "llvm",
              out_dir=tmp_path / "out", name="m", jobs=2)
    assert started == [library]
    assert libdevice._CUTTING == {} and libdevice._PIECES == {}
    assert not (tmp_path / "out").exists()
