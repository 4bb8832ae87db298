"""LowerAutoCopy's coalescing rules (TVM's ``memhammer_coalesce.cc``).

- :func:`coalesced_access` (global <-> shared): the copy's loops fuse into one, which
  splits into ``[outer, threadIdx.z?, threadIdx.y?, threadIdx.x?, vector]``, the thread
  parts bound to the kernel's thread extents and the vector part ``vector_bytes`` wide;
  a guard keeps the last, partial round inside the copy where the split does not divide.
- :func:`inverse_mapping` (shared -> global): a copy ``B[f(i)] = A[i]`` becomes
  ``B[j] = A[f^-1(j)]``, so the coalesced side is the global one. tirc inverts a
  permutation of the loop variables (what schedules write: transposes); any other
  index map is a located error. (TVM's rule reads ``A`` at its region's minimum plus
  ``f^-1(j)`` dimension by dimension, right only where ``A``'s indices are the loop
  variables in loop order; tirc substitutes into ``A``'s indices as written.)
"""
from __future__ import annotations

from tirc.ir.expr import BufferLoad, Var
from tirc.ir.renew import substitute
from tirc.ir.stmt import BufferStore, For, IfThenElse, Stmt
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import add, binop, floordiv, floormod, imm, is_int, mul, sub
from tirc.passes.blocks.auto_copy_common import Constraints, Outputs, const_int, loop_nest, with_suffix

THREAD_AXES = ("threadIdx.z", "threadIdx.y", "threadIdx.x")


def fuse_nest_loops(stmt: Stmt, c: Constraints) -> For:
    loops, body = loop_nest(stmt)
    if not loops:
        raise c.error("its body is not a loop nest")
    first = loops[0].loop_var
    fused = with_suffix(first, "".join("_" + l.loop_var.name for l in loops[1:]) + "_fused")
    subst, total = {}, fused
    for loop in reversed(loops):
        subst[id(loop.loop_var)] = floormod(total, loop.extent)
        total = floordiv(total, loop.extent)
    extent = imm(first.dtype, 1)
    for loop in loops:
        extent = mul(extent, loop.extent)
    return For(fused, imm(first.dtype, 0), extent, "serial", substitute(body, subst))


def split_bind_vectorize(loop: For, c: Constraints) -> For:
    extent = const_int(loop.extent)
    if extent is None:
        raise c.error("its loops do not have constant extents", loop.span)
    vector_len = max(1, c.vector_bytes * 8 // c.data_bits)
    axes = [t for t in THREAD_AXES if t in c.thread_extent]
    threads = 1
    for t in axes:
        threads *= c.thread_extent[t]
    if threads <= 0:
        raise c.error("its kernel binds a thread axis to no thread", loop.span)
    factors = [-(-extent // (threads * vector_len))] + [c.thread_extent[t] for t in axes] + [vector_len]
    dt = loop.loop_var.dtype
    ana = Analyzer()
    new_vars = []
    for i, f in enumerate(factors):
        v = with_suffix(loop.loop_var, f"_{i}")
        ana.bind_range(v, imm(dt, 0), imm(dt, f))
        new_vars.append(v)
    value = imm(dt, 0)
    for f, v in zip(factors, new_vars):
        value = add(mul(value, imm(dt, f)), v)
    body = substitute(loop.body, {id(loop.loop_var): value})
    guard = binop("lt", value, loop.extent)
    if not ana.can_prove(guard):
        body = IfThenElse(guard, body)
    body = For(new_vars[-1], imm(dt, 0), imm(dt, vector_len), "vectorized", body)
    for i in range(len(factors) - 2, 0, -1):
        body = For(new_vars[i], imm(dt, 0), imm(dt, factors[i]), "thread_binding", body,
                   thread_tag=axes[i - 1])
    return For(new_vars[0], imm(dt, 0), imm(dt, factors[0]), "serial", body)


def coalesce(stmt: Stmt, c: Constraints) -> Stmt:
    return split_bind_vectorize(fuse_nest_loops(stmt, c), c)


def coalesced_access(stmt: Stmt, c: Constraints, out: Outputs) -> Stmt:
    if not (c.copies("global", "shared") or c.copies("shared", "global")):
        return stmt
    return coalesce(stmt, c)


def inverse_mapping(stmt: Stmt, c: Constraints, out: Outputs) -> Stmt:
    if not c.copies("shared", "global"):
        return stmt
    loops, store = loop_nest(stmt)
    write, read = c.write_region, c.read_region
    if not (isinstance(store, BufferStore) and store.buffer is write.buffer
            and len(store.indices) == len(write.region)):
        raise c.error(f"its loops do not hold one store to '{write.buffer.name}'")
    if not (isinstance(store.value, BufferLoad) and store.value.buffer is read.buffer):
        raise c.error(f"the copy into global memory stores more than a load of "
                      f"'{read.buffer.name}'", store.span)
    ana = Analyzer()
    loop_vars = [l.loop_var for l in loops]
    wide = [(k, ana.simplify(sub(i, r.min))) for k, (i, r) in enumerate(zip(store.indices, write.region))
            if not is_int(r.extent, 1)]
    # the index map must be a permutation of the loop variables, each loop from 0
    by_var = {id(p): k for k, p in wide if isinstance(p, Var)}
    if (len(wide) != len(loops) or len(by_var) != len(loops)
            or any(id(v) not in by_var for v in loop_vars)
            or any(not is_int(l.min, 0) for l in loops)):
        raise c.error("the index map of its store into global memory is not a permutation "
                      "of its loop variables", store.span)
    extent_of = {id(l.loop_var): l.extent for l in loops}
    write_index = [r.min for r in write.region]
    new_vars, extents, renamed = [], [], {}
    for j, (k, p) in enumerate(wide):
        v = with_suffix(loop_vars[j], "_inverse")  # named as TVM names them
        new_vars.append(v)
        extents.append(extent_of[id(p)])
        renamed[id(p)] = v
        write_index[k] = add(write.region[k].min, v)
    # B[f(i)] = A[g(i)] becomes B[j] = A[g(f^-1(j))]: each loop variable is the new
    # variable of the written dimension it indexes
    read_index = [substitute(e, renamed) for e in store.value.indices]
    load = BufferLoad(read.buffer, tuple(read_index), read.buffer.dtype, store.value.span)
    body: Stmt = BufferStore(write.buffer, load, tuple(write_index), store.span)
    for v, e in zip(reversed(new_vars), reversed(extents)):
        body = For(v, imm(v.dtype, 0), e, "serial", body)
    return body
