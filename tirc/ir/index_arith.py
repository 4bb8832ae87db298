"""Index arithmetic on IR expressions: integer constants fold, scalars broadcast, ramps
and broadcasts stay ramps and broadcasts where they can (``arith``, ``cast``,
``broadcast``), ``widen`` redoes an int32 index computation in int64, and
``constant_layout`` reads a buffer's constant shape, strides and offset. FlattenBuffer,
VectorizeLoop, UnrollLoop, InjectVirtualThread, LowerThreadAllreduce, CanonicalizeLoop,
the ABI passes and the LLVM expression lowering all build indices with it.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.const_fold import make_int, try_const_fold
from tirc.ir.dtype import INT64, DataType
from tirc.ir.expr import BinOp, Broadcast, Cast, IntImm, PrimExpr, Ramp



def const_int(e: PrimExpr) -> int | None:
    """The value of an integer constant, None for anything else."""
    return e.value if isinstance(e, IntImm) and e.dtype.is_integer else None


def _fits(value: int, dtype: DataType) -> bool:
    return make_int(value, dtype) is not None


def cast(e: PrimExpr, elem: DataType) -> PrimExpr:
    """``e`` with element type ``elem`` (lanes kept); constants retyped, ramps cast per part."""
    if e.dtype.element() == elem:
        return e
    if isinstance(e, IntImm) and elem.is_integer and _fits(e.value, elem):
        return IntImm(elem, e.value, e.span)
    if isinstance(e, Ramp) and elem.is_integer and e.base.dtype.is_integer:
        return Ramp(cast(e.base, elem), cast(e.stride, elem), e.lanes, e.span, e.scalable)
    if isinstance(e, Broadcast):
        return Broadcast(cast(e.value, elem), e.lanes, e.span, e.scalable)
    return Cast(elem.with_lanes_of(e.dtype), e, getattr(e, "span", None))


def _unify(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    ea, eb = a.dtype.element(), b.dtype.element()
    if ea == eb:
        return a, b
    if const_int(a) is not None and a.dtype.lanes == 1:
        return cast(a, eb), b
    if const_int(b) is not None and b.dtype.lanes == 1:
        return a, cast(b, ea)
    wide = ea if ea.bits >= eb.bits else eb
    return cast(a, wide), cast(b, wide)


def _lanes_error(a: PrimExpr, b: PrimExpr) -> Diagnostic:
    return Diagnostic(f"vector operands with different lane counts: {a.dtype} and {b.dtype}",
                      getattr(a, "span", None) or getattr(b, "span", None))


def _scalar(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    a, b = _unify(a, b)
    dtype = a.dtype
    if dtype.is_integer:
        folded = try_const_fold(op, a, b, dtype)
        if folded is not None:
            return folded
        if op == "add" and isinstance(b, BinOp) and b.op == "add" and b.dtype == dtype:
            return _scalar("add", _scalar("add", a, b.a), b.b)  # a + (x + y) -> a + x + y
    return BinOp(op, a, b, dtype)


def arith(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a op b`` for op in add/sub/mul over scalars and vectors: scalars broadcast, ramps
    and broadcasts stay ramps and broadcasts where they can, integer constants fold."""
    la, lb = a.dtype.lanes, b.dtype.lanes
    if la == 1 and lb == 1:
        return _scalar(op, a, b)
    if la != 1 and lb != 1 and la != lb:
        raise _lanes_error(a, b)
    lanes = max(la, lb)
    sc = a.dtype.scalable or b.dtype.scalable  # T.vscale() * lanes
    if sc and la != 1 and lb != 1 and a.dtype.scalable != b.dtype.scalable:
        raise _lanes_error(a, b)
    a, b = _unify(a, b)
    if a.dtype.element().is_integer:
        sa = a.value if isinstance(a, Broadcast) else (a if la == 1 else None)
        sb = b.value if isinstance(b, Broadcast) else (b if lb == 1 else None)
        if sa is not None and sb is not None:
            return Broadcast(_scalar(op, sa, sb), lanes, None, sc)
        if op in ("add", "sub"):
            if isinstance(a, Ramp) and isinstance(b, Ramp):
                return _ramp(_scalar(op, a.base, b.base), _scalar(op, a.stride, b.stride), lanes, sc)
            if isinstance(a, Ramp) and sb is not None:
                return _ramp(_scalar(op, a.base, sb), a.stride, lanes, sc)
            if sa is not None and isinstance(b, Ramp):
                stride = b.stride if op == "add" else _scalar("sub", IntImm(b.stride.dtype, 0), b.stride)
                return _ramp(_scalar(op, sa, b.base), stride, lanes, sc)
            if sb is not None and const_int(sb) == 0:
                return a
            if op == "add" and sa is not None and const_int(sa) == 0:
                return b
        if op == "mul":
            if isinstance(a, Ramp) and sb is not None:
                return _ramp(_scalar("mul", a.base, sb), _scalar("mul", a.stride, sb), lanes, sc)
            if sa is not None and isinstance(b, Ramp):
                return _ramp(_scalar("mul", sa, b.base), _scalar("mul", sa, b.stride), lanes, sc)
            if sb is not None and const_int(sb) == 1:
                return a
            if sa is not None and const_int(sa) == 1:
                return b
    return BinOp(op, broadcast(a, lanes, sc), broadcast(b, lanes, sc),
                 DataType(a.dtype.base, lanes, sc))


def _ramp(base: PrimExpr, stride: PrimExpr, lanes: int, scalable: bool = False) -> PrimExpr:
    if const_int(stride) == 0:
        return Broadcast(base, lanes, None, scalable)
    return Ramp(base, stride, lanes, None, scalable)


def broadcast(e: PrimExpr, lanes: int, scalable: bool = False) -> PrimExpr:
    if e.dtype.lanes == lanes and e.dtype.scalable == scalable:
        return e
    return Broadcast(e, lanes, None, scalable)


_WIDE_OPS = ("floordiv", "floormod", "div", "mod", "min", "max")


def widen(e: PrimExpr) -> PrimExpr:
    """The scalar integer ``e`` as int64. Signed arithmetic is redone in int64 from
    widened constants and variables, so ``n * m`` of two int32 sizes does not wrap where
    it would in int32. An explicit cast and unsigned arithmetic (which wraps by
    definition) keep their meaning: they are widened after."""
    d = e.dtype
    if d == INT64 or not d.is_integer or d.lanes != 1:
        return e
    if isinstance(e, IntImm) and d.is_int:
        return IntImm(INT64, e.value, e.span)
    if isinstance(e, BinOp) and d.is_int and e.op in ("add", "sub", "mul"):
        return arith(e.op, widen(e.a), widen(e.b))
    if isinstance(e, BinOp) and d.is_int and e.op in _WIDE_OPS:
        return BinOp(e.op, widen(e.a), widen(e.b), INT64, e.span)
    return Cast(INT64, e, getattr(e, "span", None))


def constant_layout(b, value=const_int) -> tuple[list[int], list[int], int] | None:
    """Buffer ``b``'s shape, strides (row-major when none are declared) and element offset
    as integers, each read with ``value`` (an expression -> int or None); None when one
    of them is not constant."""
    shape = [value(e) for e in b.shape]
    strides = [value(e) for e in b.strides] if b.strides else None
    offset = value(b.elem_offset) if b.elem_offset is not None else 0
    if None in shape or offset is None or (strides is not None and None in strides):
        return None
    if strides is None:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    return shape, strides, offset
