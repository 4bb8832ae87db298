"""Errors of C-API functions (``--abi c``, MakeCAPI) on the CPU: instead of tvm-ffi's
error API, a failing function writes ``"Kind: message"`` (``snprintf``, truncated to
``LAST_ERROR_BYTES - 1`` bytes) into a thread-local buffer of its object and returns -1.
One accessor per module, ``const char* <NAME>_last_error(void)`` (with a symbol prefix P,
``P<NAME>_last_error``), returns that buffer:
the message of the last failed call on this thread, ``""`` before any; a successful call
leaves it as it was.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.llvmlite_compat import opaque
from tirc.ir.c_names import LAST_ERROR_BYTES, last_error_symbol
from tirc.ir.attrs import SYMBOL_PREFIX

_BUFFER = "__tirc_last_error_buffer"


def error_buffer(module: ir.Module, ctx, prefix: str = "") -> ir.GlobalVariable:
    """The module's thread-local message buffer and its accessor, created once (in a
    chunk of a module lowered in several, :mod:`tirc.backends.cpu.chunks`, other than the owner: the
    buffer declared only; ``ctx``: the CPUContext)."""
    existing = module.globals.get(_BUFFER)
    if existing is not None:
        return existing
    ptr_t = ctx.pointer()
    ty = ir.ArrayType(lt.I8, LAST_ERROR_BYTES)
    buf = ir.GlobalVariable(module, ty, _BUFFER)
    buf.storage_class, buf.align = "thread_local", 16
    opaque(buf, ptr_t)
    if ctx.share == "declare":
        return buf
    buf.linkage = ctx.module_wide(_BUFFER)
    buf.initializer = ir.Constant(ty, None)
    accessor = ir.Function(module, ir.FunctionType(ptr_t, []),
                           last_error_symbol(module.name, prefix))
    accessor.attributes.add("nounwind")
    b = ir.IRBuilder(accessor.append_basic_block("entry"))
    b.ret(buf)
    return buf


def record_error(fl, kind: ir.Value, message: ir.Value) -> None:
    """``snprintf(buffer, LAST_ERROR_BYTES, "%s: %s", kind, message)``."""
    ptr_t = fl.ctx.pointer()
    module = fl.module.ir
    buf = error_buffer(module, fl.ctx, str(fl.func.attrs.get(SYMBOL_PREFIX, "")))
    snprintf = fl.module.declare("snprintf", ir.FunctionType(lt.I32, [ptr_t, lt.I64, ptr_t],
                                                             var_arg=True))
    fl.b.call(snprintf, [buf, ir.Constant(lt.I64, LAST_ERROR_BYTES), fl.string("%s: %s"),
                         kind, message])
