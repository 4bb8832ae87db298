"""FP8StorageLegalize: float8 computed in float32 and stored as uint8 (docs/pipeline.md).

For every function whose target's code generator lacks native float8 arithmetic
(:func:`fp8_native`, the one place that rule lives: no tirc target has it; CUDA's fp8
support is conversion and tensor-core only, so float8 arithmetic is emulated everywhere):

* arithmetic, comparisons and math intrinsics on float8 values are done in float32
  (compute legalize; implicit intermediates stay in float32, explicit casts round);
* float8 buffers (``buffer_map`` parameters, allocations, declarations), pointer and
  scalar variables, parameters and return types become uint8, vector lanes kept;
* float32 -> float8 rounds to nearest, ties to even, subnormals included, per the
  format's rules (:data:`FORMATS`): ``ieee`` formats (e5m2, e4m3, e3m4) have infinities,
  so overflow and infinity give infinity; ``fn`` (e4m3fn: no infinity, max 448) and
  ``fnuz`` formats (no infinity, no negative zero, NaN is 0x80) saturate: overflow and
  infinity give the largest finite value of that sign. NaN gives NaN. float8 -> float32
  is exact. Both are integer, shift, ``Select`` and ``T.reinterpret`` operations (a
  subnormal decodes through an exact uint-to-float32 conversion and a power-of-two
  multiply), so no code generator needs float8; other float types go through float32.

Functions whose target handles float8 are returned unchanged, as is every function that
mentions no float8. ``float8_e8m0fnu`` (an exponent-only scale format) is a diagnostic.

Preconditions: every function has a ``target`` attribute (BindTarget); MakePackedAPI has
run. Guarantees: no float8 value, buffer or variable is left in a legalized
function. Unlike TVM's pass this one rewrites a non-empty ``buffer_map``.
"""
from __future__ import annotations

from functools import partial

from tirc.ir.function import IRModule
from tirc.passes.legalize.narrow_float import legalize_module
from tirc.passes.legalize.narrow_float_ops import Format, Ops
from tirc.target.kinds import Target

# name: (exponent bits, mantissa bits, exponent bias, kind)
SPECS: dict[str, tuple[int, int, int, str]] = {
    "float8_e5m2": (5, 2, 15, "ieee"),
    "float8_e4m3": (4, 3, 7, "ieee"),
    "float8_e3m4": (3, 4, 3, "ieee"),
    "float8_e4m3fn": (4, 3, 7, "fn"),
    "float8_e4m3fnuz": (4, 3, 8, "fnuz"),
    "float8_e5m2fnuz": (5, 2, 16, "fnuz"),
    "float8_e4m3b11fnuz": (4, 3, 11, "fnuz"),
}
UNSUPPORTED = ("float8_e8m0fnu",)


def fp8_native(target: Target) -> bool:
    """Whether ``target``'s code generator computes in float8 itself: none does."""
    return False


def _rne(o: Ops, v, s, constant: bool):
    """``v >> s`` rounded to nearest, ties to even; ``s`` is a constant int, or a value
    below 32 (where 0 gives a wrapped result that the caller discards)."""
    def body(v, s):
        half_minus_one = o.c((1 << (s - 1)) - 1) if constant else \
            o.sub(o.shr(o.shl(o.c(1), s), o.c(1)), o.c(1))
        shift = o.c(s) if constant else s
        return o.shr(o.add(o.add(v, o.band(o.shr(v, shift), o.c(1))), half_minus_one), shift)
    if constant:
        return o.let("fp8_norm", v, lambda v: body(v, s))
    return o.let("fp8_sub", v, lambda v: o.let("fp8_shift", s, lambda s: body(v, s)))


