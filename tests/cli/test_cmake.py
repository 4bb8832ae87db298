"""CMake integration: ``tirc --cmake-dir``, ``tirc_add_library`` in
``tirc/cmake/tirc-config.cmake``, the ``samples/cmake`` project configured, built with
Ninja and with Makefiles, run, rebuilt after an edit (depfiles), and a TIR error shown
as a diagnostic; ``tirc build -MT``. Skipped where cmake, a C++ compiler or the
generator's build tool is missing (``pip install cmake ninja`` gives both)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tirc.driver import cli
from conftest import TESTS

ROOT = TESTS.parent
SAMPLES = ROOT / "samples"
BIN = os.path.dirname(sys.executable)  # a venv's cmake and ninja from PyPI live here


def tool(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=BIN)


CMAKE = tool("cmake")
GENERATORS = {"Ninja": "ninja", "Unix Makefiles": "make"}


def test_cmake_dir_holds_the_package():
    r = CliRunner().invoke(cli, ["--cmake-dir"])
    assert r.exit_code == 0
    assert Path(r.output.strip()) == ROOT / "tirc" / "cmake"
    assert (Path(r.output.strip()) / "tirc-config.cmake").is_file()


def test_depfile_target(tmp_path):
    """-MT: the rule names the given target only (Ninja refuses undeclared outputs)."""
    out, dep = tmp_path / "out", tmp_path / "v.d"
    src = SAMPLES / "vector_add.tir"
    r = CliRunner().invoke(cli, ["build", str(src), "--target", "cuda -arch=sm_80,sm_90",
                                 "-o", str(out), "-MF", str(dep), "-MT", str(out / "vector_add.o")])
    assert r.exit_code == 0, r.output
    assert dep.read_text() == f"{out / 'vector_add.o'}: {src}\n"
    r = CliRunner().invoke(cli, ["build", str(src), str(SAMPLES / "cpu_matmul.tir"), "-MT", "x"])
    assert r.exit_code == 2 and "-MT names the target of one input" in r.output


def _project(tmp_path: Path) -> Path:
    """samples/cmake and the two modules it builds, copied: edits stay in tmp_path."""
    root = tmp_path / "samples"
    shutil.copytree(SAMPLES / "cmake", root / "cmake")
    for name in ("cpu_matmul.tir", "vector_add.tir"):
        shutil.copy(SAMPLES / name, root / name)
    wrapper = tmp_path / "tirc"  # this checkout's tirc, whatever is installed
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
                       f'exec "{sys.executable}" -m tirc "$@"\n')
    wrapper.chmod(0o755)
    return root


def _run(*cmd, cwd=None, check=True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd,
                          env=env, check=False)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.mark.skipif(CMAKE is None, reason="cmake is not installed (pip install cmake)")
@pytest.mark.skipif(tool("c++") is None, reason="no C++ compiler")
@pytest.mark.parametrize("generator", list(GENERATORS))
def test_sample_project(generator, tmp_path):
    if tool(GENERATORS[generator]) is None:
        pytest.skip(f"{GENERATORS[generator]} is not installed")
    src = _project(tmp_path)
    build = tmp_path / "build"
    cmake_dir = CliRunner().invoke(cli, ["--cmake-dir"]).output.strip()
    _run(CMAKE, "-S", src / "cmake", "-B", build, "-G", generator, f"-Dtirc_DIR={cmake_dir}",
         f"-DTIRC_EXECUTABLE={tmp_path / 'tirc'}")
    first = _run(CMAKE, "--build", build).stdout
    assert "tirc build cpu_matmul.tir" in first and "tirc build vector_add.tir" in first
    out = build / "tirc" / "gpu_kernels"
    assert sorted(p.name for p in out.iterdir()) == [
        "vector_add.d", "vector_add.h", "vector_add.json", "vector_add.o",
        "vector_add.sm_80.ptx", "vector_add.sm_90.ptx"]
    assert "int32_t vector_add(float* A, float* B, float* C, int64_t n);" in \
        (out / "vector_add.h").read_text()
    ran = _run(build / "sample").stdout.splitlines()
    assert ran[0] == "matmul: ok (largest error 0)"
    assert ran[1] in ("vector_add: ok on the GPU", "vector_add: skipped (no CUDA driver)",
                      "vector_add: skipped (no usable CUDA device)")

    assert "tirc build" not in _run(CMAKE, "--build", build).stdout  # up to date
    edited = src / "vector_add.tir"
    later = edited.stat().st_mtime + 10
    os.utime(edited, (later, later))
    again = _run(CMAKE, "--build", build).stdout
    assert "tirc build vector_add.tir" in again and "cpu_matmul" not in again

    broken = src / "cpu_matmul.tir"
    broken.write_text(broken.read_text().replace("T.float32(0.0)", "T.float32(0.0) +"))
    failed = _run(CMAKE, "--build", build, check=False)
    assert failed.returncode != 0
    assert f"{broken}:12:" in failed.stdout + failed.stderr
