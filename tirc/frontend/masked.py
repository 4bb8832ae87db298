"""Predicated memory access, as TVM 0.27 prints it for tails of vectorised loops
(AArch64 SVE, RISC-V V and fixed-length vectors alike):

- ``T.get_active_lane_mask("uint1x4", base, limit)``: lane ``i`` is on when
  ``base + i < limit`` (unsigned, without wrapping; LLVM's ``llvm.get.active.lane.mask``);
- ``T.masked_load("float32x4", A, index..., mask)``: the lanes the mask has on, loaded;
  the others are not read (their value is unspecified);
- ``T.masked_store(A, value, index..., mask)``: only the lanes the mask has on are written.

The access is kept as a ``BufferLoad`` in the call's first argument (``T.address_of``'s
form), so every pass that renames, flattens or remaps buffers treats it as it treats any
access; a masked load is ``Call(dtype, "masked_load", (A[index], mask))`` and a masked
store ``Call(void, "masked_store", (A[index], value, mask))``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.values import Arg, arity, no_kwargs
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import VOID
from tirc.ir.expr import BufferLoad, Call, PrimExpr

if TYPE_CHECKING:
    from tirc.frontend.exprs import ExprBuilder



def _mask(e: PrimExpr, lanes: int, name: str, span: Span | None) -> PrimExpr:
    if not e.dtype.element().is_bool or e.dtype.lanes != lanes:
        raise Diagnostic(f"the mask of T.{name} must be a bool vector of {lanes} lanes, "
                         f"got {e.dtype}", span)
    return e


def _access(b: "ExprBuilder", name: str, buf_arg: Arg, indices: list[Arg], span) -> BufferLoad:
    buf, bspan = buf_arg
    if not isinstance(buf, Buffer):
        raise Diagnostic(f"T.{name} needs a buffer, got {type(buf).__name__}", bspan)
    if not indices:
        raise Diagnostic(f"T.{name} needs the indices and a mask", span)
    if len(indices) != len(buf.shape):
        raise Diagnostic(f"T.{name} of buffer '{buf.name}' needs {len(buf.shape)} indices, "
                         f"got {len(indices)}", span)
    return b.load(buf, tuple(b.as_expr(v, s) for v, s in indices), span)


def masked_load(b: "ExprBuilder", name: str, args: list[Arg], kwargs: dict, span) -> Call:
    no_kwargs(name, kwargs)
    arity(name, args, 4, None, span)
    dtype = b.dtype_of(*args[0])
    access = _access(b, name, args[1], args[2:-1], span)
    if access.dtype != dtype:
        raise Diagnostic(f"T.masked_load of {dtype} reads {access.dtype} from buffer "
                         f"'{access.buffer.name}' at these indices", span)
    mask = _mask(b.as_expr(*args[-1]), dtype.lanes, name, args[-1][1])
    return Call(dtype, "masked_load", (access, mask), span)


def masked_store(b: "ExprBuilder", name: str, args: list[Arg], kwargs: dict, span) -> Call:
    no_kwargs(name, kwargs)
    arity(name, args, 4, None, span)
    value = b.as_expr(*args[1])
    access = _access(b, name, args[0], args[2:-1], span)
    if access.dtype != value.dtype:
        raise Diagnostic(f"T.masked_store of a {value.dtype} value writes {access.dtype} to "
                         f"buffer '{access.buffer.name}' at these indices", span)
    mask = _mask(b.as_expr(*args[-1]), value.dtype.lanes, name, args[-1][1])
    return Call(VOID, "masked_store", (access, value, mask), span)


def active_lane_mask(b: "ExprBuilder", name: str, args: list[Arg], kwargs: dict, span) -> Call:
    no_kwargs(name, kwargs)
    arity(name, args, 3, 3, span)
    dtype = b.dtype_of(*args[0])
    if not dtype.element().is_bool or dtype.lanes < 2:
        raise Diagnostic(f"T.get_active_lane_mask makes a bool vector, not {dtype}", args[0][1])
    base, limit = (b.as_expr(*a) for a in args[1:])
    for e, (_, s) in zip((base, limit), args[1:]):
        if not e.dtype.is_integer or e.dtype.lanes != 1:
            raise Diagnostic(f"T.get_active_lane_mask takes scalar integers, got {e.dtype}", s)
    return Call(dtype, "get_active_lane_mask", (base, limit), span)


BUILDERS = {"masked_load": masked_load, "masked_store": masked_store,
            "get_active_lane_mask": active_lane_mask}
