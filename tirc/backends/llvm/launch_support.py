"""What the host code that launches device kernels shares across device kinds
(:mod:`tirc.backends.cuda.launch`, :mod:`tirc.backends.opencl.launch`,
:mod:`tirc.backends.rocm.launch`): module-wide globals and helper functions, defined in
the chunk that owns them and only declared in the others, the driver lock, error
messages written into the caller's buffer, and what a ``T.call_ffi_kernel`` asks for."""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.builder import Builder, fast_names
from tirc.backends.llvm.llvmlite_compat import opaque
from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import C_API, USE_DYN_SHARED_MEMORY, sized_launch_params
from tirc.ir.buffer import Buffer
from tirc.ir.expr import StringImm

PTR = ir.PointerType()
I32, I64 = lt.I32, lt.I64
# the launch sizes a T.call_ffi_kernel may give, in the order launchers take them
LAUNCH_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
               "threadIdx.z")


def allocates_device_memory(mod) -> bool:
    """Whether a host function of ``mod`` allocates a buffer for its kernels (an
    allocation under a ``device_type`` attribute that is not the CPU's): the launcher's
    memory helpers are then defined by the chunk that owns the module-wide pieces."""
    from tirc.ir.attrs import DEVICE_TYPE
    from tirc.ir.expr import IntImm
    from tirc.ir.stmt import AllocBuffer, AttrStmt
    from tirc.ir.visitor import walk_statements
    for func in mod.functions.values():
        for s in walk_statements(func.body):
            if (isinstance(s, AttrStmt) and s.key == DEVICE_TYPE and isinstance(s.value, IntImm)
                    and s.value.value != 1
                    and any(isinstance(n, AllocBuffer) for n in walk_statements(s.body))):
                return True
    return False


