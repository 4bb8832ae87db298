"""``llvm_text.module_text`` writes the text ``str(module)`` gives, byte for byte: every
sample and every module of the TVM corpus is built for CUDA with an x86-64 host (and
the CPU ones for the CPU), each LLVM module the backends make compared both ways."""
from __future__ import annotations

import pytest

from conftest import ROOT, ids
from tirc.backends.cpu import backend as cpu
from tirc.backends.llvm import text as llvm_text
from tirc.backends.cuda import nvptx
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic

INPUTS = sorted((ROOT / "samples").glob("*.tir")) + sorted((ROOT / "tests/corpus/tvm").glob("*.tir"))


@pytest.fixture
def compared(monkeypatch):
    seen = []

    def both(module):
        fast = llvm_text.module_text(module)
        slow = str(module)
        assert fast == slow, "module_text differs from str(module)"
        seen.append(module)
        return fast

    for where in (cpu, nvptx):
        monkeypatch.setattr(where, "module_text", both)
    return seen


@pytest.mark.parametrize("path", INPUTS, ids=ids(INPUTS))
def test_module_text_is_llvmlite_text(path, tmp_path, compared):
    text = path.read_text()
    for target in ("cuda -arch=sm_90", "llvm -mtriple=x86_64-linux-gnu"):
        try:
            build(text, target, "llvm -mtriple=x86_64-linux-gnu", out_dir=tmp_path,
                  filename=str(path), line_info=True)
        except Diagnostic:
            continue  # not a module for this target: nothing lowered to compare


def test_every_fast_path_is_compared(compared, tmp_path):
    """The inputs above reach each instruction class ``module_text`` formats itself."""
    for path in INPUTS:
        try:
            build(path.read_text(), "cuda -arch=sm_90", "llvm -mtriple=x86_64-linux-gnu",
                  out_dir=tmp_path, filename=str(path))
        except Diagnostic:
            pass
    kinds = {type(i) for m in compared for f in m.functions for b in f.blocks
             for i in b.instructions}
    assert set(llvm_text._FORMAT) <= kinds, set(llvm_text._FORMAT) - kinds
