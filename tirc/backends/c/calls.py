"""Calls in the ``c`` host target's source: TIR intrinsics, math, C symbols, tvm-ffi's
structs (``tvm_struct_get``/``set``), packed calls and calls between the module's
functions, with the meaning the LLVM backend gives them (:mod:`tirc.backends.llvm.intrin`,
:mod:`tirc.backends.cpu.packed_call`)."""
from __future__ import annotations

from tirc.ir import ffi_abi as abi
from tirc.backends.c.text import ctype, is_half, memory_ctype, string_literal, unsigned_of
from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import CPACKED_TENSORS, DEVICE_ID, DEVICE_TYPE
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Call, GlobalVar, IntImm, StringImm

_MATH = ("exp", "exp2", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "sinh",
         "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "floor",
         "ceil", "trunc", "nearbyint", "fabs", "pow", "atan2", "hypot", "copysign",
         "nextafter", "fmod", "fma")
_MATH_NAMES = _MATH + ("exp10", "rsqrt", "sigmoid", "round", "ldexp")
PACKED = ("call_packed", "tvm_call_packed", "call_cpacked", "tvm_call_cpacked")

# tvm_struct_get/set fields: (struct, member, the member's C type)
_DLTENSOR = {abi.ARR_DATA: ("data", "void*"), abi.ARR_SHAPE: ("shape", "void*"),
             abi.ARR_STRIDES: ("strides", "void*"), abi.ARR_NDIM: ("ndim", "int32_t"),
             abi.ARR_CODE: ("code", "uint8_t"), abi.ARR_BITS: ("bits", "uint8_t"),
             abi.ARR_LANES: ("lanes", "uint16_t"), abi.ARR_BYTE_OFFSET: ("byte_offset", "uint64_t"),
             abi.ARR_DEVICE_ID: ("device_id", "int32_t"),
             abi.ARR_DEVICE_TYPE: ("device_type", "int32_t")}
_ANY = {abi.ANY_TYPE_INDEX: ("type_index", "int32_t"),
        abi.ANY_PADDING: ("zero_padding", "uint32_t"), abi.ANY_VALUE: ("v", None)}


def call(w, e: Call, k) -> str:
    if isinstance(e.op, GlobalVar):
        return _module_call(w, e)
    if e.op in _HANDLERS:
        return _HANDLERS[e.op](w, e, k)
    if e.op in _MATH_NAMES:
        return _math(w, e, k)
    if e.op in PACKED:
        return _packed(w, e)
    if e.op == "call_ffi_kernel":
        raise Diagnostic("the c host target does not launch GPU kernels: build the host "
                         "code for llvm (--host llvm)", e.span or w.func.span)
    raise Diagnostic(f"T.{e.op} is not supported by the c target", e.span)


def _name(e: Call) -> str:
    a = e.args[0] if e.args else None
    if not isinstance(a, StringImm):
        raise Diagnostic(f"T.{e.op} needs the function name as its first argument", e.span)
    return a.value


def _const(e: Call, i: int) -> int:
    a = e.args[i]
    if not isinstance(a, IntImm):
        raise Diagnostic(f"argument {i} of T.{e.op} must be a constant integer", e.span)
    return a.value


# -- math -------------------------------------------------------------------------------
def _math(w, e: Call, k) -> str:
    d = e.dtype.element()
    if not d.is_float:
        raise Diagnostic(f"T.{e.op} needs floating-point arguments, not {d}", e.span)
    f = "f" if ctype(d) == "float" else ""
    one = "1.0" + f
    args = [w.convert(w.ex(a, k), a.dtype.element(), d, e.span) for a in e.args]
    if e.op == "sigmoid":
        text = f"({one} / ({one} + exp{f}(-{args[0]})))"
    elif e.op == "rsqrt":
        text = f"({one} / sqrt{f}({args[0]}))"
    elif e.op == "exp10":
        text = f"pow{f}(10.0{f}, {args[0]})"
    elif e.op == "ldexp":  # x * 2^e, as the LLVM backend computes it
        text = f"({args[0]} * exp2{f}({args[1]}))"
    else:
        text = f"{'nearbyint' if e.op == 'round' else e.op}{f}({', '.join(args)})"
    return w.rounded(text, d)


