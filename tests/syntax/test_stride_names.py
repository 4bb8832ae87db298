"""A stride written as a name nothing defines (``strides=("C_s0", "C_s1")``) is a variable of
that buffer alone, as TVM's parser makes it: TVM prints the match_buffers of tensorized
blocks so, and two blocks' ``C_s0`` are two variables bound to different strides."""
from __future__ import annotations

from tirc.frontend.parse import parse
from tirc.ir.block import SBlock
from tirc.ir.visitor import walk
from tirc.passes.blocks.lower_match_buffer import lower_match_buffer
from tirc.passes.prepare.verify import verify

TEXT = """# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 16), "float32")):
    with T.sblock("a"):
        T.reads(A[0:2, 0:2])
        T.writes()
        C = T.match_buffer(A[0:2, 0:2], (2, 2), strides=("C_s0", "C_s1"))
        T.evaluate(C.strides[0])
    with T.sblock("b"):
        T.reads(B[0:2, 0:2])
        T.writes()
        C = T.match_buffer(B[0:2, 0:2], (2, 2), strides=("C_s0", "C_s1"))
        T.evaluate(C.strides[0])
"""


def test_each_match_buffer_has_its_own_stride_variables():
    mod = verify(parse(TEXT, "t.tir"))
    blocks = [n for n in walk(mod.functions["main"].body) if isinstance(n, SBlock) and n.match_buffers]
    a, b = (blk.match_buffers[0].buffer for blk in blocks)
    assert a.strides[0] is not b.strides[0]
    lower_match_buffer(mod)  # binds 8 and 16: one shared variable could not be both


def test_a_declared_name_is_still_the_declared_variable():
    text = TEXT.replace('def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 16), "float32")):',
                        'def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 16), "float32")):\n'
                        '    C_s0 = T.int32()')
    blocks = [n for n in walk(verify(parse(text, "t.tir")).functions["main"].body)
              if isinstance(n, SBlock) and n.match_buffers]
    a, b = (blk.match_buffers[0].buffer for blk in blocks)
    assert a.strides[0] is b.strides[0]
