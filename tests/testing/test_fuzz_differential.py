"""Differential fuzzing, CI-sized: random valid modules (tirc.testing.gen) built by tirc
for llvm and run through tvm-ffi, against the IR evaluator (tirc.testing.evaluate).
38 modules of 8 functions: 304 programs. The long run is bench/fuzz_diff.py."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from tirc.frontend.parse import parse
from tirc.testing.differential import check_module, compare
from tirc.testing.evaluate import Evaluator, Undefined
from tirc.testing.gen import generate

pytest.importorskip("tvm_ffi")
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

MODULES = 38
FUNCS_PER_MODULE = 8


def test_generator_is_deterministic_and_valid():
    a, b = generate(7), generate(7)
    assert a == b and a != generate(8)
    assert a.startswith("# from tvm.script import ir as I\n# from tvm.script import tirx as T\n")
    mod = parse(a)
    assert [n for n, f in mod.functions.items() if not f.private] == ["f0", "f1", "f2", "f3"]


def test_generator_covers_the_constructs():
    text = "\n".join(generate(s) for s in range(40))
    for needle in ("T.serial(", "T.parallel(", "T.vectorized(", "T.unroll(", "T.grid(",
                   "range(0, ", ": T.let[", "else:", "T.if_then_else(", "T.Select(",
                   "T.Cast(", "T.truncdiv(", "T.truncmod(", "T.floordiv(", "T.floormod(",
                   " // ", " % ", "T.min(", "T.max(", " << ", " >> ", " & ", " ^ ", "~(",
                   "not (", " and ", " or ", "T.exp(", "T.log(", "T.sqrt(", "T.tanh(",
                   "T.sigmoid(", "T.pow(", "T.fabs(", "@T.prim_func(private=True)",
                   ".data, ", "n = T.int32()", '("n",)', "-> T.", "T.Buffer((", "T.decl_buffer(",
                   '"uint64"', '"float16"', '"bool"', '"int8"'):
        assert needle in text, needle


def test_evaluator_semantics():
    text = """# from tvm.script import ir as I
# from tvm.script import tirx as T
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((8,), "int8"), F: T.Buffer((2,), "float32"), U: T.Buffer((2,), "uint8")):
        A[0] = A[0] + T.int8(100)
        A[1] = T.truncdiv(A[1], T.int8(2))
        A[2] = A[2] // T.int8(2)
        A[3] = T.truncmod(A[3], T.int8(3))
        A[4] = A[4] % T.int8(3)
        A[5] = A[5] >> T.int8(1)
        A[6] = T.Cast("int8", F[0])
        U[0] = U[0] - T.uint8(1)
        U[1] = U[1] >> T.uint8(1)
        F[1] = T.Cast("float32", T.float16(0.1))
"""
    a = np.array([100, -7, -7, -7, -7, -7, 0, 0], "int8")
    f = np.array([-2.75, 0], "float32")
    u = np.array([0, 255], "uint8")
    Evaluator(parse(text)).call("f", [a, f, u])
    assert a.tolist() == [-56, -3, -4, -1, 2, -4, -2, 0]
    assert u.tolist() == [255, 127]
    assert f[1] == np.float32(np.float16(0.1))
    with pytest.raises(Undefined):
        Evaluator(parse(text)).call("f", [a, np.array([1e10, 0], "float32"), u])


def test_compare_tolerances():
    assert compare(np.array([1, 2], "int32"), np.array([1, 2], "int32")) == ""
    assert compare(np.array([1, 2], "int32"), np.array([1, 3], "int32"))
    assert compare(np.array([1.0, np.nan, np.inf], "float32"),
                   np.array([1.00001, np.nan, np.inf], "float32")) == ""
    assert compare(np.array([np.inf], "float32"), np.array([-np.inf], "float32"))
    assert compare(np.array([1.0], "float16"), np.array([1.1], "float16"))


@needs_cc
@pytest.mark.parametrize("seed", range(MODULES))
def test_tirc_matches_the_evaluator(tmp_path, seed):
    result = check_module(generate(seed, FUNCS_PER_MODULE), tmp_path, seed)
    assert result.status != "build_error", result.detail
    bad = [f"{f.name}: {f.status}: {f.detail}" for f in result.funcs if f.status in ("mismatch", "error")]
    assert not bad, "\n".join(bad)
    # the generator avoids undefined behaviour: nearly every function is checked
    assert sum(f.status == "ok" for f in result.funcs) >= FUNCS_PER_MODULE - 2


@needs_cc
@pytest.mark.tvm
@pytest.mark.parametrize("seed", [3, 17])
def test_tvm_third_opinion_runs(tmp_path, seed):
    pytest.importorskip("tvm")
    result = check_module(generate(seed, 2, tvm_safe=True), tmp_path, seed, use_tvm=True)
    assert not result.failed, result.detail
    assert result.tvm_status in ("ok", "build_error")
