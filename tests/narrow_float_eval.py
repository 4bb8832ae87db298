"""A NumPy evaluator for the integer/reinterpret expressions BF16StorageLegalize and
FP8StorageLegalize emit, so tests check the emitted IR itself against ml_dtypes (or a
reference written here when ml_dtypes is missing)."""
from __future__ import annotations

import numpy as np

from tirc.ir.expr import BinOp, Broadcast, BufferLoad, Call, Cast, FloatImm, IntImm, Let, Select, Var
from tirc.ir.stmt import BufferStore, For
from tirc.ir.visitor import walk

_NP = {"uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "int32": np.int32,
       "float32": np.float32, "bool": np.bool_}
_BIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "bitwise_and": np.bitwise_and,
        "bitwise_or": np.bitwise_or, "shift_left": np.left_shift, "shift_right": np.right_shift,
        "min": np.minimum, "max": np.maximum, "gt": np.greater, "ge": np.greater_equal,
        "lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal,
        "div": np.divide}


def evaluate(e, loads: dict[str, np.ndarray], env: dict[int, np.ndarray] | None = None):
    """Evaluate ``e`` elementwise; a load of buffer ``X`` reads ``loads["X"]``."""
    env = {} if env is None else env
    if isinstance(e, BufferLoad):
        return loads[e.buffer.name]
    if isinstance(e, Var):
        return env[id(e)]
    if isinstance(e, IntImm):
        return _NP[e.dtype.base](e.value)
    if isinstance(e, FloatImm):
        return np.float32(e.value)
    if isinstance(e, Broadcast):
        return evaluate(e.value, loads, env)
    if isinstance(e, Let):
        env[id(e.var)] = evaluate(e.value, loads, env)
        return evaluate(e.body, loads, env)
    if isinstance(e, Select):
        return np.where(evaluate(e.condition, loads, env), evaluate(e.true_value, loads, env),
                        evaluate(e.false_value, loads, env))
    if isinstance(e, Cast):
        return np.asarray(evaluate(e.value, loads, env)).astype(_NP[e.dtype.base])
    if isinstance(e, Call) and e.op == "reinterpret":
        return np.asarray(evaluate(e.args[0], loads, env)).view(_NP[e.dtype.base])
    if isinstance(e, BinOp):
        with np.errstate(all="ignore"):
            return _BIN[e.op](evaluate(e.a, loads, env), evaluate(e.b, loads, env))
    raise TypeError(f"cannot evaluate {type(e).__name__}")


def stored_value(func):
    """The value of the (single) store in the function's loop."""
    stores = [n for n in walk(func.body) if isinstance(n, BufferStore)]
    assert len(stores) == 1 and any(isinstance(n, For) for n in walk(func.body))
    return stores[0].value


def special_float32() -> np.ndarray:
    """Random float32 bit patterns plus zeros, infinities, NaNs, subnormals, extremes."""
    rng = np.random.default_rng(20240601)
    bits = rng.integers(0, 2 ** 32, 4000, dtype=np.uint64).astype(np.uint32)
    fixed = np.array([0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
                      0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                      0x3F808000, 0x3F818000, 0x3F80C000, 0x3F807FFF], np.uint32)
    values = np.concatenate([bits, fixed]).view(np.float32)
    normal = rng.normal(0, 8, 2000).astype(np.float32)
    small = rng.normal(0, 1e-3, 2000).astype(np.float32)
    return np.concatenate([values, normal, small])
