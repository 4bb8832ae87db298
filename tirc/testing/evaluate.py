"""An interpreter of tirc's IR as parsed (before any pass): the oracle of differential
fuzzing (:mod:`tirc.testing.differential`).

It shares nothing with the compiler but the IR classes: every value is a NumPy scalar
of its exact dtype, and the semantics are spelled out here —

* integers wrap (two's complement) at their width; ``div``/``mod`` truncate toward
  zero, ``floordiv``/``floormod`` floor; ``>>`` is arithmetic for signed types;
* float arithmetic rounds to the dtype after each operation (float16 as NumPy does:
  computed in float32 and rounded, which is exact for + - * / and sqrt); math
  functions call the C library (``expf``/``exp``; float16 through the float32 one),
  ``sigmoid`` is ``1 / (1 + exp(-x))``, ``rsqrt`` ``1 / sqrt(x)``, ``round`` rounds
  half to even (``nearbyint``); float ``min``/``max`` are ``a < b ? a : b`` /
  ``a < b ? b : a``;
* casts are C's: int -> int wraps, float -> int truncates toward zero, to bool is
  ``!= 0`` (NaN is true), int -> float rounds to nearest;
* ``T.Select`` evaluates both branches, ``T.if_then_else`` only the chosen one;
* loops of every kind run serially, in order; calls of private functions pass scalars
  by value and buffers by reference.

Where the IR leaves the result undefined, the run stops with :class:`Undefined`:
division by zero, ``INT_MIN / -1``, an index out of bounds, a shift by a negative
amount or by the width or more, a float -> int cast of NaN or of a value out of range,
NaN reaching a float min/max (LLVM ``select`` and ``minnum`` disagree there), and
reading a scalar never written. The fuzzer skips such functions (the generator is
meant to make none).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import (BinOp, BufferLoad, Call, Cast, FloatImm, GlobalVar, IntImm, Let,
                          Not, PrimExpr, Select, StringImm, Var)
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, Break, Continue, DeclBuffer,
                          Evaluate, For, IfThenElse, LetStmt, Return, SeqStmt, Stmt,
                          BufferStore, While)

NP = {"bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32,
      "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
      "uint64": np.uint64, "float16": np.float16, "float32": np.float32,
      "float64": np.float64,
      # packed sub-byte integers: held in a byte, wrapped to their bits (lanes.binop)
      "int1": np.int8, "int2": np.int8, "int4": np.int8, "uint2": np.uint8, "uint4": np.uint8}
MAX_STEPS = 2_000_000


class Undefined(Exception):
    """The program's result is not defined by the IR (see the module docstring)."""


class Unsupported(Exception):
    """The evaluator does not know this construct."""


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Return(Exception):
    def __init__(self, value):
        self.value = value


def np_type(d: DataType):
    if d.lanes != 1 or d.base not in NP:
        raise Unsupported(f"dtype {d}")
    return NP[d.base]


def int_bounds(d: DataType) -> tuple[int, int]:
    bits = d.bits
    if d.is_uint:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def wrap(v: int, d: DataType):
    """``v`` as a value of integer dtype ``d``, two's complement."""
    if d.is_bool:
        return np.bool_(v != 0)
    bits = d.bits
    v &= (1 << bits) - 1
    if d.is_int and v >= 1 << (bits - 1):
        v -= 1 << bits
    return NP[d.base](v)


# -- the C math library --------------------------------------------------------------
def _libm():
    for name in (ctypes.util.find_library("m"), "libm.so.6"):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


_LIBM = _libm()
_FNS: dict[tuple[str, int, bool], object] = {}


def _cfn(name: str, nargs: int, single: bool):
    key = (name, nargs, single)
    if key not in _FNS:
        f = None
        if _LIBM is not None:
            try:
                f = getattr(_LIBM, name + ("f" if single else ""))
                t = ctypes.c_float if single else ctypes.c_double
                f.restype, f.argtypes = t, [t] * nargs
            except AttributeError:
                f = None
        _FNS[key] = f
    return _FNS[key]


_NUMPY_MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
               "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin,
               "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
               "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
               "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
               "pow": np.power, "atan2": np.arctan2, "hypot": np.hypot, "fmod": np.fmod,
               "copysign": np.copysign, "nextafter": np.nextafter}
