"""StorageRewrite (tirc/passes/lower/storage_rewrite.py). TVM's own cases are in
test_sblock_pass_pairs.py; here: the pipeline's allocations against TVM's lowering of
the block-level corpus, programs run on the IR evaluator before and after, and what
tirc keeps in place where moving it would be wrong."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tirc.ir.equal import assert_structural_equal
from tirc.ir.stmt import AllocBuffer, DeclBuffer, For
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.passes.lower.storage_rewrite import storage_rewrite
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target
from tirc.testing.evaluate import run
from conftest import TESTS

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
CORPUS = TESTS / "corpus" / "sblock"


def _parse(text: str):
    return verify(parse(HEADER + text, "t.tir"))


def _allocs(mod) -> list[AllocBuffer]:
    return [n for f in mod.functions.values() for n in walk(f.body) if isinstance(n, AllocBuffer)]


def _shapes(mod) -> Counter:
    """Allocations other than shared memory (which tirc's MergeSharedMemoryAllocations
    merges differently from TVM's) by scope, dtype and shape."""
    return Counter((a.buffer.scope, str(a.buffer.dtype),
                    tuple(getattr(d, "value", None) for d in a.buffer.shape))
                   for a in _allocs(mod) if not a.buffer.scope.startswith("shared"))


# TVM also retypes a local accumulator accessed only as float32x2 vectors
# (PointerValueTypeRewrite), which tirc does not do.
VECTOR_RETYPED = {"dl_gpu_matmul", "dl_gpu_matmul_dyn"}
ENTRIES = json.loads((CORPUS / "index.json").read_text())


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_allocations_as_tvm_lowers_the_corpus(entry):
    """After the pipeline up to the split, every corpus module allocates what TVM 0.27's
    lowering of it allocates (TVM's text printed just before SplitHostDevice)."""
    name = entry["name"]
    cpu = entry["target"] == "llvm"
    target = parse_target("llvm") if cpu else parse_target(
        f"cuda -arch={entry['target_json']['arch']}", host="llvm")
    ours = run_pipeline(parse((CORPUS / f"{name}.tir").read_text(), name), PassContext(target),
                        stop_after="MergeSharedMemoryAllocations")
    theirs = parse((CORPUS / f"{name}.lowered.tir").read_text(), name)
    if name in VECTOR_RETYPED:
        assert _shapes(ours) != _shapes(theirs)
        pytest.xfail("TVM retypes the accumulator to float32x2 (PointerValueTypeRewrite)")
    assert _shapes(ours) == _shapes(theirs)


REUSE = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), D: T.Buffer((64,), "float32")):
    for t in range(3):
        B = T.alloc_buffer((64,))
        C = T.alloc_buffer((64,))
        E = T.alloc_buffer((64,))
        for i in range(64):
            B[i] = A[i] + T.Cast("float32", t)
        for i in range(64):
            C[i] = T.float32(2.0) * B[i]
        for i in range(64):
            E[i] = C[(i + 1) % 64] + B[i]
        for i in range(64):
            D[i] = D[i] + E[i]
"""


def test_reuse_keeps_results():
    """C takes B's memory in place; E overlaps both (it reads C shifted), so it gets its own;
    all three move out of the serial loop."""
    mod = _parse(REUSE)
    out = verify(storage_rewrite(mod))
    allocs = _allocs(out)
    assert len(allocs) == 2 and not any(isinstance(n, AllocBuffer)
                                        for n in walk(out["main"].body.body.body))
    views = [n for n in walk(out["main"].body) if isinstance(n, DeclBuffer)]
    assert [v.buffer.data for v in views] == [allocs[0].buffer.data]
    a = np.arange(64, dtype="float32")
    want, got = np.zeros(64, "float32"), np.zeros(64, "float32")
    run(mod, "main", [a, want])
    run(out, "main", [a, got])
    np.testing.assert_array_equal(want, got)


def test_size_from_a_loop_variable_stays_in_place():
    """An allocation sized by a variable of the loop around it cannot move to the start of
    the function (TVM's pass would move it out of its variable's scope)."""
    text = """
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    for n in range(1, 16):
        B = T.alloc_buffer((n,))
        for i in range(n):
            B[i] = A[i]
        A[n] = B[n - 1]
