"""TIR dtypes as LLVM types: the register form (bool is ``i1``) and the memory form
(bool is stored in a byte, as DLPack does), constants, and intrinsic name mangling."""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm.llvmlite_compat import ScalableVectorType, is_scalable
from tirc.diagnostics import Diagnostic, Span
from tirc.ir.dtype import DataType

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F64 = ir.DoubleType()
_FLOATS = {"float16": ir.HalfType(), "float32": ir.FloatType(), "float64": ir.DoubleType()}


_POINTERS: dict[int, ir.PointerType] = {}


def pointer_type(addrspace: int = 0) -> ir.PointerType:
    """The opaque ``ptr`` of ``addrspace``, one object each (its text made once)."""
    t = _POINTERS.get(addrspace)
    if t is None:
        t = _POINTERS[addrspace] = ir.PointerType(addrspace=addrspace)
    return t


def scalar_type(d: DataType, ptr: ir.Type, span: Span | None = None) -> ir.Type:
    """The register type of one lane of ``d``; ``ptr`` is the type handles get."""
    if d.is_bool:
        return I1
    if d.is_integer:
        return ir.IntType(d.bits)
    if d.base in _FLOATS:
        return _FLOATS[d.base]
    if d.is_handle:
        return ptr
    if d.is_void:
        return ir.VoidType()
    raise Diagnostic(f"dtype {d.base} cannot be compiled by the LLVM backend (it should have "
                     f"been legalized to an integer storage type)", span)


def vector_of(t: ir.Type, d: DataType) -> ir.Type:
    """``t`` with the lanes of ``d``: ``<4 x t>``, ``<vscale x 4 x t>`` or ``t`` itself."""
    if d.scalable:
        return ScalableVectorType(t, d.lanes)
    return ir.VectorType(t, d.lanes) if d.lanes > 1 else t


def vector_like(t: ir.Type, like: ir.Type) -> ir.Type:
    """``t`` with the lanes of LLVM type ``like`` (scalable or not; a scalar: ``t``)."""
    if is_scalable(like):
        return ScalableVectorType(t, like.count)
    return ir.VectorType(t, like.count) if isinstance(like, ir.VectorType) else t


def value_type(d: DataType, ptr: ir.Type, span: Span | None = None) -> ir.Type:
    return vector_of(scalar_type(d, ptr, span), d)


def memory_type(d: DataType, ptr: ir.Type, span: Span | None = None) -> ir.Type:
    """What a buffer element of ``d`` occupies in memory (bool: a byte)."""
    return vector_of(I8 if d.is_bool else scalar_type(d, ptr, span), d)


def stride_type(d: DataType, ptr: ir.Type, span: Span | None = None) -> ir.Type:
    """The type whose size is the distance between a buffer's elements: ``byte_size``
    apart, packed, as DLPack lays tensors out. An LLVM vector of 3 (or any count whose
    size is not a power of two) takes more room than its elements (16 bytes for
    ``<3 x float>``), so such elements are stepped over as an array of their lanes."""
    t = memory_type(d, ptr, span)
    if d.scalable:
        raise Diagnostic(f"a buffer of scalable vectors ({d}) is not supported", span)
    if d.lanes > 1 and byte_size(d) & (byte_size(d) - 1):
        return ir.ArrayType(t.element, d.lanes)
    return t


def access_align(nbytes: int) -> int:
    """The alignment an access of ``nbytes``-aligned data may claim: a power of two."""
    return max(1, nbytes & -nbytes)


def byte_size(d: DataType) -> int:
    """Bytes of ``d``; of a scalable vector, its least size (``vscale`` 1); of packed
    sub-byte integers, the bytes they fill (``int4x8``: 4; a part of a byte counts 1)."""
    if d.is_subbyte:
        return (d.bits * d.lanes + 7) // 8
    return (1 if d.is_bool else max(1, d.bits // 8)) * d.lanes


def const(d: DataType, value: float, ptr: ir.Type) -> ir.Constant:
    t = scalar_type(d, ptr)
    if d.is_bool:
        c = ir.Constant(I1, 1 if value else 0)
    elif d.is_integer:
        c = ir.Constant(t, int(value) & ((1 << d.bits) - 1))
    elif d.is_float:
        c = ir.Constant(t, float(value))
    elif d.is_handle:
        c = ir.Constant(t, None)
    else:
        raise Diagnostic(f"no constant of dtype {d}")
    if d.lanes > 1 or d.scalable:
        return ir.Constant(vector_of(t, d), [c] * d.lanes)
    return c


def mangle(t: ir.Type) -> str:
    """The type suffix of an overloaded LLVM intrinsic: ``f32``, ``v4f32``, ``i64``."""
    if isinstance(t, ir.VectorType):
        return f"{'nxv' if is_scalable(t) else 'v'}{t.count}{mangle(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return {"half": "f16", "float": "f32", "double": "f64"}[str(t)]


def is_vector(t: ir.Type) -> bool:
    return isinstance(t, ir.VectorType)
