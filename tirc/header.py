"""``OUT/NAME.h``: C declarations of what ``OUT/NAME.o`` exports (DESIGN §5).

``--abi c``: every C-API function (MakeCAPI) as ``int32_t f(float* A, ..., int64_t n,
R* out)``, and ``const char* NAME_last_error(void)`` (``PNAME_last_error`` with a symbol
prefix P, as every exported symbol). ``--abi packed``: the tvm-ffi
safe-call symbols ``int __tvm_ffi_f(void* self, const void* args, int32_t num_args,
void* result)`` (``args``/``result`` are ``TVMFFIAny`` arrays of ``tvm/ffi/c_api.h``,
declared ``void*`` here so the header needs nothing from tvm-ffi). Each declaration has
a comment with the function's TIR signature and buffer shapes. The text depends only on
the modules and the name: the same input gives the same bytes.

Element types in C: ``bool``, ``intN_t``/``uintN_t``, ``float``, ``double``; float16 and
bfloat16 buffers are ``uint16_t*`` and float8 buffers ``uint8_t*`` (their storage);
a vector element type points at its scalar element.
"""
from __future__ import annotations

import re

from tirc.ir.attrs import CallingConv, CALLING_CONV, C_API, GLOBAL_SYMBOL
from tirc.ir.dtype import DataType
from tirc.ir.expr import Cast, IntImm, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.print_expr import ExprPrinter, quote

C_KEYWORDS = frozenset("""auto bool break case char const continue default do double else enum
extern float for goto if inline int long register restrict return short signed sizeof static
struct switch typedef union unsigned void volatile while class delete new operator private
protected public template this throw try namespace using virtual true false""".split())  # noqa: SIM905


