"""The C text the ``c`` host target's source is made of (:mod:`tirc.backends.c.source`):
C types and literals of TIR values, the fixed parts of the file (headers, tvm-ffi's
structs, the error slots) and the helper functions a module asks for, each written
once per file.

The file needs a C99 compiler and nothing else: tvm-ffi's structs and the few functions
of its C API that packed functions call are declared here (``tvm/ffi/c_api.h`` is not
included), so ``cc -O2 -fPIC -shared NAME.c -o NAME.so`` builds it; tvm-ffi provides
those functions when the library is loaded through it.
"""
from __future__ import annotations

import math
import struct

from tirc.ir.c_names import LAST_ERROR_BYTES
from tirc.diagnostics import Diagnostic
from tirc.ir.dtype import DataType

MESSAGE_BYTES = 1024  # a private function's error message, as the LLVM backend keeps it


def ctype(d: DataType, span=None) -> str:
    """The C type of one lane of ``d``; a located error for a type C99 lacks."""
    if d.is_handle:
        return "void*"
    if d.is_bool:
        return "bool"
    if d.is_int and d.bits in (8, 16, 32, 64):
        return f"int{d.bits}_t"
    if d.is_uint and d.bits in (8, 16, 32, 64):
        return f"uint{d.bits}_t"
    if d.is_float and d.bits == 32 and d.base == "float32":
        return "float"
    if is_half(d):  # computed in float, rounded to float16 after each operation
        return "float"
    if d.is_float and d.bits == 64:
        return "double"
    raise Diagnostic(f"the c target has no C99 type for {d.element()}: build host code "
                     "that computes with it for llvm", span)


def is_half(d: DataType) -> bool:
    return d.base == "float16"


def memory_ctype(d: DataType, span=None) -> str:
    """The C type of one lane of a buffer element of ``d`` (bool: a byte, as DLPack;
    float16: its bits)."""
    if is_half(d):
        return "uint16_t"
    return "int8_t" if d.is_bool else ctype(d, span)


def unsigned_of(c: str) -> str:
    return "u" + c if c.startswith("int") else c


def int_literal(value: int, d: DataType) -> str:
    c = ctype(d)
    if d.is_bool:
        return "true" if value else "false"
    if d.is_handle:
        return "NULL" if value == 0 else f"((void*)(uintptr_t){value}u)"
    if d.is_uint:
        suffix = "ULL" if d.bits == 64 else "u"
        return f"(({c}){value % (1 << d.bits)}{suffix})"
    if value == -(1 << (d.bits - 1)):  # the minimum has no literal of its own
        return f"(({c})(-{(1 << (d.bits - 1)) - 1}LL - 1))"
    if d.bits == 32 and -(1 << 31) < value < (1 << 31):
        return str(value) if value >= 0 else f"({value})"
    return f"(({c}){value}LL)" if d.bits == 64 else f"(({c}){value})"


def float_literal(value: float, d: DataType) -> str:
    c = ctype(d)
    suffix = "f" if c == "float" else ""
    if is_half(d):  # the constant as float16 holds it, as LLVM's half constant does
        try:
            value = struct.unpack("<e", struct.pack("<e", value))[0]
        except OverflowError:
            value = math.copysign(math.inf, value)
    if math.isnan(value):
        return f"(({c})NAN)"
    if math.isinf(value):
        return f"(({c})INFINITY)" if value > 0 else f"(-({c})INFINITY)"
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    return f"({text}{suffix})" if value < 0 else text + suffix


_ESCAPES = {"\n": "\\n", "\t": "\\t"}


def string_literal(text: str) -> str:
    """A C string literal of ``text`` (UTF-8; every byte outside printable ASCII escaped
    in octal, which never runs into a following digit the way hex escapes do)."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in "\\\"":
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 32 <= byte < 127 and ch != "?":  # '?' escaped: no trigraphs
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


BASE = """\
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define TIRC_THREAD_LOCAL _Thread_local
#elif defined(_MSC_VER)
#define TIRC_THREAD_LOCAL __declspec(thread)
#else
#define TIRC_THREAD_LOCAL __thread
#endif
#if defined(_WIN32)
#define TIRC_EXPORT __declspec(dllexport)
#else
#define TIRC_EXPORT __attribute__((visibility("default")))
#endif
"""

FFI = """\
/* tvm-ffi's C ABI (tvm/ffi/c_api.h, dlpack.h): the parts this file uses */
typedef struct {
  void* data;
  int32_t device_type;
  int32_t device_id;
  int32_t ndim;
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} tirc_DLTensor;
typedef struct {
  int32_t type_index;
  uint32_t zero_padding;
  union { int64_t v_int64; double v_float64; void* v_ptr; const char* v_c_str; } v;
} tirc_Any;
typedef struct { const char* data; size_t size; } tirc_ByteArray;
extern void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
"""

PACKED_CALLS = """\
extern int TVMFFIFunctionGetGlobal(const tirc_ByteArray* name, void** out);
extern int TVMFFIFunctionCall(void* func, tirc_Any* args, int32_t num_args, tirc_Any* result);
extern int TVMFFIObjectDecRef(void* obj);

