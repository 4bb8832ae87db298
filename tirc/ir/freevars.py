"""What a piece of IR uses without defining it: variables (size variables of symbolic
shapes, variables declared with ``n = T.int32()``, a kernel's inputs) and buffers, in
order of first use."""
from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Let, Var
from tirc.ir.block import SBlock
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import (AllocBuffer, AttrStmt, DeclBuffer, For, IterVar, LetStmt, Stmt,
                          is_loop_pragma)
from tirc.ir.visitor import Visitor, walk
from tirc.records import record


class _Uses(Visitor):
    def __init__(self) -> None:
        self.defined: set[int] = set()
        self.order: list[Var] = []
        self.seen: set[int] = set()
        self.buffers_seen: set[int] = set()
        self.buffers_defined: set[int] = set()
        self.buffer_order: list[Buffer] = []

    def use(self, v: Var) -> None:
        if id(v) not in self.defined and id(v) not in self.seen:
            self.seen.add(id(v))
            self.order.append(v)

    def visit_Var(self, v: Var) -> None:
        self.use(v)

    def visit_buffer(self, b: Buffer) -> None:
        if id(b) in self.buffers_seen:
            return
        self.buffers_seen.add(id(b))
        if id(b) not in self.buffers_defined:
            self.buffer_order.append(b)
        for e in (*b.shape, *b.strides, *((b.elem_offset,) if b.elem_offset is not None else ())):
            self.visit(e)
        self.visit(b.data)

    def define(self, v: Var) -> None:
        self.defined.add(id(v))

    def visit_For(self, s: For):
        self.visit(s.min)
        self.visit(s.extent)
        if s.step is not None:
            self.visit(s.step)
        self.define(s.loop_var)
        yield s.body

    def visit_LetStmt(self, s: LetStmt):
        self.visit(s.value)
        self.define(s.var)
        yield s.body

    def visit_Let(self, e: Let) -> None:
        self.visit(e.value)
        self.define(e.var)
        self.visit(e.body)

    def visit_AttrStmt(self, s: AttrStmt):
        self.visit(s.value)
        if isinstance(s.node, IterVar):
            self.define(s.node.var)
        elif isinstance(s.node, Buffer):
            self.visit_buffer(s.node)
        elif isinstance(s.node, Var) and not is_loop_pragma(s):
            self.visit(s.node)
        yield s.body

    def visit_AllocBuffer(self, s: AllocBuffer):
        self.define(s.buffer.data)
        self.buffers_defined.add(id(s.buffer))
        self.visit_buffer(s.buffer)
        yield s.body

    def visit_DeclBuffer(self, s: DeclBuffer):
        self.buffers_defined.add(id(s.buffer))
        self.visit_buffer(s.buffer)
        yield s.body

    def visit_SBlock(self, s: SBlock):
        for iv in s.iter_vars:
            self.visit(iv.dom)
            self.define(iv.var)
        for buf in s.alloc_buffers:
            self.define(buf.data)
            self.buffers_defined.add(id(buf))
            self.visit_buffer(buf)
        for m in s.match_buffers:
            self.visit(m.source)
            self.define(m.buffer.data)
            self.buffers_defined.add(id(m.buffer))
            self.visit_buffer(m.buffer)
        for region in (*s.reads, *s.writes):
            self.visit(region)
        if s.init is not None:
            yield s.init
        yield s.body


def uses_any(node, ids: set[int]) -> bool:
    """Whether ``node`` mentions a variable whose id is in ``ids``."""
    return any(isinstance(n, Var) and id(n) in ids for n in walk(node))


def free_vars(func: PrimFunc) -> list[Var]:
    u = _Uses()
    for p in func.params:
        u.define(p)
    for _, buf in func.buffer_map:
        u.define(buf.data)
        u.buffers_defined.add(id(buf))
    for _, buf in func.buffer_map:
        u.visit_buffer(buf)
    u.visit(func.body)
    return u.order


@record
class RegionUses:
    vars: list[Var]  # scalar and pointer variables used but defined outside
    buffers: list[Buffer]  # buffers used but declared outside


def region_uses(stmt: Stmt) -> RegionUses:
    """The variables and buffers ``stmt`` uses that are defined outside it."""
    u = _Uses()
    u.visit(stmt)
    return RegionUses(u.order, u.buffer_order)
