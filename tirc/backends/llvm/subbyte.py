"""Loads and stores of packed sub-byte integer buffers (int1, int2, int4, uint2, uint4),
as DLPack lays them out: ``packs`` elements to a byte, element ``i`` of a byte in bits
``[i * bits, (i + 1) * bits)``, no padding (``DataType.packs``).

- An access of whole bytes (a contiguous vector whose ``lanes * bits`` is a multiple of
  8, at an element index provably a multiple of ``packs``; what TVM's mma modules do,
  ``MultiA[0] = A[T.Ramp(tid * 8, 1, 8)]``) is one load or store of an ``lanes * bits``
  integer, bitcast to ``<lanes x iN>`` (little-endian: lane 0 in the low bits).
- A scalar load reads its byte and shifts; any other vector load goes lane by lane.
- A store of part of a byte (a scalar, or a vector not on byte boundaries) is a
  read-modify-write of the byte. Another thread may write the other elements of the
  same byte, so it is two atomic byte operations (``and`` to clear the element's bits,
  ``or`` to set them), which keep the neighbours' writes; only a GPU thread's ``local``
  memory, which no other thread sees, takes a plain load and store. On the CPU even
  ``local`` buffers may be shared by the iterations of a ``T.parallel`` loop. A GPU
  target has no byte atomics (PTX's ``atom`` has no 8-bit forms): there a partial-byte
  store outside ``local`` memory is a located error instead of a race.
"""
from __future__ import annotations

import math

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.diagnostics import Diagnostic
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import BinOp, Cast, IntImm, PrimExpr, Ramp, Var

_MAX_LET_DEPTH = 64


def multiple_of(e: PrimExpr, k: int, lets: dict[int, PrimExpr]) -> bool:
    """``e`` is provably a multiple of ``k`` (let-bound variables seen through)."""
    coeff, base = _residue(e, lets, 0)
    return (coeff % k == 0 if coeff else True) and base % k == 0


def _residue(e: PrimExpr, lets: dict[int, PrimExpr], depth: int) -> tuple[int, int]:
    """``(coeff, base)``: every value of ``e`` is ``coeff * n + base`` (coeff 0: constant)."""
    if isinstance(e, IntImm):
        return (0, e.value)
    if isinstance(e, Var) and id(e) in lets and depth < _MAX_LET_DEPTH:
        return _residue(lets[id(e)], lets, depth + 1)
    if isinstance(e, Cast) and e.value.dtype.is_integer and e.dtype.bits >= e.value.dtype.bits:
        return _residue(e.value, lets, depth)
    if isinstance(e, BinOp) and e.op in ("add", "sub", "mul"):
        (ca, ba), (cb, bb) = _residue(e.a, lets, depth), _residue(e.b, lets, depth)
        if e.op == "mul":
            if ca == 0 or cb == 0:
                return (abs(ca * bb) or abs(cb * ba), ba * bb)
            return (math.gcd(ca * cb, ca * bb, cb * ba), ba * bb)
        return (math.gcd(ca, cb), ba + bb if e.op == "add" else ba - bb)
    return (1, 0)


def _scope(buf: Buffer) -> str:
    return buf.scope or "global"