/* A packed call's result: an object is released (it reads as 0); ints, bools and floats
 * convert to the type asked for (a float to an integer rounds toward zero). */
static void tirc_any_release(tirc_Any* r) {
  if (r->type_index >= 64) TVMFFIObjectDecRef(r->v.v_ptr);
}
static int64_t tirc_any_int(const tirc_Any* r) {
  if (r->type_index == 3) {
    double x = r->v.v_float64;
    if (!(x < 9.2e18)) x = 9.2e18;
    if (!(x > -9.2e18)) x = -9.2e18;
    return (int64_t)x;
  }
  return (r->type_index == 1 || r->type_index == 2) ? r->v.v_int64 : 0;
}
static double tirc_any_float(const tirc_Any* r) {
  if (r->type_index == 3) return r->v.v_float64;
  return (double)((r->type_index == 1 || r->type_index == 2) ? r->v.v_int64 : 0);
}
static void* tirc_any_ptr(const tirc_Any* r) {
  return r->type_index == 4 ? r->v.v_ptr : NULL;
}
"""

HALF = """\
/* float16: values are floats rounded to float16 after each operation (exact for +, -,
 * *, / and sqrt: a float holds the product of two float16 exactly); in memory, the
 * IEEE binary16 bits. Conversions round to nearest, ties to even. */
