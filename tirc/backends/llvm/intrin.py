"""Calls: TIR intrinsics, math functions, C symbols, the packed-ABI struct accessors and
calls between functions of the module, lowered to LLVM for every target. A target
intercepts what is its own first (``LLVMTargetContext.lower_call``)."""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.diagnostics import Diagnostic
from tirc.ir.const_fold import fold_math_exact
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Call, GlobalVar, IntImm, StringImm
from tirc.ir import ffi_abi as abi

# (byte offset, LLVM type name) of DLTensor (48 bytes) and TVMFFIAny (16 bytes) fields.
DLTENSOR_FIELDS = {abi.ARR_DATA: (0, "ptr"), abi.ARR_DEVICE_TYPE: (8, "i32"),
             abi.ARR_DEVICE_ID: (12, "i32"), abi.ARR_NDIM: (16, "i32"), abi.ARR_CODE: (20, "i8"),
             abi.ARR_BITS: (21, "i8"), abi.ARR_LANES: (22, "i16"), abi.ARR_SHAPE: (24, "ptr"),
             abi.ARR_STRIDES: (32, "ptr"), abi.ARR_BYTE_OFFSET: (40, "i64")}
_ANY = {abi.ANY_TYPE_INDEX: (0, "i32"), abi.ANY_PADDING: (4, "i32"), abi.ANY_VALUE: (8, None)}
INT_TYPES = {"i8": ir.IntType(8), "i16": ir.IntType(16), "i32": lt.I32, "i64": lt.I64}


def lower_call(fl, call: Call) -> ir.Value:
    if isinstance(call.op, GlobalVar):
        return _module_call(fl, call)
    if call.op in _MATH_NAMES and call.dtype.is_float:
        exact = fold_math_exact(call.op, call.args, call.dtype)
        if exact is not None:
            return lt.const(call.dtype, exact.value, fl.ctx.pointer())
    value = fl.ctx.lower_call(fl, call)
    if value is not None:
        return value
    handler = _HANDLERS.get(call.op)
    if handler is not None:
        return handler(fl, call)
    if call.op in _MATH_NAMES:
        return _math(fl, call)
    raise Diagnostic(f"T.{call.op} is not supported by the LLVM backend", call.span)


def _const_int(call: Call, i: int) -> int:
    a = call.args[i]
    if not isinstance(a, IntImm):
        raise Diagnostic(f"argument {i} of T.{call.op} must be a constant integer", call.span)
    return a.value


def _name(call: Call) -> str:
    a = call.args[0] if call.args else None
    if not isinstance(a, StringImm):
        raise Diagnostic(f"T.{call.op} needs the function name as its first argument", call.span)
    return a.value


# -- math -------------------------------------------------------------------------------
_MATH_NAMES = ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
               "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh",
               "atanh", "erf", "sigmoid", "floor", "ceil", "round", "trunc", "nearbyint", "fabs",
               "pow", "atan2", "hypot", "copysign", "nextafter", "fmod", "ldexp", "fma")


def _math(fl, call: Call) -> ir.Value:
    d, name = call.dtype, call.op
    if not d.is_float:
        raise Diagnostic(f"T.{name} needs floating-point arguments, not {d}", call.span)
    args = [fl.expr(a) for a in call.args]
    args = [fl.convert(v, a.dtype, d, call.span) for v, a in zip(args, call.args)]
    one = lt.const(d, 1.0, fl.ctx.pointer())
    if name == "sigmoid":  # 1 / (1 + exp(-x))
        e = fl.math("exp", d.base, [fl.b.fneg(args[0])])
        return fl.b.fdiv(one, fl.b.fadd(one, e))
    if name == "rsqrt":
        return fl.b.fdiv(one, fl.math("sqrt", d.base, args))
    if name == "exp10":
        return fl.math("pow", d.base, [lt.const(d, 10.0, fl.ctx.pointer()), args[0]])
    if name == "ldexp":  # x * 2^e
        return fl.b.fmul(args[0], fl.math("exp2", d.base, [args[1]]))
    if name in ("asinh", "acosh", "atanh") and fl.ctx.math(name, d.base) is None:
        raise Diagnostic(f"T.{name} is not available on this target", call.span)
    return fl.math(name, d.base, args)


def _int_unary(intrinsic: str) -> Callable:
    def lower(fl, call: Call) -> ir.Value:
        x = fl.expr(call.args[0])
        if intrinsic == "llvm.ctlz":
            return fl.call_intrinsic(intrinsic, [x, ir.Constant(lt.I1, 0)])
        return fl.call_intrinsic(intrinsic, [x])
    return lower


def _bitwise_not(fl, call: Call) -> ir.Value:
    return fl.b.not_(fl.expr(call.args[0]))


def _float_test(kind: str) -> Callable:
    def lower(fl, call: Call) -> ir.Value:
        x, d = fl.expr(call.args[0]), call.args[0].dtype
        if not d.is_float:
            return lt.const(call.dtype, kind == "isfinite", fl.ctx.pointer())
        if kind == "isnan":
            return fl.b.fcmp_unordered("uno", x, x)
        inf = lt.const(d, float("inf"), fl.ctx.pointer())
        mag = fl.call_intrinsic("llvm.fabs", [x])
        return fl.b.fcmp_ordered("==", mag, inf) if kind == "isinf" else fl.b.fcmp_ordered("!=", mag, inf)
    return lower


