"""Expressions of the ``c`` host target: TIR PrimExpr -> C expression text (a mixin of
:class:`tirc.backends.c.source.FunctionWriter`), with the integer semantics of the LLVM
backend (:mod:`tirc.backends.llvm.expr`): signed ``add``/``sub``/``mul``/``shift_left`` wrap (the file is
compiled with ``-fwrapv``), ``div``/``mod`` truncate and ``floordiv``/``floormod`` floor; a division that
may trap calls a checked helper that records a ZeroDivisionError or OverflowError, which
the statement then raises (:meth:`FunctionWriter.operand`); float comparisons are
ordered except ``!=``, as C's are.

C has no vectors: a vector expression is written lane by lane, ``ex(e, k)`` giving lane
``k``. Lets and what must not be computed twice go into the statement's prelude
(``self.pre``) as constants, except under a condition (``T.if_then_else``), where they
are written in place so that nothing is computed that the condition guards.
"""
from __future__ import annotations

from tirc.backends.c.text import (
    ctype,
    float_literal,
    int_literal,
    is_half,
    memory_ctype,
    string_literal,
    )
from tirc.backends.host_faults import DIVISIONS, division_needs_guard
from tirc.diagnostics import Diagnostic
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    StringImm,
    Var,
)
from tirc.ir.index_arith import widen

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_BITS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


