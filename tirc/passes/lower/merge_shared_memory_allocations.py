"""MergeSharedMemoryAllocations: one dynamic shared-memory buffer per kernel launch
(DESIGN §4.4, seed 001).

Every outermost thread scope (``T.launch_thread`` / ``thread_extent``; a
``thread_binding`` loop is accepted too) is a kernel launch and is handled on its own:
its shared allocations (scopes ``shared`` and ``shared.dyn``, anywhere in its subtree)
become views into one ``buf_dyn_shmem = T.alloc_buffer((total,), "uint8",
scope="shared.dyn")`` placed directly inside that kernel's outermost thread scope, so the
merged buffer is visible only in its own kernel's subtree and two sibling kernels of one
function get one buffer each. Each original ``AllocBuffer`` is replaced in place by a
``DeclBuffer`` of the same name, dtype and shape over ``buf_dyn_shmem.data`` with
``elem_offset`` = its byte offset / element size; offsets follow the allocations' order,
each aligned to 16 bytes (and to the element size). Sizes may be symbolic as long as they
depend only on values known at the launch. There is no liveness-based reuse.

Fast path: a kernel with no shared allocation, or a single static ``shared`` one of at
most 48 KiB, is left as it is. A single static allocation above 48 KiB becomes dynamic
(merged as above): dynamic shared memory is how a launch gets more than 48 KiB, and the
launch lowering reads the kernel's ``shared.dyn`` size.

Diagnostics: a constant total above the kernel target's ``max_shared_memory_per_block``
(the target of the enclosing ``T.attr(T.target(...), "target", 0)`` region, else the
function's) is reported at the allocation that crosses the limit; a size that depends on
a variable defined inside the kernel is reported at that allocation.

Preconditions: BindTarget (every function has a target), LowerThreadBindings, buffers
flat (1-D), ThreadSync done. Guarantees: each kernel holds at most one allocation of
shared memory, of scope ``shared.dyn``, and no Var or Buffer is shared between kernels.
"""
from __future__ import annotations

import math
from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import TARGET, THREAD_EXTENT
from tirc.ir.buffer import Buffer
from tirc.ir.const_fold import try_const_fold
from tirc.ir.dtype import HANDLE, INT32, INT64, DataType
from tirc.ir.expr import BinOp, BufferLoad, Call, Cast, IntImm, Let, PointerType, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import AllocBuffer, AttrStmt, DeclBuffer, For, IterVar, LetStmt, Stmt
from tirc.ir.visitor import Mutator, walk
from tirc.target import Target

SHARED_SCOPES = ("shared", "shared.dyn")
STATIC_LIMIT = 48 * 1024  # the most static shared memory a launch gets without opting in
ALIGN = 16
UINT8 = DataType("uint8")


# -- size arithmetic on constants or expressions ---------------------------------------
def _cast(e: PrimExpr, dtype: DataType) -> PrimExpr:
    if e.dtype == dtype:
        return e
    return IntImm(dtype, e.value) if isinstance(e, IntImm) else Cast(dtype, e)


