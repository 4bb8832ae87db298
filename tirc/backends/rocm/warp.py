"""Wavefront-level TIR intrinsics on AMDGPU, as TVM's ROCm intrinsic rules lower them:

* ``T.tvm_warp_activemask()``: the wavefront's active lanes (``llvm.amdgcn.ballot`` of
  true), its low 32 bits (the intrinsic is ``uint32``; TVM's rule gives 0). The shuffles
  below ignore the mask: a wavefront runs in lockstep;
* ``T.tvm_warp_shuffle(mask, value, lane, width, warp_size)`` and its ``_up``, ``_down``
  and ``_xor`` forms are ``ds_bpermute`` (``llvm.amdgcn.ds.bpermute``, which takes the
  source lane's byte address, ``4 * lane``). The work-item's own lane is ``mbcnt_hi(-1,
  mbcnt_lo(-1, 0))``; the source lane, within the segment of ``width`` lanes the
  work-item is in: ``lane + (self & ~(width - 1))`` (idx); ``self - delta``, or ``self``
  when that leaves the segment (up); ``self + delta``, or ``self`` when ``(self &
  (width - 1)) + delta >= width`` (down); ``self ^ lane_mask`` (xor, which TVM's rule
  does not have).

``ds_bpermute`` moves 32 bits. 32-bit values go as they are; narrower scalars are
widened to 32 bits and narrowed back; 64-bit scalars go as two 32-bit halves from the
same lane; vectors are refused with a diagnostic.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.diagnostics import Diagnostic
from tirc.ir.expr import Call

_MODES = {"tvm_warp_shuffle": "idx", "tvm_warp_shuffle_up": "up",
          "tvm_warp_shuffle_down": "down", "tvm_warp_shuffle_xor": "xor"}


def lower_warp_call(fl, call: Call) -> ir.Value | None:
    """The value of a wavefront intrinsic ``call``, or None when ``call`` is none of them."""
    if call.op == "tvm_warp_activemask":
        wave = int(fl.ctx.target.get("thread_warp_size"))
        t = ir.IntType(wave)
        fn = fl.module.declare(f"llvm.amdgcn.ballot.i{wave}", ir.FunctionType(t, [lt.I1]))
        mask = fl.b.call(fn, [ir.Constant(lt.I1, 1)])
        return fl.b.trunc(mask, lt.I32) if wave == 64 else mask
    if call.op in _MODES:
        return _shuffle(fl, call, _MODES[call.op])
    return None


def _i32(fl, e) -> ir.Value:
    return fl.int_cast(fl.expr(e), lt.I32, signed=e.dtype.is_int)


def lane_id(fl) -> ir.Value:
    m1 = ir.Constant(lt.I32, -1)
    lo = fl.b.call(fl.module.declare("llvm.amdgcn.mbcnt.lo", ir.FunctionType(lt.I32, [lt.I32, lt.I32])),
                   [m1, ir.Constant(lt.I32, 0)])
    return fl.b.call(fl.module.declare("llvm.amdgcn.mbcnt.hi", ir.FunctionType(lt.I32, [lt.I32, lt.I32])),
                     [m1, lo], name="lane")


def _source_lane(fl, mode: str, me: ir.Value, lane: ir.Value, width: ir.Value) -> ir.Value:
    b = fl.b
    one = ir.Constant(lt.I32, 1)
    low = b.sub(width, one)
    if mode == "idx":
        return b.add(lane, b.and_(me, b.not_(low)))
    if mode == "xor":
        return b.xor(me, lane)
    if mode == "up":
        src = b.sub(me, lane)
        return b.select(b.icmp_signed("<", src, b.and_(me, b.not_(low))), me, src)
    src = b.add(me, lane)
    return b.select(b.icmp_signed(">=", b.add(b.and_(me, low), lane), width), me, src)


def _shuffle(fl, call: Call, mode: str) -> ir.Value:
    _, value_e, lane_e, width_e, _ = call.args
    d = value_e.dtype
    if d.lanes > 1:
        raise Diagnostic(f"T.{call.op} of a vector ({d}) is not supported on target rocm: "
                         "shuffle each lane", call.span)
    src = _source_lane(fl, mode, lane_id(fl), _i32(fl, lane_e), _i32(fl, width_e))
    address = fl.b.shl(src, ir.Constant(lt.I32, 2))
    permute = fl.module.declare("llvm.amdgcn.ds.bpermute",
                                ir.FunctionType(lt.I32, [lt.I32, lt.I32]))
    value = fl.expr(value_e)
    t = value.type
    bits = d.bits
    as_int = value if isinstance(t, ir.IntType) else fl.b.bitcast(value, ir.IntType(bits))
    if bits == 64:
        halves = fl.b.bitcast(as_int, ir.VectorType(lt.I32, 2))
        out = ir.Constant(ir.VectorType(lt.I32, 2), ir.Undefined)
        for i in range(2):
            idx = ir.Constant(lt.I32, i)
            moved = fl.b.call(permute, [address, fl.b.extract_element(halves, idx)])
            out = fl.b.insert_element(out, moved, idx)
        moved = fl.b.bitcast(out, ir.IntType(64))
    elif bits <= 32:
        moved = fl.b.call(permute, [address, fl.int_cast(as_int, lt.I32, signed=False)])
        moved = fl.int_cast(moved, ir.IntType(t.width if isinstance(t, ir.IntType) else bits))
    else:
        raise Diagnostic(f"T.{call.op} of {d} is not supported on target rocm", call.span)
    return moved if isinstance(t, ir.IntType) else fl.b.bitcast(moved, t)
