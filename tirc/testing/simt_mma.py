"""The SIMT interpreter's ``T.ptx_legacy.mma``: one warp-wide ``mma.sync`` per warp.

Each thread holds a fragment of A, B and C in its registers (read here from the memory its
pointers name, as the NVPTX backend loads them); where each fragment element sits in the
matrices is the PTX ISA's "Matrix fragments for mma.m*n*k*" figures, tabled in
``_LAYOUTS`` as (row, column) of element ``i`` of lane ``4 * g + t`` (``g`` the group,
``t`` the thread in the group). The warp computes D = A B + C (A is M x K, B is K x N),
products summed exactly (float64 or int64) and rounded once to the accumulator type,
and each thread's D fragment is written where its C fragment was read.

Shapes: f64 m8n8k4; f16 m16n8k8 and m16n8k16 (f16 or f32 accumulator); s8/u8 m8n8k16,
m16n8k16 and m16n8k32; s4/u4 (two to a byte, element 0 in the low nibble) m8n8k32,
m16n8k32 and m16n8k64; layouts row.col. Others are :class:`Unsupported`, as is an mma
that not every thread of a full warp executes (``mma.sync.aligned`` needs all 32).
"""
from __future__ import annotations

import numpy as np

from tirc.ir import ptx_ops
from tirc.ir.expr import Call
from tirc.testing.evaluate import Unsupported
from tirc.testing.simt_memory import SparseMemory

_NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "s8": np.int8, "u8": np.uint8,
       "s32": np.int32}


def _a16(i, g, t):  # f16 A of m16n8k16: pairs, rows g and g + 8, columns 0..7 then 8..15
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def _c16(i, g, t):  # a 16 x 8 accumulator: rows g and g + 8
    return g + 8 * (i >> 1), 2 * t + (i & 1)


# (shape, A type) -> (M, N, K), and (row, col) of element i of lane (g, t) in A, B, C
_LAYOUTS = {
    ("m8n8k4", "f64"): ((8, 8, 4), lambda i, g, t: (g, t), lambda i, g, t: (t, g),
                        lambda i, g, t: (g, 2 * t + i)),
    ("m16n8k8", "f16"): ((16, 8, 8), lambda i, g, t: (g + 8 * (i >> 1), 2 * t + (i & 1)),
                         lambda i, g, t: (2 * t + i, g), _c16),
    ("m16n8k16", "f16"): ((16, 8, 16), _a16, lambda i, g, t: (2 * t + (i & 1) + 8 * (i >> 1), g), _c16),
    ("m8n8k16", "s8"): ((8, 8, 16), lambda i, g, t: (g, 4 * t + i), lambda i, g, t: (4 * t + i, g),
                        lambda i, g, t: (g, 2 * t + i)),
    ("m16n8k16", "s8"): ((16, 8, 16), lambda i, g, t: (g + 8 * (i >> 2), 4 * t + (i & 3)),
                         lambda i, g, t: (4 * t + i, g), _c16),
    ("m16n8k32", "s8"): ((16, 8, 32), lambda i, g, t: (g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)),
                         lambda i, g, t: (4 * t + (i & 3) + 16 * (i >> 2), g), _c16),
    ("m8n8k32", "s4"): ((8, 8, 32), lambda i, g, t: (g, 8 * t + i), lambda i, g, t: (8 * t + i, g),
                        lambda i, g, t: (g, 2 * t + i)),
    ("m16n8k32", "s4"): ((16, 8, 32), lambda i, g, t: (g + 8 * (i >> 3), 8 * t + (i & 7)),
                         lambda i, g, t: (8 * t + i, g), _c16),
    ("m16n8k64", "s4"): ((16, 8, 64), lambda i, g, t: (g + 8 * ((i >> 3) & 1), 8 * t + (i & 7) + 32 * (i >> 4)),
                         lambda i, g, t: (8 * t + (i & 7) + 32 * (i >> 3), g), _c16),
}
_NIBBLES = {"s4": True, "u4": False}  # packed 4-bit multiplicands: signed?


def _nibbles_at(k, operand: "ptx_ops.Operand", ptx: str, count: int) -> np.ndarray:
    """The ``count`` packed 4-bit elements of each thread's fragment (threads x count),
    element ``i`` in bits ``4 * (i % 2)`` of byte ``i // 2`` (little-endian registers)."""
    pos, raw = _fragment_at(k, operand, "u8", count // 2)
    b = raw[pos].astype(np.int64)
    v = np.empty((k.n, count), np.int64)
    v[:, 0::2], v[:, 1::2] = b & 15, b >> 4
    return np.where(v >= 8, v - 16, v) if _NIBBLES[ptx] else v


def _fragment_at(k, operand: "ptx_ops.Operand", ptx: str, count: int):
    """The flat element positions (threads x ``count``) of an operand's fragment in its
    memory, and that memory as an array of the operand's type."""
    ptr = k.expr(operand.pointer)
    mem = getattr(ptr, "mem", None)
    if mem is None or isinstance(mem, SparseMemory):
        raise Unsupported("an mma operand that is not a buffer of the kernel")
    t = _NP[ptx]
    size = np.dtype(t).itemsize
    off = np.broadcast_to(np.asarray(k.expr(operand.offset), np.int64), (k.n,))
    byte = ptr.byte + off * ptx_ops.elem_bytes(operand.pointer)
    if np.any(byte % size):
        raise Unsupported("a misaligned mma fragment")
    base = np.broadcast_to(np.asarray(mem.lane_base(size), np.int64), (k.n,))
    pos = (base + byte // size)[:, None] + np.arange(count)
    return pos, mem.typed(t)


def mma(k, call: Call) -> None:
    d = ptx_ops.decode(call)
    ta, tb, tc = d.types
    key = (d.shape, {"u8": "s8", "u4": "s4"}.get(ta, ta))
    if key not in _LAYOUTS or d.layouts != ("row", "col") or d.saturate:
        raise Unsupported(f"mma {d.instruction()} in the SIMT interpreter")
    if k.T % 32 or not k.mask.all():
        raise Unsupported(f"T.{call.op} run by part of a warp")
    (m, n, kk), fa, fb, fc = _LAYOUTS[key]
    warps, lane = k.n // 32, np.arange(32)
    g, t = lane >> 2, lane & 3
    exact = np.int64 if tc == "s32" else np.float64

    def gather(operand, ptx, rows, cols, where):
        count = rows * cols // 32
        if ptx in _NIBBLES:
            pos, mem = None, None
            vals = _nibbles_at(k, operand, ptx, count).reshape(warps, 32, count)
        else:
            pos, mem = _fragment_at(k, operand, ptx, count)
            vals = mem[pos].astype(exact).reshape(warps, 32, count)
        out = np.zeros((warps, rows, cols), exact)
        for i in range(count):
            r, c = where(i, g, t)
            out[:, r, c] = vals[:, :, i]
        return out, pos, mem

    a, _, _ = gather(d.a, ta, m, kk, fa)
    b, _, _ = gather(d.b, tb, kk, n, fb)
    c, pos, mem = gather(d.c, tc, m, n, fc)
    result = a @ b + c
    count = m * n // 32
    out = np.empty((warps, 32, count), exact)
    for i in range(count):
        r, col = fc(i, g, t)
        out[:, :, i] = result[:, r, col]
    flat = out.reshape(k.n, count)
    if tc == "s32":
        flat = (flat & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    mem[pos] = flat.astype(_NP[tc])
