"""LowerOpaqueBlock: rules beyond TVM's own tests (tests/passes/blocks/test_sblock_pass_pairs.py)."""
from __future__ import annotations

from tirc.ir.stmt import SeqStmt
from tirc.frontend.parse import parse
from tirc.passes.blocks.lower_opaque_block import lower_opaque_block

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"


def test_a_block_lowered_to_a_sequence_is_spliced_into_the_enclosing_one():
    # After UnifyThreadBinding removed the thread loop around it, a block sits directly in
    # a sequence; TVM's mutators flatten the result (three statements, not two).
    mod = lower_opaque_block(parse(HEADER + """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4,), "float32")):
    for k in range(2):
        A[k] = T.float32(0.0)
    with T.sblock("b"):
        T.reads()
        T.writes(A[2:4])
        A[2] = T.float32(1.0)
        A[3] = T.float32(2.0)
""", "before.tir"))
    body = mod.functions["main"].body
    assert isinstance(body, SeqStmt) and len(body.stmts) == 3
    assert not any(isinstance(s, SeqStmt) for s in body.stmts)
