"""Vector-length-agnostic code for every LLVM target: ``T.vscale()``, lane masks and
predicated (masked) loads and stores (``tirc/frontend/masked.py`` reads them).

- ``T.vscale()`` becomes ``llvm.vscale.i32`` (or the width of its dtype). It only means
  something on a target with scalable vectors (``LLVMTargetContext.vscale_range``, from
  ``tirc.target.kinds.vscale_range``: AArch64 with +sve/+sve2/+sme, RISC-V with +v); anywhere
  else it is a located error, not code that would read a meaningless value.
- ``T.get_active_lane_mask(dtype, base, limit)`` becomes ``llvm.get.active.lane.mask``:
  lane ``i`` is on when ``base + i < limit``, unsigned and without wrapping.
- ``T.masked_load`` / ``T.masked_store`` of consecutive elements become
  ``llvm.masked.load`` / ``llvm.masked.store``: lanes that are off are neither read nor
  written, so the tail of a loop may end at the buffer's end. The intrinsics are written
  with their alignment operand, which LLVM 22 reads as the pointer's ``align`` attribute.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.diagnostics import Diagnostic
from tirc.ir.expr import BufferLoad, Call, Ramp, is_one

SCALABLE_TARGETS = "AArch64 with +sve or +sve2, RISC-V with +v"


def _vscale(fl, call: Call) -> ir.Value:
    if fl.ctx.vscale_range is None:
        mattr = ",".join(fl.ctx.target.get("mattr") or ())
        raise Diagnostic(f"T.vscale() needs a target with scalable vectors ({SCALABLE_TARGETS}); "
                         f"'{fl.ctx.triple}'{' with ' + mattr if mattr else ''} has none", call.span)
    t = fl.ty(call.dtype, call.span)
    return fl.b.call(fl.module.declare(f"llvm.vscale.{lt.mangle(t)}", ir.FunctionType(t, []), call.span), [])


def _active_lane_mask(fl, call: Call) -> ir.Value:
    base, limit = (fl.expr(a) for a in call.args)
    if base.type != limit.type:  # one width for both: the wider, sign-extended
        wide = base.type if base.type.width >= limit.type.width else limit.type
        base, limit = fl.int_cast(base, wide), fl.int_cast(limit, wide)
    t = fl.ty(call.dtype, call.span)
    fnty = ir.FunctionType(t, [base.type, base.type])
    name = f"llvm.get.active.lane.mask.{lt.mangle(t)}.{lt.mangle(base.type)}"
    return fl.b.call(fl.module.declare(name, fnty, call.span), [base, limit])


def _contiguous(fl, call: Call, access) -> tuple[ir.Value, int]:
    """The address of the first lane of a masked access, and its alignment."""
    if not isinstance(access, BufferLoad) or len(access.indices) != 1:
        raise Diagnostic(f"T.{call.op} needs an access of a flat buffer", call.span)
    index, buf = access.indices[0], access.buffer
    if not (isinstance(index, Ramp) and is_one(index.stride)
            and access.dtype.lanes == index.lanes * buf.dtype.lanes):
        raise Diagnostic(f"T.{call.op} of elements that are not consecutive (an index other "
                         "than T.Ramp(base, 1, lanes)) is not supported", call.span)
    if access.dtype.element().is_bool:
        raise Diagnostic(f"T.{call.op} of bool vectors is not supported", call.span)
    if buf.dtype.is_subbyte:  # a lane that is off may share its byte with one that is on
        raise Diagnostic(f"T.{call.op} of packed sub-byte elements (buffer '{buf.name}', "
                         f"{buf.dtype}) is not supported", call.span)
    ptr, _ = fl.buffer_pointer(buf, index.base, call.span)
    return ptr, fl.alignment(buf, index.base, lt.byte_size(access.dtype))


def _masked_load(fl, call: Call) -> ir.Value:
    access, mask = call.args
    ptr, align = _contiguous(fl, call, access)
    t = fl.ty(call.dtype, call.span)
    m = fl.expr(mask)
    fnty = ir.FunctionType(t, [ptr.type, lt.I32, m.type, t])
    fn = fl.module.declare(f"llvm.masked.load.{lt.mangle(t)}.p0", fnty, call.span)
    v = fl.b.call(fn, [ptr, ir.Constant(lt.I32, align), m, ir.Constant(t, ir.Undefined)])
    return fl.note_access(v, access.buffer)


def _masked_store(fl, call: Call) -> ir.Value:
    access, value, mask = call.args
    ptr, align = _contiguous(fl, call, access)
    v, m = fl.expr(value), fl.expr(mask)
    fnty = ir.FunctionType(ir.VoidType(), [v.type, ptr.type, lt.I32, m.type])
    fn = fl.module.declare(f"llvm.masked.store.{lt.mangle(v.type)}.p0", fnty, call.span)
    fl.note_access(fl.b.call(fn, [v, ptr, ir.Constant(lt.I32, align), m]), access.buffer)
    return ir.Constant(lt.I32, 0)


HANDLERS = {"vscale": _vscale, "get_active_lane_mask": _active_lane_mask,
            "masked_load": _masked_load, "masked_store": _masked_store}
