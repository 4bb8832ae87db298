"""Expressions: TIR PrimExpr -> LLVM values, for every target (a mixin of
:class:`~tirc.backends.llvm.lower.FunctionLowering`). Integer semantics as TVM's:
``div``/``mod`` truncate, ``floordiv``/``floormod`` floor, shifts are arithmetic for
signed types; comparisons of floats are ordered except ``!=``."""
from __future__ import annotations

import math

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.fold import fold_int
from tirc.backends.llvm.llvmlite_compat import (ScalableVectorType, is_scalable, scalable_mask,
                                           scalable_splat)
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
    is_one,
)
from tirc.backends.host_faults import DIVISIONS as _DIVISIONS
from tirc.backends.host_faults import division_hazards as _division_hazards
from tirc.ir.index_arith import widen
from tirc.ir.attrs import GLOBAL_SYMBOL
from tirc.ir.visitor import walk

_ICMP_S = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class ExprLowering:
    b: ir.IRBuilder
    vars: dict[int, ir.Value]
    alias = None  # llvm_alias.AliasScopes: records the buffer accesses to tag
    # (dtype, int) -> ir.Constant, and a splat's constants by element type and lanes
    # (``broadcast``), shared by the module's functions
    constants: dict

    # -- helpers ----------------------------------------------------------------------
    def ty(self, d: DataType, span=None) -> ir.Type:
        return lt.value_type(d, self.ctx.pointer(), span)

    def const(self, d: DataType, v) -> ir.Constant:
        if type(v) is int:  # IntImm's: one Constant per dtype and value in a module
            key = (d, v)
            c = self.constants.get(key)
            if c is None:
                c = self.constants[key] = lt.const(d, v, self.ctx.pointer())
            return c
        return lt.const(d, v, self.ctx.pointer())

    def broadcast(self, v: ir.Value, lanes: int, scalable: bool = False) -> ir.Value:
        if scalable:
            return scalable_splat(self.b, v, ScalableVectorType(v.type, lanes))
        key = ("splat", str(v.type), lanes)  # the same three constants for every splat
        made = self.constants.get(key)
        if made is None:
            vt = ir.VectorType(v.type, lanes)
            made = self.constants[key] = (ir.Constant(vt, ir.Undefined), ir.Constant(lt.I32, 0),
                                          ir.Constant(ir.VectorType(lt.I32, lanes), [0] * lanes))
        undef, zero, mask = made
        if isinstance(v, ir.Constant):  # as the builder folds it: a constant vector
            return ir.Constant(undef.type, [v] * lanes)
        return self.b.shuffle_vector(self.b.insert_element(undef, v, zero), undef, mask)

    def lanes_of(self, v: ir.Value) -> list[ir.Value]:
        if is_scalable(v.type):
            raise LaneByLane(v.type)
        if not lt.is_vector(v.type):
            return [v]
        return [self.b.extract_element(v, ir.Constant(lt.I32, i)) for i in range(v.type.count)]

    def pack(self, values: list[ir.Value]) -> ir.Value:
        if len(values) == 1:
            return values[0]
        out = ir.Constant(ir.VectorType(values[0].type, len(values)), ir.Undefined)
        for i, v in enumerate(values):
            out = self.b.insert_element(out, v, ir.Constant(lt.I32, i))
        return out

    def int_cast(self, v: ir.Value, to: ir.IntType, signed: bool = True) -> ir.Value:
        """Resize an integer (or integer vector) value."""
        src = v.type.element if lt.is_vector(v.type) else v.type
        dst = lt.vector_like(to, v.type)
        if src.width == to.width:
            return v
        if src.width > to.width:
            return self.b.trunc(v, dst)
        return self.b.sext(v, dst) if signed and src.width > 1 else self.b.zext(v, dst)

    # -- dispatch ---------------------------------------------------------------------
    def expr(self, e: PrimExpr) -> ir.Value:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise Diagnostic(f"the LLVM backend cannot compile a {type(e).__name__} expression",
                             getattr(e, "span", None))
        try:
            return method(e)
        except LaneByLane:  # the innermost expression that needed the lanes one by one
            raise Diagnostic(scalable_refusal(e), getattr(e, "span", None)) from None

    def expr_IntImm(self, e: IntImm) -> ir.Value:
        return self.const(e.dtype, e.value)

    def expr_FloatImm(self, e: FloatImm) -> ir.Value:
        return self.const(e.dtype, e.value)

    def expr_StringImm(self, e: StringImm) -> ir.Value:
        return self.string(e.value)

    def expr_Var(self, v: Var) -> ir.Value:
        try:
            return self.vars[id(v)]
        except KeyError:
            raise Diagnostic(f"variable '{v.name}' is used but never defined in function "
                             f"'{self.name}'{_unbound_shape_hint(self.func, v)}",
                             v.span or self.func.span) from None

    def expr_Let(self, e: Let) -> ir.Value:
        self.vars[id(e.var)] = self.expr(e.value)
        return self.expr(e.body)

    def expr_Not(self, e: Not) -> ir.Value:
        return self.b.not_(self.expr(e.a))

    def expr_Select(self, e: Select) -> ir.Value:
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        return self.b.select(c, t, f)

    def expr_Broadcast(self, e: Broadcast) -> ir.Value:
        return self.broadcast(self.expr(e.value), e.lanes, e.scalable)

    def expr_Ramp(self, e: Ramp) -> ir.Value:
        base, stride = self.expr(e.base), self.expr(e.stride)
        if e.scalable:  # base + stride * <0, 1, 2, ...> (llvm.stepvector)
            t = ScalableVectorType(base.type, e.lanes)
            steps = self.call_intrinsic("llvm.stepvector", [], ret=t, suffix=lt.mangle(t))
            offs = self.b.mul(self.broadcast(stride, e.lanes, True), steps)
            return self.b.add(self.broadcast(base, e.lanes, True), offs)
        d = e.base.dtype
        steps = ir.Constant(ir.VectorType(base.type, e.lanes), list(range(e.lanes)))
        strides = self.broadcast(stride, e.lanes)
        offs = fold_int("mul", strides, steps, d.bits, d.is_int) or self.b.mul(strides, steps)
        bases = self.broadcast(base, e.lanes)
        return fold_int("add", bases, offs, d.bits, d.is_int) or self.b.add(bases, offs)

    def expr_Shuffle(self, e: Shuffle) -> ir.Value:
        lanes: list[ir.Value] = []
        for v in e.vectors:
            lanes.extend(self.lanes_of(self.expr(v)))
        picked = []
        for i in e.indices:
            if not isinstance(i, IntImm) or not 0 <= i.value < len(lanes):
                raise Diagnostic("a shuffle index must be a constant lane number", e.span)
            picked.append(lanes[i.value])
        return self.pack(picked)

    # -- arithmetic -------------------------------------------------------------------
    def expr_BinOp(self, e: BinOp) -> ir.Value:
        a, c = self.expr(e.a), self.expr(e.b)
        d = e.a.dtype
        b, op = self.b, e.op
        if op in _ICMP_S:
            if d.is_float:
                return scalable_mask(b.fcmp_unordered("!=", a, c) if op == "ne"
                                     else b.fcmp_ordered(_ICMP_S[op], a, c))
            if d.is_handle:
                a, c = b.ptrtoint(a, lt.I64), b.ptrtoint(c, lt.I64)
            signed = d.is_int
            return scalable_mask(b.icmp_signed(_ICMP_S[op], a, c) if signed
                                 else b.icmp_unsigned(_ICMP_S[op], a, c))
        if op in ("and", "or"):
            return b.and_(a, c) if op == "and" else b.or_(a, c)
        if op in ("min", "max"):
            if d.is_float:
                less = scalable_mask(b.fcmp_ordered("<", a, c))
            else:
                less = scalable_mask(b.icmp_signed("<", a, c) if d.is_int else b.icmp_unsigned("<", a, c))
            return b.select(less, a, c) if op == "min" else b.select(less, c, a)
        if d.is_float:
            return self.float_arith(op, a, c, e)
        return self.int_arith(op, a, c, d, e)

    def float_arith(self, op: str, a: ir.Value, c: ir.Value, e: BinOp) -> ir.Value:
        b = self.b
        contract = {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}
        if op in contract:
            flags = self.ctx.float_flags
            if op == "add" and id(e) in self.module.uncontracted:
                flags = tuple(f for f in flags if f != "contract")
            return contract[op](a, c, flags=flags)
        simple = {"div": b.fdiv, "mod": b.frem}
        if op in simple:
            return simple[op](a, c, flags=self.ctx.fast_flags)
        if op in ("floordiv", "floormod"):
            q = self.call_intrinsic("llvm.floor", [b.fdiv(a, c)])
            return q if op == "floordiv" else b.fsub(a, b.fmul(q, c))
        raise Diagnostic(f"operator '{op}' does not apply to floating-point values", e.span)

    def int_arith(self, op: str, a: ir.Value, c: ir.Value, d: DataType, e: BinOp) -> ir.Value:
        if op in _DIVISIONS and is_scalable(a.type):
            raise LaneByLane(a.type)  # its guard tests every lane for a zero divisor
        if op in _DIVISIONS:
            zero, c = self.division_guard(a, c, d, e)
            q = self.int_division(op, a, c, d)
            if zero is None:
                return q
            # the target does not trap: x / 0 is -1, x % 0 is x
            return self.b.select(zero, self.const(d, -1) if op in ("div", "floordiv") else a, q)
        b, signed = self.b, d.is_int
        simple = {"add": b.add, "sub": b.sub, "mul": b.mul, "bitwise_and": b.and_,
                  "bitwise_or": b.or_, "bitwise_xor": b.xor, "shift_left": b.shl,
                  "shift_right": b.ashr if signed else b.lshr}
        if op in simple:
            return fold_int(op, a, c, d.bits, signed) or simple[op](a, c)
        raise Diagnostic(f"unknown operator '{op}'", e.span)

    def division_guard(self, a: ir.Value, c: ir.Value, d: DataType,
                       e: BinOp) -> tuple[ir.Value | None, ir.Value]:
        """Keep integer division ``e`` from trapping (SIGFPE on x86-64) or being
        undefined (LLVM's ``sdiv``/``udiv`` by 0, ``sdiv`` of INT_MIN by -1): (a zero
        test for the caller to select the result of a division by zero with, or None;
        the divisor to divide by). A divisor proven nonzero (and, signed, not -1, or
        with a dividend that is not INT_MIN) needs nothing: (None, ``c``).

        INT_MIN % -1 is 0, computed as INT_MIN % 1. INT_MIN / -1 does not fit: where the
        context's ``division_fails`` (host code) the function fails with an
        OverflowError naming it, elsewhere (the GPU) it wraps to INT_MIN (INT_MIN / 1).
        A zero divisor (in any lane) makes a host function fail with a
        ZeroDivisionError naming it, after which the division runs as written; on the
        GPU the division runs with the divisor 1 and the zero test comes back."""
        zero_possible, overflow_possible = _division_hazards(e)
        b, one = self.b, self.const(e.b.dtype, 1)
        zero = b.icmp_unsigned("==", c, self.const(e.b.dtype, 0)) if zero_possible else None
        overflow = None
        if overflow_possible:
            overflow = b.and_(b.icmp_signed("==", a, self.const(e.a.dtype, -(1 << (d.bits - 1)))),
                              b.icmp_signed("==", c, self.const(e.b.dtype, -1)))
        fails = self.ctx.division_fails
        if overflow is not None:
            if fails and e.op in ("div", "floordiv"):
                self.fail_unless(self.no_lane(overflow), "OverflowError",
                             f"integer division overflow: the minimum {d.element()} divided "
                             f"by -1 in function '{self.name}'")
            else:
                c = b.select(overflow, one, c)
        if zero is None:
            return None, c
        if fails:
            self.fail_unless(self.no_lane(zero), "ZeroDivisionError",
                         f"integer division by zero in function '{self.name}'")
            return None, c
        return zero, b.select(zero, one, c)

    def no_lane(self, test: ir.Value) -> ir.Value:
        """An i1: whether no lane of the i1 (vector) ``test`` is set."""
        if is_scalable(test.type):
            raise LaneByLane(test.type)
        if not lt.is_vector(test.type):
            return self.b.not_(test)
        bits = self.b.bitcast(test, ir.IntType(test.type.count))
        return self.b.icmp_unsigned("==", bits, ir.Constant(bits.type, 0))

    def int_division(self, op: str, a: ir.Value, c: ir.Value, d: DataType) -> ir.Value:
        b, signed = self.b, d.is_int
        if op == "div":
            return b.sdiv(a, c) if signed else b.udiv(a, c)
        if op == "mod":
            return b.srem(a, c) if signed else b.urem(a, c)
        if not signed:
            return b.udiv(a, c) if op == "floordiv" else b.urem(a, c)
        q, r = b.sdiv(a, c), b.srem(a, c)
        zero = ir.Constant(a.type, None)
        # r != 0 and sign(r) != sign(c): the truncated result is one too high
        fix = b.and_(b.icmp_signed("!=", r, zero),
                     b.icmp_signed("!=", b.icmp_signed("<", r, zero), b.icmp_signed("<", c, zero)))
        if op == "floordiv":
            return b.sub(q, b.zext(fix, a.type))
        return b.select(fix, b.add(r, c), r)

    def expr_Cast(self, e: Cast) -> ir.Value:
        return self.convert(self.expr(e.value), e.value.dtype, e.dtype, e.span)

    def convert(self, v: ir.Value, src: DataType, dst: DataType, span=None) -> ir.Value:
        """``v`` of ``src`` as ``dst`` (lanes agree or ``src`` is scalar)."""
        b = self.b
        if (dst.lanes > 1 or dst.scalable) and not lt.is_vector(v.type):
            v, src = self.broadcast(v, dst.lanes, dst.scalable), src.with_lanes_of(dst)
        to = self.ty(dst, span)
        if src.element() == dst.element():
            return v
        if dst.is_bool:
            if src.is_float:
                return b.fcmp_unordered("!=", v, ir.Constant(v.type, None))
            if src.is_handle:
                return b.icmp_unsigned("!=", v, ir.Constant(v.type, None))
            return b.icmp_unsigned("!=", v, ir.Constant(v.type, None))
        if src.is_handle or dst.is_handle:
            if src.is_handle and dst.is_handle:
                return v
            return b.ptrtoint(v, to) if src.is_handle else b.inttoptr(self.int_cast(v, lt.I64, src.is_int), to)
        if src.is_float and dst.is_float:
            return b.fpext(v, to) if dst.bits > src.bits else b.fptrunc(v, to)
        if src.is_float:
            return b.fptosi(v, to) if dst.is_int else b.fptoui(v, to)
        if dst.is_float:
            return b.sitofp(v, to) if src.is_int else b.uitofp(v, to)
        return self.int_cast(v, to.element if lt.is_vector(to) else to, src.is_int)

    # -- memory -----------------------------------------------------------------------
    def buffer_pointer(self, buf: Buffer, index: PrimExpr | None, span=None) -> tuple[ir.Value, ir.Type]:
        """The address of element ``index`` (scalar; None: 0) of ``buf``, and its type."""
        if buf.dtype.is_subbyte and (index is not None or self.elem_offset(buf) is not None):
            raise Diagnostic(f"the address of an element of sub-byte buffer '{buf.name}' "
                             f"({buf.dtype}) is not supported: its elements are packed "
                             f"{buf.dtype.packs} to a byte", span)
        elem = lt.memory_type(buf.dtype, self.ctx.pointer(), span)
        step = lt.stride_type(buf.dtype, self.ctx.pointer(), span)
        base = self.expr(buf.data)
        if self.ctx.split_index_constants and index is not None:
            rest, c = split_index_constant(buf, index, self.elem_offset(buf) is not None)
            if c:
                ptr = base
                if rest is not None:
                    ptr = self.b.gep(base, [self.expr(rest)], source_etype=step)
                return self.b.gep(ptr, [ir.Constant(lt.I64, c)], source_etype=step), elem
        offset = None
        eo = self.elem_offset(buf)
        if eo is not None:
            offset = self.expr(eo)
        if index is not None:
            i = self.expr(index)
            if offset is not None:
                if offset.type != i.type:
                    offset, i = self.int_cast(offset, lt.I64), self.int_cast(i, lt.I64)
                i = self.b.add(offset, i)
            offset = i
        if offset is None:
            return base, elem
        return self.b.gep(base, [offset], source_etype=step), elem

    def elem_offset(self, buf: Buffer) -> PrimExpr | None:
        """The element offset to add to ``buf``'s data pointer, computed in 64 bits: a
        view's int32 offset (``i * m`` of a region argument ``A[i, 0:4]``) may pass 2**31."""
        eo = buf.elem_offset
        if eo is None or (isinstance(eo, IntImm) and eo.value == 0) or id(buf) in self.offset_applied:
            return None
        return widen(eo)

    def alignment(self, buf: Buffer, index: PrimExpr, nbytes: int) -> int:
        """A known alignment of an access of ``nbytes`` at ``index`` of ``buf``."""
        elem = lt.byte_size(buf.dtype)
        # only our own allocations are trusted: a caller's array may be less aligned
        # than the buffer declares
        base = max(self.data_align.get(id(buf.data), 0), elem)
        if self.elem_offset(buf) is not None:
            return lt.access_align(elem)
        mult = _known_multiple(index) * elem
        known = max(elem, math.gcd(math.gcd(mult, base), nbytes)) if mult else min(base, nbytes)
        return lt.access_align(known)

    def expr_BufferLoad(self, e: BufferLoad) -> ir.Value:
        if len(e.indices) != 1:
            raise Diagnostic(f"buffer '{e.buffer.name}' is not flattened", e.span)
        return self.load(e.buffer, e.indices[0], e.dtype, e.span)

    def load(self, buf: Buffer, index: PrimExpr, dtype: DataType, span=None) -> ir.Value:
        if buf.dtype.is_subbyte:
            from tirc.backends.llvm.subbyte import SubByteAccess
            return SubByteAccess(self, buf, index, dtype, span).load()
        store_t = lt.memory_type(dtype, self.ctx.pointer(), span)
        if isinstance(index, Ramp) and is_one(index.stride) and dtype.lanes == index.lanes * buf.dtype.lanes:
            ptr, _ = self.buffer_pointer(buf, index.base, span)
            v = self.b.load(ptr, typ=store_t, align=self.alignment(buf, index.base, lt.byte_size(dtype)))
            self.note_access(v, buf)
        elif index.dtype.lanes > 1:  # a gather, lane by lane
            lanes = []
            for i in self.index_lanes(index):
                ptr, elem = self.address_of_value(buf, i, span)
                lanes.append(self.note_access(self.b.load(ptr, typ=elem, align=lt.access_align(lt.byte_size(buf.dtype))), buf))
            v = self.pack(lanes)
        else:
            ptr, _ = self.buffer_pointer(buf, index, span)
            v = self.b.load(ptr, typ=store_t, align=self.alignment(buf, index, lt.byte_size(dtype)))
            self.note_access(v, buf)
        if dtype.is_bool:
            v = self.b.icmp_unsigned("!=", v, ir.Constant(v.type, None))
        return v

    def index_lanes(self, index: PrimExpr) -> list[ir.Value]:
        """The lanes of a vector index as scalars: a ramp's ``base + k * stride`` and a
        broadcast's value computed as scalars, not as a vector taken apart again."""
        if isinstance(index, Ramp) and not index.scalable and index.base.dtype.lanes == 1:
            base, stride, d = self.expr(index.base), self.expr(index.stride), index.base.dtype
            lanes = []
            for k in range(index.lanes):
                step = ir.Constant(stride.type, k)
                off = fold_int("mul", stride, step, d.bits, d.is_int) or self.b.mul(stride, step)
                lanes.append(fold_int("add", base, off, d.bits, d.is_int) or self.b.add(base, off))
            return lanes
        if isinstance(index, Broadcast) and not index.scalable and index.value.dtype.lanes == 1:
            return [self.expr(index.value)] * index.lanes
        return self.lanes_of(self.expr(index))

    def address_of_value(self, buf: Buffer, i: ir.Value, span=None) -> tuple[ir.Value, ir.Type]:
        """The address of element ``i`` (an already lowered scalar index) of ``buf``."""
        elem = lt.memory_type(buf.dtype, self.ctx.pointer(), span)
        eo = self.elem_offset(buf)
        if eo is not None:
            off = self.expr(eo)
            if off.type != i.type:
                off, i = self.int_cast(off, lt.I64), self.int_cast(i, lt.I64)
            i = self.b.add(off, i)
        step = lt.stride_type(buf.dtype, self.ctx.pointer(), span)
        return self.b.gep(self.expr(buf.data), [i], source_etype=step), elem

    def store(self, buf: Buffer, index: PrimExpr, value: PrimExpr, span=None) -> None:
        v, dtype = self.expr(value), value.dtype
        if buf.dtype.is_subbyte:
            from tirc.backends.llvm.subbyte import SubByteAccess
            return SubByteAccess(self, buf, index, dtype, span).store(v)
        if dtype.is_bool:
            v = self.b.zext(v, lt.memory_type(dtype, self.ctx.pointer()))
        if isinstance(index, Ramp) and is_one(index.stride) and dtype.lanes == index.lanes * buf.dtype.lanes:
            ptr, _ = self.buffer_pointer(buf, index.base, span)
            self.note_access(self.b.store(v, ptr, align=self.alignment(buf, index.base, lt.byte_size(dtype))), buf)
        elif index.dtype.lanes > 1:  # a scatter, lane by lane
            if dtype.lanes == 1:
                v = self.broadcast(v, index.dtype.lanes)
            for i, x in zip(self.index_lanes(index), self.lanes_of(v)):
                ptr, _ = self.address_of_value(buf, i, span)
                self.note_access(self.b.store(x, ptr, align=lt.access_align(lt.byte_size(buf.dtype))), buf)
        else:
            ptr, _ = self.buffer_pointer(buf, index, span)
            self.note_access(self.b.store(v, ptr, align=self.alignment(buf, index, lt.byte_size(dtype))), buf)

    def note_access(self, instr: ir.Instruction, buf: Buffer) -> ir.Instruction:
        """``instr`` accesses ``buf``: it gets the buffer's alias scope, if any (llvm_alias)."""
        if self.alias is not None:
            self.alias.note(instr, buf.data)
        return instr

    def expr_Call(self, e: Call) -> ir.Value:
        from tirc.backends.llvm.intrin import lower_call
        return lower_call(self, e)