class ExprWriter:
    pre: list[str]
    cond: int  # how many conditions (if_then_else branches) the expression is under
    faults: bool  # the statement's expressions may record an error (operand checks it)

    # -- entry --------------------------------------------------------------------------
    def ex(self, e: PrimExpr, k: int | None = None) -> str:
        """Lane ``k`` of ``e`` (a scalar ``e`` ignores ``k``) as C text."""
        if e.dtype.scalable:  # lane by lane needs the lane count, known only at run time
            raise Diagnostic(f"scalable vectors ({e.dtype}) are not supported by the c target; "
                             "build for llvm with SVE or RISC-V V", getattr(e, "span", None))
        if e.dtype.lanes == 1:
            k = None
        elif k is None:
            raise Diagnostic(f"a {e.dtype} vector where the c target needs a scalar",
                             getattr(e, "span", None))
        method = getattr(self, "ex_" + type(e).__name__, None)
        if method is None:
            raise Diagnostic(f"the c target cannot compile a {type(e).__name__} expression",
                             getattr(e, "span", None))
        return method(e, k)

    def lanes(self, e: PrimExpr) -> list[str]:
        return [self.ex(e, k) for k in range(e.dtype.lanes)]

    def temp(self, c: str, value: str, hint: str = "t") -> str:
        """A constant of C type ``c`` holding ``value``, in the prelude; its name."""
        name = self.fresh(hint)
        self.pre.append(f"{c} const {name} = {value};")
        return name

    # -- leaves -------------------------------------------------------------------------
    def ex_IntImm(self, e: IntImm, k) -> str:
        return int_literal(e.value, e.dtype)

    def ex_FloatImm(self, e: FloatImm, k) -> str:
        return float_literal(e.value, e.dtype)

    def ex_StringImm(self, e: StringImm, k) -> str:
        return string_literal(e.value)

    def ex_Var(self, v: Var, k) -> str:
        inline = self.inlined.get(id(v))
        if inline is not None:
            return inline if k is None else inline[k]
        name = self.names.get(id(v))
        if name is None:
            raise Diagnostic(f"variable '{v.name}' is used outside the statement that "
                             "defines it", v.span)
        return name if k is None else f"{name}[{k}]"

    # -- operators ----------------------------------------------------------------------
    def ex_Not(self, e: Not, k) -> str:
        return f"(!{self.ex(e.a, k)})"

    def ex_Select(self, e: Select, k) -> str:
        cond = self.ex(e.condition, k)
        outer, self.faults = self.faults, False
        a, b = self.ex(e.true_value, k), self.ex(e.false_value, k)
        branch_faults, self.faults = self.faults, outer or self.faults
        c = ctype(e.dtype.element(), e.span)
        if branch_faults and c.isidentifier():
            # T.Select evaluates both branches, as the llvm backend does: an error of
            # either (a division by zero) is raised; a call evaluates all its arguments
            return f"{self.helper(f'tirc_select__{c}')}({cond}, {a}, {b})"
        return f"({cond} ? {a} : {b})"

    def ex_Cast(self, e: Cast, k) -> str:
        return self.convert(self.ex(e.value, k), e.value.dtype.element(), e.dtype.element(),
                            e.span)

    def ex_Let(self, e: Let, k) -> str:
        if id(e.var) not in self.names and id(e.var) not in self.inlined:
            self.bind(e.var, e.value)
        return self.ex(e.body, k)

    def bind(self, var: Var, value: PrimExpr) -> None:
        """Define ``var`` for the rest of the statement: a prelude constant, or (under a
        condition) its value written where it is used."""
        if self.cond:
            lanes = [f"({x})" for x in self.lanes(value)]
            self.inlined[id(var)] = lanes[0] if value.dtype.lanes == 1 else lanes
            return
        self.names[id(var)] = self.declare(var, value)
        self.let_exprs.append(id(var))

    def declare(self, var: Var, value: PrimExpr) -> str:
        """A prelude constant for ``var`` = ``value`` (an array for a vector); its name."""
        name = self.fresh(var.name)
        c = ctype(value.dtype, var.span)
        if value.dtype.lanes == 1:
            self.pre.append(f"{c} const {name} = {self.ex(value)};")
        else:
            self.pre.append(f"{c} const {name}[{value.dtype.lanes}] = "
                            f"{{{', '.join(self.lanes(value))}}};")
        return name

    def ex_Broadcast(self, e: Broadcast, k) -> str:
        return self.ex(e.value)

    def ex_Ramp(self, e: Ramp, k) -> str:
        d, base = e.base.dtype, self.ex(e.base)
        if isinstance(e.stride, IntImm):  # the usual case: a constant offset per lane
            offset = k * e.stride.value
            return base if offset == 0 else self.arith("add", d, base, int_literal(offset, d))
        step = self.arith("mul", d, int_literal(k, d), self.ex(e.stride))
        return self.arith("add", d, base, step)

    def ex_Shuffle(self, e: Shuffle, k) -> str:
        pool = [(v, j) for v in e.vectors for j in range(v.dtype.lanes)]
        index = e.indices[k or 0]
        if not isinstance(index, IntImm) or not 0 <= index.value < len(pool):
            raise Diagnostic("a shuffle index must be a constant lane number", e.span)
        vec, j = pool[index.value]
        return self.ex(vec, j)

    def ex_BinOp(self, e: BinOp, k) -> str:
        a, b = self.ex(e.a, k), self.ex(e.b, k)
        d, op = e.a.dtype.element(), e.op
        if op in _CMP:
            if d.is_handle and op not in ("eq", "ne"):
                a, b = f"(uintptr_t){a}", f"(uintptr_t){b}"
            return f"({a} {_CMP[op]} {b})"
        if op in ("and", "or"):
            return f"({a} {'&&' if op == 'and' else '||'} {b})"
        if op in ("min", "max"):
            return f"{self.helper(f'tirc_{op}__{ctype(d, e.span)}')}({a}, {b})"
        if d.is_float:
            return self.float_arith(op, a, b, d, e)
        if op in DIVISIONS:
            return self.division(e, a, b, d)
        return self.arith(op, d, a, b, e)

    def arith(self, op: str, d: DataType, a: str, b: str, e: BinOp | None = None) -> str:
        """Integer ``a op b`` of type ``d``, in ``d``'s width. Signed overflow wraps, as
        in the LLVM backend's code: the file is compiled with ``-fwrapv``."""
        c = ctype(d)
        sym = {**_ARITH, **_BITS, "shift_left": "<<", "shift_right": ">>"}.get(op)
        if sym is None:
            raise Diagnostic(f"operator '{op}' does not apply to {d}", getattr(e, "span", None))
        if d.bits >= 32 and not d.is_bool:
            return f"({a} {sym} {b})"
        return f"(({c})({a} {sym} {b}))"  # computed as int, back to the narrow type

    def float_arith(self, op: str, a: str, b: str, d: DataType, e: BinOp) -> str:
        f = "f" if ctype(d) == "float" else ""
        if op in _ARITH:
            text = f"({a} {_ARITH[op]} {b})"
        elif op == "div":
            text = f"({a} / {b})"
        elif op == "mod":
            text = f"fmod{f}({a}, {b})"
        elif op == "floordiv":
            text = f"floor{f}({a} / {b})"
        elif op == "floormod":
            text = f"({a} - floor{f}({a} / {b}) * {b})"
        else:
            raise Diagnostic(f"operator '{op}' does not apply to floating-point values", e.span)
        return self.rounded(text, d)

    def rounded(self, text: str, d: DataType) -> str:
        """A float result of type ``d``: float16 rounds it."""
        if not is_half(d):
            return text
        self.module.need("half")
        return f"tirc_f16_round({text})"

    def division(self, e: BinOp, a: str, b: str, d: DataType) -> str:
        c = ctype(d, e.span)
        if division_needs_guard(e):
            self.faults = True
            fn = self.helper(f"tirc_checked_{e.op}__{c}")
            return f"{fn}({a}, {b}, {string_literal(self.name)})"
        if e.op in ("floordiv", "floormod") and d.is_int:
            return f"{self.helper(f'tirc_{e.op}__{c}')}({a}, {b})"
        return f"(({c})({a} {'/' if e.op in ('div', 'floordiv') else '%'} {b}))"

    def convert(self, v: str, src: DataType, dst: DataType, span=None) -> str:
        """Scalar ``v`` of ``src`` as ``dst``, with the LLVM backend's conversions."""
        if src == dst:
            return v
        to = ctype(dst, span)
        ctype(src, span)
        if is_half(dst) and not src.is_bool and not src.is_handle:
            self.module.need("half")
            if src.is_float and src.bits == 64:
                return f"tirc_f16_round_double({v})"
            return v if is_half(src) else f"tirc_f16_round((float){v})"
        if dst.is_bool:
            return f"({v} != {'NULL' if src.is_handle else '0'})"
        if src.is_handle or dst.is_handle:
            if src.is_handle and dst.is_handle:
                return v
            return f"(({to})(intptr_t){v})" if src.is_handle else f"((void*)(intptr_t){v})"
        return f"(({to}){v})"

    # -- memory -------------------------------------------------------------------------
    def element(self, buf: Buffer, index: str, lane: int = 0) -> str:
        """The lvalue of lane ``lane`` of element ``index`` (C text) of ``buf``."""
        mem = memory_ctype(buf.dtype, buf.span)
        at = index
        eo = self.elem_offset(buf)
        if eo is not None:
            at = f"(int64_t){self.ex(eo)} + (int64_t){index}"
        step = buf.dtype.lanes
        if step > 1:
            at = f"({at}) * {step} + {lane}"
        return f"(({mem}*){self.ex(buf.data)})[{at}]"

    def elem_offset(self, buf: Buffer) -> PrimExpr | None:
        eo = buf.elem_offset
        if eo is None or (isinstance(eo, IntImm) and eo.value == 0) or id(buf) in self.offset_applied:
            return None
        return widen(eo)

    def ex_BufferLoad(self, e: BufferLoad, k) -> str:
        if len(e.indices) != 1:
            raise Diagnostic(f"buffer '{e.buffer.name}' is not flattened", e.span)
        index, per = e.indices[0], e.buffer.dtype.lanes
        lane = (k or 0)
        at = self.ex(index, lane // per if index.dtype.lanes > 1 else None)
        v = self.element(e.buffer, at, lane % per)
        if is_half(e.dtype):
            self.module.need("half")
            return f"tirc_f16_value({v})"
        return f"({v} != 0)" if e.dtype.is_bool else v

    def ex_Call(self, e: Call, k) -> str:
        from tirc.backends.c.calls import call
        return call(self, e, k)
