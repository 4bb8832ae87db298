"""Memory of a SIMT run (:mod:`tirc.testing.simt`) and its data-race detector.

* Global memory is the caller's arrays, read and written in place.
* Shared memory (``shared``, ``shared.dyn``) is one copy per thread block.
* Local memory (``local``, and ``global``-scope allocations inside a kernel, which the
  NVPTX backend makes per-thread ``alloca``\\ s too) is one copy per thread; an
  allocation too large to copy for every thread (tirc does not compact buffers yet:
  a 16384-element ``local`` buffer of which each thread touches 16 elements is common)
  is kept sparse, holding only the elements written.

Memory is bytes (a ``(copies, bytes)`` array), so buffers of other dtypes declared over
an allocation (the merged ``buf_dyn_shmem``) reinterpret it as the GPU does. Fresh
shared and local memory has every bit set: NaN in floats, -1 in signed integers, so a
read of memory never written shows in the results.

Race detection (global and shared memory, ``check_races``): every element keeps its
last writer (a global thread id, or "several threads, same value") with the barrier
counts of the writer's block and warp at the time, and for shared memory its last
reader likewise ("several readers" when more than one). Two accesses by different
threads are ordered when both are in one block and that block passed a barrier
(``T.tvm_storage_sync("shared")``) in between, or both are in one warp and the warp
passed a ``T.tvm_storage_sync("warp")``; accesses by different blocks never are.
Unordered, these are errors: a write of a different value over another thread's write,
a read of another thread's write, and (shared memory) a write over an element another
thread read. Elements are tracked by their first byte: accesses of different sizes that
overlap without sharing a first byte are not compared.
"""
from __future__ import annotations

import numpy as np

from tirc.testing.evaluate import Undefined, Unsupported

FILL = 0xFF
NONE, MANY = -1, -2  # shadow markers: no access / several threads


class KernelFault(Undefined):
    """The kernel has undefined behaviour on the GPU: a bug in the generated code."""


class OutOfBounds(KernelFault):
    pass


class DataRace(KernelFault):
    pass