def _float_test(kind: str):
    def write(w, e: Call, k) -> str:
        a = e.args[0]
        if not a.dtype.is_float:
            return "true" if kind == "isfinite" else "false"
        x = w.ex(a, k)
        return f"({kind}({x}) != 0)"
    return write


def _int_unary(what: str):
    def write(w, e: Call, k) -> str:
        c = ctype(e.args[0].dtype.element(), e.span)
        return f"{w.helper(f'tirc_{what}__{c}')}({w.ex(e.args[0], k)})"
    return write


def _bitwise_not(w, e: Call, k) -> str:
    c = ctype(e.dtype.element(), e.span)
    return f"(({c})~{w.ex(e.args[0], k)})"


# -- control and values -----------------------------------------------------------------
def _if_then_else(w, e: Call, k) -> str:
    c = w.ex(e.args[0], k)
    w.cond += 1
    try:
        t, f = w.ex(e.args[1], k), w.ex(e.args[2], k)
    finally:
        w.cond -= 1
    return f"({c} ? {t} : {f})"


def _identity(w, e: Call, k) -> str:
    return w.ex(e.args[0], k)


def _zero(w, e: Call, k) -> str:
    d = e.dtype.element()
    return "NULL" if d.is_handle else f"(({ctype(d, e.span)})0)"


def _assume(w, e: Call, k) -> str:
    return "true" if e.dtype.is_bool else "1"