EXACT = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.rint,
          "nearbyint": np.rint, "fabs": np.fabs}


def math_call(name: str, args: list, d: DataType):
    t = NP[d.base]
    with np.errstate(all="ignore"):
        if name in EXACT:
            return t(EXACT[name](args[0]))
        if name == "sigmoid":
            one = t(1.0)
            return t(one / (one + math_call("exp", [t(-args[0])], d)))
        if name == "rsqrt":
            return t(t(1.0) / t(np.sqrt(args[0])))
        if name == "fma":
            return t(float(args[0]) * float(args[1]) + float(args[2])) if d.base == "float64" \
                else t(np.float64(args[0]) * np.float64(args[1]) + np.float64(args[2]))
        if name == "erf":
            return t(math.erf(float(args[0])))
        single = d.base in ("float16", "float32")
        f = _cfn(name, len(args), single)
        if f is not None:
            return t(f(*[float(a) for a in args]))
        if name not in _NUMPY_MATH:
            raise Unsupported(f"T.{name}")
        wide = np.float32 if single else np.float64
        return t(_NUMPY_MATH[name](*[wide(a) for a in args]))


# -- memory ---------------------------------------------------------------------------
class View:
    """A buffer bound to flat storage: shape, row-major strides, element offset."""

    __slots__ = ("buffer", "storage", "shape", "strides", "offset")

    def __init__(self, buffer: Buffer, storage: np.ndarray, shape, strides, offset: int):
        self.buffer, self.storage = buffer, storage
        self.shape, self.strides, self.offset = shape, strides, offset

    def flat(self, idx: list[int]) -> int:
        if len(idx) != len(self.shape):
            raise Unsupported(f"{len(idx)} indices into {self.buffer.name}")
        pos = self.offset
        for i, n, s in zip(idx, self.shape, self.strides):
            if not 0 <= i < n:
                raise Undefined(f"index {i} out of bounds of {self.buffer.name} (size {n})")
            pos += i * s
        if not 0 <= pos < self.storage.size:
            raise Undefined(f"{self.buffer.name}: element {pos} outside its memory")
        return pos


