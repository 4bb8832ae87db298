"""BF16StorageLegalize: bfloat16 computed in float32 and stored as uint16 where the
target's code generator has no native bfloat16 (docs/pipeline.md).

For every function whose target is not bfloat16-native (:func:`bf16_native`, the one
place that rule lives):

* arithmetic, comparisons and math intrinsics on bfloat16 values are done in float32
  (compute legalize; implicit intermediates stay in float32, explicit casts round);
* bfloat16 buffers (``buffer_map`` parameters, allocations, declarations), pointer and
  scalar variables, parameters and return types become uint16, vector lanes kept
  (``bfloat16x4`` -> ``uint16x4``);
* float32 -> bfloat16 is round-to-nearest-even on the bits (NaN stays a quiet NaN with
  its sign, overflow rounds to infinity, subnormals are kept), bfloat16 -> float32 is
  ``bits << 16``; both are integer, shift, ``Select`` and ``T.reinterpret`` operations,
  so no code generator needs bfloat16 (other float types go through float32).

Functions whose target handles bfloat16 are returned unchanged (today none: see
:func:`bf16_native`), as is every function that mentions no bfloat16.

Preconditions: every function has a ``target`` attribute (BindTarget); MakePackedAPI has
run, so argument checks of the packed API still see the user's dtype.
Guarantees: no bfloat16 value, buffer or variable is left in a legalized function.
Unlike TVM's pass this one does not require an empty ``buffer_map``: it rewrites it.
"""
from __future__ import annotations

from tirc.ir.function import IRModule
from tirc.passes.legalize.narrow_float import legalize_module
from tirc.passes.legalize.narrow_float_ops import Format, Ops
from tirc.target.kinds import Target


def bf16_native(target: Target) -> bool:
    """Whether ``target``'s code generator computes in bfloat16 itself: none does yet.
    Ampere and newer GPUs have bfloat16 instructions, but the NVPTX backend builds its
    IR with llvmlite, which has no bfloat type, so bfloat16 is legalized for every
    target (as for sm_75 and CPUs); :func:`legalize_module` keeps the rule so that a
    backend that gains the type has one place to say so."""
    return False


def _encode(o: Ops, x):
    """float32 -> bfloat16 bits (in a uint32), round to nearest, ties to even."""
    def body(bits):
        nan = o.gt(o.band(bits, o.c(0x7FFFFFFF)), o.c(0x7F800000))
        quiet = o.bor(o.shr(bits, o.c(16)), o.c(0x0040))
        odd = o.band(o.shr(bits, o.c(16)), o.c(1))
        rounded = o.shr(o.add(o.add(bits, odd), o.c(0x7FFF)), o.c(16))
        return o.sel(nan, quiet, rounded)
    return o.let("bf16_bits", o.f32_bits(x), body)


def _decode(o: Ops, code):
    """bfloat16 bits (in a uint32) -> float32: the high half of a float32."""
    return o.bits_f32(o.shl(code, o.c(16)))


BF16 = Format("bfloat16", "uint16", _encode, _decode)


def bf16_storage_legalize(mod: IRModule, ctx) -> IRModule:
    """Legalize bfloat16 in every function whose target lacks native bfloat16."""
    return legalize_module(mod, {"bfloat16": BF16}, bf16_native, "BF16StorageLegalize")