def _reinterpret(w, e: Call, k) -> str:
    src, dst = e.args[-1].dtype.element(), e.dtype.element()
    if e.args[-1].dtype.lanes != e.dtype.lanes:
        raise Diagnostic(f"T.reinterpret from {e.args[-1].dtype} to {e.dtype} changes the "
                         "lane count: not supported by the c target", e.span)
    v = w.ex(e.args[-1], k)
    if src.is_handle or dst.is_handle:
        return w.convert(v, src, dst, e.span)
    if max(1, src.bits // 8) != max(1, dst.bits // 8):
        raise Diagnostic(f"T.reinterpret from {src} to {dst} changes the size", e.span)
    if is_half(src) or is_half(dst):  # float16 <-> its 16 bits
        w.module.need("half")
        if is_half(src):
            v = f"tirc_f16_bits({v})"
        return (f"tirc_f16_value((uint16_t){v})" if is_half(dst)
                else f"(({ctype(dst, e.span)}){v})")
    to, frm = ctype(dst, e.span), ctype(src, e.span)
    if to == frm:
        return v
    return f"{w.helper(f'tirc_bits__{to}__{frm}')}({v})"


def _ret(w, e: Call, k) -> str:
    raise Diagnostic("T.ret must be a statement of its own", e.span)


def _isnullptr(w, e: Call, k) -> str:
    return f"({w.ex(e.args[0])} == NULL)"


def _address_of(w, e: Call, k) -> str:
    load = e.args[0]
    if not isinstance(load, BufferLoad) or len(load.indices) != 1:
        raise Diagnostic("T.address_of needs a load of a flat buffer", e.span)
    return f"((void*)&{w.element(load.buffer, w.ex(load.indices[0]))})"


def _access_ptr(w, e: Call, k) -> str:
    d = e.args[0].dtype
    mem = memory_ctype(d.element(), e.span)
    data, offset = w.ex(e.args[1]), w.ex(e.args[2])
    return f"((void*)(({mem}*){data} + (int64_t){offset} * {d.lanes}))"


def _extern(w, e: Call, k) -> str:
    name = _name(e)
    args = [w.ex(a, k) for a in e.args[1:]]
    types = tuple("const char*" if isinstance(a, StringImm) else ctype(a.dtype.element(), e.span)
                  for a in e.args[1:])
    ret = "void" if e.dtype.is_void else ctype(e.dtype.element(), e.span)
    w.module.extern(name, ret, types, e.span)
    return f"{name}({', '.join(args)})"


# LLVM intrinsics with a C99 equivalent: llvm.NAME (of any overload) -> the math function
_LLVM_MATH = {"sqrt": "sqrt", "fabs": "fabs", "floor": "floor", "ceil": "ceil",
              "trunc": "trunc", "rint": "nearbyint", "nearbyint": "nearbyint", "round": "round",
              "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
              "sin": "sin", "cos": "cos", "pow": "pow", "fma": "fma", "copysign": "copysign",
              "minnum": "fmin", "maxnum": "fmax"}


def _llvm_intrin(w, e: Call, k) -> str:
    """An LLVM intrinsic with a C99 equivalent (``llvm.assume`` is a hint: nothing; the
    math ones, lane by lane); any other is an error, as in TVM's C target."""
    name = _name(e)
    rest = e.args[1:]
    if rest and isinstance(rest[0], IntImm) and rest[0].dtype.is_uint:
        rest = rest[1:]  # the older form's signature-count argument
    base = name.removeprefix("llvm.").split(".")[0]
    if base == "assume":
        return "0"
    d = e.dtype.element()
    if base in ("lround", "llround", "lrint", "llrint") and d.is_integer and len(rest) == 1 \
            and rest[0].dtype.element().is_float:  # a float rounded to an integer
        src = rest[0].dtype.element()
        f = "f" if ctype(src) == "float" else ""
        return f"(({ctype(d, e.span)}){base}{f}({w.ex(rest[0], k)}))"
    if base not in _LLVM_MATH or not d.is_float or not all(a.dtype.element() == d for a in rest):
        raise Diagnostic(f"T.{e.op} calls the LLVM intrinsic '{name}', which has no C "
                         "equivalent here: build for llvm", e.span)
    f = "f" if ctype(d) == "float" else ""
    args = [w.ex(a, k) for a in rest]
    return w.rounded(f"{_LLVM_MATH[base]}{f}({', '.join(args)})", d)


def _nothing(w, e: Call, k) -> str:
    return "0"


# -- tvm-ffi's structs ------------------------------------------------------------------
def _field(w, e: Call) -> tuple[str, str | None]:
    """The lvalue of the field a tvm_struct_get/set names, and its C type (None: the
    TVMFFIAny value union)."""
    w.module.need("ffi")
    ptr, index, field = w.ex(e.args[0]), w.ex(e.args[1]), _const(e, 2)
    if field == abi.INT64_ELEM:
        return f"((int64_t*){ptr})[{index}]", "int64_t"
    if field in _DLTENSOR:
        member, c = _DLTENSOR[field]
        return f"((tirc_DLTensor*){ptr})[{index}].{member}", c
    if field in _ANY:
        member, c = _ANY[field]
        return f"((tirc_Any*){ptr})[{index}].{member}", c
    raise Diagnostic(f"unknown struct field {field} in T.{e.op}", e.span)


def _struct_get(w, e: Call, k) -> str:
    d = e.dtype.element()
    at, c = _field(w, e)
    if c is None:
        if d.is_float:
            return f"(({ctype(d, e.span)}){at}.v_float64)"
        if d.is_handle:
            return f"{at}.v_ptr"
        at, c = f"{at}.v_int64", "int64_t"
    if d.is_handle:
        return f"((void*){at})" if c == "void*" else f"((void*)(uintptr_t){at})"
    if c == "void*":
        return f"(({ctype(d, e.span)})(uintptr_t){at})"
    if d.is_bool:
        return f"({at} != 0)"
    to = ctype(d, e.span)
    if to == c:
        return at
    if d.bits <= int(c.strip("uint_t")):
        return f"(({to}){at})"
    return f"(({to})({unsigned_of(c)}){at})"  # widened with zeros, as LLVM's


def _struct_set(w, e: Call, k) -> str:
    value = e.args[3]
    d = value.dtype.element()
    at, c = _field(w, e)
    v = w.ex(value)
    if c is None:
        if d.is_float:
            return f"({at}.v_float64 = (double){v})"
        if d.is_handle:
            return f"({at}.v_ptr = {v})"
        return f"({at}.v_int64 = (int64_t){v})"
    if c == "void*":
        return f"({at} = (void*){v})"
    return f"({at} = ({c}){v})"


def _add_byte_offset(w, e: Call, k) -> str:
    return f"((void*)((char*){w.ex(e.args[0])} + {w.ex(e.args[1])}))"


# -- packed calls -----------------------------------------------------------------------
def _packed(w, e: Call) -> str:
    """A packed call (:mod:`tirc.backends.cpu.packed_call`'s meaning), written into the prelude; its value."""
    where = None
    if w.c_api:
        where = "a function of the C ABI (--abi c): it needs the packed ABI and tvm-ffi"
    elif not w.exported:
        where = (f"the private function '{w.name}': only an exported function can hand "
                 "the callee's error to its caller")
    elif w.cond:
        where = "a conditional expression in C source (T.if_then_else)"
    if where is not None:
        raise Diagnostic(f"T.{e.op} is not supported in {where}", e.span)
    name = e.args[0]
    if not isinstance(name, StringImm):
        raise Diagnostic(f"T.{e.op} needs the function's name as a string first", e.span)
    w.module.need("packed")
    n = len(e.args) - 1
    args, result = w.fresh("packed_args"), w.fresh("packed_result")
    tensors = set(dict(e.kwargs).get(CPACKED_TENSORS, ()))
    w.pre.append(f"tirc_Any {args}[{max(n, 1)}];")
    for i, value in enumerate(e.args[1:]):
        if i in tensors or (isinstance(value, Call) and value.op == "tvm_stack_make_array"):
            index, member, v = abi.DLTENSOR_PTR, "v_ptr", w.ex(value)
        elif isinstance(value, StringImm):
            index, member, v = abi.RAW_STR, "v_c_str", w.ex(value)
        else:
            form = abi.any_value(value)
            if form is None:
                raise Diagnostic(f"a {value.dtype} value cannot be passed to a packed "
                                 "function", getattr(value, "span", None))
            index, v = form[0], w.ex(form[1])
            member = {abi.FLOAT: "v_float64", abi.OPAQUE_PTR: "v_ptr"}.get(index, "v_int64")
        w.pre += [f"{args}[{i}].type_index = {index};", f"{args}[{i}].zero_padding = 0;",
                  f"{args}[{i}].v.{member} = {v};"]
    w.pre += [f"tirc_Any {result};", f"{result}.type_index = 0;",
              f"{result}.zero_padding = 0;", f"{result}.v.v_int64 = 0;"]
    if e.op.endswith("cpacked"):
        w.module.extern(name.value, "int32_t", ("void*", "tirc_Any*", "int32_t", "tirc_Any*"),
                        e.span)
        target = f"{name.value}(NULL, "
    else:
        handle = w.module.packed_function(name.value)
        found = w.fresh("packed_found")
        text = name.value.encode("utf-8")
        w.pre += [f"if ({handle} == NULL) {{",
                  f"  void* {found} = NULL;",
                  f"  const tirc_ByteArray {found}_name = {{{string_literal(name.value)}, "
                  f"{len(text)}}};",
                  f"  if (TVMFFIFunctionGetGlobal(&{found}_name, &{found}) != 0) {{",
                  *["    " + x for x in w.fail_lines(None)], "  }",
                  f"  if ({found} == NULL) {{",
                  *["    " + x for x in w.fail_lines(
                      ("RuntimeError", f"T.{e.op}: no global function named "
                                       f"'{name.value}' is registered"))], "  }",
                  f"  {handle} = {found};", "}"]
        target = f"TVMFFIFunctionCall({handle}, "
    w.pre += [f"if ({target}{args}, {n}, &{result}) != 0) {{",
              *["  " + x for x in w.fail_lines(None)], "}",
              f"tirc_any_release(&{result});"]
    d = e.dtype.element()
    if e.dtype.is_void:
        return "0"
    if d.is_handle:
        return f"tirc_any_ptr(&{result})"
    if d.is_float:
        return w.convert(f"tirc_any_float(&{result})", abi.FLOAT64, d, e.span)
    if d.is_bool:
        return f"(tirc_any_int(&{result}) != 0)"
    return w.convert(f"tirc_any_int(&{result})", abi.INT64, d, e.span)


def _stack_shape(w, e: Call, k) -> str:
    name = w.fresh("stack_shape")
    values = ", ".join(f"(int64_t){w.ex(a)}" for a in e.args) or "0"
    w.pre.append(f"int64_t {name}[{max(len(e.args), 1)}] = {{{values}}};")
    return f"((void*){name})"


def _stack_array(w, e: Call, k) -> str:
    w.module.need("ffi")
    data, shape, strides, ndim, like, offset = e.args
    code, bits, lanes = abi.dl_dtype(like.dtype)
    device = dict(w.device_attrs)
    name = w.fresh("stack_array")
    no_strides = isinstance(strides, IntImm) and strides.value == 0
    w.pre += [f"tirc_DLTensor {name};",
              f"{name}.data = (void*){w.ex(data)};",
              f"{name}.device_type = (int32_t){device.get(DEVICE_TYPE, '1')};",
              f"{name}.device_id = (int32_t){device.get(DEVICE_ID, '0')};",
              f"{name}.ndim = (int32_t){w.ex(ndim)};",
              f"{name}.code = {code};", f"{name}.bits = {bits};", f"{name}.lanes = {lanes};",
              f"{name}.shape = (int64_t*){w.ex(shape)};",
              f"{name}.strides = (int64_t*){'NULL' if no_strides else w.ex(strides)};",
              f"{name}.byte_offset = (uint64_t)((int64_t){w.ex(offset)} * "
              f"{(bits * lanes + 7) // 8});"]
    return f"((void*)&{name})"


# -- calls of module functions ----------------------------------------------------------
def _module_call(w, e: Call) -> str:
    callee = w.module.mod.functions.get(e.op.name)
    if callee is None:
        raise Diagnostic(f"function '{e.op.name}' is called but not compiled for this "
                         "target", e.span or w.func.span)
    args = []
    for param, a in zip(callee.params, e.args):
        if isinstance(a, Buffer):
            args.append(f"((void*)&{w.element(a, '0')})")
        else:
            v = w.ex(a)
            args.append(v if a.dtype == param.dtype
                        else w.convert(v, a.dtype.element(), param.dtype.element(), e.span))
    if e.op.name in w.module.failing and not w.module.is_exported(callee):
        w.faults = True
    return f"{w.module.symbol(e.op.name)}({', '.join(args)})"


_HANDLERS = {
    "if_then_else": _if_then_else, "likely": _identity, "tvm_thread_invariant": _identity,
    "assume": _assume, "type_annotation": _zero, "undef": _zero, "reinterpret": _reinterpret,
    "ret": _ret, "isnullptr": _isnullptr,
    "isnan": _float_test("isnan"), "isinf": _float_test("isinf"),
    "isfinite": _float_test("isfinite"), "popcount": _int_unary("popcount"),
    "clz": _int_unary("clz"), "bitwise_not": _bitwise_not, "address_of": _address_of,
    "call_extern": _extern, "call_pure_extern": _extern, "call_llvm_intrin": _llvm_intrin,
    "call_llvm_pure_intrin": _llvm_intrin, "tvm_storage_sync": _nothing,
    "tvm_struct_get": _struct_get, "tvm_struct_set": _struct_set,
    "handle_add_byte_offset": _add_byte_offset, "tvm_access_ptr": _access_ptr,
    "tvm_stack_make_shape": _stack_shape, "tvm_stack_make_array": _stack_array,
}
