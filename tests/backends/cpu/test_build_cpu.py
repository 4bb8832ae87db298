"""``tirc.build.stages.build`` and ``tirc build``: files written, atomically and deterministically;
ELF objects for the target's machine; diagnostics for what this slice cannot build."""
from __future__ import annotations

import shutil
import struct
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import ROOT, TVM_CORPUS, ids

from tirc.build.stages import build, host_target_of, split_module
from tirc.build.options import bind_target_from
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.target.kinds import TargetError

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
SCALE = HEAD + textwrap.dedent("""
    @T.prim_func
    def scale(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        for i in T.parallel(1024):
            B[i] = A[i] * T.float32(0.5)
    """)
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
EM_X86_64, EM_AARCH64, ET_REL = 62, 183, 1


def elf_header(data: bytes) -> tuple[int, int]:
    """(e_type, e_machine) of a little-endian ELF file."""
    assert data[:4] == b"\x7fELF"
    assert data[5] == 1  # little endian
    return struct.unpack_from("<HH", data, 16)


def test_build_writes_the_object(tmp_path):
    result = build(SCALE, "llvm", None, tmp_path, "scale")
    assert result.files == [tmp_path / n for n in ("scale.o", "scale.h", "scale.json")]
    assert elf_header((tmp_path / "scale.o").read_bytes()) == (ET_REL, EM_X86_64)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scale.h", "scale.json", "scale.o"]


def test_aarch64_object(tmp_path):
    build(SCALE, "llvm -mtriple=aarch64-linux-gnu", None, tmp_path, "scale")
    assert elf_header((tmp_path / "scale.o").read_bytes()) == (ET_REL, EM_AARCH64)


def test_host_option_picks_the_host_target_of_a_device_build():
    from tirc.frontend.parse import parse
    from tirc.passes.pipeline import PassContext, run_pipeline
    bind = bind_target_from("cuda", "llvm -mtriple=aarch64-linux-gnu")
    mod = parse((ROOT / "samples" / "device_call_add.tir").read_text(), "d.tir")
    host, _ = split_module(run_pipeline(mod, PassContext(bind)))
    assert host_target_of(host, bind).get("mtriple") == "aarch64-linux-gnu"


def test_two_builds_give_identical_bytes(tmp_path):
    for d in ("a", "b"):
        build(SCALE, "llvm", None, tmp_path / d, "scale", emit=("llvm",))
    for f in ("scale.o", "scale.ll"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


def test_opt_level_zero(tmp_path):
    build(SCALE, "llvm -opt-level=0", None, tmp_path, "scale", emit=("llvm",))
    assert "GOMP_parallel" in (tmp_path / "scale.ll").read_text()


@needs_cc
def test_cli_build_shared_and_emit(tmp_path):
    src = tmp_path / "scale.tir"
    src.write_text(SCALE)
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["build", str(src), "--target", "llvm", "-o", str(out),
                                 "--shared", "--emit", "llvm"])
    assert r.exit_code == 0, r.output
    assert r.output == ""
    assert sorted(p.name for p in out.iterdir()) == ["scale.h", "scale.json", "scale.ll",
                                                     "scale.o", "scale.so"]
    assert "@__tvm_ffi_scale" in (out / "scale.ll").read_text()
    tvm_ffi = pytest.importorskip("tvm_ffi")
    a = np.arange(1024, dtype=np.float32)
    b = np.zeros(1024, np.float32)
    tvm_ffi.load_module(str(out / "scale.so"))["scale"](a, b)
    np.testing.assert_array_equal(b, a * 0.5)