class SubByteAccess:
    """One access of a sub-byte buffer by ``fl`` (a FunctionLowering)."""

    def __init__(self, fl, buf: Buffer, index: PrimExpr, dtype: DataType, span):
        self.fl, self.buf, self.index, self.dtype, self.span = fl, buf, index, dtype, span
        self.elem = buf.dtype.element()
        self.bits, self.packs = self.elem.bits, self.elem.packs
        self.lane_t = ir.IntType(self.bits)
        if dtype.scalable or index.dtype.scalable:
            raise Diagnostic(
                f"a scalable vector access ({dtype}) of sub-byte buffer '{buf.name}' "
                f"({buf.dtype}) is not supported: its {dtype.lanes} x vscale lanes need not "
                f"fill whole bytes ({self.packs} elements to a byte), and a part of a byte "
                "would have to be read, modified and written lane by lane", span)

    # -- addresses ------------------------------------------------------------------
    def position(self, index: PrimExpr) -> PrimExpr:
        """The scalar element number of buffer element ``index`` (with the offset)."""
        eo = self.fl.elem_offset(self.buf)
        pos = index if eo is None else BinOp("add", _i64(eo), _i64(index), DataType("int64"))
        if self.buf.dtype.lanes > 1:
            pos = BinOp("mul", _i64(pos), IntImm(DataType("int64"), self.buf.dtype.lanes),
                        DataType("int64"))
        return pos

    def whole_bytes(self) -> PrimExpr | None:
        """The first element of an access of whole bytes, or None if it is not one."""
        idx, lanes = self.index, self.dtype.lanes
        if isinstance(idx, Ramp):
            if not (isinstance(idx.stride, IntImm) and idx.stride.value == 1):
                return None
            idx = idx.base
        elif idx.dtype.lanes > 1:
            return None
        if lanes * self.bits % 8:
            return None
        pos = self.position(idx)
        return pos if multiple_of(pos, self.packs, self.fl.let_exprs) else None

    def align(self, start: PrimExpr, nbytes: int) -> int:
        """A known alignment of a whole-byte access of ``nbytes`` from element ``start``:
        only our own allocations' base alignment is trusted (as ``alignment`` does)."""
        coeff, base = _residue(start, self.fl.let_exprs, 0)
        step = math.gcd(coeff, base) // self.packs  # the byte index is a multiple of it
        known = math.gcd(self.fl.data_align.get(id(self.buf.data), 1), nbytes)
        return lt.access_align(math.gcd(known, step) if step else known)

    def byte_pointer(self, pos: ir.Value) -> ir.Value:
        """The address of the byte holding element ``pos``."""
        b = self.fl.b
        log = self.packs.bit_length() - 1
        byte = b.lshr(pos, ir.Constant(lt.I64, log)) if log else pos
        return b.gep(self.fl.expr(self.buf.data), [byte], source_etype=lt.I8)

    def byte_address(self, pos: ir.Value) -> tuple[ir.Value, ir.Value]:
        """The address of the byte holding element ``pos`` and the element's bit shift."""
        b = self.fl.b
        pos = self.fl.int_cast(pos, lt.I64)
        lane = b.and_(pos, ir.Constant(lt.I64, self.packs - 1))
        shift = b.trunc(b.mul(lane, ir.Constant(lt.I64, self.bits)), lt.I8)
        return self.byte_pointer(pos), shift

    def lane_positions(self) -> list[ir.Value]:
        """The element numbers of every lane of the access."""
        b, fl = self.fl.b, self.fl
        if self.index.dtype.lanes > 1:
            idxs = fl.lanes_of(fl.expr(self.index))
        else:
            idxs = [fl.expr(self.index)]
        out = []
        per = self.buf.dtype.lanes
        eo = fl.elem_offset(self.buf)
        off = fl.int_cast(fl.expr(eo), lt.I64) if eo is not None else None
        for i in idxs:
            i = fl.int_cast(i, lt.I64)
            if off is not None:
                i = b.add(off, i)
            if per > 1:
                i = b.mul(i, ir.Constant(lt.I64, per))
            out.extend(b.add(i, ir.Constant(lt.I64, k)) if k else i for k in range(per))
        return out

    # -- loads ----------------------------------------------------------------------
    def load(self) -> ir.Value:
        fl, b = self.fl, self.fl.b
        start = self.whole_bytes()
        if start is not None:
            ptr = self.byte_pointer(fl.int_cast(fl.expr(start), lt.I64))
            word = ir.IntType(self.dtype.lanes * self.bits)
            align = self.align(start, word.width // 8)
            v = fl.note_access(b.load(ptr, typ=word, align=align), self.buf)
            return b.bitcast(v, lt.vector_of(self.lane_t, self.dtype))
        lanes = []
        for pos in self.lane_positions():
            ptr, shift = self.byte_address(pos)
            byte = fl.note_access(b.load(ptr, typ=lt.I8, align=1), self.buf)
            lanes.append(b.trunc(b.lshr(byte, shift), self.lane_t))
        return fl.pack(lanes)

    # -- stores ---------------------------------------------------------------------
    def store(self, v: ir.Value) -> None:
        fl, b = self.fl, self.fl.b
        start = self.whole_bytes()
        if start is not None and self.dtype.lanes > 1:
            ptr = self.byte_pointer(fl.int_cast(fl.expr(start), lt.I64))
            word = ir.IntType(self.dtype.lanes * self.bits)
            align = self.align(start, word.width // 8)
            fl.note_access(b.store(b.bitcast(v, word), ptr, align=align), self.buf)
            return
        private = _scope(self.buf).startswith("local") and fl.ctx.private_local
        if not private and not fl.ctx.byte_atomics:
            raise Diagnostic(
                f"a store of part of a byte of sub-byte buffer '{self.buf.name}' "
                f"({self.buf.dtype}, scope '{_scope(self.buf)}') is not supported on this "
                f"target: other threads may write the other {self.packs - 1} elements of the "
                f"byte and it has no byte atomics; store whole bytes (a vector of a multiple of "
                f"{self.packs} lanes from an index provably a multiple of {self.packs}) or go "
                "through a 'local' buffer", self.span)
        positions = self.lane_positions()
        values = fl.lanes_of(v) if lt.is_vector(v.type) else [v] * len(positions)
        for pos, x in zip(positions, values):
            ptr, shift = self.byte_address(pos)
            bits = b.shl(b.zext(x, lt.I8), shift)
            keep = b.xor(b.shl(ir.Constant(lt.I8, (1 << self.bits) - 1), shift),
                         ir.Constant(lt.I8, 0xFF))
            if private:
                old = fl.note_access(b.load(ptr, typ=lt.I8, align=1), self.buf)
                fl.note_access(b.store(b.or_(b.and_(old, keep), bits), ptr, align=1), self.buf)
            else:
                fl.note_access(b.atomic_rmw("and", ptr, keep, "monotonic"), self.buf)
                fl.note_access(b.atomic_rmw("or", ptr, bits, "monotonic"), self.buf)


def _i64(e: PrimExpr) -> PrimExpr:
    return e if e.dtype.bits == 64 else Cast(DataType("int64"), e)


def allocation_bytes(d: DataType, count: int) -> int:
    """Bytes of ``count`` elements of sub-byte ``d``, packed (DLPack's size)."""
    return (count * d.bits * d.lanes + 7) // 8
