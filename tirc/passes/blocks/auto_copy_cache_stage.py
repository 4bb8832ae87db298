"""LowerAutoCopy's intermediate stages (TVM's ``memhammer_intermediate_stage.cc``).

:func:`insert_cache_stage` splits a copy at a *compute location* (one of its loops) into
two nests under that loop: one that fills a new buffer in the given scope, one that
copies it on. The new buffer has a dimension per loop below the compute location and
per enclosing thread loop the scope is shared by; for a read stage whose indices are
strided splits of the loops (``x // a % b``), its shape instead follows the *rank
promotion* of the source indices, one dimension per contiguous piece, so it holds only
what the thread touches.

:func:`create_local_stage` (global -> shared, ``"local_stage": True``): after the
coalescing rule, the thread loops move outermost and a ``local`` (register) stage holds
each thread's part of the copy between its global load and shared store.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE
from tirc.ir.expr import BinOp, BufferLoad, Cast, IntImm, PointerType, PrimExpr, Var
from tirc.ir.renew import substitute
from tirc.ir.stmt import BufferStore, For, IfThenElse, SeqStmt, Stmt
from tirc.ir import wmma_ops
from tirc.ir.visitor import Mutator, walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import add, floordiv, floormod, imm, mul
from tirc.passes.analysis.region_relax import need_relax_thread
from tirc.passes.blocks.auto_copy_common import (Constraints, Outputs, const_int, loop_nest,
                                                 with_suffix, wrap)

ACCUMULATORS = (wmma_ops.ACCUMULATOR, "m16n8k8.matrixC")


class _NotPromotable(Exception):
    pass


def _promote(e: PrimExpr, extents: dict[int, int], ops: list, shape: list, index: list) -> None:
    """TVM's IndexPatternFinder: each variable of ``extents`` under the ``*``, ``//``
    and ``%`` by constants above it, as the contiguous piece of it that survives."""
    if isinstance(e, Var):
        n = extents.get(id(e))
        if n is None:
            return
        hi, ext, idx = n, n, e
        for op, c in reversed(ops):
            if op == "mul":
                hi *= c
                idx = mul(idx, imm(e.dtype, c))
            elif op == "floordiv":
                if hi % c and c % hi:
                    raise _NotPromotable
                hi //= c
                if ext > hi:
                    ext = max(1, hi)
                if hi % ext:
                    raise _NotPromotable
                idx = floordiv(idx, imm(e.dtype, c))
            else:
                step = hi // ext
                if step % c and c % step:
                    raise _NotPromotable
                if step % c == 0:
                    ext, hi = 1, 0
                else:
                    ext = max(1, min(ext, c // step))
                    hi = ext * step
                idx = floormod(idx, imm(e.dtype, c))
        if ext > 1:
            if hi % ext:
                raise _NotPromotable
            shape.append(ext)
            index.append(floordiv(idx, imm(e.dtype, hi // ext)))
        return
    if isinstance(e, IntImm):
        return
    if isinstance(e, Cast):
        _promote(e.value, extents, ops, shape, index)
        return
    if not isinstance(e, BinOp):
        raise _NotPromotable
    if e.op in ("mul", "floordiv", "floormod"):
        c = const_int(e.b)
        if c is None or c <= 0:
            raise _NotPromotable
        ops.append((e.op, c))
        _promote(e.a, extents, ops, shape, index)
        ops.pop()
        return
    _promote(e.a, extents, ops, shape, index)
    _promote(e.b, extents, ops, shape, index)


def rank_promoted(indices, extents: dict[int, int]):
    """The promoted shape and the indices into it, or None."""
    shape, new_indices = [], []
    for e in indices:
        dims, parts = [], []
        try:
            _promote(e, extents, [], dims, parts)
        except _NotPromotable:
            return None
        size, flat = imm(e.dtype, 1), imm(e.dtype, 0)
        for d, p in zip(dims, parts):
            size = mul(size, imm(e.dtype, d))
            flat = add(mul(flat, imm(e.dtype, d)), p)
        shape.append(size)
        new_indices.append(flat)
    return shape, new_indices


def with_scope(buffer: Buffer, scope: str, shape) -> Buffer:
    name = f"{buffer.name}_{scope.replace('.', '_')}"
    data = Var(name, HANDLE, PointerType(buffer.dtype, scope), buffer.span)
    return replace(buffer, name=name, data=data, shape=tuple(shape), strides=(), elem_offset=None)


class _ReplaceLoad(Mutator):
    def __init__(self, buffer: Buffer, load: BufferLoad):
        self.buffer, self.load = buffer, load

    def visit_BufferLoad(self, e: BufferLoad):
        return self.load if e.buffer is self.buffer else self.generic_visit(e)


def _accumulator_load(stmt: Stmt, c: Constraints) -> BufferLoad:
    found = None
    ana = Analyzer()
    for node in walk(stmt):
        if isinstance(node, BufferLoad) and node.buffer.scope in ACCUMULATORS:
            if found is None:
                found = node
            elif node.buffer is not found.buffer or not all(
                    ana.can_prove_equal(a, b) for a, b in zip(node.indices, found.indices)):
                raise c.error("it reads more than one element of accumulator fragments")
    if found is None:
        raise c.error("it reads no accumulator fragment")
    return found


def insert_cache_stage(stmt: Stmt, write_cache: bool, scope: str, location: For | None,
                       c: Constraints):
    """``(the loops down to the compute location, the SeqStmt of the two stages under
    them, the new buffer)``."""
    above, under, relaxed_threads = [], [], []
    extents: dict[int, int] = {}
    relax = location is None
    body = stmt
    while isinstance(body, For):
        if relax:
            under.append(body)
            n = const_int(body.extent)
            if n is not None:
                extents[id(body.loop_var)] = n
        else:
            above.append(body)
        if body is location:
            relax = True
        body = body.body
    predicate = None
    if isinstance(body, IfThenElse) and body.else_case is None:
        predicate, body = body.condition, body.then_case
    for loop in c.outer_loops:
        if loop.kind == "thread_binding" and need_relax_thread(loop.thread_tag, scope):
            if write_cache and loop.thread_tag.endswith(".x"):
                continue  # a warp writes the fragment's stage together
            n = const_int(loop.extent)
            if n is not None:
                extents[id(loop.loop_var)] = n
            relaxed_threads.append(loop)
    if not isinstance(body, BufferStore):
        raise c.error("its loops do not hold one store")
    store = body
    target = _accumulator_load(stmt, c) if write_cache else None
    promoted = None
    if not write_cache and isinstance(store.value, BufferLoad):
        promoted = rank_promoted(store.value.indices, extents)
    relaxed = relaxed_threads + under
    if promoted is not None:
        shape, cache_indices = promoted
    else:
        shape = [l.extent for l in relaxed]
        cache_indices = [l.loop_var for l in relaxed]
    fresh = [with_suffix(l.loop_var, "_cache") for l in relaxed]
    subst = {id(l.loop_var): v for l, v in zip(relaxed, fresh)}
    cache = with_scope(target.buffer if write_cache else store.buffer, scope, shape)

    if write_cache:
        load = BufferLoad(cache, tuple(cache_indices), cache.dtype)
        fill: Stmt = substitute(_ReplaceLoad(target.buffer, load).visit(store), subst)
    else:
        fill = BufferStore(cache, substitute(store.value, subst),
                           tuple(substitute(e, subst) for e in cache_indices), store.span)
    if predicate is not None:
        fill = IfThenElse(substitute(predicate, subst), fill)
    for loop, v in zip(reversed(under), reversed(fresh[len(relaxed_threads):])):
        fill = replace(loop, loop_var=v, body=fill)
    for loop, v in zip(reversed(relaxed_threads), reversed(fresh[:len(relaxed_threads)])):
        fill = replace(loop, loop_var=v, body=fill, kind="serial", thread_tag=None, annotations=())

    if write_cache:
        drain: Stmt = BufferStore(cache, target, tuple(cache_indices), store.span)
    else:
        drain = BufferStore(store.buffer, BufferLoad(cache, tuple(cache_indices), cache.dtype),
                            store.indices, store.span)
    if predicate is not None:
        drain = IfThenElse(predicate, drain)
    drain = wrap(under, drain)
    seq = SeqStmt((drain, fill) if write_cache else (fill, drain))
    return above, seq, cache


def lift_thread_loops(stmt: Stmt) -> tuple[Stmt, For | None]:
    """The nest with its thread-bound loops outermost, and the innermost of them."""
    loops, body = loop_nest(stmt)
    threads = [l for l in loops if l.kind == "thread_binding"]
    nest = wrap(threads, wrap([l for l in loops if l.kind != "thread_binding"], body))
    location = None
    node = nest
    for _ in threads:
        location = node
        node = node.body
    return nest, location


def create_local_stage(stmt: Stmt, c: Constraints, out: Outputs) -> Stmt:
    if not (c.copies("global", "shared") and c.local_stage == 1):
        return stmt
    nest, location = lift_thread_loops(stmt)
    above, seq, cache = insert_cache_stage(nest, False, "local", location, c)
    out.alloc_buffers.append(cache)
    return wrap(above, seq)
