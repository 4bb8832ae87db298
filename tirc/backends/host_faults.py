"""What can make host code fail, decided on the TIR before any code generation, for
every host backend (LLVM objects and C source): integer divisions that need a guard
(a divisor that may be 0, INT_MIN by -1), the functions of a module that may fail, and
which functions are exported (they raise their errors; private ones record them for
their caller).
"""
from __future__ import annotations

import math

from tirc.ir.expr import BinOp, Broadcast, Call, IntImm, PrimExpr, Ramp
from tirc.ir.attrs import C_API, CALLING_CONV, CallingConv
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import AllocBuffer, AssertStmt
from tirc.ir.visitor import walk

DIVISIONS = ("div", "mod", "floordiv", "floormod")


def exported(func: PrimFunc) -> bool:
    """Whether a module function is exported (external): packed functions
    (``calling_conv`` 1) and C-API functions (``tirc.c_api``)."""
    return (func.attrs.get(CALLING_CONV, 0) == CallingConv.CPACKED_FUNC
            or bool(func.attrs.get(C_API)))
_FAILING_OPS = ("tvm_throw_last_error", "call_ffi_kernel")


def division_needs_guard(e: BinOp) -> bool:
    """Whether integer division ``e`` gets a guard (the LLVM lowering's
    ``division_guard``; the C source's checked division helpers)."""
    return e.op in DIVISIONS and not e.dtype.is_float and any(division_hazards(e))


def division_hazards(e: BinOp) -> tuple[bool, bool]:
    """(the divisor may be 0, the pair may be INT_MIN / -1)."""
    d = e.a.dtype
    zero = not _proven_nonzero(e.b)
    overflow = d.is_int and _may_equal(e.b, -1) and _may_equal(e.a, -(1 << (d.bits - 1)))
    return zero, overflow


def _proven_nonzero(e: PrimExpr) -> bool:
    """Whether integer ``e`` is nonzero in every lane: a constant, as Simplify leaves
    constant divisors (a broadcast or a ramp of constants too), or a bound that excludes
    0 (``T.max(n, 1)``, the usual guard)."""
    lo, hi = _bounds(e)
    return lo > 0 or hi < 0


def _may_equal(e: PrimExpr, value: int) -> bool:
    """Whether integer ``e`` may be ``value`` in some lane."""
    if isinstance(e, Ramp) and isinstance(e.base, IntImm) and isinstance(e.stride, IntImm):
        return any(e.base.value + k * e.stride.value == value for k in range(e.lanes))
    lo, hi = _bounds(e)
    return lo <= value <= hi


def _bounds(e: PrimExpr) -> tuple[float, float]:
    """An interval holding every lane of integer ``e`` (-inf, inf when unknown)."""
    if isinstance(e, IntImm):
        return e.value, e.value
    if isinstance(e, Broadcast):
        return _bounds(e.value)
    if isinstance(e, Ramp) and isinstance(e.base, IntImm) and isinstance(e.stride, IntImm):
        ends = (e.base.value, e.base.value + (e.lanes - 1) * e.stride.value)
        return min(ends), max(ends)
    if isinstance(e, BinOp) and e.op in ("max", "min"):
        (alo, ahi), (blo, bhi) = _bounds(e.a), _bounds(e.b)
        if e.op == "max":
            return max(alo, blo), max(ahi, bhi)
        return min(alo, blo), min(ahi, bhi)
    return -math.inf, math.inf



def may_fail(mod: IRModule) -> set[str]:
    """Names of the functions of ``mod`` that may fail when run on the CPU: a check
    (assert), an allocation (malloc), a division not proven safe, a kernel launch,
    T.tvm_throw_last_error, or a call of such a function. Conservative: a function
    not named here never calls ``fail`` with an error."""
    direct: dict[str, bool] = {}
    calls: dict[str, set[str]] = {}
    for name, func in mod.functions.items():
        fails, callees = False, set()
        for n in walk(func.body):
            if isinstance(n, (AssertStmt, AllocBuffer)):
                fails = True
            elif isinstance(n, BinOp) and division_needs_guard(n):
                fails = True
            elif isinstance(n, Call):
                if not isinstance(n.op, str):  # a function of the module
                    callees.add(n.op.name)
                elif n.op in _FAILING_OPS:
                    fails = True
        direct[name], calls[name] = fails, callees
    failing = {n for n, f in direct.items() if f}
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in failing and callees & failing:
                failing.add(name)
                changed = True
    return failing
