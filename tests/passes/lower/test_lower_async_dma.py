"""LowerAsyncDMA: with ``tirx.use_async_copy``, a contiguous copy loop in an async
commit queue is what TVM turns into a DMA-engine copy (``T.dma_copy``), which no target
of tirc has: a located error. Every other module passes unchanged."""
from __future__ import annotations

import pytest

from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.lower.lower_async_dma import lower_async_dma
from tirc.passes.pass_context import PassContext
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import tirx as T\n\n"
CTX = PassContext(parse_target("cuda -arch=sm_80", host="llvm"),
                  config=(("tirx.use_async_copy", True),))


def _module(copy: str):
    return parse(HEADER + f'''@T.prim_func
def main(A: T.Buffer((512,), "float32")):
    S = T.alloc_buffer((512,), scope="shared")
    with T.attr({{"async_commit_queue_scope": 0}}):
        with T.attr({{"async_scope": 1}}):
{copy}
''', "d.tir")


@pytest.mark.parametrize("copy", [
    "            for i in range(128):\n                S[i] = A[i + 64]",
    "            for i in range(4):\n                for j in range(32):\n"
    "                    S[i * 32 + j + 8] = A[i * 32 + j]",
])
def test_a_contiguous_copy_in_a_commit_queue_is_refused_at_the_loop(copy):
    with pytest.raises(Diagnostic, match="DMA-engine copy") as err:
        lower_async_dma(_module(copy), CTX)
    assert err.value.span.line == 8


@pytest.mark.parametrize("copy", [
    "            for i in range(128):\n                S[i * 2] = A[i]",        # strided
    "            for i in range(128):\n                S[i] = A[i] + T.float32(1)",  # computes
    "            for i in range(4):\n                for j in range(32):\n"
    "                    S[j * 4 + i] = A[i * 32 + j]",                         # transposed
])
def test_other_copies_pass_unchanged(copy):
    mod = _module(copy)
    assert lower_async_dma(mod, CTX) is mod


def test_without_the_option_nothing_is_checked():
    mod = _module("            for i in range(128):\n                S[i] = A[i]")
    assert lower_async_dma(mod, PassContext(CTX.target)) is mod
