"""The SIMT interpreter's PTX copies: ``T.ptx_legacy.ldmatrix``, ``T.s_tir.ldg32`` and ``T.s_tir.cp_async_raw``
(with the ``T.ptx.cp`` groups).

* ``cp.async`` copies its bytes at once (a thread's own reads after ``wait_group`` see
  them, as on the GPU; a read before the wait, which on the GPU may see the old bytes, is
  not told apart); under a false predicate the destination is zero-filled. The groups
  (``commit_group``, ``wait_group``, ``wait_all``) do nothing more.
* ``ldmatrix`` is warp-wide (all 32 threads of full warps, else :class:`Unsupported`):
  thread ``8 i + r`` names the address of row ``r`` (16 bytes, eight b16 elements) of
  matrix ``i``, and register ``i`` of thread ``t`` receives elements ``2 (t % 4)`` and
  ``2 (t % 4) + 1`` of row ``t // 4`` of matrix ``i`` (with ``.trans``: of column
  ``t // 4``, rows ``2 (t % 4)`` and ``2 (t % 4) + 1``), stored to the local pointer.

Addresses are a buffer's data plus an offset in elements of its pointer type, or
``T.tvm_access_ptr``'s element of its dtype; each access is checked against its memory
(:class:`OutOfBounds`) and for races like loads and stores.
"""
from __future__ import annotations

import numpy as np

from tirc.ir import ptx_ops
from tirc.ir.expr import BufferLoad, Call, PrimExpr
from tirc.testing.evaluate import Unsupported
from tirc.testing.simt_memory import (Memory, OutOfBounds, View, check_load, check_store)


def run(k, call: Call) -> None:
    d = ptx_ops.decode(call)
    if isinstance(d, ptx_ops.CpAsyncCall):
        _cp_async(k, d, call)
    elif isinstance(d, ptx_ops.LdmatrixCall):
        _ldmatrix(k, d, call)
    elif isinstance(d, ptx_ops.Ldg32Call):
        _ldg32(k, d, call)
    # cp.async groups: the copies are done already


def point_at(k, call: Call, mem: Memory) -> None:
    """A fault of ``call`` (in the kernel ``k``) names ``mem`` as a whole, in bytes."""
    k._ctx(View(mem.name, mem, np.uint8, 0, [mem.nbytes], [1], 1), call)


