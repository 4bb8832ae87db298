"""Integer arithmetic of constants is folded while lowering to LLVM IR (as LLVM's own
IRBuilder folds it), and a vector index is taken apart as scalars: what unrolled loops
leave (``0 * 2``, ``x + 0``, the lanes of a strided ramp) emits no instruction."""
from __future__ import annotations

import pytest
from llvmlite import ir

from tests.backends.llvm.test_backend_llvm_ir import llvm_ir
from tirc.backends.llvm.fold import fold_int

I32, I8 = ir.IntType(32), ir.IntType(8)


def c(v, t=I32):
    return ir.Constant(t, v)


@pytest.mark.parametrize("op, x, y, bits, signed, want", [
    ("add", 2147483647, 1, 32, True, -2147483648),  # wraps as the instruction does
    ("sub", 0, 1, 32, False, 4294967295),           # unsigned: the unsigned value
    ("mul", 0, 2, 32, True, 0),
    ("mul", 100, 3, 8, True, 44),
    ("shift_right", -8, 1, 32, True, -4),           # arithmetic for signed
    ("shift_right", -8, 1, 32, False, 2147483644),  # logical for unsigned
    ("shift_left", 1, 31, 32, True, -2147483648),
    ("bitwise_xor", 5, 3, 32, True, 6),
])
def test_constants_fold_with_the_instructions_semantics(op, x, y, bits, signed, want):
    t = ir.IntType(bits)
    got = fold_int(op, c(x, t), c(y, t), bits, signed)
    assert isinstance(got, ir.Constant) and got.constant == want


def test_undefined_shifts_and_divisions_stay_instructions():
    assert fold_int("shift_left", c(1), c(32), 32, True) is None  # poison in LLVM
    assert fold_int("shift_right", c(1), c(40), 32, False) is None
    assert fold_int("div", c(4), c(2), 32, True) is None  # divisions keep their guards


def test_identities_give_the_other_operand():
    x = ir.Argument(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [I32]), "f"), I32)
    assert fold_int("add", x, c(0), 32, True) is x
    assert fold_int("add", c(0), x, 32, True) is x
    assert fold_int("mul", c(1), x, 32, True) is x
    assert fold_int("sub", x, c(0), 32, True) is x
    assert fold_int("sub", c(0), x, 32, True) is None  # 0 - x is not x
    assert fold_int("mul", x, c(2), 32, True) is None


def test_vector_constants_fold_lane_by_lane():
    vt = ir.VectorType(I32, 4)
    got = fold_int("mul", ir.Constant(vt, [3] * 4), ir.Constant(vt, [0, 1, 2, 3]), 32, True)
    assert str(got) == "<4 x i32> <i32 0, i32 3, i32 6, i32 9>"


UNROLLED = """
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), n: T.int32):
    B[T.Mul(0, 2) + n] = A[T.Add(n, 0)]
    B[T.Mul(1, 2) + n * T.Mul(3, 1)] = A[n * 2]
    B[T.Ramp(n, 4, 4)] = A[T.Ramp(n, 8, 4)]
"""


def test_unrolled_indices_emit_no_constant_arithmetic():
    text = llvm_ir(UNROLLED)
    start = text.index("load float")
    body = text[text.rindex("\n", 0, text.rindex("getelementptr", 0, start)):text.index("ret i32 0", start)]
    # n*2 and n*3 are the only multiplications: 0*2, 1*2, 3*1 folded; A[n + 0] reads A[n]
    muls = [line.split(" mul ", 1)[1] for line in body.splitlines() if " mul " in line]
    assert len(muls) == 2 and all(m.startswith("i32 %") for m in muls)
    # the strided gather and scatter: scalar lanes n + 8k and n + 4k, no vector index
    assert [line.rsplit(", ", 1)[1] for line in body.splitlines() if " = add i32 " in line] == [
        "8", "16", "24", "4", "8", "12"]
    assert "<4 x i32>" not in body