class LauncherSupport:
    """Base of a device kind's launcher. The subclass sets ``module`` (the LLVM module
    being lowered), ``declare_only`` (a chunk that only declares the shared pieces) and
    ``mutex`` (the driver lock), and ``msg_bytes``, the size of the message buffer its
    helpers fill."""

    msg_bytes: int
    label: str  # names the blocks of a launch's checks in host code
    _memory: tuple | None = None  # the memory helpers, made at the first use

    def memory_helpers(self) -> tuple:
        """The helpers that allocate and give back device memory for host code (the
        subclass's ``_alloc_helper`` and ``_free_helper``), defined or declared once."""
        if self._memory is None:
            self._memory = (self._alloc_helper(), self._free_helper())
        return self._memory

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

    def _check_or_fail(self, fl, ok: ir.Value, message: ir.Value) -> None:
        """Unless ``ok``: RuntimeError ``message`` the way the calling function raises
        errors (the context's ``raise_error``: tvm-ffi, or the C ABI's last error), and
        -1. Its blocks are named ``<label>_ok`` and ``<label>_fail``."""
        good, bad = fl.block(f"{self.label}_ok"), fl.block(f"{self.label}_fail")
        fl.b.cbranch(ok, good, bad)
        fl.b.position_at_end(bad)
        fl.fail(fl.string("RuntimeError"), message)
        fl.b.position_at_end(good)

    def _env_stream(self, fl, device_type: ir.Value, dev: ir.Value) -> ir.Value:
        """tvm-ffi's environment stream for the device; null (the default stream or
        queue) in a ``--abi c`` function, which has no tvm-ffi environment."""
        if fl.func.attrs.get(C_API):
            return ir.Constant(PTR, None)
        get_stream = fl.module.declare("TVMFFIEnvGetStream", ir.FunctionType(PTR, [I32, I32]))
        return fl.b.call(get_stream, [device_type, dev], name="stream")

    def _alloc_helper_start(self, symbol: str) -> tuple[ir.Function, ir.IRBuilder | None]:
        """The start of a stream-ordered allocation helper ``symbol(dev, stream, nbytes,
        out, name, msg)`` (:meth:`allocate_on_stream` calls it): ``*out`` null, and 0
        for 0 bytes; None for the builder where the chunk only declares it."""
        f, b = self._helper(symbol, I32, [I32, PTR, I64, PTR, PTR, PTR])
        if b is None:
            return f, None
        for arg, n in zip(f.args, ("dev", "stream", "nbytes", "out", "name", "msg")):
            arg.name = n
        b.store(ir.Constant(PTR, None), f.args[3])
        with b.if_then(b.icmp_unsigned("==", f.args[2], ir.Constant(I64, 0)), likely=False):
            b.ret(ir.Constant(I32, 0))
        return f, b

    def _free_helper_start(self, symbol: str) -> tuple[ir.Function, ir.IRBuilder | None]:
        """The start of the matching release helper ``symbol(dev, stream, p)``: nothing
        for null."""
        f, b = self._helper(symbol, ir.VoidType(), [I32, PTR, PTR])
        if b is None:
            return f, None
        for arg, n in zip(f.args, ("dev", "stream", "p")):
            arg.name = n
        with b.if_then(b.icmp_unsigned("==", f.args[2], ir.Constant(PTR, None)), likely=False):
            b.ret_void()
        return f, b

    def allocate_on_stream(self, fl, buf, nbytes: ir.Value, device_type: ir.Value,
                           device_id: ir.Value | None) -> tuple[ir.Value, int, object]:
        """Device memory for ``buf``, allocated in host code for the kernels it launches
        (TVM's ``TVMBackendAllocWorkspace`` on the device) by the subclass's memory
        helpers (:meth:`memory_helpers`): ordered on the stream the launches use, given
        back on it when the function leaves, after what it queued. The CUDA and HIP
        launchers' ``allocate``."""
        b = fl.b
        dev = fl.int_cast(device_id, I32) if device_id is not None else ir.Constant(I32, 0)
        stream = self._env_stream(fl, fl.int_cast(device_type, I32), dev)
        msg = fl.alloca(ir.ArrayType(lt.I8, self.msg_bytes), name=f"{self.label}_msg")
        out = fl.alloca(PTR, name=f"{buf.name}.device")
        alloc_fn, free_fn = self.memory_helpers()
        r = b.call(alloc_fn, [dev, stream, nbytes, out, fl.string(buf.name), msg])
        self._check_or_fail(fl, b.icmp_signed("==", r, ir.Constant(I32, 0)), msg)
        ptr = b.load(out, typ=PTR, name=buf.name)

        def release(fl2, p: ir.Value) -> None:
            fl2.b.call(free_fn, [dev, stream, p])
        return ptr, 256, release  # both allocators' alignment

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

    # -- one launch ------------------------------------------------------------------------
    def _launch_call(self, fl, call) -> tuple[str, object, int, list[str], list[str]]:
        """What ``call`` (a ``T.call_ffi_kernel``) launches, checked against the kernel
        this build's device code defines: its name, the kernel, the number of kernel
        arguments, the tags of the launch sizes after them, and every launch parameter."""
        span = call.span or fl.func.span
        if not call.args or not isinstance(call.args[0], StringImm):
            raise Diagnostic("T.call_ffi_kernel needs the kernel name as its first argument", span)
        name = call.args[0].value
        kernel = self.code.kernels.get(name)
        if kernel is None:
            raise Diagnostic(f"kernel '{name}' is launched but no device image of this build "
                             "defines it", span)
        all_tags = list(dict(call.kwargs).get("launch_params", ()))
        tags = list(sized_launch_params(all_tags))
        nargs = len(call.args) - 1 - len(tags)
        if nargs != len(kernel.params):
            raise Diagnostic(f"kernel '{name}' takes {len(kernel.params)} arguments; the launch "
                             f"passes {nargs}", span)
        for t in tags:
            if t not in LAUNCH_AXES and t != USE_DYN_SHARED_MEMORY:
                raise Diagnostic(f"unknown launch parameter '{t}' of kernel '{name}'", span)
        return name, kernel, nargs, tags, all_tags

    def _argument_values(self, fl, call, kernel, nargs: int) -> list[ir.Value]:
        """The kernel arguments of ``call``: a buffer's data pointer, or a scalar in the
        type of the kernel's parameter."""
        values = []
        for a, dtype in zip(call.args[1:1 + nargs], kernel.params):
            if isinstance(a, Buffer):
                v = fl.buffer_pointer(a, None, call.span)[0]
            else:
                v = fl.expr(a)
                if a.dtype != dtype:
                    v = fl.convert(v, a.dtype, dtype, call.span)
            values.append(v)
        return values

    def _launch_sizes(self, fl, call, tags: list[str], nargs: int,
                      no_dynamic: int = 0) -> tuple[list[ir.Value], ir.Value]:
        """The grid and block extents of ``call`` as unsigned 32-bit values (1 where it
        gives none), in LAUNCH_AXES order, and its dynamic shared memory size
        (``no_dynamic`` where it gives none)."""
        sizes = {t: self._u32(fl, fl.expr(e)) for t, e in zip(tags, call.args[1 + nargs:])}
        return ([sizes.get(t, ir.Constant(I32, 1)) for t in LAUNCH_AXES],
                sizes.get(USE_DYN_SHARED_MEMORY, ir.Constant(I32, no_dynamic)))
