"""Expressions, types and literals of OpenCL C, as TVM's OpenCL code generator writes them
(``CodeGenOpenCL`` over ``CodeGenC``): every operation parenthesised, thread indices as
``(convert_int(get_local_id(0)))``, vectors as ``floatN``, ``half`` through
``cl_khr_fp16``, the math built-ins by name.

:class:`ExprWriter` turns one expression into text. A ``Let`` inside an expression
becomes a declaration written before the statement that holds it (as ``CodeGenC`` does);
what OpenCL C cannot say is a located :class:`~tirc.diagnostics.Diagnostic` naming the
target.
"""
from __future__ import annotations

import math

from tirc.diagnostics import Diagnostic
from tirc.ir.dtype import DataType
from tirc.ir.expr import (BinOp, Broadcast, BufferLoad, Call, Cast, FloatImm, GlobalVar, IntImm,
                          Let, Not, PrimExpr, Ramp, Select, Shuffle, StringImm, Var)

# TIR element types as OpenCL C scalar types (bool in memory is a byte; bfloat16 and the
# float8 kinds are stored as integers of their width once the storage passes legalised them)
SCALAR = {
    "bool": "bool", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
    "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
    "float16": "half", "float32": "float", "float64": "double",
}
MEMORY = {**SCALAR, "bool": "uchar"}  # element types of buffers
VECTOR_LANES = (2, 3, 4, 8, 16)

# TIR math intrinsics and the OpenCL C built-in of the same meaning
UNARY_MATH = {
    "exp": "exp", "exp2": "exp2", "exp10": "exp10", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin",
    "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asin": "asin",
    "acos": "acos", "atan": "atan", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
    "erf": "erf", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "round": "rint",
    "nearbyint": "rint", "fabs": "fabs",
}
BINARY_MATH = {"pow": "pow", "atan2": "atan2", "hypot": "hypot", "copysign": "copysign",
               "nextafter": "nextafter", "fmod": "fmod", "ldexp": "ldexp"}
THREAD_AXES = {"blockIdx": "get_group_id", "threadIdx": "get_local_id"}
_C_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "eq": "==", "ne": "!=",
          "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "&&", "or": "||",
          "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "shift_left": "<<",
          "shift_right": ">>"}
_LANE_NAMES = "0123456789abcdef"

TARGET_NOTE = "OpenCL device code (target 'opencl')"


def unsupported(what: str, span) -> Diagnostic:
    return Diagnostic(f"{what} is not supported in {TARGET_NOTE}", span)


def ctype(dtype: DataType, span=None, memory: bool = False) -> str:
    """The OpenCL C type of ``dtype`` (``memory``: as a buffer element)."""
    table = MEMORY if memory else SCALAR
    base = table.get(dtype.base)
    if base is None and dtype.is_float and dtype.bits in (8, 16):  # bfloat16, float8 storage
        base = "ushort" if dtype.bits == 16 else "uchar"
    if base is None or dtype.scalable:
        raise unsupported(f"the type {dtype}", span)
    if dtype.lanes == 1:
        return base
    if dtype.lanes not in VECTOR_LANES:
        raise unsupported(f"a vector of {dtype.lanes} lanes ({dtype})", span)
    return f"{base}{dtype.lanes}"


def lane(text: str, i: int) -> str:
    return f"({text}).s{_LANE_NAMES[i]}"


