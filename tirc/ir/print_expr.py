"""Expressions to TVMScript text: literals, operators with Python precedence, calls.

The mixin :class:`ExprPrinter` is the expression half of the function printer
(:mod:`tirc.ir.printer`), which supplies the naming (``var``, ``buffer_name``,
``define``), the scalars it writes as plain names, and the module name for calls.
"""
from __future__ import annotations

import math
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.const_fold import folds_away, try_const_fold
from tirc.ir.expr import (BinOp, Broadcast, BufferLoad, Call, Cast, FloatImm, GlobalVar,
                          IntImm, Let, Not, PrimExpr, Ramp, Select, Shuffle, StringImm,
                          Var, scalable_count)
from tirc.target.kinds import Target

# Python operator precedence, higher binds tighter.
_PREC = {"or": 1, "and": 2, "not": 3, "eq": 4, "ne": 4, "lt": 4, "le": 4, "gt": 4, "ge": 4,
         "bitwise_or": 5, "bitwise_xor": 6, "bitwise_and": 7, "shift_left": 8,
         "shift_right": 8, "add": 9, "sub": 9, "mul": 10, "floordiv": 10, "floormod": 10,
         "div": 10}
_ATOM = 12
_UNARY = 11
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
           "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "and",
           "or": "or", "shift_left": "<<", "shift_right": ">>", "bitwise_and": "&",
           "bitwise_or": "|", "bitwise_xor": "^"}
_NODE_FORM = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "mod": "Mod",
              "floordiv": "FloorDiv", "floormod": "FloorMod", "min": "Min", "max": "Max",
              "eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE",
              "and": "And", "or": "Or", "shift_left": "LShift", "shift_right": "RShift",
              "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor"}
_FUNCTION_FORM = {"min": "T.min", "max": "T.max", "mod": "T.truncmod"}
_DTYPE_FIRST = ("call_extern", "call_pure_extern", "call_intrin", "call_llvm_intrin",
                "call_llvm_pure_intrin", "reinterpret", "type_annotation",
                "get_active_lane_mask", "masked_load", "s_tir.cp_async_raw")

