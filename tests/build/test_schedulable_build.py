"""Block-level (schedulable) TIR as TVM 0.27 prints it builds and runs: the modules of
tests/tir/sblock_*.tir (each says how TVM made it) against NumPy; an unscheduled module
built for CUDA is refused with TVM's hint."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from conftest import TESTS

tvm_ffi = pytest.importorskip("tvm_ffi")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

TIR = TESTS / "tir"


def load(tmp_path, name):
    build((TIR / f"{name}.tir").read_text(), "llvm", None, tmp_path, name, shared=True)
    return tvm_ffi.load_module(str(tmp_path / f"{name}.so"))["main"]


@pytest.mark.parametrize("name", ["sblock_matmul_relu", "sblock_matmul_relu_parallel"])
def test_matmul_relu(tmp_path, name):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (16, 32)).astype("float32")
    b = rng.uniform(-1, 1, (32, 8)).astype("float32")
    d = np.full((16, 8), np.nan, "float32")
    load(tmp_path, name)(a, b, d)
    np.testing.assert_allclose(d, np.maximum(a @ b, 0), rtol=1e-5, atol=1e-5)


def test_argmax_two_value_reduction(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (4, 10)).astype("float32")
    x[2, 3] = x[2, 7] = 5.0  # a tie: the first index wins, as in TVM's reducer
    out = np.full(4, -7, "int32")
    load(tmp_path, "sblock_argmax")(x, out)
    np.testing.assert_array_equal(out, x.argmax(axis=1))


def test_unscheduled_module_for_cuda_asks_for_a_schedule(tmp_path):
    with pytest.raises(Diagnostic, match="Did you forget to bind"):
        build((TIR / "sblock_matmul_relu.tir").read_text(), "cuda", "llvm", tmp_path, "m")
    assert not list(tmp_path.iterdir())


def test_cross_thread_reduction_becomes_warp_shuffles(tmp_path):
    """dlight's softmax reduces over threadIdx.x (256 threads): LowerCrossThreadReduction
    and LowerThreadAllreduce make it a warp-shuffle reduction with a shared staging
    buffer, as TVM does, instead of 256 threads updating one element at once."""
    build((TIR / "sblock_dlight_softmax_cuda.tir").read_text(), "cuda", "llvm", tmp_path, "m")
    ptx = (tmp_path / "m.ptx").read_text()
    assert "shfl.sync.down" in ptx and "shfl.sync.idx" not in ptx  # multi-warp: staged
    assert "bar.sync" in ptx


def test_block_reducing_across_threads_without_init_is_refused_not_miscompiled(tmp_path):
    """A reduce iterator bound to threadIdx.x in a block without T.init() (after
    decompose_reduction, say) is no reduction LowerCrossThreadReduction can rewrite, yet
    its threads all update B[vi]: a located error (TVM leaves the race in), nothing
    written."""
    text = (TIR / "sblock_dlight_softmax_cuda.tir").read_text()
    lines = text.splitlines()
    init = next(i for i, ln in enumerate(lines) if "with T.init():" in ln)
    del lines[init:init + 2]
    with pytest.raises(Diagnostic, match="reduces across threads.*no T.init") as info:
        build("\n".join(lines), "cuda", "llvm", tmp_path, "m")
    assert info.value.span is not None and info.value.span.line > 0
    assert not list(tmp_path.iterdir())


def test_batch_matmul_with_a_buffer_in_its_block_attributes(tmp_path):
    """The layout_free_placeholders annotation (a buffer) is read, kept and dropped with
    the block's other annotations; the computation is the batch matmul, doubled."""
    rng = np.random.default_rng(2)
    a, b = (rng.uniform(-1, 1, (2, 4, 4)).astype("float32") for _ in range(2))
    c = np.full((2, 4, 4), np.nan, "float32")
    load(tmp_path, "sblock_batch_matmul_layout_free")(a, b, c)
    np.testing.assert_allclose(c, 2 * (a @ b), rtol=1e-5, atol=1e-5)


def test_blocks_without_regions_build_and_run(tmp_path):
    """T.reads/T.writes left out, as tutorials write blocks: inferred (InferBlockRegions),
    and the reduction and its consumer compute what they say."""
    text = """# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,))
    for i, k in T.grid(16, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0.0)
            B[vi] = B[vi] + A[vi, vk] * A[vi, vk]
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            T.where(i < 12)
            C[vi] = T.sqrt(B[vi])
"""
    build(text, "llvm", None, tmp_path, "norm", shared=True)
    f = tvm_ffi.load_module(str(tmp_path / "norm.so"))["main"]
    a = np.random.default_rng(3).uniform(-1, 1, (16, 8)).astype("float32")
    c = np.full(16, -1.0, "float32")
    f(a, c)
    want = np.sqrt((a * a).sum(1))
    np.testing.assert_allclose(c[:12], want[:12], rtol=1e-5)
    assert (c[12:] == -1).all()
