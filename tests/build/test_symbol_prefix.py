"""``--symbol-prefix P``: modules whose function is ``main``, as
``te.create_prim_func`` makes them, built with ``--abi c`` (or packed) and linked next to
each other; the refusal of a bare ``main`` names the option; a prefix that cannot start
a C identifier is a usage error. No GPU and no TVM needed."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import tirc
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from conftest import TESTS

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

# what te.create_prim_func prints (one function, always "main"); OP differs per module
TE_MAIN = textwrap.dedent("""\
    # from tvm.script import ir as I
    # from tvm.script import tirx as T

    @I.ir_module
    class Module:
        @T.prim_func(s_tir=True)
        def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
            T.func_attr({"tirx.noalias": True})
            # with T.sblock("root"):
            for ax0 in range(8):
                with T.sblock("B"):
                    v_ax0 = T.axis.spatial(8, ax0)
                    T.reads(A[v_ax0])
                    T.writes(B[v_ax0])
                    B[v_ax0] = OP
    """)
PLUS_ONE = TE_MAIN.replace("OP", "A[v_ax0] + T.float32(1)")
TIMES_TWO = TE_MAIN.replace("OP", "A[v_ax0] * T.float32(2)")

APP = textwrap.dedent("""\
    #include <stdio.h>
    #include <string.h>
    #include "a/kernel.h"
    #include "b/kernel.h"

    int main(void) {
        float x[8], y[8], z[8];
        for (int i = 0; i < 8; ++i) x[i] = (float)i;
        if (plus_main(x, y) != 0 || twice_main(x, z) != 0) return 1;
        for (int i = 0; i < 8; ++i)
            if (y[i] != i + 1.0f || z[i] != 2.0f * i) return 2;
        /* each module keeps its own last error */
        if (twice_main(x, NULL) != -1) return 3;
        printf("%s|%s\\n", plus_kernel_last_error(), twice_kernel_last_error());
        printf("ok\\n");
        return 0;
    }
    """)


def _modules(tmp_path: Path) -> tuple[Path, Path]:
    """Two te-style modules, both NAME "kernel", both with the function main."""
    a, b = tmp_path / "src" / "a" / "kernel.tir", tmp_path / "src" / "b" / "kernel.tir"
    for path, text in ((a, PLUS_ONE), (b, TIMES_TWO)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return a, b


def _build(*args: str):
    return CliRunner().invoke(cli, ["build", *map(str, args)])


def _exported(obj: Path) -> list[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("needs nm")
    out = subprocess.run([nm, "-g", "--defined-only", str(obj)], capture_output=True,
                         text=True, check=True).stdout
    return sorted(line.split()[-1] for line in out.splitlines() if line.strip())


# -- --abi c: one program, two main modules ----------------------------------------------------
@needs_cc
def test_two_main_modules_link_into_one_program(tmp_path):
    a, b = _modules(tmp_path)
    out = tmp_path / "out"
    for src, prefix, sub in ((a, "plus_", "a"), (b, "twice_", "b")):
        r = _build(src, "--abi", "c", "--symbol-prefix", prefix, "-o", out / sub)
        assert r.exit_code == 0, r.output
        assert _exported(out / sub / "kernel.o") == [f"{prefix}kernel_last_error", f"{prefix}main"]
    (tmp_path / "app.c").write_text(APP)
    exe = tmp_path / "app"
    subprocess.run(["cc", "-Wall", "-Werror", "-I", str(out), "-o", str(exe),
                    str(tmp_path / "app.c"), str(out / "a" / "kernel.o"),
                    str(out / "b" / "kernel.o"), "-lm"], check=True)
    ran = subprocess.run([str(exe)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[1] == "ok"
    before, after = lines[0].split("|")
    assert before == ""  # plus_main never failed
    assert after.startswith("ValueError: ") and "twice_main" in after


@needs_cc
def test_two_main_modules_in_one_shared_library_through_ctypes(tmp_path):
    out = tmp_path / "out"
    objects = []
    for text, prefix in ((PLUS_ONE, "p_"), (TIMES_TWO, "t_")):
        build(text, "llvm", None, out / prefix, "main_mod", abi="c", symbol_prefix=prefix)
        objects.append(str(out / prefix / "main_mod.o"))
    lib = tmp_path / "both.so"
    subprocess.run(["cc", "-shared", "-o", str(lib), *objects, "-lm"], check=True)
    dll = ctypes.CDLL(str(lib))
    x = (ctypes.c_float * 8)(*range(8))
    y, z = (ctypes.c_float * 8)(), (ctypes.c_float * 8)()
    assert dll.p_main(x, y) == 0 and dll.t_main(x, z) == 0
    assert list(y) == [i + 1.0 for i in range(8)]
    assert list(z) == [2.0 * i for i in range(8)]


def test_header_and_manifest_name_the_prefixed_symbols(tmp_path):
    result = build(PLUS_ONE, "llvm", None, tmp_path, "kernel", abi="c", symbol_prefix="plus_")
    header = (tmp_path / "kernel.h").read_text()
    assert "int32_t plus_main(float* A, float* B);" in header
    assert "const char* plus_kernel_last_error(void);" in header
    assert "#ifndef TIRC_PLUS_KERNEL_H_" in header  # two kernel.h with two prefixes: both
    assert " main(" not in header.replace("/* main(", "")  # the TIR name only in the comment
    data = json.loads((tmp_path / "kernel.json").read_text())
    assert data["symbol_prefix"] == "plus_"
    [f] = data["functions"]
    assert (f["name"], f["symbol"]) == ("main", "plus_main")
    assert f["declaration"] == "int32_t plus_main(float* A, float* B)"
    assert result.manifest == data


def test_prefix_goes_before_a_global_symbol(tmp_path):
    text = PLUS_ONE.replace('T.func_attr({"tirx.noalias": True})',
                            'T.func_attr({"global_symbol": "add_one", "tirx.noalias": True})')
    build(text, "llvm", None, tmp_path / "plain", "k", abi="c")
    assert "int32_t add_one(float* A, float* B);" in (tmp_path / "plain" / "k.h").read_text()
    build(text, "llvm", None, tmp_path / "pre", "k", abi="c", symbol_prefix="lib1_")
    assert "int32_t lib1_add_one(float* A, float* B);" in (tmp_path / "pre" / "k.h").read_text()


def test_unprefixed_output_is_unchanged(tmp_path):
    """No prefix, no change: the same bytes as before the option existed."""
    build(PLUS_ONE.replace("def main", "def plus"), "llvm", None, tmp_path / "x", "k", abi="c")
    build(PLUS_ONE.replace("def main", "def plus"), "llvm", None, tmp_path / "y", "k", abi="c",
          symbol_prefix="")
    for f in ("k.o", "k.h", "k.json"):
        assert (tmp_path / "x" / f).read_bytes() == (tmp_path / "y" / f).read_bytes()
    assert "symbol_prefix" not in json.loads((tmp_path / "x" / "k.json").read_text())


# -- errors -----------------------------------------------------------------------------------
def test_main_without_prefix_names_the_option(tmp_path):
    a, _ = _modules(tmp_path)
    r = _build(a, "--abi", "c", "-o", tmp_path / "out")
    assert r.exit_code == 1
    assert "would be the C symbol 'main'" in r.output
    assert "--symbol-prefix" in r.output
    assert not (tmp_path / "out" / "kernel.o").exists()
    with pytest.raises(Diagnostic, match="--symbol-prefix"):
        build(PLUS_ONE, "llvm", None, tmp_path, "k", abi="c")


@pytest.mark.parametrize("prefix", ["1x_", "a-b", "lib.", "é_", "a b"])
def test_invalid_prefix_is_a_usage_error(tmp_path, prefix):
    a, _ = _modules(tmp_path)
    r = _build(a, "--abi", "c", "--symbol-prefix", prefix, "-o", tmp_path / "out")
    assert r.exit_code == 2, r.output
    assert "--symbol-prefix" in r.output and "C identifier" in r.output
    assert not (tmp_path / "out").exists()
    r = CliRunner().invoke(cli, ["lower", str(a), "--abi", "c", "--symbol-prefix", prefix])
    assert r.exit_code == 2 and "C identifier" in r.output
    with pytest.raises(ValueError, match="C identifier"):
        build(PLUS_ONE, "llvm", None, tmp_path / "api", "k", abi="c", symbol_prefix=prefix)
    with pytest.raises(ValueError, match="C identifier"):
        tirc.compile(PLUS_ONE, abi="c", load=False, symbol_prefix=prefix)
    with pytest.raises(ValueError, match="C identifier"):
        tirc.lower(PLUS_ONE, abi="c", symbol_prefix=prefix)


def test_lower_shows_the_prefixed_symbol(tmp_path):
    a, _ = _modules(tmp_path)
    r = CliRunner().invoke(cli, ["lower", str(a), "--abi", "c", "--symbol-prefix", "_k1"])
    assert r.exit_code == 0, r.output
    assert '"global_symbol": "_k1main"' in r.output
    assert '"__tvm_ffi_k_main"' in tirc.lower(PLUS_ONE, symbol_prefix="k_")


# -- packed ABI: __tvm_ffi_<prefix><name> -------------------------------------------------------
def test_packed_symbols_carry_the_prefix(tmp_path):
    a, b = _modules(tmp_path)
    for src, prefix, sub in ((a, "plus_", "a"), (b, "twice_", "b")):
        r = _build(src, "--symbol-prefix", prefix, "-o", tmp_path / sub)
        assert r.exit_code == 0, r.output
        assert _exported(tmp_path / sub / "kernel.o") == [f"__tvm_ffi_{prefix}main"]
        header = (tmp_path / sub / "kernel.h").read_text()
        assert f"int __tvm_ffi_{prefix}main(void* self," in header
        [f] = json.loads((tmp_path / sub / "kernel.json").read_text())["functions"]
        assert f["symbol"] == f"__tvm_ffi_{prefix}main"


@needs_cc
def test_two_packed_main_modules_in_one_library(tmp_path):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    np = pytest.importorskip("numpy")
    objects = []
    for text, prefix in ((PLUS_ONE, "plus_"), (TIMES_TWO, "twice_")):
        build(text, "llvm", None, tmp_path / prefix, "kernel", symbol_prefix=prefix)
        objects.append(str(tmp_path / prefix / "kernel.o"))
    lib = tmp_path / "kernels.so"
    subprocess.run(["cc", "-shared", "-o", str(lib), *objects, "-lm"], check=True)
    mod = tvm_ffi.load_module(str(lib))
    x = np.arange(8, dtype="float32")
    y, z = np.zeros(8, "float32"), np.zeros(8, "float32")
    mod["plus_main"](x, y)
    mod["twice_main"](x, z)
    np.testing.assert_array_equal(y, x + 1)
    np.testing.assert_array_equal(z, x * 2)


@needs_cc
def test_api_compile_with_a_prefix(tmp_path):
    np = pytest.importorskip("numpy")
    pytest.importorskip("tvm_ffi")
    compiled = tirc.compile(TIMES_TWO, symbol_prefix="twice_")
    assert compiled.functions == ["main"]
    assert compiled.manifest["functions"][0]["symbol"] == "__tvm_ffi_twice_main"
    x, z = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    compiled["main"](x, z)  # the TIR name still finds it
    np.testing.assert_array_equal(z, x * 2)
    compiled["twice_main"](x, z)
    c = tirc.compile(TIMES_TWO, abi="c", load=False, symbol_prefix="twice_")
    assert "int32_t twice_main(float* A, float* B);" in c.header


# -- CMake: SYMBOL_PREFIX ----------------------------------------------------------------------
CMAKE = shutil.which("cmake") or shutil.which("cmake", path=os.path.dirname(sys.executable))
ROOT = TESTS.parent


def _cmake_project(tmp_path: Path, prefix_b: str) -> tuple[Path, Path]:
    a, b = _modules(tmp_path)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(textwrap.dedent(f"""\
        cmake_minimum_required(VERSION 3.20)
        project(prefixes LANGUAGES C)
        find_package(tirc REQUIRED)
        tirc_add_library(plus SOURCES {a} SYMBOL_PREFIX plus_ OUTPUT_DIRECTORY tirc/a NO_OPENMP)
        tirc_add_library(twice SOURCES {b} SYMBOL_PREFIX "{prefix_b}"
                         OUTPUT_DIRECTORY tirc/b NO_OPENMP)
        add_executable(app app.c)
        target_include_directories(app PRIVATE ${{CMAKE_CURRENT_BINARY_DIR}}/tirc)
        target_link_libraries(app PRIVATE plus twice)
        """))
    (proj / "app.c").write_text(APP)
    wrapper = tmp_path / "tirc"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
                       f'exec "{sys.executable}" -m tirc "$@"\n')
    wrapper.chmod(0o755)
    return proj, wrapper


def _cmake(*cmd) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


@pytest.mark.skipif(CMAKE is None, reason="cmake is not installed (pip install cmake)")
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_cmake_symbol_prefix(tmp_path):
    proj, wrapper = _cmake_project(tmp_path, "twice_")
    build_dir = tmp_path / "build"
    cfg = _cmake(CMAKE, "-S", proj, "-B", build_dir, f"-Dtirc_DIR={ROOT / 'tirc' / 'cmake'}",
                 f"-DTIRC_EXECUTABLE={wrapper}")
    assert cfg.returncode == 0, cfg.stdout + cfg.stderr
    built = _cmake(CMAKE, "--build", build_dir)
    assert built.returncode == 0, built.stdout + built.stderr
    ran = subprocess.run([str(build_dir / "app")], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.splitlines()[1] == "ok", ran.stdout + ran.stderr

    bad, wrapper = _cmake_project(tmp_path / "bad", "2x")
    cfg = _cmake(CMAKE, "-S", bad, "-B", tmp_path / "bad" / "build",
                 f"-Dtirc_DIR={ROOT / 'tirc' / 'cmake'}", f"-DTIRC_EXECUTABLE={wrapper}")
    assert cfg.returncode != 0
    assert "SYMBOL_PREFIX must start a C identifier" in cfg.stderr
