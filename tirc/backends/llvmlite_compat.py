"""The three places tirc goes past llvmlite's public API, kept here and nowhere else.

Written for llvmlite 0.50 (LLVM 22). tirc emits LLVM IR with opaque pointers (``ptr``),
which is all LLVM parses now, but llvmlite's IR builder still reasons about typed
pointers in a few places:

- :func:`opaque`: a global or ``alloca`` made by llvmlite gets a typed pointer type;
  setting ``.type`` gives it the opaque ``ptr`` type the rest of the module uses.
- :func:`store_atomic`: ``IRBuilder.store_atomic`` refuses a store through an opaque
  pointer (it compares ``ptr.type.pointee`` with the value's type), so the instruction
  is made directly and inserted with the builder's ``_insert``.
- :func:`call_pointer`: ``IRBuilder.call`` takes the callee's type from
  ``fn.function_type``, which a loaded function pointer (an opaque ``ptr``) lacks; the
  load's class is swapped for a subclass that carries the function type.

When llvmlite handles opaque pointers in these three places, each function becomes the
public call it stands for.
"""
from __future__ import annotations

from llvmlite import ir


def opaque(value: ir.Value, ptr: ir.PointerType) -> ir.Value:
    """Give a global or stack slot the opaque pointer type ``ptr``."""
    value.type = ptr
    return value


def store_atomic(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, ordering: str,
                 align: int) -> ir.Instruction:
    """``store atomic value, ptr ordering, align`` through an opaque pointer."""
    instr = ir.instructions.StoreAtomicInstr(b.block, value, ptr, ordering, align)
    b._insert(instr)
    return instr


class _FnPointer(ir.instructions.LoadInstr):
    """A loaded function pointer that llvmlite can call: it carries its function type."""

    @property
    def function_type(self):
        return self._fnty


def call_pointer(b: ir.IRBuilder, fn: ir.instructions.LoadInstr, fnty: ir.FunctionType,
                 args: list[ir.Value]) -> ir.Instruction:
    """Call the function pointer ``fn`` (a load of a ``ptr``) of type ``fnty``."""
    fn.__class__ = _FnPointer
    fn._fnty = fnty
    return b.call(fn, args)
