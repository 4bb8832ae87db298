"""Mutable scalars: one-element local buffers that TVMScript writes as plain names
(``x: T.int32 = 0`` ... ``x = x + 1``)."""
from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, IntImm, Var
from tirc.ir.stmt import AllocBuffer, BufferStore, DeclBuffer, SeqStmt, Stmt
from tirc.ir.visitor import walk


def is_scalar_shape(b: Buffer, s_tir: bool = False) -> bool:
    """A one-element local buffer with TVM's default tile layout, which TVM 0.27 prints
    in the scalar form: in an s_tir function only one declared in that form has it."""
    return (b.scope == "local" and not b.layout_none and (b.tile_layout or not s_tir)
            and len(b.shape) == 1 and isinstance(b.shape[0], IntImm)
            and b.shape[0].value == 1 and not b.strides and b.elem_offset is None
            and b.dtype.lanes == 1)


def scalar_buffers(body: Stmt, s_tir: bool = False) -> set[int]:
    """Ids of buffers printed as scalars: allocated one-element local buffers, only ever
    indexed at 0, whose body either does not start with a store to them (printed
    ``x: T.int32``) or starts with one and stores again later (``x: T.int32 = v`` ...
    ``x = w``); a single store is printed as an ordinary buffer, so that reading it back
    does not turn it into a let. A buffer whose pointer is used otherwise (a declaration
    over its data, ``x.data`` in an expression) stays a buffer: a scalar has no pointer."""
    allocs: dict[int, Buffer] = {}
    bare: set[int] = set()
    stores: dict[int, int] = {}
    bad: set[int] = set()
    pointer_uses: set[int] = set()
    for node in walk(body):
        if isinstance(node, DeclBuffer):
            pointer_uses.add(id(node.buffer.data))
        elif isinstance(node, Var):
            pointer_uses.add(id(node))
        if isinstance(node, AllocBuffer) and is_scalar_shape(node.buffer, s_tir):
            first = node.body.stmts[0] if isinstance(node.body, SeqStmt) and node.body.stmts else node.body
            allocs[id(node.buffer)] = node.buffer
            if not (isinstance(first, BufferStore) and first.buffer is node.buffer):
                bare.add(id(node.buffer))
        if isinstance(node, (BufferStore, BufferLoad)):
            key = id(node.buffer)
            if not (len(node.indices) == 1 and isinstance(node.indices[0], IntImm)
                    and node.indices[0].value == 0):
                bad.add(key)
            if isinstance(node, BufferStore):
                stores[key] = stores.get(key, 0) + 1
    return {k for k, b in allocs.items() if k not in bad and id(b.data) not in pointer_uses
            and (k in bare or stores.get(k, 0) >= 2)}


def scalar_params(func) -> set[int]:
    """Ids of parameter buffers printed as scalars, as TVM 0.27 prints them outside s_tir
    functions (``B = C[1]``, ``C[2] = B + B`` for ``B: T.Buffer((1,), "float32")``): the
    one-element 1-D ones without strides, only ever indexed at 0, whose pointer is not
    used otherwise (TVM would print it ``B.source.data``)."""
    if func.s_tir:
        return set()
    found = {id(b): b for _, b in func.buffer_map
             if len(b.shape) == 1 and isinstance(b.shape[0], IntImm) and b.shape[0].value == 1
             and not b.strides}
    if not found:
        return set()
    pointers = {id(b.data): key for key, b in found.items()}
    for node in walk(func.body):
        if isinstance(node, (BufferStore, BufferLoad)) and id(node.buffer) in found:
            if not (len(node.indices) == 1 and isinstance(node.indices[0], IntImm)
                    and node.indices[0].value == 0):
                found.pop(id(node.buffer))
        elif isinstance(node, (Var, DeclBuffer)):
            key = pointers.get(id(node.buffer.data if isinstance(node, DeclBuffer) else node))
            found.pop(key, None)
    return set(found)
