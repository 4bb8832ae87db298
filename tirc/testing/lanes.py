"""Value semantics of :mod:`tirc.testing.evaluate`, vectorised over the threads of a SIMT
run (:mod:`tirc.testing.simt`).

A value is a NumPy scalar of its exact dtype when every thread holds the same one
(constants, loop counters, kernel parameters) and an array of that dtype with one entry
per thread otherwise; a vector dtype (``float32x4``) adds a trailing axis of its lanes,
``(1, lanes)`` when uniform. NumPy broadcasting mixes the two forms.

The scalar functions of ``evaluate`` (``binop``, ``convert``, ``math_call``) are the
specification. :func:`binop` and :func:`convert` compute the same values over whole
arrays (``tests/testing/test_simt.py`` checks them against the scalar functions element by
element, for every operation and dtype pair it covers); math functions without a NumPy
counterpart, and ``clz``, are the scalar function applied per element. Two differences,
both because SIMT code computes on values it then discards (lanes past a reduction's
extent, uninitialised scratch of idle threads):

* where ``evaluate`` stops with :class:`~tirc.testing.evaluate.Undefined` on arithmetic
  (division by zero, a shift out of range, a float -> int cast of NaN or out of range,
  NaN in a float min/max), the lane gets an arbitrary value instead (:func:`garbage`;
  float min/max keep their ``a < b`` select); bad memory accesses are still errors,
  raised by the interpreter;
* float math functions are computed in float64 and rounded once to the dtype (within
  an ulp of the C library's and of CUDA's libdevice; compare with a tolerance).

Overflow is the point of wrapping integer arithmetic: callers silence NumPy's warnings
about it (the interpreter runs under ``np.errstate(all="ignore")``).
"""
from __future__ import annotations

import numpy as np

from tirc.ir.dtype import DataType
from tirc.testing.evaluate import (EXACT, MATH_OK, NP, Undefined, Unsupported, int_bounds,
                                   math_call, np_type as scalar_np_type)

_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}
_INT_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum,
              "max": np.maximum, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
              "bitwise_xor": np.bitwise_xor}
_FLOAT_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                "mod": np.fmod}
_WIDE_MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
              "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin,
              "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
              "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
              "pow": np.power, "atan2": np.arctan2, "hypot": np.hypot}


def np_type(d: DataType):
    """The NumPy scalar type of ``d``'s elements (a vector dtype's lanes are an axis)."""
    return scalar_np_type(d.element())


def garbage(d: DataType):
    """The value of an undefined read: every bit set (a NaN for floats, -1 for signed
    integers), so that it shows up where it reaches an output."""
    t = np_type(d)
    return np.frombuffer(b"\xff" * np.dtype(t).itemsize, dtype=t)[0]


def as_value(x, t):
    """``x`` as dtype ``t``: a NumPy scalar stays a scalar (0-d results unwrapped)."""
    a = np.asarray(x, dtype=t) if not isinstance(x, np.ndarray) or x.dtype != t else x
    return a[()] if a.ndim == 0 else a


_FAST: dict = {}


def _fast(op: str, d: DataType):
    """A direct ufunc call for ``op`` on ``d`` where NumPy's result is the semantics
    (comparisons; wrapping integer arithmetic; float + - * /), else None."""
    key = (op, d)
    if key not in _FAST:
        f = None
        if op in _CMP:
            u = _CMP[op]
            f = lambda a, b: u(a, b)  # noqa: E731
        elif d.is_integer and op in ("add", "sub", "mul", "bitwise_and", "bitwise_or",
                                     "bitwise_xor", "min", "max"):
            u, t = _INT_ARITH[op], np_type(d)
            f = lambda a, b: u(a, b, dtype=t)  # noqa: E731
        elif d.is_float and op in ("add", "sub", "mul", "div"):
            u, t = _FLOAT_ARITH[op], np_type(d)
            f = lambda a, b: u(a, b, dtype=t)  # noqa: E731
        _FAST[key] = f
    return _FAST[key]


def narrow(v, d: DataType):
    """Integers ``v`` as sub-byte dtype ``d``: two's complement of ``d.bits`` bits."""
    x = np.asarray(v).astype(np.int64) & ((1 << d.bits) - 1)
    if d.is_int:
        x = np.where(x >= 1 << (d.bits - 1), x - (1 << d.bits), x)
    return as_value(x, np_type(d))


def _sub_byte(op: str, a, b, d: DataType, out: DataType):
    """``a op b`` on sub-byte integers: computed in int64, wrapped to the dtype's bits."""
    if op in _CMP:
        return as_value(_CMP[op](a, b), np.bool_)
    if op not in _INT_ARITH:
        raise Unsupported(f"{op} of sub-byte {d}")
    return narrow(_INT_ARITH[op](np.asarray(a, np.int64), np.asarray(b, np.int64)), out)


def binop_fn(op: str, d: DataType, out: DataType):
    """:func:`binop` for one operation and dtype, as a function of the two operands."""
    if d.is_subbyte:
        return lambda a, b: _sub_byte(op, a, b, d, out)
    f = _fast(op, d)
    return f if f is not None else (lambda a, b: binop(op, a, b, d, out))