def bytes_at(k, pointer: PrimExpr, offset: PrimExpr | None):
    """The memory ``pointer`` (plus ``offset`` units) points into and, per thread, the
    byte of its raw storage (each thread's copy) it names."""
    extra = np.int64(0)
    if (isinstance(pointer, Call) and pointer.op == "address_of"
            and isinstance(pointer.args[0], BufferLoad) and len(pointer.args[0].indices) == 1):
        # &A[i] of a view (a merged shared buffer's): A's memory, past its offset
        load = pointer.args[0]
        buf = load.buffer
        unit = ptx_ops.elem_bytes(pointer)
        index = np.asarray(k.expr(load.indices[0]), np.int64)
        if buf.elem_offset is not None:
            index = index + np.asarray(k.expr(buf.elem_offset), np.int64)
        extra = index * unit
        base = k.expr(buf.data)
    elif isinstance(pointer, Call) and pointer.op == "tvm_access_ptr":
        dt = pointer.args[0].dtype
        extra = np.asarray(k.expr(pointer.args[2]), np.int64) * (dt.bits * dt.lanes // 8)
        base = k.expr(pointer.args[1])
        unit = 1
    else:
        base = k.expr(pointer)
        unit = ptx_ops.elem_bytes(pointer)
    mem = getattr(base, "mem", None)
    if not isinstance(mem, Memory):
        raise Unsupported("a PTX copy through a pointer that is not a buffer of the kernel")
    if offset is not None:
        extra = extra + np.asarray(k.expr(offset), np.int64) * unit
    within = np.broadcast_to(base.byte + extra, (k.n,))
    return mem, within, np.broadcast_to(np.asarray(mem.lane_base(1), np.int64), (k.n,)) + within


def check_bounds(k, call, mem, within, size: int, sel: np.ndarray, what: str) -> None:
    bad = sel & ((within < 0) | (within + size > mem.nbytes))
    if bad.any():
        t = int(np.flatnonzero(bad)[0])
        raise OutOfBounds(f"{k.name}: out-of-bounds {what} of {mem.scope} buffer '{mem.name}' by "
                          f"T.{call.op}: bytes {int(within[t])}..{int(within[t]) + size - 1} (its "
                          f"memory has {mem.nbytes}) by {k.who(int(k.gtid[t]))}")


def _read(k, call, mem, byte, size: int, sel: np.ndarray) -> np.ndarray:
    raw = mem.typed(np.uint8)
    pos = byte[:, None] + np.arange(size)
    if k.opts.check_races and mem.scope != "local" and sel.any():
        point_at(k, call, mem)
        act = np.flatnonzero(sel)
        check_load(mem, k.sync, pos[act].reshape(-1), k.threads[np.repeat(act, size)], k)
    return raw[np.where(sel[:, None], pos, 0)]


def _write(k, call, mem, byte, values: np.ndarray, sel: np.ndarray) -> None:
    raw = mem.typed(np.uint8)
    size = values.shape[1]
    act = np.flatnonzero(sel)
    pos = (byte[act, None] + np.arange(size)).reshape(-1)
    new = values[act].reshape(-1)
    if k.opts.check_races and mem.scope != "local" and len(act):
        point_at(k, call, mem)
        check_store(mem, k.sync, pos, k.threads[np.repeat(act, size)], raw[pos], new, k)
    raw[pos] = new


def _cp_async(k, d: "ptx_ops.CpAsyncCall", call: Call) -> None:
    dmem, dwithin, dst = bytes_at(k, d.dst, d.dst_offset)
    smem, swithin, src = bytes_at(k, d.src, d.src_offset)
    act = k.mask
    keep = act
    if d.predicate is not None:
        keep = act & (np.broadcast_to(np.asarray(k.expr(d.predicate)), (k.n,)) != 0)
    check_bounds(k, call, dmem, dwithin, d.size, act, "write")
    check_bounds(k, call, smem, swithin, d.size, keep, "read")
    values = np.zeros((k.n, d.size), np.uint8)
    if keep.any():
        values = np.where(keep[:, None], _read(k, call, smem, src, d.size, keep), values)
    _write(k, call, dmem, dst, values, act)


def _ldg32(k, d: "ptx_ops.Ldg32Call", call: Call) -> None:
    """``reg[k] = guard ? A[i] : 0`` (4 bytes), as the predicated ``ld.global.nc.f32``."""
    dmem, dwithin, dst = bytes_at(k, d.reg, d.reg_offset)
    smem, swithin, src = bytes_at(k, d.load.buffer.data, d.load.indices[0])
    act = k.mask
    keep = act & (np.broadcast_to(np.asarray(k.expr(d.guard)), (k.n,)) != 0)
    check_bounds(k, call, dmem, dwithin, 4, act, "write")
    check_bounds(k, call, smem, swithin, 4, keep, "read")
    values = np.zeros((k.n, 4), np.uint8)
    if keep.any():
        values = np.where(keep[:, None], _read(k, call, smem, src, 4, keep), values)
    _write(k, call, dmem, dst, values, act)


def _ldmatrix(k, d: "ptx_ops.LdmatrixCall", call: Call) -> None:
    if k.T % 32 or not k.mask.all():
        raise Unsupported(f"T.{call.op} run by part of a warp")
    smem, swithin, rows_at = bytes_at(k, d.smem, d.smem_offset)
    warps = k.n // 32
    naming = (k.lane < 8 * d.num)  # the threads whose addresses name rows
    check_bounds(k, call, smem, swithin, 16, naming, "read")
    read = _read(k, call, smem, rows_at, 16, naming).reshape(warps, 32, 16)
    rows = read[:, :8 * d.num].reshape(warps, d.num, 8, 16)
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    out = np.empty((warps, 32, 4 * d.num), np.uint8)
    for i in range(d.num):
        if not d.trans:
            out[:, :, 4 * i:4 * i + 4] = rows[:, i, g[:, None], 4 * t[:, None] + np.arange(4)]
        else:
            for j in range(2):
                r = 2 * t + j
                out[:, :, 4 * i + 2 * j:4 * i + 2 * j + 2] = rows[:, i, r[:, None], 2 * g[:, None] + np.arange(2)]
    lmem, lwithin, local = bytes_at(k, d.local, d.local_offset)
    check_bounds(k, call, lmem, lwithin, 4 * d.num, k.mask, "write")
    _write(k, call, lmem, local, out.reshape(k.n, 4 * d.num), k.mask)
