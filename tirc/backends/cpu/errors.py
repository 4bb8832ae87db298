"""Errors of private (not exported) functions in host code, and how they reach the caller.

An exported function raises (tvm-ffi's ``TVMFFIErrorSetRaisedFromCStr``, or the C ABI's
last error) and returns -1. A private function has no error return its callers could
test (it may return any value), so a failing one records the error kind (a constant
C string) and a copy of the message in thread-local variables of its object,
``__tirc_error_kind`` and ``__tirc_error_message``, and returns. After a call of a
private function that may fail, the caller tests ``__tirc_error_kind``: a private caller
returns at once (the error stays recorded), an exported one clears it and raises the
kind and message as its own error; in the body of a ``T.parallel`` loop the failure is
handed to the loop's caller as any failing check there is (:mod:`tirc.backends.cpu.parallel`).

Which functions may fail is decided on the TIR
(:func:`tirc.backends.host_faults.may_fail`), before lowering, so
calls of functions that cannot fail (most helpers) cost nothing.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.lower import likely
from tirc.backends.llvm.llvmlite_compat import opaque

MESSAGE_BYTES = 1024
_KIND, _MESSAGE = "__tirc_error_kind", "__tirc_error_message"


def _tls(module: ir.Module, name: str, ty: ir.Type, ptr_t: ir.PointerType) -> ir.GlobalVariable:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    g = ir.GlobalVariable(module, ty, name)
    g.linkage, g.storage_class = "internal", "thread_local"
    g.initializer = ir.Constant(ty, None)
    return opaque(g, ptr_t)


def _slots(fl) -> tuple[ir.GlobalVariable, ir.GlobalVariable]:
    ptr_t = fl.ctx.pointer()
    m = fl.module.ir
    return (_tls(m, _KIND, ptr_t, ptr_t),
            _tls(m, _MESSAGE, ir.ArrayType(lt.I8, MESSAGE_BYTES), ptr_t))


def record(fl, kind: ir.Value, message: ir.Value) -> None:
    """In a private function: keep ``kind`` and a copy of ``message`` for the caller
    (the message may live in this function's frame; it may also be the slot itself,
    a callee's error handed on through a parallel loop)."""
    kind_slot, message_slot = _slots(fl)
    ptr_t = fl.ctx.pointer()
    snprintf = fl.module.declare("snprintf", ir.FunctionType(lt.I32, [ptr_t, lt.I64, ptr_t],
                                                             var_arg=True))
    with fl.b.if_then(fl.b.icmp_unsigned("!=", message, message_slot)):
        fl.b.call(snprintf, [message_slot, ir.Constant(lt.I64, MESSAGE_BYTES), fl.string("%s"),
                             message])
    fl.b.store(kind, kind_slot)


def check_after_call(fl) -> None:
    """After a call of a private function that may fail: fail too when it did. An
    exported function or a parallel loop's body (``fl.handles_errors``) takes the error
    over (and clears the kind); a private function leaves it for its own caller."""
    kind_slot, message_slot = _slots(fl)
    ptr_t = fl.ctx.pointer()
    kind = fl.b.load(kind_slot, typ=ptr_t)
    ok, bad = fl.block("call_ok"), fl.block("call_failed")
    likely(fl.b.cbranch(fl.b.icmp_unsigned("==", kind, ir.Constant(ptr_t, None)), ok, bad))
    fl.b.position_at_end(bad)
    if fl.handles_errors:
        fl.b.store(ir.Constant(ptr_t, None), kind_slot)
        fl.fail(kind, message_slot)
    else:
        fl.fail(None, None)
    fl.b.position_at_end(ok)
