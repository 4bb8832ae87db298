"""LowerWarpMemory against TVM 0.27: every ``tests/corpus/warp_memory/<case>.before.tir``
lowered by tirc equals what TVM's pass printed (``<case>.after.tir``), or is a located
error where TVM's pass fails (``<case>.error.txt``); and a kernel using warp memory
builds to PTX with ``shfl.sync`` and computes what NumPy does on the SIMT interpreter."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import TESTS
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.ir.equal import StructuralMismatch, assert_structural_equal
from tirc.passes.device.lower_warp_memory import lower_warp_memory

CORPUS = TESTS / "corpus" / "warp_memory"
CASES = sorted(p.name[: -len(".before.tir")] for p in CORPUS.glob("*.before.tir"))
PAIRS = [c for c in CASES if (CORPUS / f"{c}.after.tir").exists()]
ERRORS = [c for c in CASES if (CORPUS / f"{c}.error.txt").exists()]

# TVM keeps the warp buffer's tile layout (``T.S[32:1]``) on the smaller local buffer
# that replaces it; tirc's buffers have no layout but row-major order, so it is dropped.
_LAYOUT = re.compile(r", layout=T\.TileLayout\(T\.S\[[^\]]*\]\)")

KNOWN = {
    "two_buffers": ("TVM lowers only the first warp buffer of a statement sequence and "
                    "leaves the second ('V') in warp memory, which no code generator "
                    "lowers; tirc lowers both"),
}


def _expected(case: str):
    return parse(_LAYOUT.sub("", (CORPUS / f"{case}.after.tir").read_text()), f"{case}.after.tir")


@pytest.mark.parametrize("case", PAIRS)
def test_matches_tvm(case):
    result = lower_warp_memory(parse((CORPUS / f"{case}.before.tir").read_text(), case))
    if case in KNOWN:
        with pytest.raises(StructuralMismatch):
            assert_structural_equal(result, _expected(case))
        pytest.xfail(KNOWN[case])
    assert_structural_equal(result, _expected(case))


def test_two_buffers_both_lowered():
    from tirc.ir.printer import print_module
    text = print_module(lower_warp_memory(parse((CORPUS / "two_buffers.before.tir").read_text())))
    assert 'scope="warp"' not in text
    assert text.count("T.tvm_warp_shuffle(") == 2


ERROR_MESSAGES = {
    "error_extent": ("extent of threadIdx.x must be a constant divisor of the warp size "
                     r"\(32\), not 48", 10),
    "error_nonlinear": ("the index of a store must be linear in tx", 11),
    "error_inside_launch": ("no threadIdx.x is launched inside the allocation's scope", 10),
}


@pytest.mark.parametrize("case", ERRORS)
def test_rejects_what_tvm_rejects(case):
    message, line = ERROR_MESSAGES[case]
    with pytest.raises(Diagnostic, match=message) as err:
        lower_warp_memory(parse((CORPUS / f"{case}.before.tir").read_text(), case))
    assert err.value.span is not None and err.value.span.line == line


SHIFT = """
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for bx in T.thread_binding(4, thread="blockIdx.x"):
            tmp = T.alloc_buffer((WARP,), scope="warp")
            for tx in T.thread_binding(LANES, thread="threadIdx.x"):
                tmp[tx] = A[bx * 32 + tx] * T.float32(2.0)
                B[bx * 32 + tx] = tmp[(tx + 1) % 32]
"""


def test_warp_kernel_builds_to_shuffles_and_runs(tmp_path):
    from tirc.build.stages import build
    from tirc.testing import simt
    text = SHIFT.replace("WARP", "32").replace("LANES", "32")
    build(text, "cuda", "llvm", tmp_path, "m")
    ptx = (tmp_path / "m.ptx").read_text()
    assert "shfl.sync.idx.b32" in ptx and ".local" not in ptx
    a = np.random.default_rng(0).random(128, dtype=np.float32)
    b = np.zeros(128, np.float32)
    simt.run(text, "main", [a, b])
    np.testing.assert_allclose(b, np.roll((a * 2).reshape(4, 32), -1, axis=1).ravel())


def test_warp_wider_than_a_warp_is_located(tmp_path):
    from tirc.build.stages import build
    text = SHIFT.replace("WARP", "64").replace("LANES", "64")
    with pytest.raises(Diagnostic, match="divisor of the warp size") as err:
        build(text, "cuda", "llvm", tmp_path, "m")
    assert err.value.span is not None and err.value.span.line == 11  # its threadIdx.x loop
