"""The pass manager skips a pass whose features (``tirc.passes.analysis.features``) the
module lacks (``Pass.needs``): what it makes is what running every pass makes."""
from __future__ import annotations

from dataclasses import replace

import pytest

from conftest import ROOT, SAMPLES, lowered_texts, parsed_modules
from tirc.build.options import bind_target_from
from tirc.frontend.parse import parse
from tirc.passes import pipeline as pl
from tirc.passes.analysis.features import module_features
from tirc.passes.pipeline import PassContext, PrintAfter, run_pipeline

CORPORA = ("tvm", "tvm_tests", "sblock", "sblock_compact", "sblock_passes", "simt", "sve_tests",
           "tensor_core")


def _modules():
    paths = list(SAMPLES)
    for c in CORPORA:
        paths += sorted((ROOT / "tests" / "corpus" / c).rglob("*.tir"))
    return parsed_modules(paths)


@pytest.mark.parametrize("target", ["cuda -arch=sm_90", "llvm"])
def test_skipping_passes_changes_nothing(target, monkeypatch):
    """Every corpus module (TVM's printed modules, block-level, SIMT and SVE corpora, the
    samples), lowered with the skips and with every pass run, prints the same (or fails
    with the same error)."""
    ctx = PassContext(bind_target_from(target, "llvm" if target.startswith("cuda") else None))
    mods = _modules()
    assert len(mods) > 1000
    skipping = lowered_texts(mods, ctx)
    gated = [p.name for p in pl.PIPELINE if p.needs]
    assert len(gated) >= 10
    monkeypatch.setattr(pl, "PIPELINE", [replace(p, needs=()) for p in pl.PIPELINE])
    everything = lowered_texts(mods, ctx)
    assert sum(not v.startswith("error") for v in skipping.values()) > 500
    assert skipping == everything


def test_gated_passes_are_skipped_on_a_plain_kernel():
    """The vector add sample has no loops to vectorize, no virtual threads, no likely
    conditions, shared memory, allocations or private functions: the passes for those
    do not run."""
    mod = parse((ROOT / "samples" / "vector_add.tir").read_text())
    shown = []
    names = {p.name for p in pl.PIPELINE if p.needs}
    run_pipeline(mod, PassContext(bind_target_from("cuda -arch=sm_90", "llvm")),
                 instruments=(PrintAfter(names, shown.append),))
    skipped = [line for line in shown if line.startswith("# skipped")]
    assert len(skipped) == len(names)
    assert "# skipped VectorizeLoop: nothing it acts on (no loop.vectorized)\n" in skipped


FEATURES = """
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def helper(x: T.int32) -> T.int32:
        return x + 1

    @T.prim_func
    def main(A: T.Buffer((64,), "float32")):
        S = T.alloc_buffer((64,), scope="shared")
        for i in T.vectorized(4):
            A[i] = T.float32(0)
        for j in T.unroll(2):
            if T.likely(j < 1):
                A[j] = S[j]
        for k in range(1):
            A[k] = T.float32(1)
"""


def test_features_of_a_module():
    found = module_features(parse(FEATURES))
    assert {"private", "alloc", "shared", "loop.vectorized", "loop.unrolled", "loop.unit",
            "call.likely"} <= found
    assert "thread.virtual" not in found and "block" not in found
