"""FP8StorageLegalize, stated as TIR before and after, plus a NumPy check
of the emitted conversions against ml_dtypes for every supported float8 format."""
from __future__ import annotations

import numpy as np
import pytest

from narrow_float_eval import evaluate, special_float32, stored_value
from tirc.diagnostics import Diagnostic
from tirc.ir.buffer import Buffer
from tirc.ir.equal import assert_structural_equal
from tirc.ir.printer import print_module
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.legalize.bf16_storage_legalize import bf16_storage_legalize
from tirc.passes.legalize.fp8_storage_legalize import SPECS, fp8_native, fp8_storage_legalize
from tirc.passes.pass_context import PassContext
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
CTX = PassContext(parse_target("llvm"))
LLVM = 'T.target({"kind": "llvm"})'
ml_dtypes = pytest.importorskip("ml_dtypes")


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate((HEADER + text).splitlines(), 1) if needle in line)


def run(text: str):
    mod = verify(parse(HEADER + text, "before.tir"))
    return mod, verify(fp8_storage_legalize(mod, CTX))


def no_fp8_left(mod) -> None:
    for func in mod.functions.values():
        for node in walk(func.body):
            assert not getattr(getattr(node, "dtype", None), "base", "").startswith("float8"), node
            buf = getattr(node, "buffer", None)
            assert not isinstance(buf, Buffer) or not buf.dtype.base.startswith("float8")


def test_e4m3fn_scale_on_llvm():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func
    def scale(A: T.Buffer((64,), "float8_e4m3fn"), B: T.Buffer((64,), "float8_e4m3fn"), s: T.float32):
        T.func_attr({{"target": {LLVM}}})
        for i in range(64):
            B[i] = T.Cast("float8_e4m3fn", T.Cast("float32", A[i]) * s)
"""
    # decode: NaN (S.1111.111), subnormal (man * 2^-9, exact), normal (exponent + 120);
    # encode: RNE at 20 bits for normals, at a variable shift for subnormals, NaN kept,
    # saturation at 448 (0x7E).
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def scale(A: T.Buffer((64,), "uint8"), B: T.Buffer((64,), "uint8"), s: T.float32):
        fp8_bits = T.uint32()
        fp8_code = T.uint32()
        fp8_abs = T.uint32()
        fp8_mag = T.uint32()
        fp8_exp = T.uint32()
        fp8_norm = T.uint32()
        fp8_sub = T.uint32()
        fp8_shift = T.uint32()
        T.func_attr({{"target": {LLVM}}})
        for i in range(64):
            B[i] = T.Cast("uint8", T.Let(T.Let(T.Let(
                T.Select(fp8_abs > T.uint32(2139095040),
                         fp8_bits >> T.uint32(31) << T.uint32(7) | T.uint32(127),
                         fp8_bits >> T.uint32(31) << T.uint32(7) | T.min(fp8_mag, T.uint32(126))),
                where={{fp8_mag: T.Let(T.Select(fp8_exp >= T.uint32(121),
                    T.Let(fp8_norm + (fp8_norm >> T.uint32(20) & T.uint32(1)) + T.uint32(524287) >> T.uint32(20),
                          where={{fp8_norm: fp8_abs - T.uint32(1006632960)}}),
                    T.Let(T.Let(fp8_sub + (fp8_sub >> fp8_shift & T.uint32(1))
                                + ((T.uint32(1) << fp8_shift >> T.uint32(1)) - T.uint32(1)) >> fp8_shift,
                                where={{fp8_shift: T.min(T.uint32(141) - T.min(fp8_exp, T.uint32(141)), T.uint32(25))}}),
                          where={{fp8_sub: fp8_abs & T.uint32(8388607) | T.uint32(8388608)}})),
                    where={{fp8_exp: fp8_abs >> T.uint32(23)}})}}),
                where={{fp8_abs: fp8_bits & T.uint32(2147483647)}}),
                where={{fp8_bits: T.reinterpret("uint32", T.Let(T.reinterpret("float32",
                    T.Select(fp8_code & T.uint32(127) == T.uint32(127),
                             fp8_code >> T.uint32(7) << T.uint32(31) | T.uint32(2143289344),
                             T.Select(fp8_code >> T.uint32(3) & T.uint32(15) == T.uint32(0),
                                      fp8_code >> T.uint32(7) << T.uint32(31)
                                      | T.reinterpret("uint32", T.Cast("float32", fp8_code & T.uint32(7)) * T.float32(0.001953125)),
                                      fp8_code >> T.uint32(7) << T.uint32(31)
                                      | (fp8_code >> T.uint32(3) & T.uint32(15)) + T.uint32(120) << T.uint32(23)
                                      | (fp8_code & T.uint32(7)) << T.uint32(20)))),
                    where={{fp8_code: T.Cast("uint32", A[i])}}) * s)}}))
"""
    _, after = run(before)
    assert_structural_equal(after, parse(HEADER + expected, "expected.tir"))
    # the T.Let forms print and parse back (the Let variables are declared up front)
    text = print_module(after)
    assert_structural_equal(verify(parse(text, "printed.tir")), after)
    try:
        import tvm.script
    except ImportError:
        return
    tvm.script.from_source(text)