def quote(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_float(value: float) -> str:
    if math.isnan(value):
        return '"nan"'
    if math.isinf(value):
        return '"inf"' if value > 0 else '"-inf"'
    if value == math.floor(value):
        return f"{value:.1f}"  # integral values in full, as TVM's printer writes them
    return "%.17g" % value


def py_value(value: Any, printer: "ExprPrinter | None" = None) -> str:
    """A JSON-like value (attributes, target options) as Python literal text."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value) if math.isfinite(value) else f"float({format_float(value)})"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, Target):
        return f"T.target({py_value(value.to_dict(explicit_only=True))})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(py_value(v, printer) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{quote(k)}: {py_value(v, printer)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, PrimExpr) and printer is not None:
        return printer.expr(value)
    if isinstance(value, Buffer) and printer is not None:
        return printer.buffer_name(value)
    raise TypeError(f"cannot print attribute value {value!r}")



class ExprPrinter:
    """Expression printing; the subclass provides naming and the printing context."""

    scalars: set[int]
    module_name: str | None

    def var(self, v: Var) -> str:
        raise NotImplementedError

    def buffer_name(self, b: Buffer) -> str:
        raise NotImplementedError

    def define(self, obj: object, base: str) -> str:
        raise NotImplementedError

    def expr(self, e: object) -> str:
        return self._expr(e)[0]

    def load_text(self, buf: Buffer, indices, slices: bool = False) -> str:
        """``A[i, j]``; vector indices of stores print as slices, as TVM does."""
        parts = []
        for i in indices:
            if slices and isinstance(i, Ramp) and isinstance(i.stride, IntImm) and i.stride.value > 0:
                count = IntImm(i.base.dtype, i.lanes * i.stride.value)
                if i.scalable:  # A[b:b + T.vscale() * 4]
                    count = scalable_count(i.lanes * i.stride.value, i.base.dtype)
                stop = plus(i.base, count)
                step = f":{i.stride.value}" if i.stride.value != 1 else ""
                parts.append(f"{self.expr(i.base)}:{self.expr(stop)}{step}")
            else:
                parts.append(self.expr(i))
        return f"{self.buffer_name(buf)}[{', '.join(parts) or '()'}]"

    def _expr(self, e: object) -> tuple[str, int]:
        if isinstance(e, Var):
            return self.var(e), _ATOM
        if isinstance(e, Buffer):
            return self.buffer_name(e), _ATOM
        if isinstance(e, IntImm):
            if e.dtype.is_bool:
                return f"T.bool({bool(e.value)})", _ATOM
            if str(e.dtype) == "int32":
                return str(e.value), (_ATOM if e.value >= 0 else _UNARY)
            return f"T.{e.dtype}({e.value})", _ATOM
        if isinstance(e, FloatImm):
            return f"T.{e.dtype}({format_float(e.value)})", _ATOM
        if isinstance(e, StringImm):
            return quote(e.value), _ATOM
        if isinstance(e, BinOp):
            return self._binop(e)
        if isinstance(e, Not):
            return f"not {self._operand(e.a, _PREC['not'], False)}", _PREC["not"]
        if isinstance(e, Select):
            return f"T.Select({self.expr(e.condition)}, {self.expr(e.true_value)}, {self.expr(e.false_value)})", _ATOM
        if isinstance(e, Cast):
            return f"T.Cast({quote(str(e.dtype))}, {self.expr(e.value)})", _ATOM
        if isinstance(e, BufferLoad):
            if id(e.buffer) in self.scalars:
                return self.buffer_name(e.buffer), _ATOM
            return self.load_text(e.buffer, e.indices), _ATOM
        if isinstance(e, Ramp):
            return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride)}, {_lanes_text(e)})", _ATOM
        if isinstance(e, Shuffle):
            vecs = ", ".join(self.expr(v) for v in e.vectors)
            idx = ", ".join(self.expr(i) for i in e.indices)
            return f"T.Shuffle([{vecs}], [{idx}])", _ATOM
        if isinstance(e, Broadcast):
            return f"T.Broadcast({self.expr(e.value)}, {_lanes_text(e)})", _ATOM
        if isinstance(e, Call):
            return self._call(e), _ATOM
        if isinstance(e, Let):
            name = self.define(e.var, e.var.name)
            return f"T.Let({self.expr(e.body)}, where={{{name}: {self.expr(e.value)}}})", _ATOM
        raise TypeError(f"cannot print expression {type(e).__name__}")

    def _operand(self, e: PrimExpr, prec: int, right: bool) -> str:
        text, p = self._expr(e)
        if p < prec or (right and p == prec) or (prec == 4 and p == 4):
            return f"({text})"
        return text

    def _binop(self, e: BinOp) -> tuple[str, int]:
        if e.op in _NODE_FORM and folds_away(e.op, e.a, e.b):
            # TVM's operators fold two constants, and x + 0, x * 1, x and True..., while
            # its parser reads them; the node form keeps the node (as TVM's printer).
            return f"T.{_NODE_FORM[e.op]}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if e.op in _FUNCTION_FORM:
            return f"{_FUNCTION_FORM[e.op]}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if e.op == "div" and not e.dtype.element().is_float:
            return f"T.Div({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        prec = _PREC[e.op]
        a = self._operand(e.a, prec, False)
        b = self._operand(e.b, prec, True)
        return f"{a} {_SYMBOL[e.op]} {b}", prec

    @staticmethod
    def _call_dtype(e: Call) -> str:
        """A call's result dtype; a typed pointer as TVM writes it, ``T.handle("int64",
        "global").ty``."""
        if e.ptr is not None and e.ptr.dtype is not None:
            return f"T.handle({quote(str(e.ptr.dtype))}, {quote(e.ptr.scope)}).ty"
        return quote(str(e.dtype))

    def _call(self, e: Call) -> str:
        args = [self.expr(a) for a in e.args]
        if e.op in ("masked_load", "masked_store") and isinstance(e.args[0], BufferLoad):
            # the access is written as its buffer and indices (tirc/frontend/masked.py):
            # T.masked_load(dtype, A, index..., mask), T.masked_store(A, value, index..., mask)
            access = e.args[0]
            where = [self.expr(i) for i in access.indices]
            args = [self.buffer_name(access.buffer), *args[1:-1], *where, args[-1]]
        if isinstance(e.op, GlobalVar):
            callee = f"{self.module_name}.{e.op.name}" if self.module_name else e.op.name
            return f"{callee}({', '.join(args)})"
        if e.op == "bitwise_not":
            if isinstance(e.args[0], IntImm):
                return f"T.BitwiseNot({args[0]})"
            return f"~{self._operand(e.args[0], _UNARY, False)}"
        if e.op == "get_active_lane_mask":  # TVM spells its mask type uint1 (not bool,
            # a type of its own there); tirc reads both as bool
            args.insert(0, quote("uint1" + str(e.dtype)[len("bool"):]))
        elif e.op in _DTYPE_FIRST:
            args.insert(0, self._call_dtype(e))
        elif e.op == "tvm_struct_get":
            args.append(self._call_dtype(e))
        for key, value in e.kwargs:
            args.append(f"{key}={py_value(value, self)}")
        if e.op == "call_ffi_kernel":
            args.append(f"ret_ty={quote(str(e.dtype))}")
        return f"T.{e.op}({', '.join(args)})"



def _lanes_text(e) -> str:
    return f"T.vscale() * {e.lanes}" if e.scalable else str(e.lanes)


def plus(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a + b`` as the text of a bound, folded as TVM's ``+`` folds it (two constants,
    or one of them 0)."""
    if a.dtype == b.dtype or (isinstance(a, IntImm) and isinstance(b, IntImm)):
        folded = try_const_fold("add", a, b, a.dtype)
        if folded is not None:
            return folded
    return BinOp("add", a, b, a.dtype)
