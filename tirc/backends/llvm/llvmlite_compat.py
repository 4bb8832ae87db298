"""The places tirc goes past llvmlite's public API, kept here and in :mod:`tirc.backends.llvm.builder`
(which makes llvmlite's instructions, blocks and constants without their constructors,
for speed) and nowhere else.

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

- :func:`private_alloca`: llvmlite's ``alloca`` has no address space; AMDGPU's stack
  is address space 5 (``A5`` in its data layout), so the instruction is printed with
  one.
- :class:`ScalableVectorType` (``<vscale x N x T>``), :func:`scalable_mask` and
  :func:`scalable_splat`: llvmlite has no scalable vector type (below).
- :func:`dismantle`: an llvmlite module is a web of reference cycles (every value
  points to its parent); taking it apart lets reference counting free it.
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


class _AllocaIn(ir.instructions.AllocaInstr):
    """An ``alloca`` in address space ``addrspace``."""

    addrspace = 0

    def descr(self, buf):
        buf.append(f"alloca {self.allocated_type}")
        if self.operands:
            op, = self.operands
            buf.append(f", {op.type} {op.get_reference()}")
        if self.align is not None:
            buf.append(f", align {self.align}")
        buf.append(f", addrspace({self.addrspace})")
        if self.metadata:
            buf.append(self._stringify_metadata(leading_comma=True))


def private_alloca(fl, elem: ir.Type, count: int, name: str, align: int, addrspace: int,
                   flat: ir.PointerType) -> ir.Value:
    """A stack slot of ``count`` ``elem`` in address space ``addrspace``, made in the
    entry block of function lowering ``fl`` (so loops do not grow the stack), and its
    address cast to the pointer type ``flat``."""
    here = fl.b.block
    b = type(fl.b)(fl.entry)
    if fl.entry.instructions:
        b.position_before(fl.entry.instructions[0])
    slot = b.alloca(elem, size=ir.Constant(ir.IntType(64), count), name=name)
    slot.__class__ = _AllocaIn
    slot.addrspace, slot.align = addrspace, align
    slot.type = ir.PointerType(addrspace=addrspace)
    cast = b.addrspacecast(slot, flat, name=f"{name}.flat" if name else "")
    fl.b.position_at_end(here)
    return cast


class FnPointer(ir.instructions.LoadInstr):
    """A loaded function pointer that llvmlite can call: it carries its function type."""

    @property
    def function_type(self):
        return self._fnty


def call_pointer(b: ir.IRBuilder, fn: ir.instructions.LoadInstr, fnty: ir.FunctionType,
                 args: list[ir.Value]) -> ir.Instruction:
    """Call the function pointer ``fn`` (a load of a ``ptr``) of type ``fnty``."""
    fn.__class__ = FnPointer
    fn._fnty = fnty
    return b.call(fn, args)


def dismantle(module: ir.Module) -> None:
    """Take ``module``, no longer used, apart, so that reference counting frees it.

    Every value of an llvmlite module points to its parent (instruction to block, block
    and argument to function, function and global to module) and the parents to their
    values, so a module is only ever freed by the cycle collector, which the build keeps
    off: a collection over one chunk of 1,000 packed functions (:mod:`tirc.backends.cpu.chunks`) took
    1.1 s, to free what reference counting frees here as the attributes go. Nothing of
    the module may be used afterwards (its objects are left without attributes)."""
    for value in module.globals.values():
        for block in getattr(value, "blocks", ()):
            for instr in block.instructions:
                instr.__dict__.clear()
            block.__dict__.clear()
        for arg in getattr(value, "args", ()):
            arg.__dict__.clear()
        value.__dict__.clear()
    for md in module.metadata:
        md.__dict__.clear()
    module.__dict__.clear()


# -- scalable vectors (AArch64 SVE, RISC-V V) -------------------------------------------
# llvmlite 0.50's IR builder has no scalable vector type. LLVM IR is text, so a subclass
# of VectorType that prints ``<vscale x N x T>`` is one: the builder's instructions take
# it where they take a vector (their checks are isinstance checks), with two exceptions
# handled here: a comparison's result type (llvmlite makes a fixed <N x i1>) and
# shufflevector (its result type comes from a fixed mask), which a splat needs.
class ScalableVectorType(ir.VectorType):
    """``<vscale x count x element>``: ``vscale * count`` lanes."""

    def _to_string(self):
        return "<vscale x %d x %s>" % (self.count, self.element)

    def __eq__(self, other):
        return (isinstance(other, ScalableVectorType) and self.element == other.element
                and self.count == other.count)

    def __hash__(self):
        return hash((ScalableVectorType, self.count))

    def format_constant(self, value):
        """A scalable constant is a splat: every lane the same value."""
        refs = {v.get_reference() for v in value}
        if len(refs) != 1:
            raise ValueError(f"a {self} constant must have one value in every lane")
        return "splat ({0} {1})".format(value[0].type, value[0].get_reference())


def is_scalable(t: ir.Type) -> bool:
    return isinstance(t, ScalableVectorType)


def scalable_mask(instr: ir.Instruction) -> ir.Instruction:
    """A comparison of scalable vectors, with its ``<vscale x N x i1>`` result type."""
    lhs = instr.operands[0]
    if is_scalable(lhs.type):
        instr.type = ScalableVectorType(ir.IntType(1), lhs.type.count)
    return instr


class _Splat(ir.instructions.Instruction):
    """``shufflevector`` of lane 0 of a scalable vector into every lane."""

    def __init__(self, parent, vector: ir.Value, name: str = ""):
        super().__init__(parent, vector.type, "shufflevector", [vector], name=name)

    def descr(self, buf):
        v = self.operands[0]
        buf.append("shufflevector {0} {1}, {0} poison, <vscale x {2} x i32> zeroinitializer\n"
                   .format(v.type, v.get_reference(), v.type.count))


def scalable_splat(b: ir.IRBuilder, value: ir.Value, t: ScalableVectorType) -> ir.Value:
    """``value`` in every lane of a scalable vector of type ``t``."""
    if isinstance(value, ir.Constant) and not isinstance(value, ir.FormattedConstant):
        return ir.Constant(t, [value] * t.count)  # printed as splat (T c)
    one = b.insert_element(ir.Constant(t, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    instr = _Splat(b.block, one)
    b._insert(instr)
    return instr
