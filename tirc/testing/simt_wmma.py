"""The SIMT interpreter's WMMA builtins (``tirc.ir.wmma_ops``): warp-wide, as on the GPU
(all 32 threads of full warps, the memory address and stride the same in the whole warp,
else :class:`Unsupported`).

A fragment buffer is per-thread memory, as the NVPTX backend makes it: fragment ``i`` is
``R = fragment_regs`` 32-bit registers at byte ``4 R i`` of each thread's copy. The
PTX ISA does not say which elements of the tile a thread's registers hold (it differs
between GPU generations), so the interpreter fixes its own spread, documented here: the
``E = 32 R / bits`` elements of lane ``l`` are the tile's elements ``(l E + e) mod
(rows * columns)`` in row-major order, ``e = 0 .. E - 1`` (a replicated fragment, f16 A
and B, holds the tile twice over the warp). No program sees the difference: only the
WMMA calls touch a fragment's elements (InferFragment refuses anything else).

``tvm_mma_sync`` computes D = A B + C with products summed exactly (float64, int64) and
rounded once to the accumulator type (int32 wrapping), as ``simt_mma`` does for
``mma.sync``; loads and stores read and write memory element by element, checked for
bounds and races like any access.
"""
from __future__ import annotations

import numpy as np

from tirc.ir import wmma_ops
from tirc.ir.expr import Call
from tirc.testing.evaluate import Unsupported
from tirc.testing.simt_copy import bytes_at, check_bounds, point_at
from tirc.testing.simt_memory import Memory, check_load, check_store

_NP = {"float16": np.float16, "float32": np.float32, "int32": np.int32, "int8": np.int8,
       "uint8": np.uint8}


def _layout(scope: str, dtype: str, mnk):
    """(rows, columns, registers, elements per lane, element type) of a fragment."""
    if dtype not in _NP:
        raise Unsupported(f"a {dtype} WMMA fragment in the SIMT interpreter")
    rows, cols = wmma_ops.tile(scope, mnk)
    regs = wmma_ops.fragment_regs(scope, wmma_ops.PTX_TYPES[dtype], mnk)
    t = _NP[dtype]
    per = regs * 4 // np.dtype(t).itemsize
    return rows, cols, regs, per, t


def _tile_index(k, rows: int, cols: int, per: int) -> np.ndarray:
    """Per thread (n x per): the row-major tile element each of its fragment elements is."""
    lane = np.asarray(k.lane, np.int64)[:, None]
    return (lane * per + np.arange(per)) % (rows * cols)


def _uniform(k, values: np.ndarray, what: str, call: Call) -> None:
    v = np.broadcast_to(values, (k.n,)).reshape(-1, 32)
    if (v != v[:, :1]).any():
        raise Unsupported(f"T.{call.op} with a {what} that differs within a warp")


def _warp(k, call: Call) -> None:
    if k.T % 32 or not k.mask.all():
        raise Unsupported(f"T.{call.op} run by part of a warp")


def _slot(k, frag: "wmma_ops.Fragment", regs: int):
    """The fragment's memory and, per thread, the absolute byte of its registers."""
    mem, within, at = bytes_at(k, frag.data, None)
    if not isinstance(mem, Memory):
        raise Unsupported("a WMMA fragment that is not a buffer of the kernel")
    index = np.broadcast_to(np.asarray(k.expr(frag.index), np.int64), (k.n,))
    off = index * 4 * regs
    return mem, within + off, at + off


def _read_frag(k, call, frag, regs: int, t) -> np.ndarray:
    mem, within, at = _slot(k, frag, regs)
    check_bounds(k, call, mem, within, 4 * regs, k.mask, "read")
    raw = mem.typed(np.uint8)
    got = raw[at[:, None] + np.arange(4 * regs)]
    return np.ascontiguousarray(got).view(t)  # n x per


def _write_frag(k, call, frag, regs: int, values: np.ndarray) -> None:
    mem, within, at = _slot(k, frag, regs)
    check_bounds(k, call, mem, within, 4 * regs, k.mask, "write")
    raw = mem.typed(np.uint8)
    raw[at[:, None] + np.arange(4 * regs)] = np.ascontiguousarray(values).view(np.uint8)