class Evaluator:
    def __init__(self, mod: IRModule, max_steps: int = MAX_STEPS):
        self.mod = mod
        self.steps = 0
        self.max_steps = max_steps

    # -- calls ----------------------------------------------------------------------
    def call(self, name: str, args: list) -> object:
        """Run function ``name``; a buffer parameter takes a NumPy array (changed in
        place), a scalar one a number. Returns the function's return value, if any."""
        func = self.mod[name]
        if len(args) != len(func.params):
            raise ValueError(f"{name} takes {len(func.params)} arguments, not {len(args)}")
        env: dict[int, object] = {}
        views: dict[int, View] = {}
        for p, a in zip(func.params, args):
            buf = func.buffer_of(p)
            if buf is not None:
                storage = a.storage if isinstance(a, View) else _flat(a)
                env[id(p)] = storage
                base = a.offset if isinstance(a, View) else 0
                shape = [int(x) for x in (a.shape if isinstance(a, View) else np.shape(a))]
                self._bind_buffer(buf, storage, env, views, base, shape)
            elif p.dtype.is_handle:
                env[id(p)] = a.storage if isinstance(a, View) else _flat(a)
            else:
                env[id(p)] = scalar(a, p.dtype)
        try:
            self.stmt(func.body, env, views)
        except _Return as r:
            return r.value
        return None

    def _bind_buffer(self, buf: Buffer, storage, env, views, base: int, shape) -> None:
        if buf.dtype.is_subbyte:  # a packed array's bytes, passed on (no view: _view)
            env[id(buf.data)] = storage
            return
        if len(buf.shape) != len(shape) and len(buf.shape) != 1:
            raise Undefined(f"{buf.name}: {len(shape)}-d argument for a {len(buf.shape)}-d buffer")
        if len(buf.shape) == len(shape):
            for e, n in zip(buf.shape, shape):
                if isinstance(e, Var) and id(e) not in env:
                    env[id(e)] = wrap(n, e.dtype)
                elif int(self.expr(e, env, views)) != n:
                    raise Undefined(f"{buf.name}: argument of shape {tuple(shape)}")
        env[id(buf.data)] = storage
        views[id(buf)] = self._view(buf, storage, env, views, base)

    def _view(self, buf: Buffer, storage, env, views, base: int = 0) -> View | None:
        """None for packed sub-byte elements: this evaluator indexes NumPy arrays by
        element, so their loads and stores are Unsupported (the SIMT interpreter runs them)."""
        if buf.dtype.is_subbyte:
            return None
        shape = [int(self.expr(e, env, views)) for e in buf.shape]
        if buf.strides:
            strides = [int(self.expr(e, env, views)) for e in buf.strides]
        else:
            strides, s = [], 1
            for n in reversed(shape):
                strides.insert(0, s)
                s *= n
        off = base + (int(self.expr(buf.elem_offset, env, views)) if buf.elem_offset is not None else 0)
        return View(buf, storage, shape, strides, off)

    def _module_call(self, e: Call, env, views):
        callee = self.mod[e.op.name]
        args = []
        for a, p in zip(e.args, callee.params):
            if isinstance(a, Buffer):
                v = views[id(a)]
                if v is None:
                    raise Unsupported(f"a call with packed sub-byte buffer {a.name}")
                args.append(v)
            else:
                args.append(self.expr(a, env, views))
        return Evaluator.call(self, e.op.name, args)

    # -- statements -----------------------------------------------------------------
    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise Undefined("the program runs too long")

    def stmt(self, s: Stmt, env, views) -> None:
        self.tick()
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                self.stmt(x, env, views)
        elif isinstance(s, BufferStore):
            v = views.get(id(s.buffer))
            if v is None:
                raise Unsupported(f"store to unknown buffer {s.buffer.name}")
            idx = [int(self.expr(i, env, views)) for i in s.indices]
            value = self.expr(s.value, env, views)
            if s.value.dtype != s.buffer.dtype:
                raise Unsupported("store of another dtype")
            v.storage[v.flat(idx)] = value
        elif isinstance(s, LetStmt):
            env[id(s.var)] = self.expr(s.value, env, views)
            self.stmt(s.body, env, views)
        elif isinstance(s, For):
            self.loop(s, env, views)
        elif isinstance(s, IfThenElse):
            if self.expr(s.condition, env, views):
                self.stmt(s.then_case, env, views)
            elif s.else_case is not None:
                self.stmt(s.else_case, env, views)
        elif isinstance(s, Evaluate):
            self.expr(s.value, env, views)
        elif isinstance(s, AllocBuffer):
            b = s.buffer
            n = 1
            for e in b.shape:
                n *= int(self.expr(e, env, views))
            storage = np.zeros(n, np_type(b.dtype))
            env[id(b.data)] = storage
            views[id(b)] = self._view(b, storage, env, views)
            self.stmt(s.body, env, views)
        elif isinstance(s, DeclBuffer):
            storage = env.get(id(s.buffer.data))
            if storage is None:
                raise Unsupported(f"decl_buffer over unknown data {s.buffer.data.name}")
            views[id(s.buffer)] = self._view(s.buffer, storage, env, views)
            self.stmt(s.body, env, views)
        elif isinstance(s, AttrStmt):
            self.stmt(s.body, env, views)
        elif isinstance(s, AssertStmt):
            if not self.expr(s.condition, env, views):
                raise Undefined(f"assertion fails: {''.join(s.message)}")
            self.stmt(s.body, env, views)
        elif isinstance(s, Return):
            raise _Return(self.expr(s.value, env, views))
        elif isinstance(s, While):
            try:
                while self.expr(s.condition, env, views):
                    self.tick()
                    try:
                        self.stmt(s.body, env, views)
                    except _Continue:
                        pass
            except _Break:
                pass
        elif isinstance(s, Break):
            raise _Break()
        elif isinstance(s, Continue):
            raise _Continue()
        else:
            raise Unsupported(type(s).__name__)

    def loop(self, s: For, env, views) -> None:
        if s.kind == "thread_binding":
            raise Unsupported("thread-bound loops")
        lo = int(self.expr(s.min, env, views))
        ext = int(self.expr(s.extent, env, views))
        step = int(self.expr(s.step, env, views)) if s.step is not None else 1
        d = s.loop_var.dtype
        try:
            for i in range(lo, lo + ext, step):
                env[id(s.loop_var)] = wrap(i, d)
                try:
                    self.stmt(s.body, env, views)
                except _Continue:
                    pass
        except _Break:
            pass

    # -- expressions ----------------------------------------------------------------
    def expr(self, e: PrimExpr, env, views):
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise Unsupported(type(e).__name__)
        return method(e, env, views)

    def e_IntImm(self, e: IntImm, env, views):
        return wrap(e.value, e.dtype)

    def e_FloatImm(self, e: FloatImm, env, views):
        return np_type(e.dtype)(e.value)

    def e_StringImm(self, e: StringImm, env, views):
        return e.value

    def e_Var(self, e: Var, env, views):
        try:
            return env[id(e)]
        except KeyError:
            raise Unsupported(f"unbound variable {e.name}") from None

    def e_Let(self, e: Let, env, views):
        env[id(e.var)] = self.expr(e.value, env, views)
        return self.expr(e.body, env, views)

    def e_Not(self, e: Not, env, views):
        return np.bool_(not self.expr(e.a, env, views))

    def e_Select(self, e: Select, env, views):
        c = self.expr(e.condition, env, views)
        # both branches are evaluated; a poison value in the one not taken is harmless,
        # immediate undefined behaviour (a bad load or division) is not
        taken, other = (e.true_value, e.false_value) if c else (e.false_value, e.true_value)
        try:
            self.expr(other, env, views)
        except _Poison:
            pass
        return self.expr(taken, env, views)

    def e_BufferLoad(self, e: BufferLoad, env, views):
        v = views.get(id(e.buffer))
        if v is None:
            raise Unsupported(f"load of unknown buffer {e.buffer.name}")
        idx = [int(self.expr(i, env, views)) for i in e.indices]
        return np_type(e.dtype)(v.storage[v.flat(idx)])

    def e_Cast(self, e: Cast, env, views):
        return convert(self.expr(e.value, env, views), e.value.dtype, e.dtype)

    def e_BinOp(self, e: BinOp, env, views):
        op = e.op
        if op == "and":  # both sides are evaluated (no side effects in expressions)
            a = self.expr(e.a, env, views)
            return np.bool_(bool(self.expr(e.b, env, views)) and bool(a))
        if op == "or":
            a = self.expr(e.a, env, views)
            return np.bool_(bool(self.expr(e.b, env, views)) or bool(a))
        a, b = self.expr(e.a, env, views), self.expr(e.b, env, views)
        return binop(op, a, b, e.a.dtype, e.dtype)

    def e_Call(self, e: Call, env, views):
        if isinstance(e.op, GlobalVar):
            return self._module_call(e, env, views)
        name, d = e.op, e.dtype
        if name == "if_then_else":
            c = self.expr(e.args[0], env, views)
            return self.expr(e.args[1] if c else e.args[2], env, views)
        if name in ("likely", "tvm_thread_invariant"):
            return self.expr(e.args[0], env, views)
        args = [self.expr(a, env, views) for a in e.args]
        if name == "abs":
            if d.is_float:
                return math_call("fabs", args, d)
            return wrap(abs(int(args[0])), d)
        if name in ("isnan", "isinf", "isfinite"):
            x = float(args[0]) if e.args[0].dtype.is_float else 0.0
            return np.bool_({"isnan": math.isnan, "isinf": math.isinf,
                             "isfinite": math.isfinite}[name](x))
        if name == "bitwise_not":
            return wrap(~int(args[0]), d)
        if name == "popcount":
            return wrap(bin(int(args[0]) & ((1 << d.bits) - 1)).count("1"), d)
        if name == "clz":
            x = int(args[0]) & ((1 << d.bits) - 1)
            return wrap(d.bits - x.bit_length(), d)
        if name == "reinterpret":
            src = e.args[1].dtype
            return np.array([args[1]], np_type(src)).view(np_type(d))[0]
        if d.is_float and name in MATH_OK:
            return math_call(name, [np_type(d)(a) for a in args], d)
        raise Unsupported(f"T.{name}")