def test_kernel_launches_build_with_their_device_images(tmp_path):
    src = ROOT / "samples" / "multi_target.tir"
    r = CliRunner().invoke(cli, ["build", str(src), "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"multi_target.o", "multi_target.sm_80.ptx", "multi_target.sm_90.ptx"} <= names


def test_syntax_error_leaves_no_file(tmp_path):
    src = tmp_path / "bad.tir"
    src.write_text("@T.prim_func\ndef f(:\n")
    r = CliRunner().invoke(cli, ["build", str(src), "-o", str(tmp_path)])
    assert r.exit_code == 1
    assert "bad.tir:2" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tir"]


def test_cross_shared_library_is_a_diagnostic(tmp_path):
    with pytest.raises(Diagnostic, match="cannot link a shared library"):
        build(SCALE, "llvm -mtriple=aarch64-linux-gnu", None, tmp_path, "scale", shared=True)
    assert list(tmp_path.iterdir()) == []


def test_device_host_is_a_usage_error(tmp_path):
    with pytest.raises(TargetError):
        bind_target_from("cuda", "cuda")
    src = tmp_path / "s.tir"
    src.write_text(SCALE)
    r = CliRunner().invoke(cli, ["build", str(src), "--target", "cuda", "--host", "cuda"])
    assert r.exit_code == 2


def test_split_module_separates_device_functions():
    from tirc.frontend.parse import parse
    from tirc.passes.pipeline import PassContext, run_pipeline
    mod = parse((ROOT / "samples" / "device_call_add.tir").read_text(), "d.tir")
    mod = run_pipeline(mod, PassContext(bind_target_from("cuda", None)))
    host, devices = split_module(mod)
    assert sorted(host.functions) == ["add_host", "main"]
    assert [sorted(m.functions) for m in devices.values()] == [["add", "main_kernel"]]


CPU_CORPUS = [p for p in TVM_CORPUS if "cuda" not in p.name and "lowered" not in p.name]

# The CPU modules of the corpus tirc refuses, with the error each must give; every other
# one must build. A module that starts building, or one that starts being refused, fails
# here, so the list stays true.
CPU_CORPUS_REFUSED = {
    "alloc_scopes.tir": "buffer 'G1' is allocated in 'global' memory inside device code",
    "decl_buffer_aliasing.tir": "buffer 'X' is allocated in 'global' memory inside device code",
    "dtypes_all.tir": "float8_e8m0fnu is not supported by FP8StorageLegalize",
    "loops_thread_binding.tir": "host code of 'tb' writes buffer 'A', which lives on the cuda device",
    "vector_dtypes_scalars.tir": "parameter 'x' of vector type float32x4 cannot be passed",
}


def test_cpu_corpus_refusals_are_corpus_modules():
    assert set(CPU_CORPUS_REFUSED) <= {p.name for p in CPU_CORPUS}  # no stale entries


@pytest.mark.parametrize("path", CPU_CORPUS, ids=ids(CPU_CORPUS))
def test_cpu_corpus_builds_or_explains(tmp_path, path):
    """Every CPU module of the corpus compiles to an object, or gets the Diagnostic
    CPU_CORPUS_REFUSED names for it (and writes nothing)."""
    if path.name in CPU_CORPUS_REFUSED:
        with pytest.raises(Diagnostic) as err:
            build(path.read_text(), "llvm", None, tmp_path, "m", filename=str(path))
        assert CPU_CORPUS_REFUSED[path.name] in err.value.message
        assert not (tmp_path / "m.o").exists()
        return
    build(path.read_text(), "llvm", None, tmp_path, "m", filename=str(path))
    assert elf_header((tmp_path / "m.o").read_bytes())[0] == ET_REL


@needs_cc
def test_matches_tvm(tmp_path):
    """An elementwise CPU module computes what TVM 0.27's own build computes."""
    tvm = pytest.importorskip("tvm")
    tvm_ffi = pytest.importorskip("tvm_ffi")
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
            T.func_attr({"global_symbol": "f"})
            for i in range(64):
                C[i] = T.exp(A[i]) * B[i] + T.floor(A[i] / B[i]) - T.Cast("float32", T.floormod(i - 7, 5))
        """)
    a = np.linspace(0.1, 2, 64).astype("float32")
    b = np.linspace(1, 3, 64).astype("float32")
    try:
        lib = tvm.compile(tvm.script.from_source(text), target="llvm")
        tensors = [tvm.runtime.tensor(x) for x in (a, b, np.zeros(64, "float32"))]
        lib["f"](*tensors)
        expected = tensors[2].numpy()
    except Exception as e:  # TVM could not build or run it: nothing to compare with
        pytest.skip(f"TVM cannot build this module: {type(e).__name__}: {e}")
    build(text, "llvm", None, tmp_path, "m", shared=True)
    c = np.zeros(64, "float32")
    tvm_ffi.load_module(str(tmp_path / "m.so"))["f"](a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-6)
