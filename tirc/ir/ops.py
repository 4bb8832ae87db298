"""The intrinsics ``T.<name>(...)`` the front end knows, with arity and result type.

``result`` says how a call's dtype is found:
  ``"arg0"``     the dtype of the first argument
  ``"arg1"``     the dtype of the second argument (``if_then_else``)
  ``"bool"``     bool, with the lanes of the first argument
  ``"int32"``    int32
  ``"handle"``   handle
  ``"dtype"``    the first argument is a dtype string (``call_extern("int32", ...)``)
  ``"dtype_last"`` the last argument is a dtype string (``tvm_struct_get(a, 0, 13, "int32")``)
  any dtype name that fixed dtype (``"uint32"``)
"""
from __future__ import annotations

from tirc.ir.dtype import BOOL, DataType, HANDLE, INT32, parse_dtype
from tirc.records import record


@record(frozen=True, slots=True)
class Intrinsic:
    name: str
    min_args: int
    max_args: int | None  # None: any number
    result: str
    pure: bool = True


_UNARY_MATH = ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
               "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
               "acosh", "atanh", "erf", "sigmoid", "floor", "ceil", "round", "trunc",
               "nearbyint", "fabs", "popcount", "clz", "likely", "bitwise_not")
_BINARY_MATH = ("pow", "atan2", "hypot", "copysign", "nextafter", "fmod", "ldexp")

INTRINSICS: dict[str, Intrinsic] = {}


def _add(name: str, lo: int, hi: int | None, result: str, pure: bool = True) -> None:
    INTRINSICS[name] = Intrinsic(name, lo, hi, result, pure)


for _n in _UNARY_MATH:
    _add(_n, 1, 1, "arg0")
for _n in _BINARY_MATH:
    _add(_n, 2, 2, "arg0")
_add("fma", 3, 3, "arg0")
# a condition LoopPartition must not partition on (it removes the call, keeping the argument)
_add("ignore_loop_partition", 1, 1, "arg0")
for _n in ("isnan", "isinf", "isfinite", "isnullptr"):
    _add(_n, 1, 1, "bool")
_add("if_then_else", 3, 3, "arg1")
_add("call_extern", 2, None, "dtype", pure=False)
_add("call_pure_extern", 2, None, "dtype")
_add("call_intrin", 2, None, "dtype", pure=False)
_add("call_llvm_intrin", 2, None, "dtype", pure=False)
_add("call_llvm_pure_intrin", 2, None, "dtype")
_add("reinterpret", 2, 2, "dtype")
_add("tvm_storage_sync", 1, 3, "int32", pure=False)
_add("address_of", 1, 1, "handle")
_add("type_annotation", 1, 1, "dtype")
_add("tvm_warp_activemask", 0, 0, "uint32", pure=False)
# (n, sources..., predicate, destinations..., reduction threads...): lowered by LowerThreadAllreduce
_add("tvm_thread_allreduce", 4, None, "void", pure=False)
for _n in ("tvm_warp_shuffle", "tvm_warp_shuffle_up", "tvm_warp_shuffle_down", "tvm_warp_shuffle_xor"):
    _add(_n, 5, 5, "arg1", pure=False)
_add("tvm_access_ptr", 5, 5, "handle")
for _n in ("call_packed", "call_cpacked", "tvm_call_packed", "tvm_call_cpacked"):
    _add(_n, 1, None, "int32", pure=False)
_add("call_ffi_kernel", 1, None, "int32", pure=False)
_add("tvm_throw_last_error", 0, 0, "int32", pure=False)
_add("tvm_thread_invariant", 1, 1, "arg0")
_add("assume", 1, 1, "bool")
_add("undef", 0, 0, "int32")
# scalable vectors (AArch64 SVE, RISC-V V): the target's vector length over its minimum
_add("vscale", 0, 0, "int32")
# predicated access (tirc/frontend/masked.py): the access is a BufferLoad argument
_add("get_active_lane_mask", 3, 3, "dtype")
_add("masked_load", 4, None, "dtype", pure=False)
_add("masked_store", 4, None, "void", pure=False)
_add("ret", 1, 1, "arg0", pure=False)
# The packed calling convention (MakePackedAPI): fields of DLTensor / TVMFFIAny structs.
_add("tvm_struct_get", 4, 4, "dtype_last")
_add("tvm_struct_set", 4, 4, "int32", pure=False)
_add("handle_add_byte_offset", 2, 2, "handle")
# TVM's arguments of a packed call built on the stack (te.extern's calls): an int64 array
# of the values, and a DLTensor (data, shape, strides (0: none), ndim, a value of the
# element dtype, elem_offset) passed as a tensor
_add("tvm_stack_make_shape", 0, None, "handle", pure=False)
_add("tvm_stack_make_array", 6, 6, "handle", pure=False)


def _add_ptx() -> None:
    """The PTX instructions of TVM's CUDA namespaces (``T.ptx_legacy.mma``, ...):
    ``tirc.ir.ptx_ops``."""
    from tirc.ir.ptx_ops import SIGNATURES
    for name, (lo, hi, result) in SIGNATURES.items():
        _add(name, lo, hi, result, pure=False)


_add_ptx()

# Names the front end builds into dedicated nodes rather than calls.
NODE_BUILDERS = ("Select", "Cast", "cast", "Ramp", "ramp", "Broadcast", "broadcast", "min",
                 "max", "Min", "Max", "floordiv", "floormod", "truncdiv", "truncmod", "Div",
                 "Mod", "FloorDiv", "FloorMod", "shift_left", "shift_right", "bitwise_and",
                 "bitwise_or", "bitwise_xor", "Let", "abs", "target", "max_value",
                 "min_value", "infinity", "Add", "Sub", "Mul", "EQ", "NE", "LT", "LE", "GT",
                 "GE", "And", "Or", "Not")


def result_dtype(intr: Intrinsic, arg_dtypes: list[DataType]) -> DataType | None:
    """The call's dtype, or None when it comes from a dtype argument."""

    if intr.result == "arg0":
        return arg_dtypes[0]
    if intr.result == "arg1":
        return arg_dtypes[1]
    if intr.result == "bool":
        return BOOL.with_lanes(arg_dtypes[0].lanes) if arg_dtypes else BOOL
    if intr.result == "int32":
        return INT32
    if intr.result == "handle":
        return HANDLE
    if intr.result in ("dtype", "dtype_last"):
        return None
    return parse_dtype(intr.result)
