"""The tvm-ffi packed calling convention as IR: the constants MakePackedAPI writes and
the host code generator reads, and small builders for the intrinsics it introduces.

``int __tvm_ffi_<name>(void* self, const TVMFFIAny* args, int32_t num_args,
TVMFFIAny* result)`` (``tvm/ffi/c_api.h``). Intrinsics (declared in ``tirc.ir.ops``):

``T.tvm_struct_get(ptr, index, field, dtype)`` -> dtype
    Load field ``field`` of element ``index`` of the struct array at ``ptr``.
    ``DLTensor`` fields: ``ARR_DATA`` 1 (void*), ``ARR_SHAPE`` 2 (int64_t*),
    ``ARR_STRIDES`` 3 (int64_t*, may be NULL), ``ARR_NDIM`` 4 (int32), ``ARR_CODE`` 5
    (uint8), ``ARR_BITS`` 6 (uint8), ``ARR_LANES`` 7 (uint16), ``ARR_BYTE_OFFSET`` 8
    (uint64), ``ARR_DEVICE_ID`` 9 (int32), ``ARR_DEVICE_TYPE`` 10 (int32).
    ``TVMFFIAny`` fields: ``ANY_TYPE_INDEX`` 13 (int32), ``ANY_PADDING`` 14 (uint32,
    ``zero_padding``), ``ANY_VALUE`` 15 (the value union, read as int64, float64 or a
    handle as ``dtype`` says). ``INT64_ELEM`` 17: element ``index`` of an ``int64_t``
    array (``ptr`` is the array). The numbers are TVM's ``TVMStructFieldKind``.
``T.tvm_struct_set(ptr, index, field, value)`` -> int32
    Store ``value`` into that field, converted to the field's C type (used on
    ``result``: type index, padding, value).
``T.handle_add_byte_offset(ptr, bytes)`` -> handle
    ``(char*)ptr + bytes``.
``T.isnullptr(ptr)`` -> bool
    ``ptr == NULL`` (an existing intrinsic).
"""
from __future__ import annotations

from tirc.diagnostics import Span
from tirc.ir.buffer import Buffer
from tirc.ir.const_fold import int_range, try_const_fold
from tirc.ir.dtype import BOOL, INT32, INT64, DataType
from tirc.ir.expr import BinOp, Call, Cast, FloatImm, IntImm, Not, PrimExpr
from tirc.ir.stmt import Evaluate, Stmt
from tirc.ir.index_arith import widen as wide  # noqa: F401  (used by both ABIs)

# tvm-ffi type indices (TVMFFITypeIndex).
NONE, INT, BOOL_T, FLOAT, OPAQUE_PTR, DLTENSOR_PTR, RAW_STR = 0, 1, 2, 3, 4, 7, 8
OBJECT_BEGIN, TENSOR = 64, 70
TENSOR_HEADER_BYTES = 24  # sizeof(TVMFFIObject): a Tensor object's DLTensor follows it

# Struct fields (TVM's TVMStructFieldKind numbering).
ARR_DATA, ARR_SHAPE, ARR_STRIDES, ARR_NDIM, ARR_CODE, ARR_BITS, ARR_LANES = 1, 2, 3, 4, 5, 6, 7
ARR_BYTE_OFFSET, ARR_DEVICE_ID, ARR_DEVICE_TYPE = 8, 9, 10
ANY_TYPE_INDEX, ANY_PADDING, ANY_VALUE, INT64_ELEM = 13, 14, 15, 17

# DLPack dtype codes (dlpack.h DLDataTypeCode).
_FLOAT8 = ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
           "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
_CODES = {**{n: 7 + i for i, n in enumerate(_FLOAT8)}, "float6_e2m3fn": 15,
          "float6_e3m2fn": 16, "float4_e2m1fn": 17, "bfloat16": 4, "bool": 6}

UINT64, FLOAT64, UINT8, UINT16 = (DataType(n) for n in ("uint64", "float64", "uint8", "uint16"))


def dl_dtype(dtype: DataType) -> tuple[int, int, int]:
    """DLPack's (code, bits, lanes) of a tensor element type; bool is stored in 8 bits."""
    if dtype.base in _CODES:
        code = _CODES[dtype.base]
    else:
        code = 1 if dtype.is_uint else 0 if dtype.is_int else 2 if dtype.is_float else 3
    return code, 8 if dtype.is_bool else dtype.bits, dtype.lanes


def i32(v: int) -> IntImm:
    return IntImm(INT32, v)


def struct_get(ptr: PrimExpr, index: int, field: int, dtype: DataType) -> Call:
    return Call(dtype, "tvm_struct_get", (ptr, i32(index), i32(field)))