class ExprWriter:
    """Expressions of one function. ``names`` maps each variable to its text;
    ``pointers`` each data variable to its (element type, address space); ``hoist``
    receives the declarations of ``Let`` expressions; ``uses`` collects what the file's
    header must enable (``fp16``, ``fp64``) and the helpers it must define."""

    def __init__(self, names: dict, pointers: dict, hoist, uses: set):
        self.names, self.pointers, self.hoist, self.uses = names, pointers, hoist, uses

    def type(self, dtype: DataType, span=None, memory: bool = False) -> str:
        if dtype.base == "float16":
            self.uses.add("fp16")
        elif dtype.base == "float64":
            self.uses.add("fp64")
        return ctype(dtype, span, memory)

    def __call__(self, e: PrimExpr) -> str:
        method = getattr(self, "visit_" + type(e).__name__, None)
        if method is None:
            raise unsupported(f"the expression {type(e).__name__}", getattr(e, "span", None))
        return method(e)

    # -- leaves -----------------------------------------------------------------------
    def visit_Var(self, e: Var) -> str:
        name = self.names.get(e)
        if name is None:
            raise Diagnostic(f"variable '{e.name}' is used in {TARGET_NOTE} but not defined "
                             "there", e.span)
        return name

    def visit_IntImm(self, e: IntImm) -> str:
        return int_literal(e.value, e.dtype, self.type(e.dtype, e.span))

    def visit_FloatImm(self, e: FloatImm) -> str:
        return float_literal(e.value, e.dtype, self.type(e.dtype, e.span))

    def visit_StringImm(self, e: StringImm) -> str:
        raise unsupported("a string", e.span)

    # -- operators --------------------------------------------------------------------
    def visit_BinOp(self, e: BinOp) -> str:
        a, b = self(e.a), self(e.b)
        t = e.a.dtype
        if e.op in ("min", "max"):
            return f"{e.op}({a}, {b})"
        if e.op in ("floordiv", "floormod") or (e.op in ("div", "mod") and t.is_integer
                                                 and not _safe_divisor(e.b)):
            return self.division(e.op, a, b, t, e.span)
        if e.op == "mod" and t.is_float:
            return f"fmod({a}, {b})"
        return f"({a} {_C_OPS[e.op]} {b})"

    def division(self, op: str, a: str, b: str, t: DataType, span) -> str:
        """A division that must not trap, as the shared LLVM lowering makes it on a GPU:
        x / 0 is -1, x % 0 is x, the minimum / -1 wraps; floor rounding for floordiv and
        floormod. Through helpers the file defines (``tirc_floordiv_int``)."""
        if t.is_float:
            return f"floor(({a} / {b}))" if op == "floordiv" else f"({a} - (floor(({a} / {b})) * {b}))"
        if t.is_bool:
            return f"({a} {'/' if op in ('div', 'floordiv') else '%'} {b})"
        scalar = self.type(t.element(), span)
        helper = f"tirc_{op}_{scalar}"
        self.uses.add(("helper", op, scalar))
        if t.lanes == 1:
            return f"{helper}({a}, {b})"
        parts = ", ".join(f"{helper}({lane(a, i)}, {lane(b, i)})" for i in range(t.lanes))
        return f"(({self.type(t, span)})({parts}))"

    def visit_Not(self, e: Not) -> str:
        return f"(!{self(e.a)})"

    def visit_Select(self, e: Select) -> str:
        c, t, f = self(e.condition), self(e.true_value), self(e.false_value)
        if e.dtype.lanes > 1:
            return f"select({f}, {t}, {c})"
        return f"({c} ? {t} : {f})"

    def visit_Cast(self, e: Cast) -> str:
        v = self(e.value)
        if e.dtype.lanes > 1:
            if e.value.dtype.lanes == 1:
                return f"(({self.type(e.dtype, e.span)})({v}))"
            return f"convert_{self.type(e.dtype, e.span)}({v})"
        return f"(({self.type(e.dtype, e.span)}){v})"

    def visit_Let(self, e: Let) -> str:
        value = self(e.value)
        name = self.hoist(e.var, value)
        self.names[e.var] = name
        return self(e.body)

    # -- memory and vectors -------------------------------------------------------------
    def pointer(self, buf, span) -> str:
        """The text of ``buf``'s data pointer, cast when the buffer views memory of
        another element type."""
        data = self.visit_Var(buf.data)
        elem, space = self.pointers.get(buf.data, (None, "__global"))
        want = self.type(buf.dtype, span, memory=True)
        if elem is not None and elem != want:
            return f"(({space} {want}*){data})"
        return data

    def visit_BufferLoad(self, e: BufferLoad) -> str:
        return self.access(e.buffer, e.indices, e.dtype, e.span)

    def access(self, buf, indices, dtype: DataType, span) -> str:
        if len(indices) != 1:
            raise unsupported(f"a {len(indices)}-dimensional access of '{buf.name}' "
                              "(buffers are flat after FlattenBuffer)", span)
        index = indices[0]
        ptr = self.pointer(buf, span)
        if index.dtype.lanes == 1:
            return f"{ptr}[{self(index)}]"
        lanes = index.dtype.lanes
        if isinstance(index, Ramp) and isinstance(index.stride, IntImm) and index.stride.value == 1 \
                and buf.dtype.lanes == 1:
            return f"vload{lanes}(0, {ptr} + {self(index.base)})"
        parts = ", ".join(f"{ptr}[{self.lane_of(index, i)}]" for i in range(lanes))
        return f"(({self.type(dtype, span)})({parts}))"

    def store(self, buf, indices, value: str, span) -> str:
        """The statement text of a store of ``value`` (already text)."""
        index = indices[0] if len(indices) == 1 else None
        if index is None:
            raise unsupported(f"a {len(indices)}-dimensional store to '{buf.name}'", span)
        ptr = self.pointer(buf, span)
        if index.dtype.lanes == 1:
            return f"{ptr}[{self(index)}] = {value};"
        if isinstance(index, Ramp) and isinstance(index.stride, IntImm) and index.stride.value == 1 \
                and buf.dtype.lanes == 1:
            return f"vstore{index.dtype.lanes}({value}, 0, {ptr} + {self(index.base)});"
        name = self.hoist(None, value, self.type(buf.dtype.with_lanes(index.dtype.lanes), span))
        return " ".join(f"{ptr}[{self.lane_of(index, i)}] = {lane(name, i)};"
                        for i in range(index.dtype.lanes))

    def lane_of(self, e: PrimExpr, i: int) -> str:
        """Lane ``i`` of vector expression ``e``, as scalar text."""
        if isinstance(e, Ramp):
            return f"({self(e.base)} + ({self(e.stride)} * {i}))"
        if isinstance(e, Broadcast):
            return self(e.value)
        return lane(self(e), i)

    def visit_Ramp(self, e: Ramp) -> str:
        if e.scalable:
            raise unsupported("a scalable vector", e.span)
        parts = ", ".join(self.lane_of(e, i) for i in range(e.lanes))
        return f"(({self.type(e.dtype, e.span)})({parts}))"

    def visit_Broadcast(self, e: Broadcast) -> str:
        if e.scalable:
            raise unsupported("a scalable vector", e.span)
        return f"(({self.type(e.dtype, e.span)})({self(e.value)}))"

    def visit_Shuffle(self, e: Shuffle) -> str:
        lanes = []
        for index in e.indices:
            if not isinstance(index, IntImm):
                raise unsupported("a shuffle with lane indices not constant", e.span)
            k = index.value
            for v in e.vectors:
                if k < v.dtype.lanes:
                    lanes.append(self(v) if v.dtype.lanes == 1 else lane(self(v), k))
                    break
                k -= v.dtype.lanes
        if len(lanes) == 1:
            return lanes[0]
        return f"(({self.type(e.dtype, e.span)})({', '.join(lanes)}))"

    # -- calls ------------------------------------------------------------------------
    def visit_Call(self, e: Call) -> str:
        from tirc.backends.opencl.calls import call
        if isinstance(e.op, GlobalVar):
            return f"{self.names.get(e.op.name, e.op.name)}({', '.join(self(a) for a in e.args)})"
        return call(self, e)


