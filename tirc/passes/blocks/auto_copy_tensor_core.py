"""LowerAutoCopy's tensor-core rules (TVM's ``memhammer_tensorcore_rewrite.cc``).

The two innermost loops of the copy are tiled by the fragment's edge (16 for WMMA, 8
for ``m16n8k8``), and each tile becomes one block:

- shared -> ``wmma.matrix_a``/``matrix_b``: ``wmma_load``, a ``T.tvm_load_matrix_sync`` of
  the 16x16 tile (row-major for A, column-major for B), its rows padded by 8 halves;
- ``wmma.accumulator`` -> shared: ``wmma_store``, a ``T.tvm_store_matrix_sync``;
- ``wmma.accumulator`` -> global: a ``shared.dyn`` stage under the first tile loop, filled
  by ``wmma_store`` blocks and copied out coalesced (``auto_copy_coalesce``);
- ``m16n8k8.matrixC`` -> global: the same through ``mma_store`` blocks, each thread of the
  warp storing its two elements of an 8x8 tile.

The fragments' tile builtins are those of ``tirc.ir.wmma_ops``; later passes lower the
blocks' match buffers and the builtins as they lower any tensorized WMMA code.
"""
from __future__ import annotations

from tirc.ir.block import BufferRegion, MatchBufferRegion, Range, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, VOID, DataType
from tirc.ir.expr import BufferLoad, Call, PointerType, StringImm, Var, const
from tirc.ir.renew import substitute
from tirc.ir.stmt import AttrStmt, BufferStore, Evaluate, For, IterVar, SeqStmt, Stmt
from tirc.ir.visitor import walk
from tirc.ir.wmma_ops import ACCUMULATOR, LOAD, MATRIX_A, MATRIX_B, STORE
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.passes.analysis.arith_ops import add, floordiv, floormod, imm, mul
from tirc.passes.analysis.region_relax import cover_range, eval_set, from_range
from tirc.passes.blocks.auto_copy_cache_stage import insert_cache_stage
from tirc.passes.blocks.auto_copy_coalesce import coalesce
from tirc.passes.blocks.auto_copy_common import (Constraints, Outputs, const_int, loop_nest,
                                                 with_suffix, wrap)

FLOAT16 = DataType("float16")


def tile_last_two(stmt: Stmt, t: int, c: Constraints) -> tuple[Stmt, For | None]:
    """The two innermost loops split by ``t`` and ordered ``i0, j0, i1, j1``; and the
    ``i0`` loop. Unchanged (and no loop) where the extents are not multiples of ``t``."""
    loops, body = loop_nest(stmt)
    if len(loops) < 2:
        raise c.error("its body is not a nest of at least two loops")
    li, lj = loops[-2], loops[-1]
    ana = Analyzer()
    if not all(ana.can_prove_equal(floormod(l.extent, imm(l.extent.dtype, t)), imm(l.extent.dtype, 0))
               for l in (li, lj)):
        return stmt, None
    i0, j0 = with_suffix(li.loop_var, "_0"), with_suffix(lj.loop_var, "_0")
    i1, j1 = with_suffix(li.loop_var, "_1"), with_suffix(lj.loop_var, "_1")
    dt = li.loop_var.dtype
    body = substitute(body, {id(li.loop_var): add(mul(i0, imm(dt, t)), i1),
                             id(lj.loop_var): add(mul(j0, imm(dt, t)), j1)})
    zero = imm(dt, 0)
    body = For(j1, zero, imm(dt, t), "serial", body)
    body = For(i1, zero, imm(dt, t), "serial", body)
    body = For(j0, zero, floordiv(lj.extent, imm(dt, t)), "serial", body)
    location = For(i0, zero, floordiv(li.extent, imm(dt, t)), "serial", body)
    return wrap(loops[:-2], location), location


def _relax(indices, buffer: Buffer, loops) -> tuple[Range, ...]:
    dom = {id(l.loop_var): from_range(l.min, l.extent) for l in loops}
    return tuple(cover_range(eval_set(e, dom), Range(imm(INT32, 0), extent))
                 for e, extent in zip(indices, buffer.shape))


