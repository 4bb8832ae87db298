"""One constant-folding routine (tirc.ir.const_fold) and the builders that use it.

The rules are TVM 0.27's ``arith::TryConstFold`` where TVM folds (the front end must read
text as TVM does), and exact IEEE/two's-complement arithmetic everywhere: anything whose
folded value could differ from what the program computes is left unfolded."""
from __future__ import annotations

import math

import pytest

from tirc.frontend.arith import typed_binary
from tirc.ir import const_fold as cf
from tirc.ir.dtype import BOOL, parse_dtype
from tirc.ir.expr import BinOp, FloatImm, IntImm, Var
from tirc.ir.index_arith import arith
from tirc.passes.analysis.arith_ops import binop

I8, I32, I64, U8 = (parse_dtype(t) for t in ("int8", "int32", "int64", "uint8"))
F16, F32, F64 = (parse_dtype(t) for t in ("float16", "float32", "float64"))


def ival(e):
    assert isinstance(e, (IntImm, FloatImm)), e
    return e.value


@pytest.mark.parametrize("op,a,b,want", [
    ("add", 2, 3, 5), ("sub", 2, 3, -1), ("mul", -4, 3, -12),
    ("div", -7, 2, -3), ("mod", -7, 2, -1),            # truncating, as C
    ("floordiv", -7, 2, -4), ("floormod", -7, 2, 1),   # flooring
    ("min", 4, -1, -1), ("max", 4, -1, 4),
    ("bitwise_and", 6, 3, 2), ("bitwise_or", 6, 3, 7), ("bitwise_xor", 6, 3, 5),
    ("shift_left", 1, 4, 16), ("shift_right", -16, 2, -4),
])
def test_integers_fold_exactly(op, a, b, want):
    assert ival(cf.fold_imms(op, IntImm(I32, a), IntImm(I32, b), I32)) == want


@pytest.mark.parametrize("op,a,b,dtype", [
    ("add", 2**31 - 1, 1, I32),       # leaves int32
    ("mul", 2**40, 2**40, I64),       # leaves int64
    ("sub", 0, 1, U8),                # below uint8
    ("add", 100, 100, I8),
    ("div", 1, 0, I32), ("mod", 1, 0, I32), ("floordiv", 1, 0, I32), ("floormod", 1, 0, I32),
    ("shift_left", 1, 32, I32), ("shift_left", 1, -1, I32), ("shift_right", 8, 40, I32),
])
def test_integer_results_that_differ_from_the_program_are_not_folded(op, a, b, dtype):
    assert cf.fold_imms(op, IntImm(dtype, a), IntImm(dtype, b), dtype) is None


def test_compares_and_logic_give_bool():
    r = cf.fold_imms("lt", IntImm(I32, 1), IntImm(I32, 2), BOOL)
    assert r.dtype == BOOL and r.value == 1
    r = cf.fold_imms("ge", FloatImm(F32, 0.5), IntImm(I32, 1), BOOL)
    assert r.dtype == BOOL and r.value == 0
    assert cf.fold_imms("and", IntImm(BOOL, 1), IntImm(BOOL, 0), BOOL).value == 0
    assert cf.fold_imms("or", IntImm(BOOL, 1), IntImm(BOOL, 0), BOOL).value == 1


def test_floats_round_as_their_dtype():
    # 0.1 as a float32 literal is 0.100000001490116...; the sum is rounded to float32
    r = cf.fold_imms("add", FloatImm(F32, 0.1), FloatImm(F32, 0.2), F32)
    assert r.value == pytest.approx(0.30000001192092896, abs=0) and r.dtype == F32
    r = cf.fold_imms("add", FloatImm(F64, 0.1), FloatImm(F64, 0.2), F64)
    assert r.value == 0.1 + 0.2
    r = cf.fold_imms("mul", FloatImm(F16, 0.1), FloatImm(F16, 3.0), F16)
    assert r.value == 0.2998046875  # 0.0999755859375 * 3 rounded to float16


def test_float_overflow_is_infinity_as_ieee_and_tvm():
    r = cf.fold_imms("mul", FloatImm(F32, 3e38), FloatImm(F32, 10.0), F32)
    assert r.value == math.inf
    assert cf.fold_imms("div", FloatImm(F32, 1.0), FloatImm(F32, 0.0), F32) is None


def test_float_dtypes_without_reproduced_rounding_are_not_folded():
    bf16 = parse_dtype("bfloat16")
    assert cf.fold_imms("add", FloatImm(bf16, 1.0), FloatImm(bf16, 2.0), bf16) is None


def test_tvm_folds_float32_and_float64_only():
    assert cf.try_const_fold("add", FloatImm(F16, 1.0), FloatImm(F16, 2.0), F16) is None
    assert ival(cf.try_const_fold("add", FloatImm(F32, 1.0), FloatImm(F32, 2.0), F32)) == 3.0


def test_identities():
    x = Var("x", I32)
    zero, one = IntImm(I32, 0), IntImm(I32, 1)
    assert cf.try_const_fold("add", x, zero, I32) is x
    assert cf.try_const_fold("mul", one, x, I32) is x
    assert cf.try_const_fold("mul", x, zero, I32) is zero
    assert cf.try_const_fold("floordiv", x, one, I32) is x
    assert ival(cf.try_const_fold("floormod", x, one, I32)) == 0
    assert cf.try_const_fold("sub", zero, x, I32) is None


@pytest.mark.parametrize("dtype", [F16, parse_dtype("bfloat16")])
def test_casts(dtype):
    assert cf.fold_cast(I8, FloatImm(F32, -3.7)).value == -3
    assert cf.fold_cast(I8, IntImm(I32, 300)) is None  # out of int8
    assert cf.fold_cast(BOOL, IntImm(I32, 5)).value == 1
    assert cf.fold_cast(F32, FloatImm(F32, math.nan)).value != cf.fold_cast(F32, FloatImm(F32, 0.0)).value
    r = cf.fold_cast(dtype, IntImm(I32, 1))
    assert (r is None) == (dtype.base == "bfloat16")


CASES = [("add", 2**31 - 1, 1), ("add", 7, 5), ("mul", -3, 11), ("sub", 4, 9),
         ("floordiv", -9, 4), ("floormod", -9, 4), ("min", 3, -8), ("max", 3, -8)]


@pytest.mark.parametrize("op,a,b", CASES)
def test_every_builder_folds_alike(op, a, b):
    """The front end, the analyses' operators and the index arithmetic fold through the
    one routine, so two immediates come out the same from each (or unfolded from each)."""
    x, y = IntImm(I32, a), IntImm(I32, b)
    want = cf.fold_imms(op, x, y, I32)
    outs = [typed_binary(op, x, y, None, fold=True), binop(op, x, y)]
    if op in ("add", "sub", "mul"):
        outs.append(arith(op, x, y))
    for out in outs:
        if want is None:
            assert isinstance(out, BinOp), out
        else:
            assert isinstance(out, IntImm) and out.value == want.value, out
