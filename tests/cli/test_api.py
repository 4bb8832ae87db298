"""The Python API: ``tirc.compile`` and ``tirc.lower`` on text, paths
and objects with ``.script()``; calls with NumPy arrays and through DLPack; errors as
``tirc.CompileError`` with located diagnostics and no internal traceback; no file left
behind; the CUDA path's facts (PTX, manifest) built and loaded without a GPU; ``import
tirc`` importing nothing of the compiler."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

import tirc
from tirc.backends.cuda import cubin as nvptx_cubin
from conftest import TESTS

ROOT = TESTS.parent
SAMPLES = ROOT / "samples"
HEAD = "# from tvm.script import tirx as T\n"
SCALE = HEAD + textwrap.dedent("""
    @T.prim_func
    def scale(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            B[i] = A[i] * T.float32(2.0)
""")
SHIFT = SCALE.replace("A[i] * T.float32(2.0)", "A[i] + T.float32(100.0)")
BAD_SYNTAX = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((4,), "int32")):
        A[0] = = 1
""")
UNDEFINED = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((4,), "int32")):
        A[0] = T.expp(A[1])
""")


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The temporary directory compile() builds in, checked empty afterwards (the
    parser, built first, keeps its own cache in the real one)."""
    from tirc.syntax.lalr_parser import parser
    parser()
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    yield where
    assert list(where.iterdir()) == []


def run_scale(compiled, a=None):
    a = np.arange(16, dtype="float32") if a is None else a
    b = np.zeros(16, dtype="float32")
    compiled["scale"](a, b)
    return b


# -- sources ---------------------------------------------------------------------------------
def test_text(private_tmp):
    k = tirc.compile(SCALE)
    assert isinstance(k, tirc.Compiled) and k.functions == ["scale"]
    np.testing.assert_array_equal(run_scale(k), np.arange(16, dtype="float32") * 2)
    assert k.manifest["functions"][0]["params"][0]["shape"] == [16]
    assert sorted(k.files) == ["scale.h", "scale.json", "scale.o", "scale.so"]
    assert "__tvm_ffi_scale" in k.header
    assert k.ptx == {} and k.cubin == {} and repr(k) == "Compiled('scale', functions=['scale'])"


@pytest.mark.parametrize("kind", [str, Path])
def test_path(kind, tmp_path, private_tmp):
    src = tmp_path / "scale_it.tir"
    src.write_text(SCALE)
    k = tirc.compile(kind(src))
    assert k.name == "scale_it" and "scale_it.o" in k.files
    np.testing.assert_array_equal(run_scale(k), np.arange(16, dtype="float32") * 2)


def test_object_with_script(private_tmp):
    class FakeIRModule:  # what tvm.IRModule offers: .script() -> TVMScript
        def script(self):
            return SCALE

    k = tirc.compile(FakeIRModule(), name="scaled")
    assert k.name == "scaled"
    np.testing.assert_array_equal(run_scale(k), np.arange(16, dtype="float32") * 2)


