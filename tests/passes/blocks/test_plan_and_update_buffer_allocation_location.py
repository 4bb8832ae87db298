"""PlanAndUpdateBufferAllocationLocation: where block allocations land (regions aside;
tests/passes/blocks/test_sblock_pass_pairs.py compares whole modules with TVM's)."""
from __future__ import annotations

from tirc.ir.block import SBlock, SBlockRealize
from tirc.ir.equal import assert_structural_equal
from tirc.ir.stmt import For
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.blocks.lower_init_block import lower_init_block
from tirc.passes.blocks.plan_and_update_buffer_allocation_location import (
    plan_and_update_buffer_allocation_location as plan)

HEADER = "# from tvm.script import tirx as T\n\n"


def _allocated_under(mod) -> dict[str, str]:
    """Buffer name -> the loop variable (or block name) its allocating block sits in."""
    out = {}
    func = mod.functions["main"]
    for node in walk(func.body):
        if isinstance(node, For) and isinstance(node.body, SBlockRealize):
            for b in node.body.block.alloc_buffers:
                out[b.name] = node.loop_var.name
        elif isinstance(node, SBlock) and node.name_hint:
            for b in node.alloc_buffers:
                out[b.name] = node.name_hint
    return out


LOOP_CARRIED = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((8, 8), "int32"), B: T.Buffer((8, 8), "int32")):
    C = T.sblock_alloc_buffer((8, 8), "int32")
    for i in range(8):
        for j in range(8):
            with T.sblock("b0"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = A[vi, vj] + 1
            with T.sblock("b1"):
                vi = T.axis.spatial(8, i)
                vj = T.axis.opaque(8, j)
                T.reads(C[vi, vj - 1:vj - 1 + 2])
                T.writes(B[vi, vj])
                B[vi, vj] = C[vi, vj] + T.if_then_else(0 < vj, C[vi, vj - 1], 0)
'''


def test_loop_carried_read_keeps_the_buffer_above_the_opaque_loop():
    """b1 reads C[vj - 1], written in the previous iteration of j: C must be allocated
    above loop j (it was allocated inside j, a fresh buffer each iteration: wrong code)."""
    assert _allocated_under(plan(lower_init_block(parse(LOOP_CARRIED)))) == {"C": "i"}


REDUCTION = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    acc = T.sblock_alloc_buffer((16,), scope="local")
    for i in T.parallel(16):
        for k in range(16):
            with T.sblock("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(acc[vi])
                with T.init():
                    acc[vi] = T.float32(0.0)
                acc[vi] = acc[vi] + A[vi, vk]
        with T.sblock("out"):
            vi = T.axis.spatial(16, i)
            T.reads(acc[vi])
            T.writes(B[vi])
            B[vi] = acc[vi]
'''


def test_reduction_accumulator_is_per_parallel_iteration_and_outlives_the_reduction():
    assert _allocated_under(plan(lower_init_block(parse(REDUCTION)))) == {"acc": "i"}


def test_unused_allocation_is_dropped():
    text = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4,), "float32")):
    unused = T.sblock_alloc_buffer((4,))
    for i in range(4):
        with T.sblock("a"):
            vi = T.axis.spatial(4, i)
            T.reads()
            T.writes(A[vi])
            A[vi] = T.float32(1.0)
'''
    assert _allocated_under(plan(parse(text))) == {}


OPAQUE_AND_BRANCH = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.sblock_alloc_buffer((16, 16))
    for i in range(16):
        for j in range(16):
            with T.sblock("fill"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads()
                T.writes(B[vi, vj])
                T.call_extern("int32", "fill", B.data, vi, vj)
        for j in range(16):
            if j < 4:
                C[i, j] = A[i, j + 8] + B[i, j]
'''

# TVM 0.27's PlanAndUpdateBufferAllocationLocation of OPAQUE_AND_BRANCH.
OPAQUE_AND_BRANCH_TVM = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(16):
        with T.sblock(""):
            T.reads(A[i, 8:12])
            T.writes(C[i, 0:4])
            B = T.sblock_alloc_buffer((16, 16))
            for j in range(16):
                with T.sblock("fill"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.reads()
                    T.writes(B[vi, vj])
                    T.call_extern("int32", "fill", B.data, vi, vj)
            for j in range(16):
                if j < 4:
                    C[i, j] = A[i, j + 8] + B[i, j]
'''


def test_data_pointer_use_is_an_access_and_branches_narrow_the_new_block_regions():
    """B is written only through B.data in an extern call: that use counts (B was
    allocated inside the second j loop, below the call writing it). The block added at
    loop i reads A[i, 8:12] only: the branch j < 4 bounds j."""
    assert_structural_equal(plan(parse(OPAQUE_AND_BRANCH)), parse(OPAQUE_AND_BRANCH_TVM))