MATH_OK = frozenset(list(_NUMPY_MATH) + list(EXACT) + ["sigmoid", "rsqrt", "fma", "erf"])


class _Poison(Undefined):
    """Undefined, but only if used: LLVM poison (a bad cast, a bad shift)."""


def _flat(a) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise TypeError("a buffer argument must be a NumPy array")
    if not a.flags.c_contiguous:
        raise ValueError("buffer arguments must be C-contiguous")
    return a.reshape(-1)


def scalar(a, d: DataType):
    t = np_type(d)
    if d.is_float:
        return t(a)
    if d.is_bool:
        return np.bool_(bool(a))
    return wrap(int(a), d)


def convert(v, src: DataType, dst: DataType):
    """C/LLVM conversion of scalar ``v`` from ``src`` to ``dst``."""
    if src == dst:
        return v
    t = np_type(dst)
    if dst.is_bool:
        return np.bool_(v != 0) if not src.is_float else np.bool_(not (float(v) == 0.0))
    if dst.is_float:
        if src.is_float:
            with np.errstate(all="ignore"):
                return t(v)
        # int / bool -> float: round to nearest, once (NumPy's array cast is C's)
        if dst.base == "float16" and abs(int(v)) >= 65520:
            return t(math.copysign(math.inf, int(v)))
        with np.errstate(all="ignore"):
            return np.array([v], np_type(src)).astype(t)[0]
    # to an integer type
    if src.is_float:
        x = float(v)
        if math.isnan(x) or math.isinf(x):
            raise _Poison(f"cast of {x} to {dst}")
        i = math.trunc(x)
        lo, hi = int_bounds(dst)
        if not lo <= i <= hi:
            raise _Poison(f"cast of {x} to {dst} is out of range")
        return t(i)
    return wrap(int(v), dst)