def test_sample_matmul_with_numpy(private_tmp):
    k = tirc.compile(SAMPLES / "cpu_matmul.tir")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 256), dtype="float32")
    b = rng.standard_normal((256, 64), dtype="float32")
    c = np.empty((128, 64), dtype="float32")
    k["matmul"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_dlpack_objects_are_accepted(private_tmp):
    """What a torch tensor offers tvm-ffi: ``__dlpack__`` and ``__dlpack_device__``."""
    class Tensor:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    a, b = np.arange(16, dtype="float32"), np.zeros(16, dtype="float32")
    tirc.compile(SCALE)["scale"](Tensor(a), Tensor(b))
    np.testing.assert_array_equal(b, a * 2)


def test_wrong_arguments_raise_from_the_call(private_tmp):
    k = tirc.compile(SCALE)
    with pytest.raises(ValueError, match="shape"):
        k["scale"](np.zeros(8, "float32"), np.zeros(16, "float32"))


def test_two_modules_with_one_function_name_stay_apart(private_tmp):
    """Each compile loads its own library, even though the directories are removed and
    both export __tvm_ffi_scale."""
    doubled, shifted = tirc.compile(SCALE), tirc.compile(SHIFT)
    a = np.arange(16, dtype="float32")
    np.testing.assert_array_equal(run_scale(doubled, a), a * 2)
    np.testing.assert_array_equal(run_scale(shifted, a), a + 100)
    np.testing.assert_array_equal(run_scale(tirc.compile(SCALE), a), a * 2)


def test_bad_source_types():
    with pytest.raises(TypeError, match="TVMScript text, a path, or an object"):
        tirc.compile(42)
    with pytest.raises(TypeError, match="returned int"):
        tirc.compile(type("M", (), {"script": lambda self: 1})())


# -- errors ----------------------------------------------------------------------------------
def _only_api_frames(e: BaseException) -> None:
    """Below the caller, the traceback shows tirc/api.py only, and nothing chained."""
    frames = traceback.extract_tb(e.__traceback__)[1:]
    assert frames and all(Path(f.filename).name == "api.py" for f in frames), frames
    assert e.__cause__ is None and e.__suppress_context__
    for d in e.diagnostics:
        assert d.__traceback__ is None and d.__context__ is None


def test_syntax_error_in_text_has_its_location(private_tmp):
    with pytest.raises(tirc.CompileError) as info:
        tirc.compile(BAD_SYNTAX, filename="k.tir")
    e = info.value
    (d,) = e.diagnostics
    assert (d.span.file, d.span.line, d.span.col) == ("k.tir", 5, 12)
    assert str(e).splitlines() == ["k.tir:5:12: error: unexpected '='",
                                   "      A[0] = = 1", "             ^"]
    _only_api_frames(e)


def test_error_in_a_file_names_the_file(tmp_path, private_tmp):
    src = tmp_path / "bad.tir"
    src.write_text(UNDEFINED)
    with pytest.raises(tirc.CompileError) as info:
        tirc.compile(src)
    (d,) = info.value.diagnostics
    assert (d.span.file, d.span.line) == (str(src), 5)
    assert str(info.value).startswith(f"{src}:5:{d.span.col}: error: ")
    assert "T.expp" in d.message
    _only_api_frames(info.value)


def test_error_of_a_script_object_names_its_type():
    class IRModule:
        def script(self):
            return UNDEFINED

    with pytest.raises(tirc.CompileError, match=r"^<IRModule>:5:\d+: error: "):
        tirc.compile(IRModule())


def test_bad_target_is_a_compile_error():
    with pytest.raises(tirc.CompileError, match="unknown target kind 'cdua'") as info:
        tirc.compile(SCALE, target="cdua")
    assert info.value.diagnostics[0].span is None
    _only_api_frames(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(tirc.CompileError, match="cannot read the file.*read as a path"):
        tirc.compile("@T.prim_func def f(): pass")  # one line: taken for a path
    with pytest.raises(tirc.CompileError, match="No such file or directory$"):
        tirc.compile(str(tmp_path / "nothing.tir"))
    with pytest.raises(tirc.CompileError, match="cannot read the file") as info:
        tirc.lower(tmp_path / "nothing.tir")
    assert info.value.diagnostics[0].span.file == str(tmp_path / "nothing.tir")


def test_not_utf8(tmp_path):
    src = tmp_path / "latin1.tir"
    src.write_bytes(b"# caf\xe9\n")
    with pytest.raises(tirc.CompileError, match=r"latin1.tir:1:6: error: .*not valid UTF-8"):
        tirc.compile(src)


def test_api_misuse_is_not_a_compile_error():
    with pytest.raises(ValueError, match="unknown device format"):
        tirc.compile(SCALE, device_format="elf")
    with pytest.raises(ValueError, match="unknown ABI"):
        tirc.lower(SCALE, abi="fortran")
    with pytest.raises(ValueError, match="does not run with abi='packed'"):
        tirc.lower(SCALE, stop_after="MakeCAPI")
    with pytest.raises(ValueError, match="unknown pass"):
        tirc.lower(SCALE, passes=["NoSuchPass"])


def test_failed_builds_leave_nothing(private_tmp):
    with pytest.raises(tirc.CompileError):
        tirc.compile(UNDEFINED)
    with pytest.raises(tirc.CompileError):  # fails in the backend, after the pipeline
        tirc.compile(SCALE, host="llvm -mtriple=aarch64-linux-gnu")


# -- options ---------------------------------------------------------------------------------
def test_load_false_cross_compiles(private_tmp):
    k = tirc.compile(SCALE, host="llvm -mtriple=aarch64-linux-gnu", load=False, emit="llvm")
    assert k.module is None and sorted(k.files) == ["scale.h", "scale.json", "scale.ll", "scale.o"]
    assert k.files["scale.o"][:4] == b"\x7fELF" and "aarch64" in k.files["scale.ll"].decode()
    with pytest.raises(TypeError, match="load=False"):
        k["scale"]


def test_c_abi_facts(private_tmp):
    k = tirc.compile(SCALE, abi="c", name="scaler")
    assert "int32_t scale(float* A, float* B);" in k.header
    assert k.manifest["abi"] == "c"


# -- CUDA, without a GPU ---------------------------------------------------------------------
def test_cuda_ptx_facts(private_tmp):
    k = tirc.compile(SAMPLES / "vector_add.tir", target="cuda -arch=sm_80,sm_90", host="llvm")
    assert k.module is not None  # loads: libcuda is opened at the first launch only
    assert sorted(k.ptx) == ["sm_80", "sm_90"] and k.cubin == {}
    for arch, ptx in k.ptx.items():
        assert f".target {arch}" in ptx and ".entry vector_add_kernel" in ptx
    (kernel,) = k.kernels
    assert kernel["block"] == [256, 1, 1] and kernel["grid"][0] == "(n + 255) // 256"
    assert kernel["image"] == ["vector_add.sm_80.ptx", "vector_add.sm_90.ptx"]
    assert repr(k) == "Compiled('vector_add', functions=['vector_add'], images=['sm_80', 'sm_90'])"


def test_cuda_single_image_is_keyed_by_its_arch(private_tmp):
    k = tirc.compile(SAMPLES / "vector_add.tir", target="cuda", load=False)
    assert list(k.ptx) == ["sm_80"] and "vector_add.ptx" in k.files


@pytest.mark.skipif(not nvptx_cubin.available(), reason="nvJitLink is not installed")
def test_cuda_cubin_facts(private_tmp):
    k = tirc.compile(SAMPLES / "vector_add.tir", target="cuda -arch=sm_90",
                     device_format="cubin", load=False)
    assert list(k.cubin) == ["sm_90"] and k.cubin["sm_90"][:4] == b"\x7fELF"
    assert ".entry vector_add_kernel" in k.ptx["sm_90"]  # the PTX it came from


# -- lower -----------------------------------------------------------------------------------
def test_lower(tmp_path):
    src = tmp_path / "s.tir"
    src.write_text(SCALE)
    text = tirc.lower(src)
    assert '"calling_conv"' in text or "calling_conv" in text
    bound = tirc.lower(SCALE, stop_after="BindTarget")
    assert '"target": T.target' in bound and "calling_conv" not in bound
    assert tirc.lower(SCALE, passes=["Verify"]).strip() == tirc.lower(
        SCALE, passes="Verify").strip()
    assert "tirc.c_api" in tirc.lower(SCALE, abi="c")
    assert tirc.lower(SCALE, verify_each=True) == tirc.lower(SCALE)


def test_lower_error():
    with pytest.raises(tirc.CompileError, match=r"^<string>:5:12: error: unexpected '='") as info:
        tirc.lower(BAD_SYNTAX)
    _only_api_frames(info.value)


# -- import cost, the CLI's CMake directory --------------------------------------------------
def test_import_tirc_imports_nothing_else():
    code = ("import sys, tirc; first = sorted(m for m in sys.modules if m.startswith('tirc'));"
            " tirc.CompileError; print(first, 'lark' in sys.modules, 'tirc.build.stages' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "['tirc'] False False"


def test_cli_cmake_dir():
    from click.testing import CliRunner

    from tirc.driver import cli
    r = CliRunner().invoke(cli, ["--cmake-dir"])
    assert r.exit_code == 0
    assert os.path.isfile(os.path.join(r.output.strip(), "tirc-config.cmake"))


def test_readme_numpy_example(private_tmp):
    """The README's NumPy example, as written there."""
    text = (ROOT / "README.md").read_text()
    start = text.index("    import numpy as np\n    import tirc\n")
    end = text.index("\n", text.index("    assert (y == 2 * x + 1).all()", start))
    code = textwrap.dedent(text[start:end])
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)  # noqa: S102
    # checked here too, not only by the README's own assert: y = 2 * x + 1 for x = 0..999
    assert ns["y"].tolist() == [2.0 * i + 1 for i in range(1000)]
