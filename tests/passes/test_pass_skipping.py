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
    assert "bfloat16" not in found and "float8" not in found


NARROW = """
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def by_buffer(A: T.Buffer((4,), "bfloat16")):
        T.evaluate(0)

    @T.prim_func
    def by_scalar(x: T.bfloat16):
        T.evaluate(0)

    @T.prim_func
    def by_pointer(p: T.handle("float8_e4m3fn")):
        T.evaluate(0)

    @T.prim_func(private=True)
    def by_return(x: T.float32) -> T.bfloat16:
        return T.Cast("bfloat16", x)

    @T.prim_func
    def by_cast(A: T.Buffer((4,), "float32")):
        A[0] = T.Cast("float32", T.Cast("float8_e5m2", A[1]))

    @T.prim_func
    def by_constant(A: T.Buffer((4,), "float32")):
        A[0] = T.Cast("float32", T.bfloat16(1.5))

    @T.prim_func
    def by_call(A: T.Buffer((4,), "uint16")):
        A[0] = T.reinterpret("uint16", T.reinterpret("bfloat16", A[1]))

    @T.prim_func
    def by_allocation(A: T.Buffer((4,), "float32")):
        B = T.alloc_buffer((4,), "float8_e4m3fn")
        B[0] = T.Cast("float8_e4m3fn", A[0])
        A[1] = T.Cast("float32", B[0])

    @T.prim_func
    def none(A: T.Buffer((4,), "float16"), B: T.Buffer((4,), "uint8")):
        A[0] = T.Cast("float16", B[0])
"""


def test_narrow_float_features_where_such_a_value_starts():
    """bfloat16 and float8 are features wherever such a value can start (the legalize
    passes are skipped on a module without them), and agree with the dtypes the
    legalize passes scan for."""
    from tirc.passes.analysis.features import function_features
    from tirc.passes.legalize.narrow_float import _scan_bases
    mod = parse(NARROW)
    narrow = {}
    for name, func in mod.functions.items():
        found = function_features(func)
        narrow[name] = {f for f in ("bfloat16", "float8") if f in found}
        bases = _scan_bases(func)
        assert narrow[name] == ({"bfloat16"} & bases) | (
            {"float8"} if any(b.startswith("float8") for b in bases) else set()), name
    assert narrow == {"by_buffer": {"bfloat16"}, "by_scalar": {"bfloat16"},
                      "by_pointer": {"float8"}, "by_return": {"bfloat16"},
                      "by_cast": {"float8"}, "by_constant": {"bfloat16"},
                      "by_call": {"bfloat16"}, "by_allocation": {"float8"}, "none": set()}
