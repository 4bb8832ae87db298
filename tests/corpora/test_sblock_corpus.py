"""The block-level corpus printed by TVM 0.27 (tests/corpus/sblock/, made by
tests/corpus/gen_sblock_corpus.py: te/topi operators, hand schedules, dlight rules):
every module builds for its target, and every CPU module run on TVM's seeded inputs
gives TVM's outputs (expected/*.npz). Modules tirc refuses are listed with the error they
must give; one that starts building fails here, so the list stays true."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import check_expected_outputs, ptxas_check, TESTS
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic

tvm_ffi = pytest.importorskip("tvm_ffi")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

ROOT = TESTS / "corpus" / "sblock"
INDEX = json.loads((ROOT / "index.json").read_text())

# Modules tirc refuses, with the error they must give. (None at present: the two hand
# schedules that left a global-scope buffer inside the kernel, cuda_softmax_cross_thread
# and cuda_rfactor_sum, now set_scope it shared / local; their old texts are
# tests/tir/cuda_global_alloc_in_kernel_*.tir, refused in tests/passes/split/test_verify_memory.py.)
REFUSED: dict[str, str] = {}
# Reductions across threads (LowerCrossThreadReduction + LowerThreadAllreduce): their PTX
# must combine values with warp shuffles.
CROSS_THREAD = {"cuda_reduce_cross_thread", "cuda_softmax_cross_thread", "cuda_rfactor_sum",
                "dl_gpu_gemv", "dl_gpu_softmax", "dl_gpu_layer_norm", "dl_gpu_rms_norm",
                "dl_gpu_sum_reduction"}


def _build_and_check(entry, text: str, tmp_path: Path) -> None:
    """Build ``text`` for the entry's target: CUDA gives PTX (with warp shuffles exactly
    for the cross-thread reductions), a CPU module runs on TVM's seeded inputs and gives
    TVM's outputs."""
    cpu = entry["target"] == "llvm"
    build(text, entry["target"], None if cpu else "llvm", tmp_path, "m", shared=cpu)
    if not cpu:
        ptx = (tmp_path / "m.ptx").read_text()
        assert ptx.count(".entry") >= 1
        assert ("shfl.sync" in ptx) == (entry["name"] in CROSS_THREAD)
        ptxas_check(ptx, entry["target_json"]["arch"], tmp_path)  # where ptxas is installed
        return
    check_expected_outputs(ROOT, entry, tmp_path / "m.so")


@pytest.mark.parametrize("entry", INDEX, ids=[e["name"] for e in INDEX])
def test_corpus_module(entry, tmp_path):
    name = entry["name"]
    text = (ROOT / f"{name}.tir").read_text()
    cpu = entry["target"] == "llvm"
    host = None if cpu else "llvm"
    if name in REFUSED:
        with pytest.raises(Diagnostic, match=REFUSED[name]):
            build(text, entry["target"], host, tmp_path, "m", shared=cpu)
        assert not list(tmp_path.iterdir())
        return
    _build_and_check(entry, text, tmp_path)


# TVM's own lowering of the same modules (printed just before SplitHostDevice) must build
# too, and compute the same on the CPU. Modules whose lowered text tirc does not read:
LOWERED_REFUSED: dict[str, str] = dict(REFUSED)


@pytest.mark.parametrize("entry", INDEX, ids=[e["name"] for e in INDEX])
def test_tvm_lowered_text_builds(entry, tmp_path):
    name = entry["name"]
    text = (ROOT / f"{name}.lowered.tir").read_text()
    cpu = entry["target"] == "llvm"
    host = None if cpu else "llvm"
    if name in LOWERED_REFUSED:
        with pytest.raises(Diagnostic, match=LOWERED_REFUSED[name]):
            build(text, entry["target"], host, tmp_path, "m", shared=cpu)
        return
    _build_and_check(entry, text, tmp_path)