def binop(op: str, a, b, d: DataType, out: DataType):
    """``a op b`` over threads: operands of dtype ``d``, result of dtype ``out``."""
    if d.is_subbyte:
        return _sub_byte(op, a, b, d, out)
    f = _FAST.get((op, d), _fast)
    if f is _fast:
        f = _fast(op, d)
    if f is not None:
        return f(a, b)
    with np.errstate(all="ignore"):
        if op in _CMP:
            return as_value(_CMP[op](a, b), np.bool_)
        if op in ("and", "or"):
            f = np.logical_and if op == "and" else np.logical_or
            return as_value(f(a, b), np.bool_)
        t = np_type(d)
        if d.is_float:
            if op in _FLOAT_ARITH:
                return as_value(_FLOAT_ARITH[op](t(a) if np.ndim(a) == 0 else a,
                                                         t(b) if np.ndim(b) == 0 else b), t)
            if op == "min":
                return as_value(np.where(np.less(a, b), a, b), t)
            if op == "max":
                return as_value(np.where(np.less(a, b), b, a), t)
            if op in ("floordiv", "floormod"):
                q = np.floor(np.divide(a, b, dtype=t)).astype(t)
                if op == "floordiv":
                    return as_value(q, t)
                return as_value(np.subtract(a, np.multiply(q, b, dtype=t), dtype=t), t)
            raise Unsupported(f"float {op}")
        if d.is_bool:
            f = {"bitwise_and": np.logical_and, "bitwise_or": np.logical_or,
                 "bitwise_xor": np.logical_xor}.get(op)
            if f is None:
                raise Unsupported(f"bool {op}")
            return as_value(f(a, b), np.bool_)
        if op in _INT_ARITH:
            return as_value(_INT_ARITH[op](a, b, dtype=t), t)
        if op in ("shift_left", "shift_right"):
            ok = (b >= 0) & (b < d.bits)
            safe = np.where(ok, b, 0).astype(t)
            f = np.left_shift if op == "shift_left" else np.right_shift
            return as_value(np.where(ok, f(a, safe, dtype=t), garbage(d)), t)
        if op in ("div", "mod", "floordiv", "floormod"):
            zero = np.equal(b, 0)
            y = np.where(zero, 1, b).astype(t)
            x = np.asarray(a, dtype=t)
            if op in ("floordiv", "floormod"):
                r = np.floor_divide(x, y) if op == "floordiv" else np.remainder(x, y)
            else:
                q = np.floor_divide(x, y)
                # floor -> toward zero: one up where the remainder is not zero and the
                # signs differ (NumPy's remainder takes the divisor's sign)
                fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
                q = (q + fix.astype(t)).astype(t)
                r = q if op == "div" else (x - q * y).astype(t)
            return as_value(np.where(zero, garbage(d), r), t)
        raise Unsupported(f"integer {op}")


def convert(v, src: DataType, dst: DataType):
    """C/LLVM conversion of ``v`` from ``src`` to ``dst`` over threads."""
    if src.element() == dst.element():
        return v
    if dst.is_subbyte:
        if src.is_float:
            raise Unsupported(f"conversion of {src} to sub-byte {dst}")
        return narrow(v, dst)
    t = np_type(dst)
    with np.errstate(all="ignore"):
        if dst.is_bool:
            return as_value(np.not_equal(v, 0), np.bool_)
        if dst.is_float:
            if not src.is_float and dst.base == "float16":
                x = np.asarray(v)
                big = np.abs(x.astype(np.float64)) >= 65520
                out = np.where(big, np.copysign(np.inf, x.astype(np.float64)), x.astype(t))
                return as_value(out, t)
            return as_value(np.asarray(v).astype(t), t)
        if src.is_float:
            x = np.trunc(np.asarray(v, dtype=np.float64))
            lo, hi = int_bounds(dst)
            ok = np.isfinite(x) & (x >= lo) & (x <= hi)
            return as_value(np.where(ok, np.where(ok, x, 0).astype(t), garbage(dst)), t)
        return as_value(np.asarray(v).astype(t), t)


def math(name: str, args: list, d: DataType):
    """Float math function ``name`` of dtype ``d`` over threads."""
    t = np_type(d)
    with np.errstate(all="ignore"):
        if name in EXACT:
            return as_value(EXACT[name](np.asarray(args[0], dtype=t)), t)
        if name == "sigmoid":
            e = math("exp", [np.negative(args[0], dtype=t)], d)
            return as_value(np.divide(t(1), np.add(t(1), e, dtype=t), dtype=t), t)
        if name == "rsqrt":
            return as_value(np.divide(t(1), math("sqrt", args, d), dtype=t), t)
        if name == "fma":
            w = [np.asarray(a, dtype=np.float64) for a in args]
            if d.base == "float64":
                return per_element(lambda x, y, z: math_call("fma", [x, y, z], d), args, d)
            return as_value((w[0] * w[1] + w[2]).astype(t), t)
        if name in _WIDE_MATH:
            w = [np.asarray(a, dtype=np.float64) for a in args]
            return as_value(_WIDE_MATH[name](*w).astype(t), t)
        if name in MATH_OK:
            return per_element(lambda *xs: math_call(name, [t(x) for x in xs], d), args, d)
    raise Unsupported(f"T.{name}")


def per_element(fn, args: list, d: DataType):
    """``fn`` (a scalar function of ``evaluate``) applied lane by lane; a lane where it
    is undefined gets :func:`garbage`."""
    t = np_type(d)
    arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
    out = np.empty(arrays[0].shape, dtype=t)
    bad = garbage(d)
    for i in np.ndindex(out.shape):
        try:
            out[i] = fn(*[a[i][()] for a in arrays])
        except Undefined:
            out[i] = bad
    return out[()] if out.ndim == 0 else out


__all__ = ["NP", "as_value", "binop", "binop_fn", "convert", "garbage", "math",
           "np_type", "per_element"]
