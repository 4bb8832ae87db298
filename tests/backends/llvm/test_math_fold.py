"""Float math functions of constants whose result is exact are folded by the code
generators before they call a math library: libdevice's functions are opaque to LLVM, so
``T.ceil(T.log2(T.float64(128.0)))`` (TOPI's sort and scan kernels use it in every
index) would otherwise inline libdevice's whole ``log2`` at each use."""
from __future__ import annotations

import math

import pytest

from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.ir.const_fold import fold_math_exact
from tirc.ir.dtype import parse_dtype
from tirc.ir.expr import Call, FloatImm, IntImm

F64, F32, F16 = parse_dtype("float64"), parse_dtype("float32"), parse_dtype("float16")


def imm(x, d=F64):
    return FloatImm(d, x)


@pytest.mark.parametrize("op, x, want", [
    ("log2", 128.0, 7.0), ("log2", 0.25, -2.0), ("log2", 1.0, 0.0),
    ("exp2", 10.0, 1024.0), ("exp2", -3.0, 0.125),
    ("ceil", 2.25, 3.0), ("floor", -2.25, -3.0), ("trunc", -2.75, -2.0),
    ("round", 2.5, 3.0), ("round", -2.5, -3.0), ("round", 0.49999999999999994, 0.0),
    ("nearbyint", 2.5, 2.0), ("nearbyint", 3.5, 4.0), ("fabs", -1.5, 1.5),
    ("sqrt", 2.0, math.sqrt(2.0)), ("sqrt", 0.0, 0.0),
])
def test_exact_results_fold(op, x, want):
    got = fold_math_exact(op, (imm(x),), F64)
    assert got == FloatImm(F64, want)


@pytest.mark.parametrize("op, x", [
    ("log2", 100.0), ("log2", 0.0), ("log2", -8.0), ("exp2", 0.5), ("exp2", 5000.0),
    ("sqrt", -1.0), ("exp", 1.0), ("log", 2.0), ("sin", 0.0), ("ceil", math.inf),
    ("floor", math.nan),
])
def test_inexact_or_undefined_results_stay(op, x):
    assert fold_math_exact(op, (imm(x),), F64) is None


def test_nested_calls_and_rounding_to_the_dtype():
    inner = Call(F64, "log2", (imm(128.0),))
    assert fold_math_exact("ceil", (inner,), F64) == FloatImm(F64, 7.0)
    # float32 sqrt rounds the float64 result to float32 (exact: IEEE's correct rounding)
    got = fold_math_exact("sqrt", (imm(2.0, F32),), F32)
    assert got.value == 1.4142135381698608
    assert fold_math_exact("ceil", (IntImm(parse_dtype("int32"), 3),), F64) == FloatImm(F64, 3.0)
    # a vector or a non-constant argument is left to the code generator
    assert fold_math_exact("ceil", (Call(F64, "exp", (imm(1.0),)),), F64) is None


SORT_INDEX = '''# from tvm.script import tirx as T
@T.prim_func
def f(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"), v: T.int64):
    for bx in T.thread_binding(T.int64(16), thread="blockIdx.x"):
        for tx in T.thread_binding(T.int64(256), thread="threadIdx.x"):
            width: T.let[T.int64] = T.int64(2) << v + T.Cast("int64", T.ceil(T.log2(T.float64(128.0))))
            B[bx * T.int64(256) + tx] = A[(bx * T.int64(256) + tx + width) % T.int64(4096)] + T.Cast("float32", T.sqrt(T.float64(16.0)))
'''


def test_libdevice_is_not_called_for_a_constant_bit_count(tmp_path):
    try:
        build(SORT_INDEX, "cuda -arch=sm_90", None, tmp_path, "m", emit=("llvm",))
    except Diagnostic as e:
        if "libdevice" in e.message and "not found" in e.message:
            pytest.skip("libdevice is not installed")
        raise
    device = (tmp_path / "m.device.ll").read_text()
    assert "__nv_log2" not in device and "__nv_sqrt" not in device
    assert "shl i64 2" in device  # 2 << (v + 7): the count folded into the shift
    ptx = (tmp_path / "m.ptx").read_text()
    assert ptx.count("\n") < 80