# -- control and values -----------------------------------------------------------------
def _if_then_else(fl, call: Call) -> ir.Value:
    c = fl.expr(call.args[0])
    if lt.is_vector(c.type):
        return fl.b.select(c, fl.expr(call.args[1]), fl.expr(call.args[2]))
    then_bb, else_bb, end_bb = (fl.block(n) for n in ("if_then", "if_else", "if_end"))
    fl.b.cbranch(c, then_bb, else_bb)
    fl.b.position_at_end(then_bb)
    t = fl.expr(call.args[1])
    then_end = fl.b.block
    fl.b.branch(end_bb)
    fl.b.position_at_end(else_bb)
    f = fl.expr(call.args[2])
    else_end = fl.b.block
    fl.b.branch(end_bb)
    fl.b.position_at_end(end_bb)
    phi = fl.b.phi(t.type)
    phi.add_incoming(t, then_end)
    phi.add_incoming(f, else_end)
    return phi


def _identity(fl, call: Call) -> ir.Value:
    return fl.expr(call.args[0])


def _zero(fl, call: Call) -> ir.Value:
    return lt.const(call.dtype, 0, fl.ctx.pointer())


def _assume(fl, call: Call) -> ir.Value:
    return lt.const(call.dtype, 1, fl.ctx.pointer())


def _reinterpret(fl, call: Call) -> ir.Value:
    src, v = call.args[-1].dtype, fl.expr(call.args[-1])
    to = fl.ty(call.dtype, call.span)
    if src.is_handle or call.dtype.is_handle:
        return fl.convert(v, src, call.dtype, call.span)
    if lt.byte_size(src) != lt.byte_size(call.dtype):
        raise Diagnostic(f"T.reinterpret from {src} to {call.dtype} changes the size", call.span)
    return fl.b.bitcast(v, to)


def _ret(fl, call: Call) -> ir.Value:
    fl.emit_return(fl.expr(call.args[0]))
    return lt.const(call.dtype, 0, fl.ctx.pointer())


def _throw_last_error(fl, call: Call) -> ir.Value:
    fl.fail(None, None)
    return ir.Constant(lt.I32, 0)


def _isnullptr(fl, call: Call) -> ir.Value:
    p = fl.expr(call.args[0])
    return fl.b.icmp_unsigned("==", p, ir.Constant(p.type, None))


def _address_of(fl, call: Call) -> ir.Value:
    load = call.args[0]
    if not isinstance(load, BufferLoad) or len(load.indices) != 1:
        raise Diagnostic("T.address_of needs a load of a flat buffer", call.span)
    return fl.buffer_pointer(load.buffer, load.indices[0], call.span)[0]


def _access_ptr(fl, call: Call) -> ir.Value:
    """``T.tvm_access_ptr(T.type_annotation(dtype), data, offset, extent, mask)``: the
    address of element ``offset`` of ``dtype`` from ``data`` (TVM's LowerIntrin makes it
    ``T.address_of(buf[offset])``): elements as far apart as a buffer of ``dtype`` has
    them."""
    dtype = call.args[0].dtype
    data, offset = fl.expr(call.args[1]), fl.expr(call.args[2])
    return fl.b.gep(data, [fl.int_cast(offset, lt.I64, signed=True)],
                    source_etype=lt.stride_type(dtype, fl.ctx.pointer(), call.span))


def _extern(fl, call: Call) -> ir.Value:
    name = fl.ctx.extern_symbol(_name(call), call)
    args = [fl.expr(a) for a in call.args[1:]]
    fnty = ir.FunctionType(fl.ty(call.dtype, call.span), [a.type for a in args])
    return fl.b.call(fl.module.declare(name, fnty, call.span), args)


def _llvm_intrin(fl, call: Call) -> ir.Value:
    name = _name(call)
    rest = call.args[1:]
    if rest and isinstance(rest[0], IntImm) and rest[0].dtype.is_uint:
        rest = rest[1:]  # the older form's signature-count argument
    args = [fl.expr(a) for a in rest]
    fnty = ir.FunctionType(fl.ty(call.dtype, call.span), [a.type for a in args])
    return fl.b.call(fl.module.declare(name, fnty, call.span), args)


def _storage_sync(fl, call: Call) -> ir.Value:
    return ir.Constant(lt.I32, 0)  # one thread: nothing to wait for


def _kernel_launch(fl, call: Call) -> ir.Value:
    # reached only when the host context has no device images (CPUContext.lower_call
    # lowers launches through cuda_launch when it has them)
    raise Diagnostic("a GPU kernel launch needs the kernel's device image: compile the host "
                     "code with its device modules (tirc build)", call.span or fl.func.span)


