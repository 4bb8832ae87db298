"""InjectPermutedLayout: TVM's own tests are before/after pairs
(tests/passes/blocks/test_sblock_pass_pairs.py); here the shapes it cannot permute are
located errors, and a block whose annotation is 0 is left as it is."""
from __future__ import annotations

import pytest

from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.blocks.inject_permuted_layout import inject_permuted_layout
from tirc.passes.prepare.verify import verify

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
TEXT = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((ROWS, COLS), "float16")):
    S = T.sblock_alloc_buffer((ROWS, COLS), "float16", scope="shared")
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        for i in range(ROWS):
            with T.sblock("copy"):
                T.reads(A[i, tx])
                T.writes(S[i, tx])
                T.sblock_attr({"permuted_layout": ON})
                S[i, tx] = A[i, tx]
"""


def _module(rows=8, cols=32, on=1):
    text = HEADER + TEXT.replace("ROWS", str(rows)).replace("COLS", str(cols)).replace("ON", str(on))
    return verify(parse(text, "t.tir"))


def test_a_row_of_32_uses_the_8_by_4_permutation():
    from tirc.ir.printer import print_module
    text = print_module(inject_permuted_layout(_module()))
    assert "S[i, (tx // 8 ^ i // 2) * 8 + tx % 8] = A[i, tx]" in text
    assert "permuted_layout" not in text


def test_an_annotation_of_0_changes_nothing():
    mod = _module(on=0)
    assert inject_permuted_layout(mod).functions["main"] is mod.functions["main"]


@pytest.mark.parametrize("rows, cols, message", [
    (8, 48, "needs its last dimension to be a multiple of 32, not 48"),
    (7, 32, "needs its next-to-last dimension even when its last (32) is not a multiple of 64"),
])
def test_a_shape_it_cannot_permute_is_a_located_error(rows, cols, message):
    with pytest.raises(Diagnostic) as e:
        inject_permuted_layout(_module(rows, cols))
    assert message in e.value.message
    assert e.value.span is not None and e.value.span.line == 14