def test_vector_and_cuda_are_legalized():
    """float8 arithmetic is native nowhere: a cuda sm_90 kernel is legalized too, lanes kept."""
    _, after = run("""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def kernel(A: T.handle("float8_e5m2", "global"), B: T.handle("float8_e5m2", "global")):
        T.func_attr({"target": T.target({"arch": "sm_90", "kind": "cuda"})})
        A_1 = T.decl_buffer((64,), "float8_e5m2", data=A)
        B_1 = T.decl_buffer((64,), "float8_e5m2", data=B)
        S = T.alloc_buffer((4,), "float8_e5m2", scope="shared")
        for i in range(16):
            S[0:4] = A_1[i * 4:i * 4 + 4] * B_1[i * 4:i * 4 + 4]
            B_1[i * 4:i * 4 + 4] = S[0:4] + T.Broadcast(T.float8_e5m2(1.0), 4)
""")
    no_fp8_left(after)
    kernel = after["kernel"]
    assert [str(p.ptr.dtype) for p in kernel.params] == ["uint8", "uint8"]
    assert not fp8_native(parse_target("cuda -arch=sm_90")) and not fp8_native(parse_target("llvm"))


def test_module_without_fp8_is_returned_as_is():
    before, after = run(f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "bfloat16")):
        T.func_attr({{"target": {LLVM}}})
        A[0] = A[1]
""")
    assert after is before


def test_constant_is_encoded():
    _, after = run(f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "float8_e4m3fn")):
        T.func_attr({{"target": {LLVM}}})
        A[0] = T.float8_e4m3fn(448.0)
        A[1] = T.float8_e4m3fn(-0.5)
""")
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "uint8")):
        T.func_attr({{"target": {LLVM}}})
        A[0] = T.uint8(126)
        A[1] = T.uint8(176)
"""
    assert_structural_equal(after, parse(HEADER + expected, "expected.tir"))


def _reference(x: np.ndarray, name: str) -> np.ndarray:
    """ml_dtypes' rounding, with saturation where the format has no infinity."""
    t = getattr(ml_dtypes, name)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = x.astype(t).view(np.uint8).copy()
    if SPECS[name][3] != "ieee":
        top = np.array(float(ml_dtypes.finfo(t).max), np.float32).astype(t).view(np.uint8)
        over = ~np.isnan(x) & np.isnan(ref.view(t).astype(np.float32))
        ref[over] = np.where(x[over] < 0, top | 0x80, top)
    return ref


def _convert_module(name: str):
    return run(f"""
@I.ir_module
class Module:
    @T.prim_func
    def enc(X: T.Buffer((8,), "float32"), B: T.Buffer((8,), "{name}")):
        T.func_attr({{"target": {LLVM}}})
        for i in range(8):
            B[i] = T.Cast("{name}", X[i])

    @T.prim_func
    def dec(B: T.Buffer((8,), "{name}"), Y: T.Buffer((8,), "float32")):
        T.func_attr({{"target": {LLVM}}})
        for i in range(8):
            Y[i] = T.Cast("float32", B[i])
""")[1]


