"""InjectDoubleBuffer (TVM's ``s_tir.InjectDoubleBuffer``): a flat buffer allocated in
a loop whose writes sit under ``T.attr(B.data, "double_buffer_scope", 1)`` gets twice
its size; iteration ``i`` reads half ``i % 2`` while it writes the next iteration's data
into half ``(i + 1) % 2``. The first iteration's writes move before the loop, and the
loop's own writes run under ``if i + 1 < extent`` marked ``double_buffer_write``.

With the option ``split_loop`` (TVM's ``s_tir.InjectDoubleBuffer`` config, default 1;
``--pass-config s_tir.InjectDoubleBuffer.split_loop=2``) the loop is unrolled by that
factor, so the halves' indices become constants after simplification, and the tail
iterations follow it under their own checks.

Runs after FlattenBuffer (the buffers are one-dimensional) as in TVM's pipeline, after
VectorizeLoop and InjectVirtualThread and before StorageRewrite. A scope outside any
loop, a buffer not allocated in the function, and a buffer of more than one dimension
are located errors.

Precondition: FlattenBuffer. Guarantees: no ``double_buffer_scope`` attribute remains.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, IntImm, Var
from tirc.ir.function import IRModule
from tirc.ir.renew import substitute
from tirc.ir.ssa import convert_ssa
from tirc.ir.stmt import AllocBuffer, AttrStmt, BufferStore, For, IfThenElse, seq
from tirc.ir.visitor import Mutator, Visitor
from tirc.passes.analysis.arith_ops import binop, imm

SCOPE = "double_buffer_scope"
WRITE = "double_buffer_write"
CONFIG = "s_tir.InjectDoubleBuffer"


def inject_double_buffer(mod: IRModule, ctx=None, split_loop: int | None = None) -> IRModule:
    if split_loop is None:
        options = ctx.config_of(CONFIG) if ctx is not None else {}
        split_loop = int(options.get("split_loop", 1))
    for name, func in list(mod.functions.items()):
        body = _Injector(split_loop).inject(func.body)
        if body is not func.body:
            mod = mod.with_function(name, func.with_body(body))
    return mod


class _Detector(Visitor):
    """The data pointers under a double-buffer scope that no expression uses directly."""

    def __init__(self):
        self.touched: dict[int, Var] = {}

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == SCOPE and isinstance(s.node, Var):
            self.touched[id(s.node)] = s.node
            self.visit(s.value)
            yield s.body
            return
        yield from self.descend(s)

    def visit_Var(self, v: Var) -> None:
        self.touched.pop(id(v), None)


class _Entry:
    def __init__(self) -> None:
        self.stride = None
        self.loop: For | None = None
        self.write_var: Var | None = None
        self.read_index = None
        self.alloc: AllocBuffer | None = None


class _Strip(Mutator):
    expressions = False

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == WRITE:
            return (yield s.body)
        return (yield from self.descend(s))


class _Injector(Mutator):
    def __init__(self, split_loop: int):
        self.split_loop = split_loop
        self.entries: dict[int, _Entry] = {}
        self.remapped: dict[int, Buffer] = {}
        self.loops: list[For] = []
        self.pre: dict[int, list] = {}
        self.allocs: dict[int, list[AllocBuffer]] = {}
        self.pending: dict[int, AllocBuffer] = {}
        self.in_scope = False

    def inject(self, body):
        d = _Detector()
        d.visit(body)
        if not d.touched:
            return body
        for key in d.touched:
            self.entries[key] = _Entry()
        return convert_ssa(self.visit(body))

    def _remap(self, buf: Buffer, stride, span) -> Buffer:
        new = self.remapped.get(id(buf))
        if new is not None:
            return new
        if stride is None:
            raise Diagnostic(f"buffer '{buf.name}' is marked \"{SCOPE}\" but not allocated in "
                             "this function", span)
        if len(buf.shape) != 1:
            raise Diagnostic(f"double buffering expects flat one-dimensional buffers; "
                             f"'{buf.name}' has {len(buf.shape)} dimensions", span)
        new = replace(buf, shape=(binop("add", buf.shape[0], stride),))
        self.remapped[id(buf)] = new
        return new

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == SCOPE:
            return self._producer(s)
        return self.generic_visit(s)

    def visit_AllocBuffer(self, s: AllocBuffer):
        e = self.entries.get(id(s.buffer.data))
        if e is None:
            return self.generic_visit(s)
        if len(s.buffer.shape) != 1:
            raise Diagnostic(f"double buffering expects flat one-dimensional buffers; "
                             f"'{s.buffer.name}' has {len(s.buffer.shape)} dimensions", s.span)
        e.stride = s.buffer.shape[0]
        self.pending[id(s.buffer.data)] = s
        return self.visit(s.body)

    def visit_For(self, loop: For):
        self.loops.append(loop)
        try:
            stmt = self.generic_visit(loop)
        finally:
            self.loops.pop()
        for key in list(self.pending):
            e = self.entries[key]
            if e.loop is not None:
                alloc = self.pending.pop(key)
                new = self._remap(alloc.buffer, e.stride, alloc.span)
                self.allocs.setdefault(id(e.loop), []).append(replace(alloc, buffer=new))
        pre = self.pre.get(id(loop))
        if pre is not None:
            if self.split_loop != 0:
                stmt = self._split(stmt)
            stmt = seq([*pre, stmt], loop.span)
        for alloc in reversed(self.allocs.get(id(loop), [])):
            stmt = AllocBuffer(alloc.buffer, stmt, alloc.span, alloc.annotations)
        return stmt

    def _split(self, loop: For):
        n = self.split_loop
        if not (n % 2 == 0 or n == 1):
            raise Diagnostic(f"double buffering splits loop '{loop.loop_var.name}' by {n}: "
                             "the factor must be 1 or a multiple of 2", loop.span)
        if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
            raise Diagnostic(f"double buffering splits loop '{loop.loop_var.name}', which "
                             "must start at 0", loop.span)
        dt = loop.loop_var.dtype
        new_ext = binop("sub", loop.extent, imm(dt, 1))
        factor = imm(new_ext.dtype, n)
        outer_ext = binop("div", new_ext, factor)
        tail_base = binop("mul", outer_ext, factor)
        outer = Var(loop.loop_var.name + "_outer", dt, span=loop.loop_var.span)
        body = [substitute(loop.body, {id(loop.loop_var): binop("add", binop("mul", outer, factor),
                                                               imm(factor.dtype, i))})
                for i in range(n)]
        split = For(outer, loop.min, outer_ext, loop.kind, seq(body, loop.span), span=loop.span)
        tail_body = _Strip().visit(loop.body)
        tail = []
        for i in range(n):
            idx = binop("add", tail_base, imm(tail_base.dtype, i))
            tail.append(IfThenElse(binop("lt", idx, loop.extent),
                                   substitute(tail_body, {id(loop.loop_var): idx}), None, loop.span))
        return seq([split, *tail], loop.span)

    def visit_BufferStore(self, s: BufferStore):
        s = self.generic_visit(s)
        e = self.entries.get(id(s.buffer.data))
        if e is None:
            return s
        if not self.in_scope or e.write_var is None:
            raise Diagnostic(f"buffer '{s.buffer.name}' is double-buffered but written outside "
                             f"its \"{SCOPE}\"", s.span)
        new = self._remap(s.buffer, e.stride, s.span)
        index = binop("add", binop("mul", e.write_var, e.stride), s.indices[0])
        return replace(s, buffer=new, indices=(index,))

    def visit_BufferLoad(self, x: BufferLoad):
        x = self.generic_visit(x)
        e = self.entries.get(id(x.buffer.data))
        if e is None:
            return x
        if e.read_index is None:
            raise Diagnostic(f"buffer '{x.buffer.name}' is double-buffered but read before "
                             f"its \"{SCOPE}\"", x.span)
        new = self._remap(x.buffer, e.stride, x.span)
        index = binop("add", binop("mul", e.read_index, e.stride), x.indices[0])
        return replace(x, buffer=new, indices=(index,))

    def _producer(self, s: AttrStmt):
        if not self.loops:
            raise Diagnostic(f"a \"{SCOPE}\" must be inside a loop", s.span)
        e = self.entries.get(id(s.node))
        if e is None:
            return self.visit(s.body)
        e.loop = loop = self.loops[-1]
        dt = loop.loop_var.dtype
        zero, one, two = imm(dt, 0), imm(dt, 1), imm(dt, 2)
        shift = binop("add", loop.loop_var, one)
        e.write_var = Var(loop.loop_var.name + "_db", dt)
        e.read_index = binop("floormod", loop.loop_var, two)
        self.in_scope = True
        body = self.visit(s.body)
        self.in_scope = False
        self.pre.setdefault(id(loop), []).append(
            substitute(body, {id(e.write_var): zero, id(loop.loop_var): zero}))
        body = substitute(body, {id(loop.loop_var): shift,
                                 id(e.write_var): binop("floormod", shift, two)})
        if e.stride is None:
            raise Diagnostic(f"buffer '{getattr(s.node, 'name', s.node)}' is marked \"{SCOPE}\" "
                             "but not allocated in this function", s.span)
        body = AttrStmt(s.node, WRITE, imm(s.value.dtype, 1), body, s.span)
        return IfThenElse(binop("lt", shift, loop.extent), body, None, s.span)
