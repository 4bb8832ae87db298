"""MergeSharedMemoryAllocations against TVM 0.27's own unit tests
(tests/python/s_tir/transform/test_s_tir_transform_merge_dynamic_shared_memory_allocations.py,
printed by TVM 0.27 into tests/corpus/sblock_passes/MergeSharedMemoryAllocations/ by
tests/corpus/gen_sblock_pass_pairs.py).

TVM and tirc write the same memory plan in two forms: TVM declares the views of
``buf_dyn_shmem`` at the top of the kernel and adds each buffer's offset to its indices
(``B_sh[threadIdx_x + 128]``); tirc replaces each allocation in place by a view with that
offset as ``elem_offset``. So the results are never structurally equal, and each pair is
compared by what the plan decides: the size of every kernel's merged buffer, and the byte
address (``(elem_offset + index) * element size``, simplified) of every access of a view
of it, in program order. That is what a later pass or the backend sees.

TVM 0.27 cannot read back its output for five of its seven cases (it prints a view of the
merged buffer of the same element count as ``buf_dyn_shmem.view("float32")``, which its
parser rejects), so the generator drops them (``dropped.json``). Their inputs, as TVM 0.27
printed them, are below with the sizes and offsets TVM's output gives (read off its
printed text; the ``tvm``-marked test recomputes them with TVM where it is installed).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tirc.ir.describe import expr_text
from tirc.ir.expr import BinOp, BufferLoad, IntImm
from tirc.ir.stmt import AllocBuffer, BufferStore, DeclBuffer
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.lower.merge_shared_memory_allocations import merge_shared_memory_allocations
from conftest import TESTS

CORPUS = TESTS / "corpus" / "sblock_passes"
PASS = "MergeSharedMemoryAllocations"
INDEX = [c for c in json.loads((CORPUS / "index.json").read_text()) if c["pass"] == PASS]
CASES = [c for c in INDEX if c.get("after")]
DROPPED_JSON = [d for d in json.loads((CORPUS / "dropped.json").read_text()) if d["pass"] == PASS]

_NO_READBACK = ("TVM 0.27 prints its result with 'buf_dyn_shmem.view(\"float32\")', which its own "
                "parser rejects ('NoneType' object has no attribute 'pack'): the generator drops "
                "the pair; compared below by TVM's sizes and offsets instead")
# Cases of TVM's test file that are not stored as pairs, with the reason (kept true by
# test_the_dropped_list_is_true).
DROPPED = {
    "matmul_t_buffer": _NO_READBACK,
    "matmul_decl_buffer": _NO_READBACK,
    "simple_alloc_reuse": _NO_READBACK,
    "multi_thread_extent_blocks": _NO_READBACK,
    "async_copy": _NO_READBACK + (", except that tirc does not read its input either: "
                                  "T.s_tir.cp_async_raw is not an intrinsic tirc knows"),
}


def _plan(mod) -> tuple[list[int], list[tuple[str, str, str]]]:
    """Each merged buffer's size, and (buffer, load/store, byte address) of every access
    of a view of one, in program order."""
    sizes: list[int] = []
    merged: set[int] = set()
    accesses: list[tuple[str, str, str]] = []
    ana = Analyzer()
    for f in mod.functions.values():
        for n in walk(f.body):
            if isinstance(n, AllocBuffer) and n.buffer.name == "buf_dyn_shmem":
                sizes.append(n.buffer.shape[0].value)
                merged.add(id(n.buffer.data))
            elif isinstance(n, (BufferLoad, BufferStore)) and id(n.buffer.data) in merged:
                b = n.buffer
                (index,) = n.indices
                if b.elem_offset is not None:
                    index = BinOp("add", b.elem_offset, index, index.dtype)
                size = IntImm(index.dtype, (b.dtype.bits * b.dtype.lanes + 7) // 8)
                address = ana.simplify(BinOp("mul", index, size, index.dtype))
                kind = "store" if isinstance(n, BufferStore) else "load"
                accesses.append((b.name, kind, expr_text(address)))
    return sizes, accesses


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_pair_has_tvm_plan(case):
    before = parse((CORPUS / case["before"]).read_text(), case["before"])
    after = parse((CORPUS / case["after"]).read_text(), case["after"])
    sizes, accesses = _plan(merge_shared_memory_allocations(before))
    tvm_sizes, tvm_accesses = _plan(after)
    assert sizes == tvm_sizes and sizes
    assert accesses == tvm_accesses and accesses


def test_the_pairs_are_there():
    assert sorted(c["case"] for c in INDEX) == [
        "decl_buffer_alias_extends_allocation_lifetime", "simple_alloc_no_reuse"]
    assert not [c for c in INDEX if c.get("error")]


def test_the_dropped_list_is_true():
    assert sorted(d["case"] for d in DROPPED_JSON) == sorted(DROPPED)
    assert all(list(d["reparse_errors"]) == ["after"] for d in DROPPED_JSON)


# -- the dropped cases: TVM 0.27's input, and the plan its output has ------------------------
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"

MATMUL = HEADER + """@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((1024, 1024), "float16"), B: T.Buffer((1024, 1024), "float16"), matmul: T.Buffer((1024, 1024), "float32")):
        A_flat = A.view(1048576)
        B_flat = B.view(1048576)
        matmul_flat = matmul.view(1048576)
        with T.launch_thread("threadIdx.x", 16) as threadIdx_x:
            C_local = T.alloc_local((1,))
            A_sh = T.alloc_buffer((256,), "float16", scope="shared.dyn")
            B_sh = T.alloc_buffer((256,), "float16", scope="shared.dyn")
            C_sh = T.alloc_buffer((256,), scope="shared.dyn")
            with T.launch_thread("threadIdx.y", 16) as threadIdx_y:
                blockIdx_x = T.launch_thread("blockIdx.x", 64)
                blockIdx_y = T.launch_thread("blockIdx.y", 64)
                C_local[0] = T.float32(0.0)
                for i in range(64):
                    A_sh[threadIdx_y * 16 + threadIdx_x] = A_flat[blockIdx_y * 16384 + threadIdx_y * 1024 + i * 16 + threadIdx_x]
                    B_sh[threadIdx_y * 16 + threadIdx_x] = B_flat[i * 16384 + threadIdx_y * 1024 + blockIdx_x * 16 + threadIdx_x]
                    T.tvm_storage_sync("shared", T.bool(False), -1)
                    for k in range(16):
                        C_local[0] = C_local[0] + T.Cast("float32", A_sh[threadIdx_y * 16 + k] * B_sh[k * 16 + threadIdx_x])
                    T.tvm_storage_sync("shared", T.bool(False), -1)
                C_sh[threadIdx_y * 16 + threadIdx_x] = C_local[0]
                T.tvm_storage_sync("shared.dyn", T.bool(False), -1)
                matmul_flat[blockIdx_y * 16384 + threadIdx_y * 1024 + blockIdx_x * 16 + threadIdx_x] = C_sh[threadIdx_y * 16 + threadIdx_x]"""

SIMPLE_ALLOC_REUSE = HEADER + """@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main():
        threadIdx_x = T.launch_thread("threadIdx.x", 128)
        A_sh = T.alloc_buffer((128,), scope="shared.dyn")
        B_sh = T.alloc_buffer((128,), scope="shared.dyn")
        A_sh[threadIdx_x] = T.float32(0.0)
        B_sh[threadIdx_x] = T.float32(0.0)"""

MULTI_THREAD_EXTENT_BLOCKS = HEADER + """@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
        X_flat = T.decl_buffer((128,), data=X.data)
        Y_flat = T.decl_buffer((128,), data=Y.data)
        tx0 = T.int32()
        with T.attr(tx0, "thread_extent", 128):
            A_sh = T.alloc_buffer((128,), scope="shared.dyn")
            B_sh = T.alloc_buffer((128,), scope="shared.dyn")
            A_sh[tx0] = X_flat[tx0]
            B_sh[tx0] = A_sh[tx0]
            X_flat[tx0] = B_sh[tx0]
        tx1 = T.int32()
        with T.attr(tx1, "thread_extent", 128):
            C_sh = T.alloc_buffer((128,), scope="shared.dyn")
            D_sh = T.alloc_buffer((128,), scope="shared.dyn")
            C_sh[tx1] = Y_flat[tx1]
            D_sh[tx1] = C_sh[tx1]
            Y_flat[tx1] = D_sh[tx1]"""

# case -> (TVM's input, each kernel's merged size, each buffer's byte offset), from the
# printed output of TVM 0.27 (an offset is the index shift times the element size).
TVM_PLANS = {
    # A_sh[... + 256] (float16): the loop's two 512-byte tiles side by side, and C_sh
    # (1 KiB, after the loop) over both
    "matmul_t_buffer": (MATMUL, [1024], {"A_sh": 512, "B_sh": 0, "C_sh": 0}),
    "matmul_decl_buffer": (MATMUL, [1024], {"A_sh": 512, "B_sh": 0, "C_sh": 0}),
    # A_sh is dead when B_sh is first written: one 512-byte storage
    "simple_alloc_reuse": (SIMPLE_ALLOC_REUSE, [512], {"A_sh": 0, "B_sh": 0}),
    # B_sh[tx] = A_sh[tx] ends A_sh's life and begins B_sh's, in place; one buffer per kernel
    "multi_thread_extent_blocks": (MULTI_THREAD_EXTENT_BLOCKS, [512, 512],
                                   {"A_sh": 0, "B_sh": 0, "C_sh": 0, "D_sh": 0}),
}


def _tirc_plan(mod) -> tuple[list[int], dict[str, int]]:
    sizes, offsets = [], {}
    for f in mod.functions.values():
        for n in walk(f.body):
            if isinstance(n, AllocBuffer) and n.buffer.name == "buf_dyn_shmem":
                sizes.append(n.buffer.shape[0].value)
            elif isinstance(n, DeclBuffer) and n.buffer.scope == "shared.dyn":
                b = n.buffer
                elem = b.elem_offset.value if b.elem_offset is not None else 0
                offsets[b.name] = elem * ((b.dtype.bits * b.dtype.lanes + 7) // 8)
    return sizes, offsets


@pytest.mark.parametrize("case", sorted(TVM_PLANS))
def test_dropped_case_has_tvm_plan(case):
    text, sizes, offsets = TVM_PLANS[case]
    before = parse(text, f"{case}.tir")
    after = merge_shared_memory_allocations(before)
    assert _tirc_plan(after) == (sizes, offsets)
    # the existing barriers already order the buffers that share memory
    syncs = [n for n in walk(after["main"].body) if getattr(n, "op", None) == "tvm_storage_sync"]
    assert len(syncs) == text.count("tvm_storage_sync")


@pytest.mark.tvm
@pytest.mark.parametrize("case", sorted(TVM_PLANS))
def test_tvm_plans_are_what_tvm_prints(case):
    """The sizes and offsets above are TVM 0.27's (where TVM is installed)."""
    tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install '.[tvm]')")
    import tvm.s_tir.transform  # noqa: F401

    text, sizes, offsets = TVM_PLANS[case]
    # TVM's own test builds multi_thread_extent_blocks with check_well_formed=False
    mod = tvm.script.from_source(text, check_well_formed=False)
    out = tvm.s_tir.transform.MergeSharedMemoryAllocations()(mod).script()
    assert [int(m) for m in re.findall(r'buf_dyn_shmem = T.alloc_buffer\(\((\d+),\), "uint8"', out)] == sizes
    before = parse(text, f"{case}.tir")
    for n in walk(before["main"].body):
        if isinstance(n, AllocBuffer) and n.buffer.scope == "shared.dyn":
            b = n.buffer
            shifts = {int(s or 0) for s in re.findall(rf"\b{b.name}\[[^\]]*?(?: \+ (\d+))?\]", out)}
            size = (b.dtype.bits * b.dtype.lanes + 7) // 8
            assert {s * size for s in shifts} == {offsets[b.name]}, (b.name, shifts)