def split_index_constant(buf: Buffer, index: PrimExpr, has_offset: bool) -> tuple[PrimExpr | None, int]:
    """``index`` as ``rest + c`` with a constant ``c`` (``rest`` None: 0; ``c`` 0: not
    split), for an address ``gep(gep(data, rest), c)``: accesses that differ only in
    ``c`` (the rows of a register tile, ``(i * 8 + r) * 512 + j``) then share their base
    and LLVM sees they are disjoint, which it cannot from the sign extension of each
    whole int32 index (the arithmetic wraps, it has no ``nsw``). ``rest`` keeps the
    index's own wrapping arithmetic (add/sub/mul by constants distribute modulo 2^32),
    and ``sext(rest) + c == sext(rest + c)`` whenever the index is in bounds: for
    ``c > 0`` because every in-bounds index is in ``[0, 2^31)``; a negative ``c`` only
    where the buffer's constant size plus ``|c|`` stays below 2^31. Only int32 (and
    narrower) indices: 64-bit ones need no extension. Not with an element offset."""
    d = index.dtype
    if has_offset or not d.is_int or d.lanes != 1 or d.bits > 32:
        return None, 0
    rest, c = _split(index)
    limit = 1 << (d.bits - 1)
    if c == 0 or abs(c) >= limit:
        return None, 0
    if c < 0:
        size = 1
        for n in buf.shape:
            if not isinstance(n, IntImm):
                return None, 0
            size *= n.value
        if size + abs(c) > limit:
            return None, 0
    return rest, c