def _tile_buffer(name: str, like: Buffer, dtype: DataType, edge: int, strided: bool) -> Buffer:
    data = Var(name, HANDLE, PointerType(dtype, like.scope))
    strides = (Var("s1", INT32), Var("s0", INT32)) if strided else ()
    return Buffer(name, data, dtype, (imm(INT32, edge), imm(INT32, edge)), strides,
                  Var(f"{name}_elem_offset", INT32), 0, edge)


def _check_fragment_tiles(region: BufferRegion, c: Constraints, span) -> None:
    """The tile index the builtins take, ``offset // 256 + offset % 256 // 16``, names
    each 16x16 tile of the fragment buffer once only where its rows hold at most 16 tiles
    and the tiles start at multiples of 16."""
    buf = region.buffer
    width = const_int(buf.shape[-1]) if buf.shape else None
    ana = Analyzer()
    if width is None or width > 256 or width % 16:
        raise c.error(f"the rows of fragment '{buf.name}' are not a multiple of 16 of at most "
                      "256 elements (the WMMA builtins' tile index)", span)
    if not all(ana.can_prove_equal(floormod(r.min, imm(r.min.dtype, 16)), imm(r.min.dtype, 0))
               for r in region.region):
        raise c.error(f"its tiles of fragment '{buf.name}' do not start at multiples of 16", span)


def _fragment_index(frag: Buffer):
    off = frag.elem_offset
    return add(floordiv(off, imm(INT32, 256)), floordiv(floormod(off, imm(INT32, 256)), imm(INT32, 16)))


def _access_ptr(mem: Buffer, rw: int) -> Call:
    ann = Call(mem.dtype, "type_annotation", ())
    return Call(HANDLE, "tvm_access_ptr", (ann, mem.data, mem.elem_offset,
                                           mul(mem.strides[0], imm(INT32, 16)), imm(INT32, rw)))


def _tile_block(name: str, src: BufferRegion, dst: BufferRegion, new_src: Buffer, new_dst: Buffer,
                body: Stmt, outer) -> Stmt:
    block = SBlock(name, (), (src,), (dst,), body,
                   match_buffers=(MatchBufferRegion(new_src, src), MatchBufferRegion(new_dst, dst)))
    return wrap(outer, SBlockRealize((), const(True), block))


def _nest_store(stmt: Stmt, c: Constraints):
    loops, store = loop_nest(stmt)
    if len(loops) < 2 or not isinstance(store, BufferStore):
        raise c.error("its body is not a nest of at least two loops around one store")
    return loops, store


def rewrite_wmma_load(stmt: Stmt, c: Constraints) -> Stmt:
    loops, store = _nest_store(stmt, c)
    load = store.value
    if not isinstance(load, BufferLoad):
        raise c.error("its copy into a WMMA fragment stores more than a load", store.span)
    src, dst = load.buffer, store.buffer
    if src.dtype != FLOAT16 or dst.dtype != FLOAT16:
        raise c.error("its WMMA fragment copy is not of float16 (the tile load is)", store.span)
    layout = "row_major" if dst.scope == MATRIX_A else "col_major"
    new_src = _tile_buffer("src", src, FLOAT16, 16, True)
    new_dst = _tile_buffer("tgt", dst, FLOAT16, 16, False)
    read = BufferRegion(src, _relax(load.indices, src, loops[-2:]))
    write = BufferRegion(dst, _relax(store.indices, dst, loops[-2:]))
    _check_fragment_tiles(write, c, store.span)
    sixteen = imm(INT32, 16)
    call = Call(VOID, LOAD,
                (new_dst.data, sixteen, sixteen, sixteen, _fragment_index(new_dst),
                 _access_ptr(new_src, 1), new_src.strides[0], StringImm(layout)))
    return _tile_block("wmma_load", read, write, new_src, new_dst, Evaluate(call), loops[:-2])


def _source_load(store: BufferStore, scope: str, c: Constraints) -> BufferLoad:
    found = None
    for node in walk(store.value):
        if isinstance(node, BufferLoad) and node.buffer.scope == scope:
            if found is not None and found.buffer is not node.buffer:
                raise c.error(f"it reads more than one {scope} buffer", store.span)
            found = node
    if found is None:
        raise c.error(f"its store reads no {scope} buffer", store.span)
    return found