def struct_set(ptr: PrimExpr, field: int, value: PrimExpr, span: Span | None = None) -> Stmt:
    return Evaluate(Call(INT32, "tvm_struct_set", (ptr, i32(0), i32(field), value)), span)


def not_null(ptr: PrimExpr) -> PrimExpr:
    return Not(Call(BOOL, "isnullptr", (ptr,)))


def cast(dtype: DataType, e: PrimExpr) -> PrimExpr:
    """``e`` as ``dtype``; constants are converted rather than wrapped."""
    if e.dtype == dtype:
        return e
    if isinstance(e, IntImm) and dtype.is_integer and not e.dtype.is_bool:
        return IntImm(dtype, e.value)
    if isinstance(e, (IntImm, FloatImm)) and dtype.is_float and not e.dtype.is_bool:
        return FloatImm(dtype, float(e.value))
    return Cast(dtype, e)


def binop(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    dtype = BOOL if op in ("eq", "ne", "lt", "le", "gt", "ge", "and", "or") else a.dtype
    return BinOp(op, a, b, dtype)


def fold(op: str, conds: list[PrimExpr]) -> PrimExpr:
    """``c0 op c1 op ...`` (``and``/``or``), left to right."""
    out = conds[0]
    for c in conds[1:]:
        out = binop(op, out, c)
    return out


def mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    b = cast(a.dtype, b)
    folded = try_const_fold("mul", a, b, a.dtype)
    return folded if folded is not None else binop("mul", a, b)


def any_value(value: PrimExpr) -> tuple[int, PrimExpr] | None:
    """The type index and union value a ``TVMFFIAny`` holds for ``value`` (None: no form)."""
    d = value.dtype
    if d.lanes != 1:
        return None
    if d.is_handle:
        return OPAQUE_PTR, value
    if d.is_bool:
        return BOOL_T, Cast(INT64, value)
    if d.is_integer:
        return INT, cast(INT64, value)
    if d.is_float:
        return FLOAT, cast(FLOAT64, value)
    return None


def empty_condition(buf: Buffer) -> PrimExpr | None:
    """True when ``buf`` has no elements: some dimension is 0 (tested one by one, so no
    product can wrap to 0). None when no dimension can be 0; True (an IntImm) when one is."""
    conds = []
    for s in buf.shape:
        if isinstance(s, IntImm):
            if s.value == 0:
                return IntImm(BOOL, 1)
            continue
        conds.append(binop("eq", s, IntImm(s.dtype, 0)))
    return fold("or", conds) if conds else None


def dtype_range(dtype: DataType) -> tuple[int, int]:
    """The smallest and largest value of the integer ``dtype``."""
    limits = int_range(dtype)
    assert limits is not None, dtype
    return limits


def fits(value: PrimExpr, dtype: DataType, non_negative: bool = False) -> PrimExpr | None:
    """``value`` (int64, or uint64 for a byte offset) lies in ``dtype``'s range (and is
    at least 0 with ``non_negative``); None when every value does."""
    lo, hi = dtype_range(dtype)
    if non_negative:
        lo = max(lo, 0)
    vlo, vhi = dtype_range(value.dtype)
    conds = []
    if lo > vlo:
        conds.append(binop("ge", value, IntImm(value.dtype, lo)))
    if hi < vhi:
        conds.append(binop("le", value, IntImm(value.dtype, hi)))
    return fold("and", conds) if conds else None


def range_text(dtype: DataType, non_negative: bool = False) -> str:
    lo, hi = dtype_range(dtype)
    return f"{max(lo, 0) if non_negative else lo} to {hi}"


def compact_condition(buf: Buffer, strides: PrimExpr) -> PrimExpr | None:
    """The strides array at ``strides`` is row-major for ``buf``'s shape, compared in
    64 bits (an int32 product of sizes could wrap to the stride given); dimensions of
    extent 1 may have any stride, and an empty tensor (a dimension of 0) any strides.
    None when nothing needs checking."""
    conds = []
    for k in reversed(range(buf.ndim)):
        s = buf.shape[k]
        if isinstance(s, IntImm) and s.value == 1:
            continue
        expect: PrimExpr = IntImm(INT64, 1)
        for t in buf.shape[k + 1:]:
            expect = mul(expect, wide(t))
        c = binop("eq", expect, struct_get(strides, k, INT64_ELEM, INT64))
        conds.append(c if isinstance(s, IntImm) else binop("or", binop("eq", s, IntImm(s.dtype, 1)), c))
    if not conds:
        return None
    empty = empty_condition(buf)
    if isinstance(empty, IntImm):
        return None
    cond = fold("and", conds)
    return cond if empty is None else binop("or", empty, cond)