def _split(e: PrimExpr) -> tuple[PrimExpr | None, int]:
    if isinstance(e, IntImm):
        return None, e.value
    if isinstance(e, BinOp) and e.op in ("add", "sub"):
        ra, ca = _split(e.a)
        rb, cb = _split(e.b)
        if e.op == "add":
            c = ca + cb
            rest = rb if ra is None else ra if rb is None else BinOp("add", ra, rb, e.dtype)
        else:
            c = ca - cb
            rest = ra if rb is None else BinOp("sub", ra if ra is not None else IntImm(e.dtype, 0), rb, e.dtype)
        return rest, c
    if isinstance(e, BinOp) and e.op == "mul" and (isinstance(e.b, IntImm) or isinstance(e.a, IntImm)):
        k, x = (e.b, e.a) if isinstance(e.b, IntImm) else (e.a, e.b)
        rx, cx = _split(x)
        return (None if rx is None else BinOp("mul", rx, k, e.dtype)), cx * k.value
    return e, 0


def _known_multiple(e: PrimExpr) -> int:
    """A number ``e`` is known to be a multiple of (0 for the constant 0)."""
    if isinstance(e, IntImm):
        return abs(e.value)
    if isinstance(e, BinOp) and e.op == "mul":
        return _known_multiple(e.a) * _known_multiple(e.b) or 1
    if isinstance(e, BinOp) and e.op in ("add", "sub"):
        return math.gcd(_known_multiple(e.a), _known_multiple(e.b)) or 1
    if isinstance(e, Cast):
        return _known_multiple(e.value)
    return 1


class LaneByLane(Exception):
    """Raised where lowering would take a vector apart lane by lane, which a scalable
    vector (a lane count known only at run time) cannot be; ``expr`` turns it into a
    located error at the expression that needed it."""


def scalable_refusal(e) -> str:
    what = e.op if isinstance(e, (BinOp, Call)) and isinstance(e.op, str) else type(e).__name__
    return (f"'{what}' of scalable vectors ({e.dtype}) is not supported: it would take the "
            "vector apart lane by lane, and its lane count is known only when the code runs")



def _unbound_shape_hint(func, v: Var) -> str:
    """Why a variable of a private function's buffer shape is undefined: only a packed
    entry (a public function's) binds shape variables from the arrays it is given."""
    if func.attrs.get(GLOBAL_SYMBOL) is not None:
        return ""
    for _, buf in func.buffer_map:
        if any(n is v for d in buf.shape for n in walk(d)):
            return (f": it is a shape variable of buffer '{buf.name}' of a private function "
                    "(no global_symbol), and only a public function's packed entry binds "
                    "shape variables from its arguments; make the function public (drop "
                    f"private=True) or pass '{v.name}' as a scalar parameter")
    return ""