def rewrite_wmma_store(stmt: Stmt, c: Constraints) -> Stmt:
    loops, store = _nest_store(stmt, c)
    load = _source_load(store, ACCUMULATOR, c)
    src, dst = load.buffer, store.buffer
    new_src = _tile_buffer("src", src, src.dtype, 16, False)
    new_dst = _tile_buffer("tgt", dst, src.dtype, 16, True)
    read = BufferRegion(src, _relax(load.indices, src, loops[-2:]))
    write = BufferRegion(dst, _relax(store.indices, dst, loops[-2:]))
    _check_fragment_tiles(read, c, store.span)
    sixteen = imm(INT32, 16)
    call = Call(VOID, STORE,
                (new_src.data, sixteen, sixteen, sixteen, _fragment_index(new_src),
                 _access_ptr(new_dst, 2), new_dst.strides[0], StringImm("row_major")))
    return _tile_block("wmma_store", read, write, new_src, new_dst, Evaluate(call), loops[:-2])


def rewrite_mma_store(stmt: Stmt, c: Constraints) -> Stmt:
    loops, store = _nest_store(stmt, c)
    load = _source_load(store, "m16n8k8.matrixC", c)
    src, dst = load.buffer, store.buffer
    new_src = _tile_buffer("src", src, src.dtype, 8, False)
    new_dst = _tile_buffer("tgt", dst, src.dtype, 8, True)
    read = BufferRegion(src, _relax(load.indices, src, loops[-2:]))
    write = BufferRegion(dst, _relax(store.indices, dst, loops[-2:]))
    tx, vec = Var("tx", INT32), Var("vec", INT32)
    index = (floordiv(tx, imm(INT32, 4)), add(mul(floormod(tx, imm(INT32, 4)), imm(INT32, 2)), vec))
    body: Stmt = BufferStore(new_dst, BufferLoad(new_src, index, new_src.dtype), index)
    body = For(vec, imm(INT32, 0), imm(INT32, 2), "vectorized", body)
    body = AttrStmt(IterVar(tx, "threadIdx.x"), "thread_extent", imm(INT32, 32), body)
    return _tile_block("mma_store", read, write, new_src, new_dst, body, loops[:-2])


def shared_to_wmma(stmt: Stmt, c: Constraints, out: Outputs) -> Stmt:
    if not (c.copies("shared", MATRIX_A) or c.copies("shared", MATRIX_B)):
        return stmt
    tiled, location = tile_last_two(stmt, 16, c)
    if location is None:
        raise c.error("its two innermost loops are not multiples of 16 (WMMA tiles)")
    out.pad_at_least(c.read_region.buffer, 8)
    return rewrite_wmma_load(tiled, c)


def wmma_to_shared(stmt: Stmt, c: Constraints, out: Outputs) -> Stmt:
    if not c.copies(ACCUMULATOR, "shared"):
        return stmt
    tiled, location = tile_last_two(stmt, 16, c)
    if location is None:
        raise c.error("its two innermost loops are not multiples of 16 (WMMA tiles)")
    out.pad_at_least(c.write_region.buffer, 8)
    return rewrite_wmma_store(tiled, c)


def _through_shared(stmt: Stmt, c: Constraints, out: Outputs, edge: int, store_tiles) -> Stmt:
    tiled, location = tile_last_two(stmt, edge, c)
    if location is None:
        raise c.error(f"its two innermost loops are not multiples of {edge} (fragment tiles)")
    above, seq, cache = insert_cache_stage(tiled, True, "shared.dyn", location, c)
    out.alloc_buffers.append(cache)
    out.pad_at_least(cache, 8)
    new_seq = SeqStmt((store_tiles(seq.stmts[0], c), coalesce(seq.stmts[1], c)))
    return wrap(above, new_seq)


def wmma_to_global(stmt: Stmt, c: Constraints, out: Outputs) -> Stmt:
    if not c.copies(ACCUMULATOR, "global"):
        return stmt
    return _through_shared(stmt, c, out, 16, rewrite_wmma_store)


def mma_to_global(stmt: Stmt, c: Constraints, out: Outputs) -> Stmt:
    if not c.copies("m16n8k8.matrixC", "global"):
        return stmt
    return _through_shared(stmt, c, out, 8, rewrite_mma_store)
