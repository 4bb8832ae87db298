"""Packed calls in host code: ``T.call_packed(name, args...)`` and ``T.call_cpacked``.

``T.call_packed`` calls a function of tvm-ffi's global registry (what
``tvm_ffi.register_global_func`` or a loaded library registers), as TVM's host code does:

- the function is looked up by name once per process with ``TVMFFIFunctionGetGlobal``
  and kept in an internal global of the object (atomic loads and stores: two threads
  may both look it up, and both get the same function);
- a name nothing registers raises ``RuntimeError: T.call_packed: no global function
  named 'NAME' is registered``;
- the arguments go in a ``TVMFFIAny`` array on the stack, each encoded as MakePackedAPI
  encodes a function's result (:func:`tirc.ir.ffi_abi.any_value`); a string constant is
  passed as a C string;
- ``TVMFFIFunctionCall`` calls it; a nonzero return means the callee raised: its error
  stays set and the calling function returns -1, so the error reaches its caller;
- the value is the result converted to the call's dtype (``int32`` as TVMScript writes
  it; a float result rounds toward zero); None and object results (a string, an array)
  read as 0, an object being released first.

``T.call_cpacked(symbol, args...)`` calls the C symbol ``symbol`` with the same
arguments and the signature of a packed function's body (``TVMFFISafeCallType``:
``int symbol(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result)``),
linked by the user.

Both need an exported function of the packed ABI (its -1 return is how an error reaches
the caller, and tvm-ffi holds the error), outside ``T.parallel`` loops (tvm-ffi keeps
errors per thread); anywhere else they are a located error.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.ir import ffi_abi as abi
from tirc.backends.llvm import types as lt
from tirc.backends.llvm.lower import likely
from tirc.backends.llvm.llvmlite_compat import opaque, store_atomic
from tirc.diagnostics import Diagnostic
from tirc.backends.llvm.intrin import DLTENSOR_FIELDS, INT_TYPES
from tirc.ir.attrs import C_API, CPACKED_TENSORS, DEVICE_ID, DEVICE_TYPE
from tirc.ir.expr import Call, IntImm, StringImm

PACKED_CALLS = ("call_packed", "tvm_call_packed", "call_cpacked", "tvm_call_cpacked")
_ANY = ir.LiteralStructType([lt.I32, lt.I32, lt.I64])  # TVMFFIAny: type index, padding, value



def lower_packed_call(fl, call: Call) -> ir.Value:
    """The call's value (the call's dtype), after making the call."""
    _check_place(fl, call)
    name = call.args[0]
    if not isinstance(name, StringImm):
        raise Diagnostic(f"T.{call.op} needs the function's name as a string first", call.span)
    ptr_t = fl.ctx.pointer()
    args = fl.alloca(_ANY, max(len(call.args) - 1, 1), name="packed_args", align=8)
    tensors = set(dict(call.kwargs).get(CPACKED_TENSORS, ()))  # calls of exported functions
    for i, value in enumerate(call.args[1:]):
        _store_arg(fl, args, i, value, i in tensors)
    result = fl.alloca(_ANY, name="packed_result", align=8)
    fl.b.store(ir.Constant(_ANY, [0, 0, 0]), result)
    count = ir.Constant(lt.I32, len(call.args) - 1)
    call_t = ir.FunctionType(lt.I32, [ptr_t, ptr_t, lt.I32, ptr_t])
    if call.op.endswith("cpacked"):
        symbol = fl.module.declare(name.value, call_t)
        code = fl.b.call(symbol, [ir.Constant(ptr_t, None), args, count, result])
    else:
        handle = _global_function(fl, name.value, call)
        caller = fl.module.declare("TVMFFIFunctionCall", call_t)
        code = fl.b.call(caller, [handle, args, count, result])
    _fail_unless_zero(fl, code, "packed_call_ok")
    if call.dtype.is_void:
        return ir.Constant(lt.I32, 0)
    return _read_result(fl, result, call)


STACK_VALUES = ("tvm_stack_make_shape", "tvm_stack_make_array")


def lower_stack_value(fl, call: Call) -> ir.Value:
    """TVM's arguments of a packed call built on the host's stack (te.extern's calls):
    ``T.tvm_stack_make_shape`` and ``T.tvm_stack_make_array``, whose DLTensor a packed
    call passes as a tensor."""
    return (_stack_shape if call.op == "tvm_stack_make_shape" else _stack_array)(fl, call)


def _stack_shape(fl, call: Call) -> ir.Value:
    """``T.tvm_stack_make_shape(n, ...)``: the values in an int64 array on the stack."""
    array = fl.alloca(lt.I64, max(len(call.args), 1), name="stack_shape", align=8)
    for i, v in enumerate(call.args):
        at = fl.b.gep(array, [ir.Constant(lt.I64, i)], source_etype=lt.I64)
        fl.b.store(fl.int_cast(fl.expr(v), lt.I64, signed=True), at)
    return array


def _stack_array(fl, call: Call) -> ir.Value:
    """``T.tvm_stack_make_array(data, shape, strides, ndim, dtype_value, elem_offset)``: a
    DLTensor on the stack over ``data`` (strides 0: compact), of the dtype of
    ``dtype_value``, on the device the enclosing ``device_type``/``device_id`` attributes
    name (the CPU when none does)."""
    data, shape, strides, ndim, like, offset = call.args
    code, bits, lanes = abi.dl_dtype(like.dtype)
    device = dict(getattr(fl.ctx, "device_attrs", ()))
    tensor = fl.alloca(ir.ArrayType(lt.I8, 48), name="stack_array", align=8)

    def put(field: int, value: ir.Value) -> None:
        offset_, tname = DLTENSOR_FIELDS[field]
        addr = fl.b.gep(tensor, [ir.Constant(lt.I64, offset_)], source_etype=lt.I8)
        if tname != "ptr":
            value = fl.int_cast(value, INT_TYPES[tname], signed=True)
        fl.b.store(value, addr)

    pointer = fl.ctx.pointer()
    put(abi.ARR_DATA, fl.expr(data))
    put(abi.ARR_DEVICE_TYPE, device.get(DEVICE_TYPE, ir.Constant(lt.I32, 1)))  # kDLCPU
    put(abi.ARR_DEVICE_ID, device.get(DEVICE_ID, ir.Constant(lt.I32, 0)))
    put(abi.ARR_NDIM, fl.expr(ndim))
    for field, v in zip((abi.ARR_CODE, abi.ARR_BITS, abi.ARR_LANES), (code, bits, lanes)):
        put(field, ir.Constant(lt.I64, v))
    put(abi.ARR_SHAPE, fl.expr(shape))
    if isinstance(strides, IntImm) and strides.value == 0:
        put(abi.ARR_STRIDES, ir.Constant(pointer, None))
    else:
        put(abi.ARR_STRIDES, fl.expr(strides))
    put(abi.ARR_BYTE_OFFSET, _byte_offset(fl, call, offset, bits * lanes, like.dtype.is_subbyte))
    return tensor


def _byte_offset(fl, call: Call, offset, bits: int, packed: bool) -> ir.Value:
    """The byte offset of element ``offset`` (of ``bits`` bits each). Packed sub-byte
    elements (DLPack's layout) have one only at the start of a byte: an offset not
    provably a multiple of the elements a byte holds is a located error."""
    elems = fl.int_cast(fl.expr(offset), lt.I64, signed=True)
    if not packed or bits >= 8:
        return fl.b.mul(elems, ir.Constant(lt.I64, (bits + 7) // 8))
    from tirc.backends.llvm.subbyte import multiple_of
    per = 8 // bits
    if not multiple_of(offset, per, fl.let_exprs):
        raise Diagnostic(f"a tensor of packed {bits}-bit elements at an element offset not "
                         f"provably a multiple of {per}: DLPack's byte_offset cannot start "
                         "inside a byte", call.span)
    return fl.b.sdiv(elems, ir.Constant(lt.I64, per))


def _check_place(fl, call: Call) -> None:
    where = None
    if fl.func.attrs.get(C_API):
        where = "a function of the C ABI (--abi c): it needs the packed ABI and tvm-ffi"
    elif not fl.ctx.is_exported(fl.func):
        where = (f"the private function '{fl.name}': only an exported function can "
                 f"hand the callee's error to its caller")
    elif getattr(fl, "parallel_body", False):
        where = "a T.parallel loop: tvm-ffi keeps the callee's error in the thread that ran it"
    if where is not None:
        raise Diagnostic(f"T.{call.op} is not supported in {where}", call.span)


def _slot(fl, args: ir.Value, i: int, field: int) -> ir.Value:
    return fl.b.gep(args, [ir.Constant(lt.I32, i), ir.Constant(lt.I32, field)],
                    source_etype=_ANY)


def _store_arg(fl, args: ir.Value, i: int, value, tensor: bool) -> None:
    if tensor or (isinstance(value, Call) and value.op == "tvm_stack_make_array"):
        index, v = ir.Constant(lt.I32, abi.DLTENSOR_PTR), fl.expr(value)
    elif isinstance(value, StringImm):
        index, v = ir.Constant(lt.I32, abi.RAW_STR), fl.string(value.value)
    else:
        form = abi.any_value(value)
        if form is None:
            raise Diagnostic(f"a {value.dtype} value cannot be passed to a packed function",
                             getattr(value, "span", None))
        index, v = ir.Constant(lt.I32, form[0]), fl.expr(form[1])
    fl.b.store(index, _slot(fl, args, i, 0))
    fl.b.store(ir.Constant(lt.I32, 0), _slot(fl, args, i, 1))
    fl.b.store(v, _slot(fl, args, i, 2))  # the union: i64, double or ptr


def _global_function(fl, name: str, call: Call) -> ir.Value:
    """The registry's function ``name``: looked up at the first call, then cached."""
    ptr_t = fl.ctx.pointer()
    caches = getattr(fl.module, "packed_functions", None)
    if caches is None:
        caches = fl.module.packed_functions = {}
    cache = caches.get(name)
    if cache is None:
        cache = ir.GlobalVariable(fl.module.ir, ptr_t, f"__tirc_packed_function.{len(caches)}")
        cache.linkage = "internal"
        cache.initializer = ir.Constant(ptr_t, None)
        cache = caches[name] = opaque(cache, ptr_t)
    cached = fl.b.load_atomic(cache, "acquire", 8, typ=ptr_t)
    before = fl.b.block
    lookup, done = fl.block("packed_lookup"), fl.block("packed_found")
    likely(fl.b.cbranch(fl.b.icmp_unsigned("!=", cached, ir.Constant(ptr_t, None)), done, lookup))
    fl.b.position_at_end(lookup)
    text = name.encode()
    array_t = ir.LiteralStructType([ptr_t, lt.I64])  # TVMFFIByteArray: data, size
    array = fl.alloca(array_t, name="packed_name", align=8)
    for field, v in enumerate((fl.string(name), ir.Constant(lt.I64, len(text)))):
        fl.b.store(v, fl.b.gep(array, [ir.Constant(lt.I32, 0), ir.Constant(lt.I32, field)],
                               source_etype=array_t))
    out = fl.alloca(ptr_t, name="packed_handle", align=8)
    fl.b.store(ir.Constant(ptr_t, None), out)
    get = fl.module.declare("TVMFFIFunctionGetGlobal", ir.FunctionType(lt.I32, [ptr_t, ptr_t]))
    _fail_unless_zero(fl, fl.b.call(get, [array, out]), "packed_lookup_ok")
    found = fl.b.load(out, typ=ptr_t, align=8)
    fl.fail_unless(fl.b.icmp_unsigned("!=", found, ir.Constant(ptr_t, None)), "RuntimeError",
                   f"T.{call.op}: no global function named '{name}' is registered",
                   "packed_registered")
    store_atomic(fl.b, found, cache, "release", 8)
    looked_up = fl.b.block
    fl.b.branch(done)
    fl.b.position_at_end(done)
    handle = fl.b.phi(ptr_t, name="packed_function")
    handle.add_incoming(cached, before)
    handle.add_incoming(found, looked_up)
    return handle


def _fail_unless_zero(fl, code: ir.Value, hint: str) -> None:
    """A nonzero return of a tvm-ffi call: its error is set; this function returns -1."""
    ok, bad = fl.block(hint), fl.block(hint + "_failed")
    likely(fl.b.cbranch(fl.b.icmp_signed("==", code, ir.Constant(lt.I32, 0)), ok, bad))
    fl.b.position_at_end(bad)
    fl.fail(None, None)
    fl.b.position_at_end(ok)


def _read_result(fl, result: ir.Value, call: Call) -> ir.Value:
    """The result as the call's dtype: an int, bool or float result converted to it (a
    float to an integer rounds toward zero), a handle's pointer; None and objects read
    as 0 (an object is released first)."""
    ptr_t = fl.ctx.pointer()
    index = fl.b.load(_slot(fl, result, 0, 0), typ=lt.I32, align=8)
    value = _slot(fl, result, 0, 2)
    is_object = fl.b.icmp_signed(">=", index, ir.Constant(lt.I32, abi.OBJECT_BEGIN))
    with fl.b.if_then(is_object, likely=False):
        dec_ref = fl.module.declare("TVMFFIObjectDecRef", ir.FunctionType(lt.I32, [ptr_t]))
        fl.b.call(dec_ref, [fl.b.load(value, typ=ptr_t, align=8)])
    d = call.dtype
    if d.is_handle:
        is_ptr = fl.b.icmp_signed("==", index, ir.Constant(lt.I32, abi.OPAQUE_PTR))
        return fl.b.select(is_ptr, fl.b.load(value, typ=ptr_t, align=8), ir.Constant(ptr_t, None))
    is_float = fl.b.icmp_signed("==", index, ir.Constant(lt.I32, abi.FLOAT))
    is_int = fl.b.or_(fl.b.icmp_signed("==", index, ir.Constant(lt.I32, abi.INT)),
                      fl.b.icmp_signed("==", index, ir.Constant(lt.I32, abi.BOOL_T)))
    raw = fl.b.select(is_int, fl.b.load(value, typ=lt.I64, align=8), ir.Constant(lt.I64, 0))
    real = fl.b.load(value, typ=lt.F64, align=8)
    if d.is_float:
        as_float = fl.b.select(is_float, real, fl.b.sitofp(raw, lt.F64))
        return fl.convert(as_float, abi.FLOAT64, d, call.span)
    # a float out of the int64 range (or NaN) would make fptosi poison: clamp it first
    limit = ir.Constant(lt.F64, 9.2e18)
    clamped = fl.b.select(fl.b.fcmp_ordered("<", real, limit), real, limit)
    clamped = fl.b.select(fl.b.fcmp_ordered(">", clamped, fl.b.fneg(limit)), clamped,
                          fl.b.fneg(limit))
    as_int = fl.b.select(is_float, fl.b.fptosi(clamped, lt.I64), raw)
    if d.is_bool:
        return fl.b.icmp_unsigned("!=", as_int, ir.Constant(lt.I64, 0))
    return fl.int_cast(as_int, fl.ty(d), signed=True)
