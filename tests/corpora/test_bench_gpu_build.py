"""bench/gpu_kernels.py without a GPU: ``--build-only --quick`` builds every kernel with
tirc (and TVM where it is installed), checks the outputs and the elementwise kernels'
logic on the CPU, and exits 0; the timing mode exits 4 with one line where no CUDA
device is present. (Timings are the script's business, never the tests'.)"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tirc.runtime import CudaError, cudadrv
from conftest import TESTS

ROOT = TESTS.parent
SCRIPT = ROOT / "bench" / "gpu_kernels.py"
KERNELS = ("add", "add_vec4", "reduce_sum", "matmul",
           "dl_matmul", "dl_softmax", "dl_layernorm", "dl_gemv")


def _has_gpu() -> bool:
    cudadrv.reset()
    try:
        return cudadrv.device_count() > 0
    except CudaError:
        return False
    finally:
        cudadrv.reset()


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)


def test_build_only_quick_builds_every_kernel(tmp_path):
    proc = _run("--build-only", "--quick", "-o", str(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    rows = {line.split("|")[1].strip(): line for line in proc.stdout.splitlines()
            if line.startswith("| ") and not line.startswith("| kernel")}
    assert set(rows) == set(KERNELS), out
    for name, row in rows.items():
        if name.startswith("dl_") and "| refused: " in row:
            continue  # a pass tirc lacks; tests/corpora/test_bench_dlight_cuda.py lists which
        assert "| ok: " in row, row                    # tirc's outputs are all there
        assert "FAILED" not in row and "WRONG" not in row and "BAD" not in row, row
        assert (tmp_path / "tirc" / name / f"{name}.so").is_file()
    for name in ("add", "add_vec4"):                   # their logic ran on the CPU
        assert rows[name].rstrip().endswith("| ok |"), rows[name]


@pytest.mark.skipif(_has_gpu(), reason="checks behaviour where no GPU exists")
def test_without_a_gpu_the_timing_run_exits_4_with_one_line():
    proc = _run("--quick")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "no CUDA device is present" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_usage_exits_2():
    assert _run("--kernels", "nope", "--build-only").returncode == 2
    assert _run("--arch", "sm_9x", "--build-only").returncode == 2
