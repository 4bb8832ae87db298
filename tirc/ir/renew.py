"""Copy a function with fresh variables and buffers, so that no Var or Buffer is shared
between two functions of a module (BindTarget's ``_host`` duplicates); copy a statement
with fresh objects for what it defines, so that it can sit beside the original."""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.block import SBlock
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Let, Var
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import AllocBuffer, AttrStmt, DeclBuffer, For, IterVar, LetStmt
from tirc.ir.visitor import Mutator, walk


def map_buffer(m: Mutator, b: Buffer, force: bool = False) -> Buffer:
    """``b`` with its data pointer, shape, strides and offset passed through ``m``; the
    same object when nothing changed, unless ``force`` asks for a fresh copy."""
    data = m.visit(b.data)
    shape = tuple(m.visit(e) for e in b.shape)
    strides = tuple(m.visit(e) for e in b.strides)
    offset = None if b.elem_offset is None else m.visit(b.elem_offset)
    changed = (data is not b.data or offset is not b.elem_offset
               or any(x is not y for x, y in zip(shape + strides, b.shape + b.strides)))
    if not (changed or force):
        return b
    return replace(b, data=data, shape=shape, strides=strides, elem_offset=offset)


class _Renew(Mutator):
    def __init__(self) -> None:
        self.var_map: dict[int, Var] = {}  # substituted first (:func:`renew_defs`)
        self.vars: dict[int, Var] = {}
        self.buffers: dict[int, Buffer] = {}

    def visit_Var(self, v: Var) -> Var:
        v = self.var_map.get(id(v), v)
        new = self.vars.get(id(v))
        if new is None:
            new = Var(v.name, v.dtype, v.ptr, v.span)
            self.vars[id(v)] = new
        return new

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b))
        if new is None:
            new = map_buffer(self, b, force=True)
            self.buffers[id(b)] = new
        return new


def renew_defs(func: PrimFunc, var_map: dict[int, Var] | None = None) -> PrimFunc:
    """``func`` with every variable and buffer replaced by a fresh copy; with ``var_map``
    (keyed by ``id``), its variables substituted first: the same function as
    ``renew_defs`` of ``func`` with its body passed through ``substitute(body, var_map)``
    (one walk instead of two). ``var_map`` is for a function without a ``buffer_map`` (a
    kernel that SplitHostDevice makes)."""
    if var_map and func.buffer_map:
        raise ValueError("renew_defs substitutes variables in functions without a buffer_map")
    r = _Renew()
    params = tuple(r.visit(p) for p in func.params)
    buffer_map = tuple((r.visit(p), r.visit_buffer(b)) for p, b in func.buffer_map)
    r.var_map = var_map or {}  # the body's variables only, as substitute(body) did
    body = r.visit(func.body)
    return replace(func, params=params, buffer_map=buffer_map, body=body)


class _Substitute(Mutator):
    def __init__(self, var_map: dict[int, Var]):
        self.var_map = var_map
        self.buffers: dict[int, Buffer] = {}

    def visit_Var(self, v: Var) -> Var:
        return self.var_map.get(id(v), v)

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b))
        if new is None:
            new = map_buffer(self, b)
            self.buffers[id(b)] = new
        return new


def substitute(node, var_map: dict[int, Var]):
    """``node`` with the variables of ``var_map`` (keyed by ``id``) replaced, buffers over
    them rebuilt."""
    return _Substitute(var_map).visit(node)


class _FreshDefs(Mutator):
    """Fresh objects for what a statement defines; the rest is kept."""

    def __init__(self, stmt, thread_axes: bool):
        self.vars: dict[int, Var] = {}
        self.buffers: dict[int, Buffer] = {}
        self.defined: set[int] = set()
        for n in walk(stmt):
            if isinstance(n, For):
                self._fresh(n.loop_var)
            elif isinstance(n, (LetStmt, Let)):
                self._fresh(n.var)
            elif isinstance(n, AttrStmt) and isinstance(n.node, IterVar) and thread_axes:
                self._fresh(n.node.var)
            elif isinstance(n, (AllocBuffer, DeclBuffer)):
                self.defined.add(id(n.buffer))
                if isinstance(n, AllocBuffer):
                    self._fresh(n.buffer.data)
            elif isinstance(n, SBlock):
                for iv in n.iter_vars:
                    self._fresh(iv.var)
                for b in (*n.alloc_buffers, *(m.buffer for m in n.match_buffers)):
                    self.defined.add(id(b))
                    self._fresh(b.data)

    def _fresh(self, v: Var) -> None:
        self.vars.setdefault(id(v), Var(v.name, v.dtype, v.ptr, v.span))

    def visit_Var(self, v: Var) -> Var:
        return self.vars.get(id(v), v)

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b))
        if new is None:
            new = map_buffer(self, b, force=id(b) in self.defined)
            self.buffers[id(b)] = new
        return new


def fresh_definitions(stmt, thread_axes: bool = True):
    """A copy of ``stmt`` in which every variable and buffer it defines (loop variables,
    lets, allocations, declarations, block iterators and buffers, and thread axes unless
    ``thread_axes`` is False) is a fresh object, so the copy can sit beside the original
    without defining anything twice (TVM's ConvertSSA)."""
    return _FreshDefs(stmt, thread_axes).visit(stmt)
