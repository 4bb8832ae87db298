"""What the host code that launches device kernels shares across device kinds
(:mod:`tirc.backends.cuda.launch`, :mod:`tirc.backends.opencl.launch`): module-wide
globals and helper functions, defined in the chunk that owns them and only declared in
the others, the driver lock, and error messages written into the caller's buffer."""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.builder import Builder, fast_names
from tirc.backends.llvm.llvmlite_compat import opaque

PTR = ir.PointerType()
I32, I64 = lt.I32, lt.I64


class LauncherSupport:
    """Base of a device kind's launcher. The subclass sets ``module`` (the LLVM module
    being lowered), ``declare_only`` (a chunk that only declares the shared pieces) and
    ``mutex`` (the driver lock), and ``msg_bytes``, the size of the message buffer its
    helpers fill."""

    msg_bytes: int

    def _global(self, name: str, ty: ir.Type, align: int) -> ir.GlobalVariable:
        g = ir.GlobalVariable(self.module.ir, ty, name)
        g.align = align
        if not self.declare_only:
            g.linkage = self.module.ctx.module_wide(name)
            g.initializer = ir.Constant(ty, None)
        opaque(g, PTR)
        return g

    def _declare(self, name: str, ret: ir.Type, args: list[ir.Type], var_arg: bool = False) -> ir.Function:
        return self.module.declare(name, ir.FunctionType(ret, args, var_arg=var_arg))

    def _string(self, text: str) -> ir.Value:
        return self.module.string(text)

    def _helper(self, name: str, ret: ir.Type, args: list[ir.Type],
                cold: bool = False) -> tuple[ir.Function, ir.IRBuilder | None]:
        """A helper function and a builder for its body (None: only declared here);
        ``cold``: run once per device or on failure."""
        f = ir.Function(self.module.ir, ir.FunctionType(ret, args), name)
        fast_names(f)
        if self.declare_only:
            return f, None
        f.linkage = self.module.ctx.module_wide(name)
        f.attributes.add("nounwind")
        f.attributes.add("noinline")
        f.attributes.add("optnone")  # straight-line driver calls: not worth optimising
        if cold:
            f.attributes.add("cold")
        return f, Builder(f.append_basic_block("entry"))

    def _lock(self, b: ir.IRBuilder, what: str) -> None:
        b.call(self._declare(f"pthread_mutex_{what}", I32, [PTR]), [self.mutex])

    def _message(self, b: ir.IRBuilder, buf: ir.Value, fmt: str, args: list[ir.Value]) -> None:
        snprintf = self._declare("snprintf", I32, [PTR, I64, PTR], var_arg=True)
        size = ir.Constant(I64, self.msg_bytes)
        b.call(snprintf, [buf, size, self._string("%s"), self._string(fmt)]
               if not args else [buf, size, self._string(fmt), *args])

    def _u32(self, fl, v: ir.Value) -> ir.Value:
        if isinstance(v, ir.Constant) and isinstance(v.constant, int):
            return ir.Constant(I32, v.constant & 0xFFFFFFFF)
        return fl.int_cast(v, I32, signed=False) if v.type != I32 else v