def _element_bytes(k, call, d: "wmma_ops.WmmaCall", rows: int, cols: int, per: int, size: int):
    """The memory of a load or store and, per thread (n x per), the absolute byte of each
    element its fragment registers hold (checked for bounds)."""
    mem, within, at = bytes_at(k, d.pointer, None)
    stride = np.broadcast_to(np.asarray(k.expr(d.stride), np.int64), (k.n,))
    _uniform(k, at, "memory address", call)
    _uniform(k, stride, "stride", call)
    idx = _tile_index(k, rows, cols, per)
    r, c = idx // cols, idx % cols
    elem = r * stride[:, None] + c if d.layout == "row_major" else c * stride[:, None] + r
    off = elem * size
    lo, hi = within[:, None] + off, within[:, None] + off + size
    bad = (lo < 0) | (hi > mem.nbytes)
    if bad.any():
        t, e = np.argwhere(bad)[0]
        check_bounds(k, call, mem, lo[:, e], size, bad[:, e], "read" if d.op == wmma_ops.LOAD else "write")
    return mem, at[:, None] + off


def _load(k, call, d) -> None:
    frag = d.frags[0]
    rows, cols, regs, per, t = _layout(frag.scope, frag.dtype, d.shape)
    size = np.dtype(t).itemsize
    mem, pos = _element_bytes(k, call, d, rows, cols, per, size)
    byte = (pos[:, :, None] + np.arange(size)).reshape(k.n, -1)
    if mem.scope != "local":
        point_at(k, call, mem)
        check_load(mem, k.sync, byte.reshape(-1), k.threads[np.repeat(np.arange(k.n), byte.shape[1])], k)
    raw = mem.typed(np.uint8)
    _write_frag(k, call, frag, regs, np.ascontiguousarray(raw[byte]).view(t))


def _store(k, call, d) -> None:
    frag = d.frags[0]
    rows, cols, regs, per, t = _layout(frag.scope, frag.dtype, d.shape)
    size = np.dtype(t).itemsize
    values = _read_frag(k, call, frag, regs, t)
    mem, pos = _element_bytes(k, call, d, rows, cols, per, size)
    # each tile element once: the first lane and element holding it writes it
    first = (np.asarray(k.lane, np.int64)[:, None] * per + np.arange(per)) < rows * cols
    sel = np.argwhere(first)
    byte = (pos[sel[:, 0], sel[:, 1], None] + np.arange(size)).reshape(-1)
    new = np.ascontiguousarray(values[sel[:, 0], sel[:, 1]]).view(np.uint8).reshape(-1)
    raw = mem.typed(np.uint8)
    if mem.scope != "local":
        point_at(k, call, mem)
        who = k.threads[np.repeat(sel[:, 0], size)]
        check_store(mem, k.sync, byte, who, raw[byte], new, k)
    raw[byte] = new


def _fill(k, call, d) -> None:
    frag = d.frags[0]
    rows, cols, regs, per, t = _layout(frag.scope, frag.dtype, d.shape)
    v = np.broadcast_to(np.asarray(k.expr(d.value)), (k.n,))
    with np.errstate(over="ignore", invalid="ignore"):
        vals = np.repeat(v.astype(t)[:, None], per, axis=1)
    _write_frag(k, call, frag, regs, vals)


def _tile(k, call, frag, mnk, exact) -> np.ndarray:
    """The warps' tiles of a fragment (warps x rows x columns), from the first holder of
    each element."""
    rows, cols, regs, per, t = _layout(frag.scope, frag.dtype, mnk)
    vals = _read_frag(k, call, frag, regs, t).astype(exact).reshape(k.n // 32, 32 * per)
    return vals[:, :rows * cols].reshape(-1, rows, cols)


def _mma(k, call, d, shapes) -> None:
    dd, a, b, c = d.frags
    mnk = shapes
    exact = np.int64 if dd.dtype == "int32" else np.float64
    result = _tile(k, call, a, mnk, exact) @ _tile(k, call, b, mnk, exact) + _tile(k, call, c, mnk, exact)
    rows, cols, regs, per, t = _layout(dd.scope, dd.dtype, mnk)
    idx = _tile_index(k, rows, cols, per)
    warp = np.arange(k.n) // 32
    out = result.reshape(k.n // 32, -1)[warp[:, None], idx]
    if dd.dtype == "int32":
        out = (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    _write_frag(k, call, dd, regs, out.astype(t))


def run(k, call: Call, shapes: dict[int, tuple[int, int, int]]) -> None:
    """One WMMA call; ``shapes``: each fragment's (m, n, k) by the id of its data variable
    (InferFragment's ``fragment_shape``), which ``tvm_mma_sync`` needs."""
    _warp(k, call)
    d = wmma_ops.decode(call)
    if d.op == wmma_ops.LOAD:
        _load(k, call, d)
    elif d.op == wmma_ops.STORE:
        _store(k, call, d)
    elif d.op == wmma_ops.FILL:
        _fill(k, call, d)
    else:
        known = {shapes.get(id(f.data)) for f in d.frags}
        if None in known or len(known) != 1:
            raise Unsupported("T.tvm_mma_sync on fragments without one fragment_shape "
                              "(InferFragment's)")
        _mma(k, call, d, known.pop())