def _encode(spec: tuple[int, int, int, str], o: Ops, x):
    """float32 -> float8 code (in a uint32)."""
    e_bits, m_bits, bias, kind = spec
    top = (1 << e_bits) - 1  # all-ones exponent
    if kind == "ieee":
        inf, nan = top << m_bits, (top << m_bits) | (1 << (m_bits - 1))
        largest = inf - 1
    elif kind == "fn":
        largest, nan = (1 << (e_bits + m_bits)) - 2, (1 << (e_bits + m_bits)) - 1
    else:  # fnuz
        largest, nan = (1 << (e_bits + m_bits)) - 1, 0x80
    shift_base = 151 - bias - m_bits  # subnormal shift = shift_base - float32 exponent

    def with_bits(bits):
        def with_abs(a):
            def with_exp(e):
                normal = _rne(o, o.sub(a, o.c((127 - bias) << 23)), 23 - m_bits, True)
                shift = o.minu(o.sub(o.c(shift_base), o.minu(e, o.c(shift_base))), o.c(25))
                mant = o.bor(o.band(a, o.c(0x7FFFFF)), o.c(0x800000))
                sub = _rne(o, mant, shift, False)
                return o.sel(o.ge(e, o.c(128 - bias)), normal, sub)

            def with_mag(mag):
                sign = o.shl(o.shr(bits, o.c(31)), o.c(7))
                is_nan = o.gt(a, o.c(0x7F800000))
                if kind == "ieee":
                    finite = o.bor(sign, o.sel(o.gt(mag, o.c(largest)), o.c(inf), mag))
                    return o.sel(is_nan, o.bor(sign, o.c(nan)), finite)
                clamped = o.minu(mag, o.c(largest))
                if kind == "fn":
                    return o.sel(is_nan, o.bor(sign, o.c(nan)), o.bor(sign, clamped))
                signed = o.sel(o.eq(clamped, o.c(0)), o.c(0), o.bor(sign, clamped))
                return o.sel(is_nan, o.c(nan), signed)

            return o.let("fp8_mag", o.let("fp8_exp", o.shr(a, o.c(23)), with_exp), with_mag)
        return o.let("fp8_abs", o.band(bits, o.c(0x7FFFFFFF)), with_abs)
    return o.let("fp8_bits", o.f32_bits(x), with_bits)


def _decode(spec: tuple[int, int, int, str], o: Ops, code):
    """float8 code (in a uint32) -> float32, exactly."""
    e_bits, m_bits, bias, kind = spec
    top = (1 << e_bits) - 1

    def body(c):
        sign = o.shl(o.shr(c, o.c(7)), o.c(31))
        exp = o.band(o.shr(c, o.c(m_bits)), o.c(top))
        man = o.band(c, o.c((1 << m_bits) - 1))
        normal = o.bor(o.bor(sign, o.shl(o.add(exp, o.c(127 - bias)), o.c(23))),
                       o.shl(man, o.c(23 - m_bits)))
        tiny = o.fmul(o.u_to_f32(man), 2.0 ** (1 - bias - m_bits))
        finite = o.sel(o.eq(exp, o.c(0)), o.bor(sign, o.f32_bits(tiny)), normal)
        if kind == "ieee":
            special = o.bor(o.bor(sign, o.c(0x7F800000)), o.shl(man, o.c(23 - m_bits)))
            return o.bits_f32(o.sel(o.eq(exp, o.c(top)), special, finite))
        if kind == "fn":
            is_nan = o.eq(o.band(c, o.c(0x7F)), o.c(0x7F))
            return o.bits_f32(o.sel(is_nan, o.bor(sign, o.c(0x7FC00000)), finite))
        return o.bits_f32(o.sel(o.eq(c, o.c(0x80)), o.c(0x7FC00000), finite))
    return o.let("fp8_code", code, body)


FORMATS: dict[str, Format] = {
    name: Format(name, "uint8", partial(_encode, spec), partial(_decode, spec))
    for name, spec in SPECS.items()
}


def fp8_storage_legalize(mod: IRModule, ctx) -> IRModule:
    """Legalize float8 in every function whose target lacks native float8."""
    return legalize_module(mod, FORMATS, fp8_native, "FP8StorageLegalize", UNSUPPORTED)
