"""Element types of runtime arrays: TVM's names, NumPy dtypes, DLPack type codes.

NumPy lacks bfloat16 and the float8 formats; ml_dtypes supplies them when it is
installed (it is optional: without it those dtypes raise a clear error).
"""
from __future__ import annotations

import numpy as np

# DLPack's DLDataTypeCode values (dlpack.h, version 1.x).
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool = 0, 1, 2, 4, 6
_FLOAT8_CODES = {
    "float8_e3m4": 7, "float8_e4m3": 8, "float8_e4m3b11fnuz": 9, "float8_e4m3fn": 10,
    "float8_e4m3fnuz": 11, "float8_e5m2": 12, "float8_e5m2fnuz": 13, "float8_e8m0fnu": 14,
}
_NUMPY_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "float32", "float64")
_ML_NAMES = ("bfloat16", *_FLOAT8_CODES)
# Older TVM spellings of the float8 formats.
_ALIASES = {"e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2"}
_SUBBYTE = ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "int4", "uint4")

SUPPORTED = _NUMPY_NAMES + _ML_NAMES


def _ml_dtypes():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes


def as_dtype(value) -> np.dtype:
    """The NumPy dtype for ``value``: a TVM name (``"float32"``, ``"bfloat16"``,
    ``"float8_e4m3fn"``), a NumPy dtype or scalar type, or a tirc ``DataType``.
    Raises TypeError/ValueError naming what is not supported."""
    if isinstance(value, np.dtype):
        return _checked(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return _checked(np.dtype(value))
    if value is bool or value is int or value is float:
        return _checked(np.dtype(value))
    if hasattr(value, "lanes") and hasattr(value, "base"):  # tirc.ir.dtype.DataType
        value = str(value)
    if not isinstance(value, str):
        raise TypeError(f"dtype must be a name like 'float32' or a NumPy dtype, "
                        f"not {type(value).__name__}")
    name = _ALIASES.get(value.strip(), value.strip())
    if name in _NUMPY_NAMES:
        return np.dtype(name)
    if name in _ML_NAMES:
        ml = _ml_dtypes()
        if ml is None:
            raise ValueError(f"dtype '{name}' needs the ml_dtypes package, which is not "
                             f"installed (pip install ml_dtypes)")
        return np.dtype(getattr(ml, name))
    if name in _SUBBYTE:
        raise ValueError(f"dtype '{name}' is a sub-byte type; runtime arrays do not "
                         f"support packed sub-byte elements")
    if "x" in name and name.rsplit("x", 1)[-1].isdigit():
        raise ValueError(f"dtype '{name}' has vector lanes; runtime arrays take scalar "
                         f"element types (use a trailing dimension instead)")
    raise ValueError(f"unknown dtype '{value}'; supported: {', '.join(SUPPORTED)}")


def _checked(dt: np.dtype) -> np.dtype:
    if dt.name in SUPPORTED:
        return dt
    raise ValueError(f"dtype '{dt}' is not supported by runtime arrays; "
                     f"supported: {', '.join(SUPPORTED)}")


def dtype_name(dt: np.dtype) -> str:
    """TVM's name of a supported dtype (the NumPy name, which coincides)."""
    return dt.name


def to_dlpack(dt: np.dtype) -> tuple[int, int, int]:
    """(code, bits, lanes) of a supported dtype."""
    name = dt.name
    if name == "bool":
        return kDLBool, 8, 1
    if name == "bfloat16":
        return kDLBfloat, 16, 1
    if name in _FLOAT8_CODES:
        return _FLOAT8_CODES[name], 8, 1
    kind = {"i": kDLInt, "u": kDLUInt, "f": kDLFloat}[dt.kind]
    return kind, dt.itemsize * 8, 1


_FROM_CODE = {code: name for name, code in _FLOAT8_CODES.items()}


def from_dlpack(code: int, bits: int, lanes: int) -> np.dtype:
    """The NumPy dtype of a DLPack (code, bits, lanes) triple."""
    if lanes != 1:
        raise ValueError(f"DLPack tensors with {lanes} vector lanes are not supported")
    if code == kDLBool and bits == 8:
        return np.dtype("bool")
    if code == kDLInt and bits in (8, 16, 32, 64):
        return np.dtype(f"int{bits}")
    if code == kDLUInt and bits == 1:  # some producers spell bool this way
        raise ValueError("DLPack uint1 (packed bits) is not supported")
    if code == kDLUInt and bits in (8, 16, 32, 64):
        return np.dtype(f"uint{bits}")
    if code == kDLFloat and bits in (16, 32, 64):
        return np.dtype(f"float{bits}")
    if code == kDLBfloat and bits == 16:
        return as_dtype("bfloat16")
    if code in _FROM_CODE and bits == 8:
        return as_dtype(_FROM_CODE[code])
    raise ValueError(f"DLPack dtype (code={code}, bits={bits}) is not supported")
