"""Buffers known distinct do not alias, and tile rows a constant apart are seen disjoint,
in the CPU backend's LLVM IR (tirc/backends/llvm/alias.py, llvm_expr.split_index_constant).

Found by bench/cpu_kernels.py's scheduled matmul (bench/scheduled/cpu/sch_matmul_acc.tir:
``decompose_reduction`` accumulating in C): tirc reloaded and stored the 8 x 32 C tile on
every k step, TVM kept it in registers (its TBAA per buffer and ``nsw`` index arithmetic
tell LLVM the same). Checked on the IR and on results, never on timings."""
from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from tirc.backends.cpu.backend import generate, lower_to_llvm
from tirc.build.stages import build
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target

tvm_ffi = pytest.importorskip("tvm_ffi")

HEAD = "# from tvm.script import tirx as T\n"


def matmul_acc(noalias: bool = True, m: int = 64) -> str:
    """C accumulated in place over k, an 8-row x 16-column tile per parallel iteration
    (the form of sch_matmul_acc, the way TVM lowers it)."""
    t = m // 16
    row, col = f"f // {t} * 8 + r", f"f % {t} * 16 + v"
    lines = [
        "@T.prim_func",
        f'def mm(A: T.Buffer(({m}, {m}), "float32"), B: T.Buffer(({m}, {m}), "float32"), '
        f'C: T.Buffer(({m}, {m}), "float32")):',
        '    T.func_attr({"tirx.noalias": True})' if noalias else None,
        f"    for f in T.parallel({m // 8 * t}):",
        "        for r in T.unroll(8):",
        "            for v in T.vectorized(16):",
        f"                C[{row}, {col}] = T.float32(0.0)",
        f"        for k in range({m}):",
        "            for r in T.unroll(8):",
        "                for v in T.vectorized(16):",
        f"                    C[{row}, {col}] = C[{row}, {col}] + A[{row}, k] * B[k, {col}]",
    ]
    return HEAD + "\n".join(x for x in lines if x is not None) + "\n"


def lowered(text: str, target: str = "llvm"):
    t = parse_target(target)
    return run_pipeline(parse(text, "t.tir"), PassContext(t)), t


def optimised_ir(text: str, target: str = "llvm") -> str:
    mod, t = lowered(text, target)
    return generate(mod, t).llvm_ir


def inner_loop(ir_text: str) -> str:
    """The k loop of the outlined parallel body: the block that branches back to itself
    and holds the multiplies."""
    body = ir_text[ir_text.index("define internal void"):]
    for m in re.finditer(r"\n([\w.]+):[^\n]*\n((?:(?!\n[\w.]+:)[\s\S])*)", body):
        label, block = m.group(1), m.group(2)
        if re.search(r"label %" + re.escape(label) + r"\b", block) and "fmul" in block:
            return block
    raise AssertionError("no self-looping block with a multiply:\n" + body)


def test_noalias_function_gets_alias_scopes():
    text = matmul_acc()
    raw, _ = lower_to_llvm(*lowered(text))
    accesses = re.findall(r"= load [^\n]*|store [^\n]*", raw)
    tagged = [a for a in accesses if "!alias.scope" in a and "!noalias" in a]
    # every access of A, B and C is tagged (the struct of the parallel body is not)
    assert len(tagged) >= 4
    names = set(re.findall(r'!"__tvm_ffi_mm\.\d+\.(\w+)"', raw))
    assert names == {"A", "B", "C"}, names


def test_without_noalias_arguments_get_no_scopes():
    raw, _ = lower_to_llvm(*lowered(matmul_acc(noalias=False)))
    assert "!alias.scope" not in raw and "!noalias" not in raw


def test_allocations_get_scopes_without_the_attribute():
    text = HEAD + textwrap.dedent('''\
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
            X = T.alloc_buffer((64,))
            Y = T.alloc_buffer((64,))
            for i in range(64):
                X[i] = A[i]
                Y[i] = X[i] * T.float32(2.0)
            for i in range(64):
                B[i] = Y[i] + X[i]
        ''')
    raw, _ = lower_to_llvm(*lowered(text))
    names = set(re.findall(r'!"__tvm_ffi_f\.\d+\.(\w+)"', raw))
    assert names == {"X", "Y"}, names  # the arguments may alias: no scope for them


def test_accumulator_tile_stays_in_registers():
    """The 8 rows of the C tile are loop-carried vectors (phis) of the k loop, with no
    load or store of C inside it: the scopes say A and B loads do not see C's stores,
    the constant row offsets (gep(gep(C, rest), r * 64)) that the rows are disjoint."""
    ll = optimised_ir(matmul_acc())
    loop = inner_loop(ll)
    assert len(re.findall(r"= phi <16 x float>", loop)) == 8, loop
    assert not re.search(r"store <16 x float>", loop), loop
    assert len(re.findall(r"load <16 x float>", loop)) == 1, loop  # the row of B, once


def test_index_constant_is_a_separate_offset():
    raw, _ = lower_to_llvm(*lowered(matmul_acc()))
    # rows 1..7 of the tile: a constant offset of r * 64 elements from a shared address
    offsets = {int(x) for x in re.findall(r"getelementptr float, ptr %\"[.\w]+\", i64 (\d+)", raw)}
    assert {64 * r for r in range(1, 8)} <= offsets, sorted(offsets)


@pytest.mark.parametrize("noalias", [True, False])
def test_results_match_numpy(tmp_path, noalias):
    build(matmul_acc(noalias), "llvm", None, tmp_path, "m", shared=True)
    fn = tvm_ffi.load_module(str(tmp_path / "m.so"))["mm"]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype("float32")
    b = rng.standard_normal((64, 64)).astype("float32")
    c = np.full((64, 64), np.nan, "float32")
    fn(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-4, atol=1e-4)


def test_aliasing_arguments_without_the_attribute_stay_correct(tmp_path):
    """Without tir.noalias nothing is claimed about the arguments: the same array as input
    and output (an in-place prefix shift) gives the sequential result."""
    text = HEAD + textwrap.dedent('''\
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
            for i in range(63):
                B[i + 1] = A[i] + T.float32(1.0)
        ''')
    build(text, "llvm", None, tmp_path, "m", shared=True)
    fn = tvm_ffi.load_module(str(tmp_path / "m.so"))["f"]
    x = np.zeros(64, "float32")
    fn(x, x)
    np.testing.assert_array_equal(x, np.arange(64, dtype="float32"))


def test_negative_and_wrapping_constant_offsets(tmp_path):
    """A negative constant is split off only where the buffer's size allows it; an index
    whose int32 arithmetic wraps on the way (but lands in bounds) keeps its value."""
    text = HEAD + textwrap.dedent('''\
        @T.prim_func
        def f(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"), n: T.int32):
            T.func_attr({"tirx.noalias": True})
            for i in range(1, 63):
                B[i] = A[i - 1] + A[i + 1] * 2
            B[0] = A[(n + 2147483647) * 2 + 3]
            B[63] = A[n * 65536 * 65536 + 7 - 2]
        ''')
    build(text, "llvm", None, tmp_path, "m", shared=True)
    fn = tvm_ffi.load_module(str(tmp_path / "m.so"))["f"]
    a = np.arange(64, dtype="int32") * 3
    b = np.zeros(64, "int32")
    fn(a, b, 1)
    # (1 + 2147483647) * 2 + 3 wraps to 3 in int32; 1 * 2^32 wraps to 0, + 5
    want = np.concatenate([[a[3]], a[0:62] + a[2:64] * 2, [a[5]]])
    np.testing.assert_array_equal(b, want)
