"""TransformMmaBufferLayout, before and after. TVM has no unit test of this pass; the pair
below is TVM 0.27's own output for the ``before`` module (``s_tir.transform.
TransformMmaBufferLayout()``, printed by ``mod.script()``), with one difference: TVM leaves
the blocks' ``T.reads``/``T.writes`` naming the old ``m16n8k8.matrixC`` buffer (which no
longer has an allocation: it prints ``C_1 = T.Buffer((32, 16), scope="m16n8k8.matrixC")``);
tirc makes them the whole new buffer."""
from __future__ import annotations

import pytest
from conftest import pass_checker

from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.blocks.transform_mma_buffer_layout import transform_mma_buffer_layout
from tirc.passes.prepare.verify import verify

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
check = pass_checker(transform_mma_buffer_layout, reprint=True)

BEFORE = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((32, 16), "float32"), B: T.Buffer((32, 16), "float32")):
    T.func_attr({"tirx.noalias": True})
    with T.sblock("root"):
        T.reads(A[0:32, 0:16])
        T.writes(B[0:32, 0:16])
        C = T.sblock_alloc_buffer(SHAPE, scope="m16n8k8.matrixC")
        for i, j in T.grid(32, 16):
            with T.sblock("load"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = A[vi, vj]
        for i, j in T.grid(32, 16):
            with T.sblock("store"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(C[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = C[vi, vj] * T.float32(2.0)
"""


def test_matrix_c_becomes_each_threads_part():
    check(BEFORE.replace("SHAPE", "(32, 16)"), """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((32, 16), "float32"), B: T.Buffer((32, 16), "float32")):
    T.func_attr({"tirx.noalias": True})
    with T.sblock("root"):
        T.reads(A[0:32, 0:16])
        T.writes(B[0:32, 0:16])
        C = T.sblock_alloc_buffer((2, 2, 2, 2), scope="local")
        for i, j in T.grid(32, 16):
            with T.sblock("load"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(C[0:2, 0:2, 0:2, 0:2])
                C[vi // 16, vj // 8, vi % 16 // 8, vj % 2] = A[vi, vj]
        for i, j in T.grid(32, 16):
            with T.sblock("store"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(C[0:2, 0:2, 0:2, 0:2])
                T.writes(B[vi, vj])
                B[vi, vj] = C[vi // 16, vj // 8, vi % 16 // 8, vj % 2] * T.float32(2.0)
""")


def test_a_shape_off_the_tiles_is_a_located_error():
    mod = verify(parse(HEADER + BEFORE.replace("SHAPE", "(30, 16)").replace("32, 16)", "30, 16)")
                       .replace("T.grid(32", "T.grid(30").replace("0:32", "0:30"), "t.tir"))
    with pytest.raises(Diagnostic) as e:
        transform_mma_buffer_layout(mod)
    assert "must have constant last two dimensions divisible by 16 and 8" in e.value.message
    assert e.value.span is not None and e.value.span.line == 11
