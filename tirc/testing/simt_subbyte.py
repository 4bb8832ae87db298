"""The SIMT interpreter's loads and stores of packed sub-byte buffers (int1, int2, int4,
uint2, uint4), laid out as the code generator lays them out (:mod:`tirc.backends.llvm.subbyte`): element
``e`` of a buffer sits in byte ``e // packs``, bits ``(e % packs) * bits`` up. A view of
such a buffer counts its ``base`` in elements (not bytes) and reads its memory as bytes.

A store of part of a byte is a read-modify-write; it is run only on per-thread (local)
memory, as the NVPTX backend compiles it only there: elsewhere it is
:class:`Unsupported`. Races are checked on the bytes a load reads and a whole-byte store
writes, as for any other access.
"""
from __future__ import annotations

import numpy as np

from tirc.ir.dtype import DataType
from tirc.testing.evaluate import Unsupported
from tirc.testing.simt_memory import SparseMemory, check_load, check_store


def values_of(raw: np.ndarray, shift: np.ndarray, d: DataType, t) -> np.ndarray:
    """Elements of dtype ``d`` at bit ``shift`` of bytes ``raw``, as NumPy type ``t``."""
    v = (raw.astype(np.int64) >> shift) & ((1 << d.bits) - 1)
    if d.is_int:
        v = np.where(v >= 1 << (d.bits - 1), v - (1 << d.bits), v)
    return v.astype(t)


def _flat(k, view, pos):
    """The byte of each thread's element ``pos`` in the memory's flat byte array, and
    the element's bit shift in it; ``pos`` broadcast to one row per thread."""
    if isinstance(view.mem, SparseMemory):
        raise Unsupported(f"{view.name}: a large local buffer of packed {view.sub}")
    pos = np.asarray(pos, np.int64)
    shape = (k.n,) + pos.shape[1:] if pos.ndim else (k.n,)
    pos = np.broadcast_to(pos if pos.ndim else pos[None], shape)
    base = np.asarray(view.mem.lane_base(1), np.int64)
    base = base[:, None] if base.ndim and len(shape) == 2 else base
    packs = view.sub.packs
    return base + pos // packs, (pos % packs) * view.sub.bits, shape


def load(k, view, pos, node, t):
    flat, shift, shape = _flat(k, view, pos)
    raw = view.mem.typed(np.uint8)
    m = k.mask if len(shape) == 1 else k.mask[:, None]
    flat = np.where(m, flat, 0)
    if k.opts.check_races and view.mem.scope != "local":
        k._ctx(view, node)
        check_load(view.mem, k.sync, flat[k.mask].reshape(-1), k.threads[k._lanes_of(shape)], k)
    return values_of(raw[flat], shift, view.sub, t)


def store(k, view, pos, vals, node) -> None:
    flat, shift, shape = _flat(k, view, pos)
    raw = view.mem.typed(np.uint8)
    vals = np.broadcast_to(np.asarray(vals, np.int64), shape)
    m = k.mask
    flat, shift, vals = flat[m], shift[m], vals[m]
    if flat.ndim == 1:
        flat, shift, vals = flat[:, None], shift[:, None], vals[:, None]
    bits, packs = view.sub.bits, view.sub.packs
    whole = flat.shape[1] * bits % 8 == 0 and np.all(shift[:, 0] == 0) and np.all(
        flat == flat[:, :1] + np.arange(flat.shape[1]) // packs)
    if not whole and view.mem.scope != "local":
        raise Unsupported(f"a store of part of a byte of {view.mem.scope} buffer '{view.name}' "
                          f"({view.sub})")
    mask = (1 << bits) - 1
    checked = whole and k.opts.check_races and view.mem.scope != "local"
    if checked:  # the bytes each thread writes, thread by thread
        touched = flat[:, ::packs].reshape(-1)
        old = raw[touched].copy()
    for lane in range(flat.shape[1]):  # in lane order: lanes share bytes
        f, s = flat[:, lane], shift[:, lane]
        keep = raw[f].astype(np.int64) & ~(mask << s)
        raw[f] = (keep | ((vals[:, lane] & mask) << s)).astype(np.uint8)
    if checked:
        new = raw[touched].copy()
        raw[touched] = old
        k._ctx(view, node)
        me = k.threads[np.repeat(np.flatnonzero(m), flat.shape[1] // packs)]
        check_store(view.mem, k.sync, touched, me, old, new, k)
        raw[touched] = new
