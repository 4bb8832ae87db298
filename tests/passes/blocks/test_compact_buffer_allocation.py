"""CompactBufferAllocation: buffers shrink to the region their code touches. TVM's own
pairs are in tests/passes/blocks/test_sblock_pass_pairs.py; here, rules those pairs do not show (each
expected module is TVM 0.27's output for the input), the pass's preconditions, and the
pipeline up to the pass against TVM on real scheduled modules."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tirc.diagnostics import Diagnostic
from tirc.ir.equal import assert_structural_equal
from tirc.frontend.parse import parse
from tirc.passes.blocks.compact_buffer_allocation import compact_buffer_allocation
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target
from conftest import TESTS

HEADER = "# from tvm.script import tirx as T\n\n"

BEFORE = HEADER + '''
@T.prim_func(s_tir=True)
def main(n: T.int32):
    A = T.alloc_buffer((12,), "int32")
    for i in range(10):
        if i != 0:
            A[i] = A[i] + 1
    for i in range(8):
        B = T.alloc_buffer((64,), "int32")
        for j in range(T.min(8, n - i * 8)):
            B[i * 8 + j] = 1
        C = T.alloc_buffer((64, 64), "int32", scope="shared")
        for j in range(8):
            C[i * 8 + j, T.min(j, 3)] = 1
'''

AFTER_TVM = HEADER + '''
@T.prim_func(s_tir=True)
def main(n: T.int32):
    A = T.alloc_buffer((9,), "int32")
    for i in range(10):
        if i != 0:
            A[i - 1] = A[i - 1] + 1
    for i in range(8):
        B = T.alloc_buffer((8,), "int32")
        for j in range(T.min(8, n - i * 8)):
            B[i * 8 + j - i * 8] = 1
        C = T.alloc_buffer((8, 4), "int32", scope="shared")
        for j in range(8):
            C[i * 8 + j - i * 8, T.min(j, 3)] = 1
'''


def test_condition_bounds_and_loop_dependent_extents():
    """``i != 0`` leaves [1, 9] of A; B's extent min(8, n - i * 8) depends on the loop
    i and becomes its constant bound 8; T.min(j, 3) covers [0, 3]."""
    assert_structural_equal(compact_buffer_allocation(parse(BEFORE)), parse(AFTER_TVM))


PLAIN = HEADER + '''
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(4):
        B[i] = A[i]
        A[i] = B[i]
'''


def test_function_without_blocks_passes_unchanged():
    mod = parse(PLAIN)
    assert compact_buffer_allocation(mod).functions["main"] is mod.functions["main"]


ITERATORS = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32")):
    B = T.sblock_alloc_buffer((16,))
    for i in range(16):
        with T.sblock("b"):
            vi = T.axis.spatial(16, i)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi]
'''


def test_blocks_with_iterators_are_a_located_error():
    with pytest.raises(Diagnostic, match="ConvertBlocksToOpaque") as err:
        compact_buffer_allocation(parse(ITERATORS))
    assert err.value.span is not None and err.value.span.line == 8


CORPUS = TESTS / "corpus"
INDEX = {e["name"]: e for e in json.loads((CORPUS / "sblock" / "index.json").read_text())}
PREFIX = sorted(p.stem for p in (CORPUS / "sblock_compact").glob("*.tir"))


@pytest.mark.parametrize("name", PREFIX)
def test_pipeline_up_to_the_pass_matches_tvm(name):
    """tirc's block lowering up to CompactBufferAllocation gives TVM's module (function
    bodies; the local accumulator of dlight's dynamic matmul becomes (1, 4, 4))."""
    entry = INDEX[name]
    target = parse_target("llvm" if entry["target"] == "llvm" else "cuda -arch=sm_80")
    source = (CORPUS / "sblock" / f"{name}.tir").read_text()
    mine = run_pipeline(parse(source, name), PassContext(target), stop_after="CompactBufferAllocation")
    tvm = parse((CORPUS / "sblock_compact" / f"{name}.tir").read_text(), name)
    for fname, func in tvm.functions.items():
        assert_structural_equal(mine.functions[fname].body, func.body)


VECTOR = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    for i in range(8):
        B = T.alloc_buffer((64,))
        for j in range(2):
            B[T.Ramp(i * 8 + j * 4, 1, 4)] = A[T.Ramp(i * 8 + j * 4, 1, 4)]
        for j in range(8):
            C[i * 8 + j] = B[i * 8 + j]
'''

VECTOR_TVM = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    for i in range(8):
        B = T.alloc_buffer((8,))
        for j in range(2):
            B[T.Ramp(i * 8 + j * 4, 1, 4) - T.Broadcast(i * 8, 4)] = A[T.Ramp(i * 8 + j * 4, 1, 4)]
        for j in range(8):
            C[i * 8 + j] = B[i * 8 + j - i * 8]
'''


def test_vector_accesses_cover_their_lanes_and_shift_every_lane():
    assert_structural_equal(compact_buffer_allocation(parse(VECTOR)), parse(VECTOR_TVM))


def test_fused_thread_indices_split_by_a_symbolic_extent_keep_the_buffer_whole():
    """attention_block's attention (bench/models, as TVM prints it): a fused thread index
    split by ``seq_len`` (``(b * 1024 + t) // (seq_len * seq_len)``) gives interval bounds
    that depend on the sign of ``seq_len``; the dimension stays whole, as TVM's iterator
    map finds it, not a shape of a hundred nodes of Selects, min and max."""
    from dataclasses import replace
    from conftest import ROOT
    mod = parse((ROOT / "bench/models/attention_block.cuda.tir").read_text(), "attention_block")
    mod = replace(mod, functions={"attention": mod.functions["attention"]})
    mine = run_pipeline(mod, PassContext(parse_target("cuda -arch=sm_80")),
                        stop_after="CompactBufferAllocation")
    tvm = parse((CORPUS / "model_compact" / "attention_block_attention.tir").read_text(), "tvm")
    assert_structural_equal(mine.functions["attention"].body, tvm.functions["attention"].body)