# -- the packed ABI ---------------------------------------------------------------------
def _field(fl, call: Call, dtype) -> tuple[ir.Value, ir.Type | None]:
    """The address of the field a tvm_struct_get/set names, and its memory type."""
    ptr, index, field = fl.expr(call.args[0]), fl.expr(call.args[1]), _const_int(call, 2)
    if field == abi.INT64_ELEM:
        return fl.b.gep(ptr, [index], source_etype=lt.I64), lt.I64
    if field in DLTENSOR_FIELDS:
        size, (offset, tname) = 48, DLTENSOR_FIELDS[field]
    elif field in _ANY:
        size, (offset, tname) = 16, _ANY[field]
    else:
        raise Diagnostic(f"unknown struct field {field} in T.{call.op}", call.span)
    if isinstance(call.args[1], IntImm):  # the usual case: a constant byte offset
        at = fl.const(abi.INT64, call.args[1].value * size + offset)  # one per module
    else:
        index = fl.int_cast(index, lt.I64)
        at = fl.b.add(fl.b.mul(index, ir.Constant(lt.I64, size)), ir.Constant(lt.I64, offset))
    addr = fl.b.gep(ptr, [at], source_etype=lt.I8)
    if tname == "ptr":
        return addr, fl.ctx.pointer()
    return addr, INT_TYPES[tname] if tname else None


def _struct_get(fl, call: Call) -> ir.Value:
    d = call.dtype
    addr, t = _field(fl, call, d)
    if t is None:  # the TVMFFIAny value union, read as the requested type
        if d.is_float:
            return fl.convert(fl.b.load(addr, typ=lt.F64, align=8), abi.FLOAT64, d, call.span)
        if d.is_handle:
            return fl.b.load(addr, typ=fl.ctx.pointer(), align=8)
        t = lt.I64
    v = fl.b.load(addr, typ=t, align=min(8, max(1, t.width // 8)) if isinstance(t, ir.IntType) else 8)
    if isinstance(t, ir.IntType) and not d.is_handle:
        if d.is_bool:
            return fl.b.icmp_unsigned("!=", v, ir.Constant(t, 0))
        return fl.int_cast(v, fl.ty(d), signed=False)
    return v


def _struct_set(fl, call: Call) -> ir.Value:
    value_expr = call.args[3]
    d = value_expr.dtype
    addr, t = _field(fl, call, d)
    v = fl.expr(value_expr)
    if t is None:
        if d.is_float:
            v = fl.convert(v, d, abi.FLOAT64, call.span)
        elif d.is_integer or d.is_bool:
            v = fl.int_cast(v, lt.I64, signed=d.is_int)
    elif isinstance(t, ir.IntType):
        v = fl.int_cast(v, t, signed=d.is_int)
    fl.b.store(v, addr, align=8 if t is None else max(1, getattr(t, "width", 64) // 8))
    return ir.Constant(lt.I32, 0)


def _add_byte_offset(fl, call: Call) -> ir.Value:
    p, n = fl.expr(call.args[0]), fl.expr(call.args[1])
    return fl.b.gep(p, [n], source_etype=lt.I8)


# -- calls of module functions ----------------------------------------------------------
def _module_call(fl, call: Call) -> ir.Value:
    llfunc, callee = fl.module.callee(call.op.name, call.span or fl.func.span)
    args = []
    for param, a, formal in zip(callee.params, call.args, llfunc.args):
        if isinstance(a, Buffer):
            p = fl.buffer_pointer(a, None, call.span)[0]
            # a device's shared/local memory passed as a generic pointer
            args.append(p if p.type == formal.type else fl.b.addrspacecast(p, formal.type))
        else:
            v = fl.expr(a)
            if a.dtype != param.dtype:
                v = fl.convert(v, a.dtype, param.dtype, call.span)
            args.append(v)
    result = fl.b.call(llfunc, args)
    fl.ctx.after_call(fl, call.op.name, callee)
    return ir.Constant(lt.I32, 0) if isinstance(llfunc.function_type.return_type, ir.VoidType) else result


_HANDLERS: dict[str, Callable] = {
    "if_then_else": _if_then_else, "likely": _identity, "tvm_thread_invariant": _identity,
    "assume": _assume, "type_annotation": _zero, "undef": _zero, "reinterpret": _reinterpret,
    "ret": _ret, "tvm_throw_last_error": _throw_last_error, "isnullptr": _isnullptr,
    "isnan": _float_test("isnan"), "isinf": _float_test("isinf"),
    "isfinite": _float_test("isfinite"), "popcount": _int_unary("llvm.ctpop"),
    "clz": _int_unary("llvm.ctlz"), "bitwise_not": _bitwise_not, "address_of": _address_of,
    "call_extern": _extern, "call_pure_extern": _extern, "call_llvm_intrin": _llvm_intrin,
    "call_llvm_pure_intrin": _llvm_intrin, "tvm_storage_sync": _storage_sync,
    "call_ffi_kernel": _kernel_launch, "tvm_struct_get": _struct_get,
    "tvm_struct_set": _struct_set, "handle_add_byte_offset": _add_byte_offset,
    "tvm_access_ptr": _access_ptr,
}
from tirc.backends.llvm.vla import HANDLERS as _VLA  # noqa: E402
_HANDLERS.update(_VLA)