def _binop(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    folded = try_const_fold(op, a, b, a.dtype)
    return folded if folded is not None else BinOp(op, a, b, a.dtype)


def _align(x: PrimExpr, a: int) -> PrimExpr:
    """``x`` rounded up to a multiple of ``a``."""
    if isinstance(x, IntImm):
        return IntImm(x.dtype, -(-x.value // a) * a)
    up = _binop("add", x, IntImm(x.dtype, a - 1))
    return _binop("mul", _binop("floordiv", up, IntImm(x.dtype, a)), IntImm(x.dtype, a))


def _element_bits(dtype: DataType) -> int:
    return (8 if dtype.is_bool else dtype.bits) * dtype.lanes


def _size_bytes(b: Buffer, idx: DataType) -> PrimExpr:
    n: PrimExpr = IntImm(idx, 1)
    for d in b.shape:
        n = _binop("mul", n, _cast(d, idx))
    bits = _element_bits(b.dtype)
    if bits % 8 == 0:
        return _binop("mul", n, IntImm(idx, bits // 8))
    return _binop("floordiv", _binop("add", _binop("mul", n, IntImm(idx, bits)), IntImm(idx, 7)),
                  IntImm(idx, 8))


def _kernel_bound_vars(body: Stmt) -> dict[int, Var]:
    out: dict[int, Var] = {}
    for n in walk(body):
        v = None
        if isinstance(n, For):
            v = n.loop_var
        elif isinstance(n, (LetStmt, Let)):
            v = n.var
        elif isinstance(n, AttrStmt) and isinstance(n.node, IterVar):
            v = n.node.var
        if v is not None:
            out[id(v)] = v
    return out


class _Rewrite(Mutator):
    """Replaces each merged allocation by its view and every use of it by the view."""

    def __init__(self, views: dict[int, Buffer], offsets: dict[int, tuple[Buffer, PrimExpr]]):
        self.views = views  # id(old buffer) -> view
        self.offsets = offsets  # id(old data var) -> (view, byte offset)

    def visit_AllocBuffer(self, s: AllocBuffer):
        view = self.views.get(id(s.buffer))
        if view is None:
            return (yield from self.descend(s))
        return DeclBuffer(view, (yield s.body), s.span)

    def visit_buffer(self, b: Buffer) -> Buffer:
        if id(b) in self.views:
            return self.views[id(b)]
        if id(b.data) not in self.offsets:
            return b
        # Another declaration over a merged buffer's memory (T.decl_buffer(data=X.data)).
        view, byte_offset = self.offsets[id(b.data)]
        bits = _element_bits(b.dtype)
        if not isinstance(byte_offset, IntImm) or (byte_offset.value * 8) % bits:
            raise Diagnostic(f"buffer '{b.name}' views the memory of '{view.name}' with an "
                             "offset that is not a whole number of its elements", b.span)
        start = IntImm(byte_offset.dtype, byte_offset.value * 8 // bits)
        elem = start if b.elem_offset is None else _binop("add", _cast(b.elem_offset, start.dtype), start)
        new = replace(b, data=view.data, elem_offset=None if _is_zero(elem) else elem)
        self.views[id(b)] = new
        return new

    def visit_Var(self, v: Var):
        if id(v) not in self.offsets:
            return v
        view, _ = self.offsets[id(v)]  # a raw pointer use: the address of the view's start
        zero = tuple(IntImm(INT32, 0) for _ in view.shape)
        return Call(HANDLE, "address_of", (BufferLoad(view, zero, view.dtype),))


def _is_zero(e: PrimExpr | None) -> bool:
    return isinstance(e, IntImm) and e.value == 0


class _Kernels(Mutator):
    def __init__(self, target: Target | None):
        self.targets = [target]

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == TARGET and isinstance(s.node, Target):
            self.targets.append(s.node)
            try:
                return (yield from self.descend(s))
            finally:
                self.targets.pop()
        if s.key == THREAD_EXTENT:
            return self.kernel(s)
        return (yield from self.descend(s))

    def visit_For(self, s: For):
        return self.kernel(s) if s.kind == "thread_binding" else (yield from self.descend(s))

    def kernel(self, root: AttrStmt | For) -> Stmt:
        allocs = [n for n in walk(root.body)
                  if isinstance(n, AllocBuffer) and n.buffer.scope in SHARED_SCOPES]
        if not allocs:
            return root
        inner = _kernel_bound_vars(root.body)
        idx = INT64 if any(d.dtype == INT64 for a in allocs for d in a.buffer.shape) else INT32
        placed: list[tuple[AllocBuffer, PrimExpr]] = []
        end: PrimExpr = IntImm(idx, 0)
        for a in allocs:
            for n in (m for d in a.buffer.shape for m in walk(d)):
                if isinstance(n, Var) and id(n) in inner:
                    raise Diagnostic(f"the size of shared buffer '{a.buffer.name}' depends on "
                                     f"'{n.name}', which is defined inside the kernel; shared "
                                     "memory is sized when the kernel is launched",
                                     a.span or a.buffer.span)
            bits = _element_bits(a.buffer.dtype)
            start = _align(end, math.lcm(ALIGN, bits // 8) if bits % 8 == 0 else ALIGN)
            end = _binop("add", start, _size_bytes(a.buffer, idx))
            placed.append((a, start))
        self.check_limit(placed, end, idx)
        only = allocs[0].buffer
        if (len(allocs) == 1 and only.scope == "shared" and isinstance(end, IntImm)
                and end.value <= STATIC_LIMIT):
            return root  # fast path: one small static allocation stays as it is
        data = Var("buf_dyn_shmem", HANDLE, PointerType(UINT8, "shared.dyn"), root.span)
        merged = Buffer("buf_dyn_shmem", data, UINT8, (end,), span=root.span,
                        layout_none=only.layout_none)
        views: dict[int, Buffer] = {}
        offsets: dict[int, tuple[Buffer, PrimExpr]] = {}
        for a, start in placed:
            b = a.buffer
            bits = _element_bits(b.dtype)
            elem = (IntImm(idx, start.value * 8 // bits) if isinstance(start, IntImm)
                    else _binop("floordiv", start, IntImm(idx, bits // 8)))
            if b.elem_offset is not None:
                elem = _binop("add", _cast(b.elem_offset, idx), elem)
            views[id(b)] = replace(b, data=data, elem_offset=None if _is_zero(elem) else elem)
            offsets[id(b.data)] = (views[id(b)], start)
        body = _Rewrite(views, offsets).visit(root.body)
        return replace(root, body=AllocBuffer(merged, body, root.span))

    def check_limit(self, placed: list[tuple[AllocBuffer, PrimExpr]], total: PrimExpr,
                    idx: DataType) -> None:
        target = self.targets[-1]
        limit = target.get("max_shared_memory_per_block") if isinstance(target, Target) else None
        if not isinstance(limit, int):
            return
        for a, start in placed:
            size = _size_bytes(a.buffer, idx)
            if isinstance(start, IntImm) and isinstance(size, IntImm) and start.value + size.value > limit:
                need = (f"{total.value} bytes" if isinstance(total, IntImm)
                        else f"at least {start.value + size.value} bytes")
                arch = target.get("arch") or target.kind
                arch = ",".join(arch) if isinstance(arch, tuple) else arch
                raise Diagnostic(f"shared memory of this kernel totals {need}, over the limit "
                                 f"of {limit} bytes per block on {arch}; allocating "
                                 f"'{a.buffer.name}' crosses it", a.span or a.buffer.span)


def merge_shared_memory_allocations(mod: IRModule, ctx=None) -> IRModule:
    """Give every kernel launch of ``mod`` one merged dynamic shared-memory buffer."""
    funcs = {}
    for name, f in mod.functions.items():
        target = f.attrs.get(TARGET)
        body = _Kernels(target if isinstance(target, Target) else None).visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
    if all(funcs[n] is mod.functions[n] for n in funcs):
        return mod
    return replace(mod, functions=funcs)