@pytest.mark.parametrize("name", list(SPECS))
def test_numpy_conversions_against_ml_dtypes(name):
    t = getattr(ml_dtypes, name)
    after = _convert_module(name)
    codes = np.arange(256, dtype=np.uint8)
    exact = codes.view(t).astype(np.float32)
    # every code decodes exactly (NaNs to NaN, zeros keep their sign)
    decoded = evaluate(stored_value(after["dec"]), {"B": codes})
    nan = np.isnan(exact)
    assert np.isnan(decoded[nan]).all()
    assert np.array_equal(decoded[~nan].view(np.uint32), exact[~nan].view(np.uint32))
    # encode: random and special float32, every representable value, the midpoints
    # between neighbours (ties) and the floats just above and below each midpoint
    finite = np.unique(exact[np.isfinite(exact)].astype(np.float64))
    mids = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)
    x = np.concatenate([special_float32(), exact, mids, np.nextafter(mids, np.float32(np.inf)),
                        np.nextafter(mids, np.float32(-np.inf))])
    got = evaluate(stored_value(after["enc"]), {"X": x})
    assert got.dtype == np.uint8
    want = _reference(x, name)
    xnan = np.isnan(x)
    assert np.isnan(got[xnan].view(t).astype(np.float32)).all()
    bad = np.nonzero(got[~xnan] != want[~xnan])[0]
    assert bad.size == 0, [(float(x[~xnan][i]), int(got[~xnan][i]), int(want[~xnan][i])) for i in bad[:5]]


def test_e4m3fn_saturates_and_e5m2_overflows_to_infinity():
    values = np.array([np.inf, -np.inf, 1e6, -500.0, 464.0, 448.0], np.float32)
    e4m3 = evaluate(stored_value(_convert_module("float8_e4m3fn")["enc"]), {"X": values})
    assert e4m3.tolist() == [0x7E, 0xFE, 0x7E, 0xFE, 0x7E, 0x7E]
    e5m2 = evaluate(stored_value(_convert_module("float8_e5m2")["enc"]), {"X": values[:3]})
    assert e5m2.tolist() == [0x7C, 0xFC, 0x7C]


def test_fp8_arithmetic_rounds_once_at_the_store():
    _, after = run(f"""
@I.ir_module
class Module:
    @T.prim_func
    def mul(A: T.Buffer((8,), "float8_e5m2"), B: T.Buffer((8,), "float8_e5m2"), C: T.Buffer((8,), "float8_e5m2")):
        T.func_attr({{"target": {LLVM}}})
        for i in range(8):
            C[i] = A[i] * B[i] + A[i]
""")
    t = ml_dtypes.float8_e5m2
    rng = np.random.default_rng(7)
    a, b = (rng.integers(0, 256, 3000).astype(np.uint8) for _ in range(2))
    got = evaluate(stored_value(after["mul"]), {"A": a, "B": b})
    fa, fb = a.view(t).astype(np.float32), b.view(t).astype(np.float32)
    with np.errstate(all="ignore"):
        want = (fa * fb + fa).astype(t).view(np.uint8)
    nan = np.isnan(want.view(t).astype(np.float32))
    assert np.array_equal(got[~nan], want[~nan])
    assert np.isnan(got[nan].view(t).astype(np.float32)).all()


def test_bf16_to_fp8_cast_through_both_passes():
    mod = verify(parse(HEADER + f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "bfloat16"), B: T.Buffer((8,), "float8_e4m3fn")):
        T.func_attr({{"target": {LLVM}}})
        for i in range(8):
            B[i] = T.Cast("float8_e4m3fn", A[i])
""", "m.tir"))
    after = verify(fp8_storage_legalize(bf16_storage_legalize(mod, CTX), CTX))
    no_fp8_left(after)
    a = np.array([1.0, 0.3, -300.0, 1000.0], np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    got = evaluate(stored_value(after["main"]), {"A": a})
    want = a.view(ml_dtypes.bfloat16).astype(np.float32)
    want = np.clip(want, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert got.tolist() == want.tolist()


def test_e8m0_is_a_diagnostic():
    text = f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "float8_e8m0fnu")):
        T.func_attr({{"target": {LLVM}}})
        A[0] = A[1]
"""
    with pytest.raises(Diagnostic, match="float8_e8m0fnu is not supported by FP8StorageLegalize") as e:
        run(text)
    assert e.value.span is not None and e.value.span.line == line_of(text, "def main")
