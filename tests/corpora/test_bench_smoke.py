"""Small runs of the benchmarks that need neither a GPU nor TVM: each script
runs end to end and prints its table. The figures are the scripts' business, never the
tests' (no timing is asserted); bench/gpu_kernels.py has its own test
(test_bench_gpu_build.py), the fuzzers theirs (test_fuzz_*.py)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TESTS

ROOT = TESTS.parent


def _run(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in proc.stdout
    return proc.stdout


def test_compile_benchmark_smoke():
    """Every sample and a generated module, with -j 1 and -j 2; TVM, where it is not
    installed, shows as failing in its column."""
    out = _run("compile.py", "--repeat", "1", "--sizes", "10", "--jobs", "1,2",
               "--samples", "vector_add,cpu_matmul")
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| module")}
    assert set(rows) == {"cpu_matmul.tir", "vector_add.tir", "generated, 10 kernels",
                         "generated, 10 kernels, -j 2"}
    for name, cells in rows.items():
        assert not cells[5].strip().startswith("fails"), (name, cells)  # tirc built it
        assert ".o" in cells[10], (name, cells)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("kernel_set", ["plain", "scheduled"])
def test_cpu_kernels_benchmark_smoke(kernel_set):
    pytest.importorskip("numpy")
    pytest.importorskip("tvm_ffi")
    out = _run("cpu_kernels.py", "--quick", "--no-tvm", "--set", kernel_set, "--repeat", "1",
               "--wait-quiet", "0", "--max-other-load", "1", "--threads", "1")
    rows = [line for line in out.splitlines() if line.startswith("| ")][1:]
    assert len(rows) >= 4, out


def test_pass_scaling_benchmark_smoke():
    """bench/pass_scaling.py at its two smallest sizes: every family builds and each
    table has a row per pass with its growth ratio."""
    out = _run("pass_scaling.py", "--sizes", "1,2", "--repeat", "1")
    for family in ("unroll", "stmts", "funcs"):
        assert f"### {family}" in out, out
    rows = {line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| ")}
    assert {"CommonSubexprElim", "UnrollLoop", "ThreadSync", "(all passes)"} <= rows, out
    assert "flagged (above 2.3x per doubling):" in out