def c_identifier(name: str) -> str:
    """``name`` as a C identifier: other characters become ``_``; never a leading digit."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return "_" + out if out[0].isdigit() else out


def c_type(dtype: DataType) -> str:
    """The C type of one element of ``dtype`` (handles: ``void*``)."""
    if dtype.is_handle:
        return "void*"
    if dtype.is_bool:
        return "bool"
    if dtype.is_int:
        return f"int{dtype.bits}_t"
    if dtype.is_uint:
        return f"uint{dtype.bits}_t"
    if dtype.is_float and dtype.base == "float32":
        return "float"
    if dtype.is_float and dtype.base == "float64":
        return "double"
    if dtype.bits == 16:
        return "uint16_t"
    return "uint8_t"


class _Text(ExprPrinter):
    """Shape expressions as short text: names, plain integers, no casts."""

    module_name = None

    def __init__(self) -> None:
        self.scalars: set[int] = set()

    def var(self, v: Var) -> str:
        return v.name

    def buffer_name(self, b) -> str:
        return b.name

    def define(self, obj, base: str) -> str:
        return base

    def _expr(self, e):
        if isinstance(e, IntImm) and not e.dtype.is_bool:
            return str(e.value), (12 if e.value >= 0 else 11)
        if isinstance(e, Cast) and e.dtype.is_integer and e.value.dtype.is_integer:
            return self._expr(e.value)
        return super()._expr(e)


def expr_text(e: PrimExpr) -> str:
    return _Text().expr(e)


def tir_signature(name: str, func: PrimFunc) -> str:
    """``f(A: T.Buffer((n,), "float32"), n: T.int32) -> T.int32``."""
    parts = []
    for p in func.params:
        buf = func.buffer_of(p)
        if buf is not None:
            shape = ", ".join(expr_text(s) for s in buf.shape)
            shape += "," if len(buf.shape) == 1 else ""
            parts.append(f"{p.name}: T.Buffer(({shape}), {quote(str(buf.dtype))})")
        else:
            parts.append(f"{p.name}: {'T.handle' if p.dtype.is_handle else 'T.' + str(p.dtype)}")
    ret = func.ret_type
    tail = f" -> T.{ret}" if ret is not None and not ret.is_void else ""
    return f"{name}({', '.join(parts)}){tail}"


def _comment(lines: list[str]) -> list[str]:
    lines = [ln.replace("*/", "* /") for ln in lines]
    if len(lines) == 1:
        return ["/* " + lines[0] + " */"]
    return ["/* " + lines[0]] + [" * " + ln for ln in lines[1:]] + [" */"]


def _c_params(func: PrimFunc) -> list[tuple[str, str]]:
    """(C type, C name) of each parameter of a C-API function, names unique."""
    out, taken = [], set()
    for p in func.params:
        if p.dtype.is_handle:
            ctype = c_type(p.ptr.dtype.element()) + "*" if p.ptr is not None else "void*"
        else:
            ctype = c_type(p.dtype)
        name = c_identifier(p.name)
        while name in taken or name in C_KEYWORDS:
            name += "_"
        taken.add(name)
        out.append((ctype, name))
    return out


def c_declaration(name: str, func: PrimFunc) -> str:
    """``int32_t f(float* A, int64_t n)`` for the C-API function ``name``."""
    params = ", ".join(f"{t} {n}" for t, n in _c_params(func)) or "void"
    return f"int32_t {func.attrs.get('global_symbol', name)}({params})"


def _c_entry(name: str, func: PrimFunc, original: PrimFunc | None, last_error: str) -> list[str]:
    params = _c_params(func)
    lines = [tir_signature(name, original) if original is not None else name]
    n_orig = len(original.params) if original is not None else len(params)
    for i, (ctype, cname) in enumerate(params):
        if i < n_orig and original is not None:
            p = original.params[i]
            buf = original.buffer_of(p)
            if buf is not None:
                shape = ", ".join(expr_text(s) for s in buf.shape)
                lines.append(f"  {cname}: {buf.dtype}[{shape}], data pointer to the first element")
            continue
        has_out = original is not None and original.ret_type is not None and not original.ret_type.is_void
        if has_out and i == len(params) - 1:
            lines.append(f"  {cname}: receives the {original.ret_type} return value")
        else:
            lines.append(f"  {cname}: size variable of the buffer shapes (non-negative)")
    lines.append(f"  Returns 0, or -1 with the message in {last_error}().")
    return _comment(lines) + [c_declaration(name, func) + ";"]


def _packed_entry(name: str, func: PrimFunc, original: PrimFunc | None, lib: str) -> list[str]:
    symbol = func.attrs.get(GLOBAL_SYMBOL, f"__tvm_ffi_{name}")
    lines = [tir_signature(name, original) if original is not None else name,
             "  tvm-ffi safe call: args and result are TVMFFIAny (tvm/ffi/c_api.h);",
             f"  from Python: tvm_ffi.load_module({quote(lib + '.so')})[{quote(name)}](...)"]
    decl = f"int {symbol}(void* self, const void* args, int32_t num_args, void* result);"
    return [*_comment(lines), decl]


def exported(host: IRModule, abi: str) -> list[tuple[str, PrimFunc]]:
    """The host module's exported functions of ``abi``, in module order."""
    if abi == "c":
        return [(n, f) for n, f in host.functions.items() if f.attrs.get(C_API)]
    return [(n, f) for n, f in host.functions.items()
            if f.attrs.get(CALLING_CONV) == CallingConv.CPACKED_FUNC]


def make_header(name: str, host: IRModule, original: IRModule | None, abi: str,
                symbol_prefix: str = "") -> str:
    """The text of ``NAME.h`` for the host module after the pipeline (``symbol_prefix``:
    the ``--symbol-prefix`` its symbols carry, already in the functions' symbols)."""
    ident = c_identifier(name)
    guard = f"TIRC_{(symbol_prefix + ident).upper()}_H_"
    last_error = f"{symbol_prefix}{ident}_last_error"
    orig = original.functions if original is not None else {}
    out = [f"/* {name}.h: generated by tirc (--abi {abi}); do not edit. */",
           f"#ifndef {guard}", f"#define {guard}", "",
           "#include <stdint.h>"]
    if abi == "c":
        out.append("#include <stdbool.h>")
    out += ["", "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    funcs = exported(host, abi)
    if abi == "c":
        out += _comment(["The message of the last failed call on this thread (\"\" before any):",
                         "\"Kind: message\", kept in a thread-local buffer."])
        out += [f"const char* {last_error}(void);", ""]
        for n, f in funcs:
            out += _c_entry(n, f, orig.get(n), last_error) + [""]
    else:
        for n, f in funcs:
            out += _packed_entry(n, f, orig.get(n), name) + [""]
    out += ["#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(out)