_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def binop(op: str, a, b, d: DataType, out: DataType):
    """``a op b`` for operands of dtype ``d`` (result dtype ``out``)."""
    if op in _CMP:
        if d.is_float:
            return np.bool_(_CMP[op](float(a), float(b)))
        return np.bool_(_CMP[op](int(a), int(b)))
    if d.is_float:
        t = np_type(d)
        x, y = t(a), t(b)
        if op in ("min", "max"):
            if math.isnan(float(x)) or math.isnan(float(y)):
                raise Undefined(f"NaN in a float {op}")
            less = float(x) < float(y)
            return (x if less else y) if op == "min" else (y if less else x)
        with np.errstate(all="ignore"):
            if op == "add":
                return t(x + y)
            if op == "sub":
                return t(x - y)
            if op == "mul":
                return t(x * y)
            if op == "div":
                return t(x / y)
            if op == "mod":
                return t(np.fmod(x, y))
            if op in ("floordiv", "floormod"):
                q = t(np.floor(t(x / y)))
                return q if op == "floordiv" else t(x - t(q * y))
        raise Unsupported(f"float {op}")
    if d.is_bool and op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        x, y = bool(a), bool(b)
        return np.bool_({"bitwise_and": x and y, "bitwise_or": x or y, "bitwise_xor": x != y}[op])
    x, y = int(a), int(b)
    if op == "add":
        return wrap(x + y, d)
    if op == "sub":
        return wrap(x - y, d)
    if op == "mul":
        return wrap(x * y, d)
    if op == "min":
        return wrap(min(x, y), d)
    if op == "max":
        return wrap(max(x, y), d)
    if op == "bitwise_and":
        return wrap(x & y, d)
    if op == "bitwise_or":
        return wrap(x | y, d)
    if op == "bitwise_xor":
        return wrap(x ^ y, d)
    if op in ("shift_left", "shift_right"):
        if not 0 <= y < d.bits:
            raise _Poison(f"shift of {d} by {y}")
        return wrap(x << y, d) if op == "shift_left" else wrap(x >> y, d)
    if op in ("div", "mod", "floordiv", "floormod"):
        if y == 0:
            raise Undefined(f"{op} by zero")
        lo, _ = int_bounds(d)
        if d.is_int and x == lo and y == -1:
            raise Undefined(f"{op} of the minimum {d} by -1")
        if op == "floordiv":
            return wrap(x // y, d)
        if op == "floormod":
            return wrap(x % y, d)
        q = abs(x) // abs(y)
        if (x < 0) != (y < 0):
            q = -q
        return wrap(q, d) if op == "div" else wrap(x - q * y, d)
    raise Unsupported(f"integer {op}")


def run(mod: IRModule, name: str, args: list) -> object:
    """Evaluate ``mod[name]`` on ``args`` (arrays are changed in place)."""
    return Evaluator(mod).call(name, args)