def _safe_divisor(e: PrimExpr) -> bool:
    """A constant divisor that can neither be zero nor overflow (-1)."""
    return isinstance(e, IntImm) and e.value not in (0, -1)


def int_literal(value: int, dtype: DataType, c: str) -> str:
    if dtype.is_bool:
        return "true" if value else "false"
    if dtype.lanes > 1:
        return f"(({c})({int_literal(value, dtype.element(), c[:-len(str(dtype.lanes))])}))"
    if dtype.base == "int32":
        return str(value) if value >= 0 else ("(-2147483647 - 1)" if value == -2**31 else f"({value})")
    if dtype.base == "int64":
        text = "(-9223372036854775807L - 1L)" if value == -2**63 else f"{value}L"
        return f"(long){text}" if value >= 0 else f"((long){text})"
    if dtype.base == "uint32":
        return f"{value}u"
    if dtype.base == "uint64":
        return f"{value}UL"
    return f"(({c}){value})"


def float_literal(value: float, dtype: DataType, c: str) -> str:
    if dtype.lanes > 1:
        return f"(({c})({float_literal(value, dtype.element(), c[:-len(str(dtype.lanes))])}))"
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "(-INFINITY)"
    else:
        text = repr(float(value))
        if "e" not in text and "." not in text:
            text += ".0"
        if dtype.base != "float64":
            text += "f"
    if dtype.base == "float32":
        return text if value >= 0 or math.isnan(value) else f"({text})"
    return f"(({c}){text})"
