"""Warp-level TIR intrinsics on NVPTX, as TVM's CUDA code generator maps them:

* ``T.tvm_warp_activemask()`` is ``activemask.b32`` (``llvm.nvvm.activemask``);
* ``T.tvm_warp_shuffle(mask, value, lane, width, warp_size)`` and its ``_up``,
  ``_down`` and ``_xor`` forms (``lane`` is then the delta or the lane mask) are
  ``shfl.sync.idx/up/down/bfly`` (``__shfl_sync``, ``__shfl_up_sync``, ...): the third
  PTX operand packs the segment mask ``(warp_size - width) << 8`` with the clamp, 31
  except for ``up``, whose clamp is 0;
* ``T.tvm_storage_sync("warp")`` is ``bar.warp.sync`` over the full warp
  (``__syncwarp()``): since Volta a warp's threads need not run in lockstep.

A shuffle moves 32 bits. ``float32`` and 32-bit integers go as they are; narrower
scalars are widened to 32 bits and narrowed back; 64-bit scalars go as two 32-bit
halves with the same mask and lane; vectors are refused with a diagnostic.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.diagnostics import Diagnostic
from tirc.ir.expr import Call

_MODES = {"tvm_warp_shuffle": ("idx", 31), "tvm_warp_shuffle_up": ("up", 0),
          "tvm_warp_shuffle_down": ("down", 31), "tvm_warp_shuffle_xor": ("bfly", 31)}
FULL_MASK = ir.Constant(lt.I32, 0xFFFFFFFF)


def lower_warp_call(fl, call: Call) -> ir.Value | None:
    """The value of a warp intrinsic ``call``, or None when ``call`` is none of them."""
    if call.op == "tvm_warp_activemask":
        fn = fl.module.declare("llvm.nvvm.activemask", ir.FunctionType(lt.I32, []))
        return fl.b.call(fn, [])
    if call.op in _MODES:
        return _shuffle(fl, call, *_MODES[call.op])
    return None


def sync_warp(fl) -> None:
    fn = fl.module.declare("llvm.nvvm.bar.warp.sync", ir.FunctionType(ir.VoidType(), [lt.I32]))
    fl.b.call(fn, [FULL_MASK])


def _i32(fl, e) -> ir.Value:
    return fl.int_cast(fl.expr(e), lt.I32, signed=e.dtype.is_int)


def _shuffle(fl, call: Call, mode: str, clamp: int) -> ir.Value:
    mask_e, value_e, lane_e, width_e, warp_e = call.args
    d = value_e.dtype
    if d.lanes > 1:
        raise Diagnostic(f"T.{call.op} of a vector ({d}) is not supported on the GPU: "
                         "shuffle each lane", call.span)
    mask, lane = _i32(fl, mask_e), _i32(fl, lane_e)
    segment = fl.b.shl(fl.b.sub(_i32(fl, warp_e), _i32(fl, width_e)), ir.Constant(lt.I32, 8))
    packed = fl.b.or_(segment, ir.Constant(lt.I32, clamp))
    value = fl.expr(value_e)

    def shfl(v32: ir.Value, kind: str) -> ir.Value:
        t = ir.FloatType() if kind == "f32" else lt.I32
        fn = fl.module.declare(f"llvm.nvvm.shfl.sync.{mode}.{kind}",
                               ir.FunctionType(t, [lt.I32, t, lt.I32, lt.I32]))
        return fl.b.call(fn, [mask, v32, lane, packed])

    t = value.type
    if isinstance(t, ir.FloatType):
        return shfl(value, "f32")
    bits = d.bits
    as_int = value if isinstance(t, ir.IntType) else fl.b.bitcast(value, ir.IntType(bits))
    if bits == 64:
        halves = fl.b.bitcast(as_int, ir.VectorType(lt.I32, 2))
        out = ir.Constant(ir.VectorType(lt.I32, 2), ir.Undefined)
        for i in range(2):
            idx = ir.Constant(lt.I32, i)
            out = fl.b.insert_element(out, shfl(fl.b.extract_element(halves, idx), "i32"), idx)
        moved = fl.b.bitcast(out, ir.IntType(64))
    elif bits <= 32:
        moved = fl.int_cast(shfl(fl.int_cast(as_int, lt.I32, signed=False), "i32"),
                            ir.IntType(t.width if isinstance(t, ir.IntType) else bits))
    else:
        raise Diagnostic(f"T.{call.op} of {d} is not supported on the GPU", call.span)
    return moved if isinstance(t, ir.IntType) else fl.b.bitcast(moved, t)