static uint16_t tirc_f16_bits(float f) {
  uint32_t x, sign, mag, h, rem;
  memcpy(&x, &f, sizeof x);
  sign = (x >> 16) & 0x8000u;
  mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (mag < 0x38800000u) {
    uint32_t m = (mag & 0x7fffffu) | 0x800000u, shift;
    if (mag < 0x33000000u) return (uint16_t)sign;
    shift = 126u - (mag >> 23);
    h = m >> shift;
    rem = m & ((1u << shift) - 1u);
    if (rem > (1u << (shift - 1u)) || (rem == (1u << (shift - 1u)) && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  h = (mag - 0x38000000u) >> 13;
  rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}
static float tirc_f16_value(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu, x;
  float f;
  if (e == 0x1fu) x = sign | 0x7f800000u | (m << 13);
  else if (e != 0) x = sign | ((e + 112u) << 23) | (m << 13);
  else if (m == 0) x = sign;
  else {
    e = 113u;
    while (!(m & 0x400u)) { m <<= 1; e--; }
    x = sign | (e << 23) | ((m & 0x3ffu) << 13);
  }
  memcpy(&f, &x, sizeof f);
  return f;
}
static float tirc_f16_round(float f) { return tirc_f16_value(tirc_f16_bits(f)); }
/* A double to float16 in one rounding: to float rounding to odd first, which float16's
 * rounding then cannot double-round. */
static float tirc_f16_round_double(double d) {
  float f = (float)d;
  uint32_t x;
  if ((double)f != d && f == f) {
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    memcpy(&x, &f, sizeof x);
    x |= 1u;
    memcpy(&f, &x, sizeof f);
  }
  return tirc_f16_round(f);
}
"""

PRIVATE_ERRORS = f"""\
/* The error of a failed private function (or integer division), for its caller. */
static TIRC_THREAD_LOCAL const char* tirc_error_kind;
static TIRC_THREAD_LOCAL char tirc_error_message[{MESSAGE_BYTES}];
static void tirc_record_error(const char* kind, const char* message) {{
  if (message != tirc_error_message)
    snprintf(tirc_error_message, sizeof tirc_error_message, "%s", message);
  tirc_error_kind = kind;
}}
"""


def c_api_errors(accessor: str) -> str:
    """The C ABI's last error: a thread-local message and its exported accessor."""
    return f"""\
/* --abi c: the message of the last failed call on this thread, "Kind: message". */
static TIRC_THREAD_LOCAL char tirc_last_error[{LAST_ERROR_BYTES}];
TIRC_EXPORT const char* {accessor}(void) {{ return tirc_last_error; }}
static void tirc_set_last_error(const char* kind, const char* message) {{
  snprintf(tirc_last_error, sizeof tirc_last_error, "%s: %s", kind, message);
}}
"""


def _min_of(c: str) -> str:
    bits = c[3:-2] if c.startswith("int") else ""
    return f"INT{bits}_MIN" if bits else "0"


def helper(name: str) -> str:
    """The C definition of helper ``name`` (``tirc_<what>_<C type>``)."""
    what, _, c = name[len("tirc_"):].partition("__")
    if what == "select":  # both values computed before the call
        return f"static inline {c} {name}(int cond, {c} a, {c} b) {{ return cond ? a : b; }}"
    if what in ("min", "max"):
        pick = "a < b ? a : b" if what == "min" else "a < b ? b : a"
        return f"static inline {c} {name}({c} a, {c} b) {{ return {pick}; }}"
    if what in ("floordiv", "floormod"):
        if c.startswith("u"):
            op = "/" if what == "floordiv" else "%"
            return f"static inline {c} {name}({c} a, {c} b) {{ return a {op} b; }}"
        if what == "floordiv":
            body = ("q - ((r != 0 && ((r < 0) != (b < 0))) ? 1 : 0)")
        else:
            body = "(r != 0 && ((r < 0) != (b < 0))) ? r + b : r"
        return (f"static inline {c} {name}({c} a, {c} b) {{\n"
                f"  {c} q = a / b, r = a % b;\n  (void)q; (void)r;\n  return {body};\n}}")
    if what.startswith("checked_"):
        op = what[len("checked_"):]
        lo = _min_of(c)
        plain = f"tirc_{op}__{c}" if op.startswith("floor") else None
        compute = f"{plain}(a, b)" if plain else f"a {'/' if op == 'div' else '%'} b"
        quotient = op in ("div", "floordiv")
        overflow = ""
        if lo != "0":
            if quotient:
                overflow = (f"  if (a == {lo} && b == -1) {{\n"
                            f"    snprintf(tirc_error_message, sizeof tirc_error_message,\n"
                            f"             \"integer division overflow: the minimum {c[:-2]} "
                            f"divided by -1 in function '%s'\", function);\n"
                            f"    tirc_error_kind = \"OverflowError\";\n    return 0;\n  }}\n")
            else:
                overflow = "  if (b == -1) return 0;\n"
        return (f"/* {op} that fails the calling function (the error recorded) on a zero "
                f"divisor{' or overflow' if quotient and lo != '0' else ''} */\n"
                f"static {c} {name}({c} a, {c} b, const char* function) {{\n"
                f"  if (b == 0) {{\n"
                f"    snprintf(tirc_error_message, sizeof tirc_error_message,\n"
                f"             \"integer division by zero in function '%s'\", function);\n"
                f"    tirc_error_kind = \"ZeroDivisionError\";\n    return 0;\n  }}\n"
                f"{overflow}  return {compute};\n}}")
    if what == "popcount":
        u = unsigned_of(c)
        return (f"static inline {c} {name}({c} a) {{\n  {u} v = ({u})a;\n  {c} n = 0;\n"
                f"  while (v) {{ n += ({c})(v & 1u); v >>= 1; }}\n  return n;\n}}")
    if what == "clz":
        u = unsigned_of(c)
        bits = int(c.strip("uint_t") or 8)
        return (f"static inline {c} {name}({c} a) {{\n  {u} v = ({u})a;\n  {c} n = 0;\n"
                f"  {u} top = ({u})(({u})1 << {bits - 1});\n"
                f"  while (n < {bits} && !(v & top)) {{ v = ({u})(v << 1); n++; }}\n"
                f"  return n;\n}}")
    if what == "bits":  # tirc_bits__<to>__<from>: reinterpret the bytes
        to, _, frm = c.partition("__")
        return (f"static inline {to} {name}({frm} a) {{\n  {to} r;\n"
                f"  memcpy(&r, &a, sizeof r);\n  return r;\n}}")
    raise KeyError(name)


def helper_needs_errors(name: str) -> bool:
    return name.startswith("tirc_checked_")


def helper_deps(name: str) -> tuple[str, ...]:
    """Helpers ``name``'s definition calls (defined before it)."""
    what, _, c = name[len("tirc_"):].partition("__")
    if what in ("checked_floordiv", "checked_floormod"):
        return (f"tirc_{what[len('checked_'):]}__{c}",)
    return ()
