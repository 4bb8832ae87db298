"""NarrowDataType(32): loop, thread and block iterator variables (and the integer
constants and casts of indices, bounds and conditions) that are 64-bit but provably fit
in 32 bits become 32-bit, as TVM's pass of the same name does after FlattenBuffer.

A variable is narrowed when every integer expression it occurs in fits in the target
width (constant bounds from the loop ranges), an expression wider than that widening
everything under it except the indices of a load; constants and casts follow the
expression they are in. The rewrite then narrows what was found: loop variables with
their bounds, thread axes with their extents, block iterators with their domains and
bindings, and the constants and casts inside indices, loop bounds, buffer shapes,
conditions and thread extents; an operator whose operands now differ in width widens
the narrower one (a cast), and a store of a narrowed value casts it back to the
buffer's type. Variables bound by ``let`` and parameters keep their type.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.block import BlockIterVar, BufferRegion, MatchBufferRegion, Range, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import BinOp, BufferLoad, Call, Cast, IntImm, Let, PrimExpr, Ramp, Select, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import (AllocBuffer, AttrStmt, BufferStore, DeclBuffer, For, IfThenElse,
                          IterVar, LetStmt)
from tirc.ir.visitor import Mutator, Visitor, child_fields
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import binop, cast, const_bound

_ARITH = ("add", "sub", "mul", "div", "mod", "floordiv", "floormod", "min", "max")
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


def narrow_data_type(mod: IRModule, ctx=None, target_bits: int = 32) -> IRModule:
    functions = {}
    for name, func in mod.functions.items():
        finder = _Widths(target_bits)
        finder.visit(func.body)
        vmap = {k: v for k, v in finder.vmap.items() if v != finder.nodes[k].dtype}
        if vmap:
            func = func.with_body(_Narrow(vmap).visit(func.body))
        functions[name] = func
    return replace(mod, functions=functions)


def _done(node):
    """A finished visit of ``node`` (the value of an ``intercept`` that did the work)."""
    return node
    yield  # noqa: unreachable - makes this a generator


def _truncdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _with_bits(dtype: DataType, bits: int) -> DataType:
    return DataType(f"int{bits}", dtype.lanes, dtype.scalable)


class _Widths(Visitor):
    """The width each variable, constant and cast can have (TVM's DataTypeVisitor)."""

    def __init__(self, target_bits: int):
        self.target = target_bits
        self.bits = target_bits
        self.analyzer = Analyzer()
        self.extent: dict[int, DataType] = {}
        self.vmap: dict[int, DataType] = {}
        self.nodes: dict[int, PrimExpr] = {}
        self.memo: dict = {}  # bounds of the subexpressions seen (TVM's bound_ map)
        lo, hi = -(1 << (target_bits - 1)), (1 << (target_bits - 1)) - 1
        self.range = (lo, hi)

    def intercept(self, node):
        # expressions are walked by _expr (recursion bounded by their depth); statements
        # by the visitor's loop
        if isinstance(node, PrimExpr):
            self._expr(node)
            return _done(node)
        return None

    def _expr(self, e: PrimExpr) -> None:
        """Record the widths under ``e``, with the width ``e``'s value needs in force."""
        dt = e.dtype
        outer = self.bits
        if dt.is_int:
            bits = 64
            if dt.bits <= self.target:
                bits = self.target
            elif dt.lanes == 1:
                lo, hi = self._bound(e)
                if self.range[0] <= lo and hi <= self.range[1]:
                    bits = self.target
            if bits > outer:
                self.bits = bits
        cls = type(e)
        if cls is Var:
            ext = self.extent.get(id(e))
            if ext is not None and dt.is_int:
                self._record(e, min(ext.bits, self.bits))
        elif cls is IntImm:
            if dt.is_int:
                self._record(e, min(dt.bits, self.bits))
        elif cls is BufferLoad:
            self.bits = self.target
            for i in e.indices:
                self._expr(i)
        else:
            if cls is Cast and dt.is_int:
                self._record(e, min(dt.bits, self.bits))
            for name in child_fields(cls):
                v = getattr(e, name)
                if isinstance(v, PrimExpr):
                    self._expr(v)
                elif isinstance(v, tuple):
                    for x in v:
                        if isinstance(x, PrimExpr):
                            self._expr(x)
        self.bits = outer

    def _bound(self, e: PrimExpr):
        """The constant bounds of ``e``; a division by a divisor of one sign is bounded
        by the four quotients of the bounds (as TVM's ConstIntBound)."""
        if isinstance(e, BinOp) and e.op in ("div", "floordiv"):
            a = const_bound(e.a, self.analyzer.bounds, self.memo)
            b = const_bound(e.b, self.analyzer.bounds, self.memo)
            if (b[0] > 0 or b[1] < 0) and all(abs(x) != float("inf") for x in a + b):
                div = (lambda x, y: x // y) if e.op == "floordiv" else _truncdiv
                q = [div(int(x), int(y)) for x in a for y in b]
                return min(q), max(q)
        return const_bound(e, self.analyzer.bounds, self.memo)

    def _record(self, node: PrimExpr, bits: int) -> None:
        key = id(node)
        dt = _with_bits(node.dtype, bits)
        old = self.vmap.get(key)
        if old is None or old.bits < dt.bits:
            self.vmap[key] = dt
        self.nodes[key] = node

    def visit_For(self, s: For):
        self.analyzer.bind_range(s.loop_var, s.min, s.extent)
        self.extent[id(s.loop_var)] = s.extent.dtype
        self.visit(s.min)
        self.visit(s.extent)
        yield s.body

    def visit_SBlock(self, s: SBlock):
        for it in s.iter_vars:
            self.analyzer.bind_range(it.var, it.dom.min, it.dom.extent)
            self.extent[id(it.var)] = it.dom.extent.dtype
            self.visit(it.dom.min)
            self.visit(it.dom.extent)
        for b in s.alloc_buffers:
            self._buffer_def(b)
        for m in s.match_buffers:
            self._buffer_def(m.buffer)
            self.visit(m.source)
        for r in s.reads + s.writes:
            self.visit(r)
        if s.init is not None:
            yield s.init
        yield s.body

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key in (THREAD_EXTENT, VIRTUAL_THREAD) and isinstance(s.node, IterVar):
            self.analyzer.bind_range(s.node.var, IntImm(s.value.dtype, 0), s.value)
            self.extent[id(s.node.var)] = s.value.dtype
            self.visit(s.value)
            yield s.body
            return
        yield from self.descend(s)

    def visit_AllocBuffer(self, s: AllocBuffer):
        self._buffer_def(s.buffer)
        yield s.body

    def visit_DeclBuffer(self, s: DeclBuffer):
        self._buffer_def(s.buffer)
        yield s.body

    def _buffer_def(self, b: Buffer) -> None:
        for e in b.shape + b.strides:
            self.visit(e)
        if b.elem_offset is not None:
            self.visit(b.elem_offset)


class _Narrow(Mutator):
    """The rewrite (TVM's IndexDataTypeRewriter with NarrowDataType's overrides)."""

    def __init__(self, vmap: dict[int, DataType]):
        self.vmap = vmap
        self.vars: dict[int, Var] = {}
        self.buffers: dict[int, Buffer] = {}
        self.enabled = False
        self.condition = False

    def _in(self, enabled: bool, node):
        outer, self.enabled = self.enabled, enabled
        try:
            return self.visit(node)
        finally:
            self.enabled = outer

    def _cond(self, node):
        outer, self.condition = self.condition, True
        try:
            return self.visit(node)
        finally:
            self.condition = outer

    # -- leaves -------------------------------------------------------------------------
    def visit_Var(self, v: Var):
        new = self.vars.get(id(v))
        if new is None and id(v) in self.vmap:
            new = self.vars[id(v)] = Var(v.name, self.vmap[id(v)], v.ptr, v.span)
        return new or v

    def visit_IntImm(self, e: IntImm):
        if self.enabled and id(e) in self.vmap:
            return IntImm(self.vmap[id(e)], e.value, e.span)
        return e

    def visit_Cast(self, e: Cast):
        if self.enabled and id(e) in self.vmap:
            value = self.visit(e.value)
            to = self.vmap[id(e)]
            return value if value.dtype == to else Cast(to, value, e.span)
        return self.generic_visit(e)

    def visit_buffer(self, b: Buffer) -> Buffer:
        return self.buffers.get(id(b), b)

    def _buffer_def(self, b: Buffer) -> Buffer:
        outer, self.enabled = self.enabled, True
        try:
            shape = tuple(self.visit(e) for e in b.shape)
            strides = tuple(self.visit(e) for e in b.strides)
            offset = None if b.elem_offset is None else self.visit(b.elem_offset)
        finally:
            self.enabled = outer
        if (offset is b.elem_offset and all(x is y for x, y in zip(shape, b.shape))
                and all(x is y for x, y in zip(strides, b.strides))):
            return b
        new = replace(b, shape=shape, strides=strides, elem_offset=offset)
        self.buffers[id(b)] = new
        return new

    # -- expressions ----------------------------------------------------------------------
    def visit_BinOp(self, e: BinOp):
        if e.op in _COMPARE:
            outer = self.enabled
            self.enabled = self.condition and e.a.dtype.is_int and e.b.dtype.is_int
            try:
                return self._binop(e)
            finally:
                self.enabled = outer
        if e.op in _ARITH:
            return self._binop(e)
        return self.generic_visit(e)

    def _binop(self, e: BinOp):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b and a.dtype == b.dtype:
            return e
        if a.dtype != b.dtype:
            outer, self.enabled = self.enabled, True
            try:
                a, b = self.visit(e.a), self.visit(e.b)
            finally:
                self.enabled = outer
        return binop(e.op, a, b)

    def visit_BufferLoad(self, e: BufferLoad):
        indices = tuple(self._in(True, i) for i in e.indices)
        buf = self.visit_buffer(e.buffer)
        if buf is e.buffer and all(x is y for x, y in zip(indices, e.indices)):
            return e
        return replace(e, buffer=buf, indices=indices)

    def visit_Call(self, e: Call):
        if e.op == "if_then_else":
            cond = self._cond(e.args[0])
            t, f = self.visit(e.args[1]), self.visit(e.args[2])
            if cond is e.args[0] and t is e.args[1] and f is e.args[2]:
                return e
            if t.dtype != f.dtype and t.dtype.is_int and f.dtype.is_int:
                wide = t.dtype if t.dtype.bits >= f.dtype.bits else f.dtype
                t, f = cast(wide, t), cast(wide, f)
            return replace(e, dtype=t.dtype, args=(cond, t, f))
        new = self.generic_visit(e)
        if new is not e and any(a.dtype != b.dtype for a, b in zip(new.args, e.args)
                                if isinstance(a, PrimExpr)):
            # a call's arguments keep their types (an extern function's signature), but
            # for the thread variables T.tvm_thread_allreduce names
            keep = e.op == "tvm_thread_allreduce"
            args = tuple(cast(b.dtype, a) if isinstance(a, PrimExpr) and a.dtype != b.dtype
                         and a.dtype.is_int and b.dtype.is_int
                         and not (keep and isinstance(a, Var)) else a
                         for a, b in zip(new.args, e.args))
            new = replace(new, args=args)
        return new

    def visit_Select(self, e: Select):
        cond = self._cond(e.condition)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        if cond is e.condition and t is e.true_value and f is e.false_value:
            return e
        if t.dtype != f.dtype and t.dtype.is_int and f.dtype.is_int:
            wide = t.dtype if t.dtype.bits >= f.dtype.bits else f.dtype
            t, f = cast(wide, t), cast(wide, f)
        return replace(e, condition=cond, true_value=t, false_value=f)

    def visit_Ramp(self, e: Ramp):
        base, stride = self.visit(e.base), self.visit(e.stride)
        if base is e.base and stride is e.stride:
            return e
        if base.dtype != stride.dtype:
            wide = base.dtype if base.dtype.bits >= stride.dtype.bits else stride.dtype
            base, stride = cast(wide, base), cast(wide, stride)
        return replace(e, base=base, stride=stride)

    # -- statements ---------------------------------------------------------------------
    def visit_BufferStore(self, s: BufferStore):
        buf = self.visit_buffer(s.buffer)
        value = self.visit(s.value)
        if value.dtype != buf.dtype and value.dtype.lanes == 1 and buf.dtype.lanes == 1:
            value = cast(buf.dtype, value)
        indices = tuple(self._in(True, i) for i in s.indices)
        if (buf is s.buffer and value is s.value
                and all(x is y for x, y in zip(indices, s.indices))):
            return s
        return replace(s, buffer=buf, value=value, indices=indices)

    def visit_For(self, s: For):
        outer, self.enabled = self.enabled, True
        try:
            var, lo, ext = self.visit(s.loop_var), self.visit(s.min), self.visit(s.extent)
        finally:
            self.enabled = outer
        body = yield s.body
        if var is s.loop_var and lo is s.min and ext is s.extent and body is s.body:
            return s
        return replace(s, loop_var=var, min=cast(var.dtype, lo), extent=cast(var.dtype, ext),
                       body=body)

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key in (THREAD_EXTENT, VIRTUAL_THREAD) and isinstance(s.node, IterVar):
            outer, self.enabled = self.enabled, True
            try:
                var = self.visit(s.node.var)
                value = self.visit(s.value)
                body = yield s.body
            finally:
                self.enabled = outer
            if var is s.node.var and value is s.value and body is s.body:
                return s
            node = s.node if var is s.node.var else replace(s.node, var=var)
            return replace(s, node=node, value=cast(var.dtype, value), body=body)
        return (yield from self.descend(s))

    def visit_IfThenElse(self, s: IfThenElse):
        cond = self._cond(s.condition)
        then = yield s.then_case
        other = None if s.else_case is None else (yield s.else_case)
        if cond is s.condition and then is s.then_case and other is s.else_case:
            return s
        return replace(s, condition=cond, then_case=then, else_case=other)

    def visit_AllocBuffer(self, s: AllocBuffer):
        buf = self._buffer_def(s.buffer)
        body = yield s.body
        if buf is s.buffer and body is s.body:
            return s
        return replace(s, buffer=buf, body=body)

    def visit_DeclBuffer(self, s: DeclBuffer):
        buf = self._buffer_def(s.buffer)
        body = yield s.body
        if buf is s.buffer and body is s.body:
            return s
        return replace(s, buffer=buf, body=body)

    def visit_SBlockRealize(self, s: SBlockRealize):
        pred = self._cond(s.predicate)
        values = tuple(self._in(True, v) for v in s.iter_values)
        block = yield s.block
        if (pred is s.predicate and block is s.block
                and all(x is y for x, y in zip(values, s.iter_values))):
            return s
        return replace(s, predicate=pred, iter_values=values, block=block)

    def visit_SBlock(self, s: SBlock):
        allocs = tuple(self._buffer_def(b) for b in s.alloc_buffers)
        matches = tuple(self._match(m) for m in s.match_buffers)
        reads = tuple(self._region(r) for r in s.reads)
        writes = tuple(self._region(r) for r in s.writes)
        iters = tuple(self._iter(it) for it in s.iter_vars)
        init = None if s.init is None else (yield s.init)
        body = yield s.body
        new = (allocs, matches, reads, writes, iters)
        old = (s.alloc_buffers, s.match_buffers, s.reads, s.writes, s.iter_vars)
        if init is s.init and body is s.body and all(
                all(x is y for x, y in zip(n, o)) for n, o in zip(new, old)):
            return s
        return replace(s, alloc_buffers=allocs, match_buffers=matches, reads=reads,
                       writes=writes, iter_vars=iters, init=init, body=body)

    def _match(self, m: MatchBufferRegion) -> MatchBufferRegion:
        buf, src = self._buffer_def(m.buffer), self._region(m.source)
        return m if buf is m.buffer and src is m.source else replace(m, buffer=buf, source=src)

    def _region(self, r: BufferRegion) -> BufferRegion:
        buf = self.visit_buffer(r.buffer)
        region = tuple(Range(self._in(True, x.min), self._in(True, x.extent), x.span)
                       if (self._in(True, x.min) is not x.min
                           or self._in(True, x.extent) is not x.extent) else x
                       for x in r.region)
        if buf is r.buffer and all(x is y for x, y in zip(region, r.region)):
            return r
        return replace(r, buffer=buf, region=region)

    def _iter(self, it: BlockIterVar) -> BlockIterVar:
        var = self._in(True, it.var)
        lo, ext = self._in(True, it.dom.min), self._in(True, it.dom.extent)
        if var is it.var and lo is it.dom.min and ext is it.dom.extent:
            return it
        return replace(it, var=var, dom=Range(lo, ext, it.dom.span))

    def visit_LetStmt(self, s: LetStmt):
        s = yield from self.descend(s)
        if s.value.dtype != s.var.dtype and s.value.dtype.is_int and s.var.dtype.is_int:
            return replace(s, value=cast(s.var.dtype, s.value))
        return s

    def visit_Let(self, e: Let):
        e = self.generic_visit(e)
        if e.value.dtype != e.var.dtype and e.value.dtype.is_int and e.var.dtype.is_int:
            return replace(e, value=cast(e.var.dtype, e.value))
        return e