"""
    mod = _parse(text)
    out = verify(storage_rewrite(mod))
    assert_structural_equal(out, mod)


def test_parallel_body_keeps_its_own_allocation():
    text = """
@T.prim_func
def main(A: T.Buffer((8, 32), "float32")):
    for p in T.parallel(8):
        for k in range(4):
            B = T.alloc_buffer((32,))
            for i in range(32):
                B[i] = A[p, i] * T.float32(2.0)
            for i in range(32):
                A[p, i] = B[i]
"""
    out = verify(storage_rewrite(_parse(text)))
    loop = out["main"].body
    assert isinstance(loop, For) and loop.kind == "parallel"
    assert isinstance(loop.body, AllocBuffer) and isinstance(loop.body.body, For)


def test_kernel_allocations_at_the_launch():
    text = """
@T.prim_func
def main(A: T.Buffer((1024,), "float32")):
    T.func_attr({"target": T.target({"arch": "sm_80", "kind": "cuda"})})
    bx = T.launch_thread("blockIdx.x", 8)
    tx = T.launch_thread("threadIdx.x", 128)
    for k in range(2):
        S = T.alloc_buffer((128,), scope="shared")
        L = T.alloc_buffer((4,), scope="local")
        L[k] = A[bx * 128 + tx]
        S[tx] = L[k]
        A[bx * 128 + tx] = S[127 - tx]
"""
    out = verify(storage_rewrite(_parse(text)))
    outer = out["main"].body
    assert outer.key == "thread_extent" and isinstance(outer.body, AllocBuffer)
    assert isinstance(outer.body.body, AllocBuffer)
    assert [a.buffer.name for a in _allocs(out)] == ["L", "S"]  # in order of first use


def test_unused_allocation_and_its_views_are_removed():
    text = """
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    V = T.decl_buffer((16,), data=B.data)
    for i in range(16):
        A[i] = T.float32(1.0)
"""
    out = verify(storage_rewrite(_parse(text)))
    assert not any(isinstance(n, (AllocBuffer, DeclBuffer)) for n in walk(out["main"].body))


def test_region_of_another_target_is_left_alone():
    text = """
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    for t in range(2):
        with T.attr(T.target({"arch": "sm_80", "kind": "cuda"}), "target", 0):
            B = T.alloc_buffer((16,))
            for i in range(16):
                B[i] = A[i]
            for i in range(16):
                A[i] = B[i]
"""
    mod = _parse(text)
    assert storage_rewrite(mod) is mod or storage_rewrite(mod).functions["main"] is mod["main"]


SHARED_REUSE = """
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    T.func_attr({"target": T.target({"arch": "sm_80", "kind": "cuda"})})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    S1 = T.alloc_buffer((128,), scope="shared")
    S1[tx] = A[bx * 128 + tx]
    T.tvm_storage_sync("shared")
    B[bx * 128 + tx] = S1[127 - tx]
    S2 = T.alloc_buffer((128,), scope="shared")
    S2[tx] = A[bx * 128 + tx] * T.float32(2.0)
    T.tvm_storage_sync("shared")
    B[bx * 128 + tx] = B[bx * 128 + tx] + S2[(tx + 1) % 128]
"""


def test_shared_memory_reused_with_a_barrier_before_it():
    """S2 takes S1's shared memory once S1 is dead; ThreadSync, after StorageRewrite as in
    TVM, then puts a barrier between the last reads of S1 and the first writes of S2.
    Run on the SIMT interpreter (which reports races) through the whole pipeline."""
    from tirc.ir.expr import Call
    from tirc.testing import simt
    lowered = simt.lower(HEADER + SHARED_REUSE)
    kernel = lowered["main_kernel"]
    assert len([n for n in walk(kernel.body) if isinstance(n, AllocBuffer)]) == 1
    assert sum(1 for n in walk(kernel.body)
               if isinstance(n, Call) and n.op == "tvm_storage_sync") == 3
    a, b = np.arange(256, dtype="float32"), np.zeros(256, "float32")
    simt.run(HEADER + SHARED_REUSE, "main", [a, b])
    tx = np.arange(128)
    for bx in range(2):
        want = a[bx * 128 + 127 - tx] + 2 * a[bx * 128 + (tx + 1) % 128]
        np.testing.assert_array_equal(b[bx * 128:bx * 128 + 128], want)