def _pad(nbytes: int) -> int:
    return max(8, (nbytes + 7) // 8 * 8)


class Memory:
    """``rows`` copies of ``nbytes`` bytes; thread ``i`` of the run uses copy ``row_of[i]``
    (a scalar 0 for global memory)."""

    __slots__ = ("name", "scope", "raw", "nbytes", "row_of", "_typed", "shadow")

    def __init__(self, name: str, scope: str, raw: np.ndarray, row_of):
        self.name, self.scope, self.raw = name, scope, raw
        self.nbytes = raw.shape[1]
        self.row_of = row_of
        self._typed: dict = {}
        self.shadow: Shadow | None = None

    @classmethod
    def of_array(cls, name: str, array: np.ndarray) -> "Memory":
        flat = array.reshape(-1)
        if not flat.flags.c_contiguous:
            raise ValueError(f"{name}: arrays must be C-contiguous")
        return cls(name, "global", flat.view(np.uint8).reshape(1, -1), 0)

    @classmethod
    def fresh(cls, name: str, scope: str, rows: int, nbytes: int, row_of) -> "Memory":
        return cls(name, scope, np.full((rows, _pad(nbytes)), FILL, np.uint8), row_of)

    def typed(self, t) -> np.ndarray:
        """The memory as one flat array of ``t``."""
        a = self._typed.get(t)
        if a is None:
            if self.nbytes % np.dtype(t).itemsize:
                raise Unsupported(f"{self.name}: {self.nbytes} bytes viewed as {np.dtype(t)}")
            a = self._typed[t] = self.raw.reshape(-1).view(t)
        return a

    def row_len(self, itemsize: int) -> int:
        return self.nbytes // itemsize

    def lane_base(self, itemsize: int):
        """The flat index of each thread's copy, in elements of ``itemsize`` bytes."""
        return self.row_of * self.row_len(itemsize) if not isinstance(self.row_of, int) else 0


class SparseMemory:
    """Per-thread memory holding only the elements written (keys ``thread * count +
    element``, sorted); an element never written reads as :data:`FILL` bits."""

    __slots__ = ("name", "scope", "t", "count", "keys", "vals", "fill")

    def __init__(self, name: str, t, count: int):
        self.name, self.scope, self.t, self.count = name, "local", t, count
        self.keys = np.empty(0, np.int64)
        self.vals = np.empty(0, t)
        self.fill = np.frombuffer(bytes([FILL]) * np.dtype(t).itemsize, dtype=t)[0]

    def gather(self, keys: np.ndarray) -> np.ndarray:
        if not len(self.keys):
            return np.full(keys.shape, self.fill, self.t)
        idx = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(self.keys[idx] == keys, self.vals[idx], self.fill)

    def scatter(self, keys: np.ndarray, vals: np.ndarray) -> None:
        if len(self.keys):
            idx = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
            found = self.keys[idx] == keys
            self.vals[idx[found]] = vals[found]
            keys, vals = keys[~found], vals[~found]
        if len(keys):
            # the last write of a key wins, as in a dense scatter
            uniq, first = np.unique(keys[::-1], return_index=True)
            keys = np.concatenate([self.keys, uniq])
            vals = np.concatenate([self.vals, vals[::-1][first]])
            order = np.argsort(keys, kind="stable")
            self.keys, self.vals = keys[order], vals[order]


class View:
    """A buffer over memory: dtype ``t`` (``vec`` lanes per buffer element), its first
    element at ``base`` (elements of ``t`` from the start of a copy), shape and strides."""

    __slots__ = ("name", "mem", "t", "itemsize", "base", "shape", "strides", "size", "vec", "sub")

    def __init__(self, name, mem, t, base: int, shape: list[int], strides: list[int], vec: int,
                 sub=None):
        self.name, self.mem, self.t = name, mem, t
        self.sub = sub  # the element dtype of packed sub-byte elements (base counts them)
        self.itemsize = np.dtype(t).itemsize
        self.base, self.shape, self.strides, self.vec = base, shape, strides, vec
        n = 1
        for x in shape:
            n *= x
        self.size = n


class Sync:
    """Barrier counts of every block and warp of the grid, and what a thread id means:
    ``T`` threads per block, warps of 32 threads numbered block by block."""

    def __init__(self, n_blocks: int, threads_per_block: int):
        self.T = threads_per_block
        self.W = (threads_per_block + 31) // 32
        self.bar = np.zeros(n_blocks, np.int32)
        self.wbar = np.zeros(n_blocks * self.W, np.int32)

    def warp_of(self, t):
        return (t // self.T) * self.W + (t % self.T) // 32

    def ordered(self, other, rec_bar, rec_wbar, me: "Threads"):
        """Whether accesses by threads ``other`` (barrier counts ``rec_*`` then) happened
        before the accesses of threads ``me`` now, by a barrier."""
        same_block = (other // self.T) == me.block
        return same_block & ((self.bar[me.block] > rec_bar)
                             | ((self.warp_of(other) == me.warp) & (self.wbar[me.warp] > rec_wbar)))


class Threads:
    """Global thread ids of the threads making some accesses, with their blocks and warps."""

    __slots__ = ("id", "block", "warp")

    def __init__(self, id, block, warp):
        self.id, self.block, self.warp = id, block, warp

    def __getitem__(self, i) -> "Threads":
        return Threads(self.id[i], self.block[i], self.warp[i])


class Shadow:
    """Last writer and (shared memory) last reader of every byte, with barrier counts."""

    __slots__ = ("writer", "w_bar", "w_wbar", "reader", "r_bar", "r_wbar", "r_warp")

    def __init__(self, nbytes: int, reads: bool):
        self.writer = np.full(nbytes, NONE, np.int32)
        self.w_bar = np.zeros(nbytes, np.int32)
        self.w_wbar = np.zeros(nbytes, np.int32)
        self.reader = np.full(nbytes, NONE, np.int32) if reads else None
        self.r_bar = np.zeros(nbytes, np.int32) if reads else None
        self.r_wbar = np.zeros(nbytes, np.int32) if reads else None
        # the warp of all the readers when there are several ("MANY") in one warp, else -1
        self.r_warp = np.full(nbytes, NONE, np.int32) if reads else None


def shadow_of(mem: Memory) -> Shadow:
    if mem.shadow is None:
        mem.shadow = Shadow(mem.raw.size, reads=mem.scope != "global")
    return mem.shadow


def _bits(values: np.ndarray) -> np.ndarray:
    """Values as unsigned integers of their size, for bitwise comparison (NaN == NaN)."""
    v = np.ascontiguousarray(values)
    return v.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[v.dtype.itemsize])


def check_load(mem: Memory, sync: Sync, byte: np.ndarray, me: Threads, rep) -> None:
    """A read of bytes ``byte`` by threads ``me`` (flat, active lanes only)."""
    sh = mem.shadow
    if sh is None and mem.scope == "global":
        return
    sh = shadow_of(mem)
    w = sh.writer[byte]
    other = np.flatnonzero((w >= 0) & (w != me.id))
    if len(other):
        b = byte[other]
        bad = ~sync.ordered(w[other], sh.w_bar[b], sh.w_wbar[b], me[other])
        if bad.any():
            i = int(other[np.flatnonzero(bad)[0]])
            raise DataRace(rep.message(int(me.id[i]), int(byte[i]), f"reads a value "
                                       f"{rep.who(int(w[i]))} wrote with no barrier in between"))
    if sh.reader is None:
        return
    # the readers since the last barrier that orders them before now: this one, and the
    # earlier ones unless a barrier came in between
    r, r_warp = sh.reader[byte], sh.r_warp[byte]
    keep = _unordered_reads(sh, sync, byte, r, me)
    warp = np.where(keep & (r >= 0), sync.warp_of(np.maximum(r, 0)), np.where(keep, r_warp, me.warp))
    sh.reader[byte] = me.id
    sh.r_warp[byte] = me.warp
    many = (sh.reader[byte] != me.id) | (keep & (r != me.id))
    mixed = (sh.r_warp[byte] != me.warp) | (warp != me.warp)
    sh.r_bar[byte] = sync.bar[me.block]
    sh.r_wbar[byte] = sync.wbar[me.warp]
    if many.any():
        sh.reader[byte[many]] = MANY
    if mixed.any():
        sh.r_warp[byte[mixed]] = NONE


def _unordered_reads(sh: Shadow, sync: Sync, byte, r, me: Threads):
    """Whether the reads recorded at ``byte`` (reader ``r``) are not ordered before an
    access by ``me`` now."""
    out = (r == MANY) & (sync.bar[me.block] == sh.r_bar[byte]) \
        & ~((sh.r_warp[byte] == me.warp) & (sync.wbar[me.warp] > sh.r_wbar[byte]))
    other = np.flatnonzero(r >= 0)
    if len(other):
        b = byte[other]
        out[other] = ~sync.ordered(r[other], sh.r_bar[b], sh.r_wbar[b], me[other])
    return out


def check_store(mem: Memory, sync: Sync, byte: np.ndarray, me: Threads, old: np.ndarray,
                new: np.ndarray, rep) -> None:
    """A write of ``new`` over ``old`` at bytes ``byte`` by threads ``me`` (flat, active
    lanes only); records the writers."""
    sh = shadow_of(mem)
    w = sh.writer[byte]
    other = np.flatnonzero((w >= 0) & (w != me.id))
    if len(other):
        b = byte[other]
        bad = ~sync.ordered(w[other], sh.w_bar[b], sh.w_wbar[b], me[other]) \
            & (_bits(old[other]) != _bits(new[other]))
        if bad.any():
            i = int(other[np.flatnonzero(bad)[0]])
            raise DataRace(rep.message(int(me.id[i]), int(byte[i]), "overwrites with a different "
                                       f"value what {rep.who(int(w[i]))} wrote, with no barrier "
                                       "in between"))
    if sh.reader is not None:
        r = sh.reader[byte]
        bad = _unordered_reads(sh, sync, byte, r, me) & (r != me.id)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            whom = "other threads" if r[i] == MANY else rep.who(int(r[i]))
            raise DataRace(rep.message(int(me.id[i]), int(byte[i]), f"writes what {whom} read, "
                                       "with no barrier in between"))
    # several threads writing one element in this statement: the same value is benign
    k = np.arange(len(byte), dtype=np.int32)
    sh.writer[byte] = k
    got = sh.writer[byte]
    dup = got != k
    many = None
    if dup.any():
        differ = dup & (_bits(new[got]) != _bits(new))
        if differ.any():
            i = int(np.flatnonzero(differ)[0])
            raise DataRace(rep.message(int(me.id[i]), int(byte[i]), f"and "
                                       f"{rep.who(int(me.id[got[i]]))} write different values "
                                       "in the same step"))
        many = byte[dup]
    sh.writer[byte] = me.id
    if many is not None:
        sh.writer[many] = MANY
    sh.w_bar[byte] = sync.bar[me.block]
    sh.w_wbar[byte] = sync.wbar[me.warp]
