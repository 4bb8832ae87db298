"""Shared test helpers: where the TIR files live, and parse/print shortcuts."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "samples").glob("*.tir"))
TVM_CORPUS = sorted((ROOT / "tests" / "corpus" / "tvm").glob("*.tir"))
TEST_MODULES = sorted((ROOT / "tests" / "tir").glob("*.tir"))
ALL_TIR = SAMPLES + TVM_CORPUS + TEST_MODULES


def ptxas_check(ptx: str, arch: str, tmp_path: Path) -> bool:
    """Assemble ``ptx`` for ``arch`` with ``ptxas`` when it is installed (optional: the
    project never needs it); False when it is not, an assertion with ptxas's message when
    it rejects the PTX."""
    import shutil
    import subprocess
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return False
    src = tmp_path / f"k_{arch}.ptx"
    src.write_text(ptx)
    proc = subprocess.run([ptxas, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr + "\n--- PTX ---\n" + ptx
    return True


def ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` skip cleanly where no CUDA device is present."""
    gpu_items = [i for i in items if "gpu" in i.keywords]
    if not gpu_items:
        return
    try:
        from cuda.bindings import driver  # noqa: F401  (imported only when a GPU test exists)
        err, = driver.cuInit(0)[:1]
        err2, count = driver.cuDeviceGetCount()
        has_gpu = int(err) == 0 and int(err2) == 0 and count > 0
    except Exception:
        has_gpu = False
    if not has_gpu:
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU with the CUDA driver")
        for item in gpu_items:
            item.add_marker(skip)
