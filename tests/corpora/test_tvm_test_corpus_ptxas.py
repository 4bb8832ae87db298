"""The PTX tirc makes for the CUDA modules of TVM's own unit tests (tests/corpus/tvm_tests)
is accepted by ``ptxas``, where ptxas is installed (the project never needs it: skipped
elsewhere). A module for an arch older than the installed ptxas assembles (CUDA 13's
ptxas starts at sm_75) is assembled for the oldest one it takes: PTX for an older
target is valid for a newer one."""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ptxas_check
from test_tvm_test_corpus import EXPECTED_ERROR, INDEX, _build

PTXAS = shutil.which("ptxas")
CUDA_MODULES = sorted(n for n, e in INDEX.items()
                      if e["target"].startswith("cuda") and n not in EXPECTED_ERROR)

pytestmark = pytest.mark.skipif(PTXAS is None, reason="ptxas is not installed")


@functools.lru_cache(maxsize=None)
def _oldest_arch(tmp: str) -> int:
    """The oldest sm_NN the installed ptxas assembles for (tried on an empty module)."""
    src = Path(tmp) / "empty.ptx"
    for arch in (50, 52, 53, 60, 61, 62, 70, 72, 75, 80):
        src.write_text(f".version 6.2\n.target sm_{arch}\n.address_size 64\n")
        done = subprocess.run([PTXAS, f"-arch=sm_{arch}", str(src), "-o", str(src) + ".o"],
                              capture_output=True, text=True)
        if done.returncode == 0:
            return arch
    return 80


def test_there_are_cuda_modules():
    assert len(CUDA_MODULES) > 100


@pytest.mark.parametrize("name", CUDA_MODULES)
def test_ptx_of_tvm_test_module_assembles(name, tmp_path, tmp_path_factory):
    arch = int(re.search(r"sm_(\d+)", INDEX[name]["target"]).group(1))
    _build(name, tmp_path)
    ptx = (tmp_path / "m.ptx").read_text()
    oldest = _oldest_arch(str(tmp_path_factory.getbasetemp()))
    assert ptxas_check(ptx, f"sm_{max(arch, oldest)}", tmp_path)
