"""Bugs the differential fuzzer (tirc.testing.differential, bench/fuzz_diff.py) found,
each as the smallest program showing it, with the values it must compute. Every
expected value is also checked against the IR evaluator, the fuzzer's oracle."""
from __future__ import annotations

import shutil
import textwrap

import numpy as np
import pytest

from tirc.build.stages import build
from tirc.frontend.parse import parse
from tirc.testing.evaluate import Evaluator

tvm_ffi = pytest.importorskip("tvm_ffi")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def run_both(tmp_path, text: str, args: list, func: str = "f", name: str = "m"):
    """``func`` built by tirc and run on copies of ``args``, and evaluated on copies:
    (compiled results, evaluator results)."""
    text = HEAD + textwrap.dedent(text)
    build(text, "llvm", None, tmp_path, name, shared=True)
    lib = tvm_ffi.load_module(str(tmp_path / f"{name}.so"))
    ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    lib[func](*ours)
    oracle = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    Evaluator(parse(text)).call(func, oracle)
    return ours, oracle


def test_abs_builds_for_every_dtype(tmp_path):
    # fuzz seed 0: T.abs stayed a call the LLVM backend does not know ("T.abs is not
    # supported by the LLVM backend"); TVM expands it in the front end
    ours, oracle = run_both(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((3,), "int8"), F: T.Buffer((2,), "float16"), U: T.Buffer((2,), "uint32")):
            A[0] = T.abs(A[0])
            A[1] = T.abs(A[1])
            A[2] = T.abs(A[2])
            F[0] = T.abs(F[0])
            U[0] = T.abs(U[0])
        """, [np.array([-5, 7, -128], "int8"), np.array([-1.5, 2.0], "float16"),
              np.array([4000000000, 3], "uint32")])
    expect = [np.array([5, 7, -128], "int8"), np.array([1.5, 2.0], "float16"),
              np.array([4000000000, 3], "uint32")]
    for got, want, ev in zip(ours, expect, oracle):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(ev, want)


def test_abs_prints_as_tvm_expands_it():
    from tirc.ir.printer import print_module
    text = print_module(parse(HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((1,), "int32"), F: T.Buffer((1,), "float32")):
            A[0] = T.abs(A[0])
            F[0] = T.abs(F[0])
        """)))
    # (one-element parameter buffers print bare, as TVM prints them)
    assert "A = T.Select(A >= 0, A, 0 - A)" in text
    assert "F = T.fabs(F)" in text


def test_float16_literals_fold_with_their_float16_value(tmp_path):
    # fuzz seed 102: folding used a float16 literal's double (-1.13) instead of its
    # float16 value (-1.1298828125), both when casting it and in arithmetic
    ours, oracle = run_both(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((4,), "float64"), H: T.Buffer((1,), "float16")):
            A[0] = T.Cast("float64", T.max(T.float16(-1.13), T.float16(-2.0)))
            A[1] = T.Cast("float64", T.float16(-1.13))
            A[2] = T.Cast("float64", H[0] + T.float16(-1.13))
            A[3] = T.Cast("float64", T.float16(0.1) + T.float16(0.2))
        """, [np.zeros(4), np.zeros(1, "float16")])
    expect = [-1.1298828125, -1.1298828125, -1.1298828125, 0.2998046875]
    assert ours[0].tolist() == expect
    assert oracle[0].tolist() == expect


def test_float32_literal_arithmetic_folds_in_float32():
    # as TVM 0.27: T.float32(1.0) / T.float32(3.0) folds to the float32 quotient
    from tirc.ir.printer import print_module
    text = print_module(parse(HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((1,), "float32")):
            A[0] = T.float32(1.0) / T.float32(3.0)
        """)))
    assert "A = T.float32(0.3333333432674408)" in text
