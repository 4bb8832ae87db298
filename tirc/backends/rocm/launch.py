"""The host side of an AMD GPU kernel launch: ``T.call_ffi_kernel`` in host code, lowered
to HIP module API calls with llvmlite's IRBuilder (reached from the shared lowering
through ``CPUContext.lower_call``, as the CUDA launches are).

What the host object gets, per LLVM module:

* each device module's code object (``.hsaco``) as a private constant
  ``__tirc_hip_image<i>``;
* the HIP runtime, opened at first use with ``dlopen`` of ``libamdhip64.so``, else
  ``libamdhip64.so.7``, else ``libamdhip64.so.6``, its entry points looked up with
  ``dlsym`` into ``__tirc_hip_api`` — so the library loads and its CPU functions run
  where there is no ROCm, and the object needs only libc, libdl and libpthread; without
  the runtime a launch raises RuntimeError "the HIP runtime (libamdhip64.so) could not be
  loaded";
* a per-device cache (devices 0..63): per code object its ``hipModule_t``
  (``hipModuleLoadData`` on that device) and its kernels' ``hipFunction_t``
  (``hipModuleGetFunction``), filled once per device under one ``pthread_mutex_t`` and
  published with a release store of a ready flag that the launch reads with an acquire
  load (the fast path takes no lock);
* at each launch: the device from the enclosing ``device_id``/``device_type``
  attributes (device 0 when there are none), made the calling thread's current device
  for the launch (``hipGetDevice``/``hipSetDevice``, the caller's device set back after
  it) and ``hipModuleLaunchKernel`` with the arguments' addresses (HIP packs them into
  the kernarg segment as the code object's metadata lays it out) on tvm-ffi's
  environment stream for the device (``TVMFFIEnvGetStream(kDLROCM, device_id)``). A
  launch with an empty grid does nothing. Each launch is a call of the module's
  ``__tirc_hip_launch``. Cooperative and programmatic dependent launches are refused
  with a located error.

Every runtime call is checked; a failure raises RuntimeError the way the calling
function raises errors, with the call, the HIP error name (``hipGetErrorName``) and the
status, and the function returns -1: never ``exit()``, never a crash. ``--abi c``
functions launch on the null stream.
"""
from __future__ import annotations

from dataclasses import field

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.builder import formatted_constant
from tirc.backends.llvm.launch_support import LauncherSupport
from tirc.backends.llvm.llvmlite_compat import call_pointer, opaque, store_atomic
from tirc.backends.llvm.text import bytes_constant
from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import LAUNCH_FLAGS, is_kernel
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call
from tirc.ir.function import IRModule
from tirc.records import record

MAX_DEVICES = 64
RTLD_NOW = 2
KDL_ROCM = 10
RUNTIMES = ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6")
NO_RUNTIME = f"the HIP runtime ({RUNTIMES[0]}) could not be loaded"
MSG_BYTES = 512

PTR = ir.PointerType()
I32, I64 = lt.I32, lt.I64
# The runtime's entry points: (dlsym name, parameter types); all but hipGetErrorName
# (const char*) return hipError_t (i32).
_API: dict[str, list[ir.Type]] = {
    "hipGetErrorName": [I32],
    "hipInit": [I32],
    "hipGetDevice": [PTR],
    "hipSetDevice": [I32],
    "hipModuleLoadData": [PTR, PTR],
    "hipModuleGetFunction": [PTR, PTR, PTR],
    "hipModuleLaunchKernel": [PTR] + [I32] * 7 + [PTR, PTR, PTR],
    # stream-ordered device memory, for the buffers host code allocates
    "hipMallocAsync": [PTR, I64, PTR],
    "hipFreeAsync": [PTR, PTR],
}
_API_INDEX = {name: i for i, name in enumerate(_API)}


@record(frozen=True)
class Kernel:
    """A kernel as the host sees it: its code object, entry symbol, parameter dtypes."""

    image: int  # index into HIPCode.images
    symbol: str
    params: tuple[DataType, ...]


@record
class HIPCode:
    """The code objects a host module launches from, and where each kernel lives."""

    images: list[bytes] = field(default_factory=list)  # as hipModuleLoadData takes them
    labels: list[str] = field(default_factory=list)  # "gfx90a", for messages
    kernels: dict[str, Kernel] = field(default_factory=dict)  # by TIR function name
    groups: int = 0  # device modules announced
    filled: int = 0  # device modules whose code object has come

    def launcher(self, module) -> "HIPLauncher":
        return HIPLauncher(module, self)

    def add_variants(self, mod: IRModule, symbols: tuple[str, ...],
                     variants: list[tuple[bytes, str, str]]) -> None:
        """One compiled device module: its one code object ``(data, "hsaco", arch)``.
        A module announced by :meth:`expect` must bring the kernels announced."""
        (data, _, arch), = variants
        if self.filled < self.groups:
            announced = tuple(k.symbol for k in self.kernels.values() if k.image == self.filled)
            if announced != tuple(symbols):
                raise AssertionError(f"device module {self.filled} announced kernels "
                                     f"{announced}, compiled {tuple(symbols)}")
        else:
            self.expect(mod, symbols)
        self.images.append(data)
        self.labels.append(arch)
        self.filled += 1

    def expect(self, mod: IRModule, symbols: tuple[str, ...]) -> int:
        """A device module whose code object comes later, in the same order: its
        kernels under the next index, so host code can launch them before it exists."""
        index = self.groups
        self.groups += 1
        names = [n for n, f in mod.functions.items() if is_kernel(f)]
        for name, symbol in zip(names, symbols):
            self.kernels[name] = Kernel(index, symbol,
                                        tuple(p.dtype for p in mod.functions[name].params))
        return index


class HIPLauncher(LauncherSupport):
    """The launch support of one host LLVM module, created at its first launch (in a
    host object made in chunks, the owner chunk defines it and the others declare it)."""

    msg_bytes = MSG_BYTES
    label = "hip"

    def __init__(self, module, code: HIPCode):
        self.module, self.code = module, code
        self.declare_only = module.ctx.share == "declare"
        m = module.ir
        self.mutex = self._global("__tirc_hip_mutex", ir.ArrayType(lt.I8, 64), 16)
        self.lib = self._global("__tirc_hip_lib", PTR, 8)
        self.api = self._global("__tirc_hip_api", ir.ArrayType(PTR, len(_API)), 8)
        self.images: list[ir.GlobalVariable] = []
        for i, data in enumerate(code.images if not self.declare_only else ()):
            ty = ir.ArrayType(lt.I8, len(data))
            g = ir.GlobalVariable(m, ty, f"__tirc_hip_image{i}")
            g.linkage, g.global_constant, g.align = "private", True, 64
            g.initializer = bytes_constant(ty, bytes(data))
            opaque(g, PTR)
            self.images.append(g)
        self.ready = [self._global(f"__tirc_hip_ready{i}", ir.ArrayType(I32, MAX_DEVICES), 4)
                      for i in range(code.groups)]
        self.funcs: dict[str, ir.GlobalVariable] = {}
        for name in code.kernels if not self.declare_only else ():
            self._func_slots(name)
        self.error_fn = self._error_helper()
        self.runtime_fn = self._runtime_helper()
        self.load_fns = [self._load_helper(i) for i in range(code.groups)]
        self.launch_fn = self._launch_helper()

    def _func_slots(self, name: str) -> ir.GlobalVariable:
        """Kernel ``name``'s hipFunction_t per device."""
        if name not in self.funcs:
            self.funcs[name] = self._global(f"__tirc_hip_func.{name}",
                                            ir.ArrayType(PTR, MAX_DEVICES), 8)
        return self.funcs[name]

    @property
    def api_type(self) -> ir.Type:
        return ir.ArrayType(PTR, len(_API))

    def api_call(self, b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
        slot = b.gep(self.api, [ir.Constant(I64, 0), ir.Constant(I64, _API_INDEX[name])],
                     source_etype=self.api_type)
        fn = b.load(slot, typ=PTR, name=name)
        ret = PTR if name == "hipGetErrorName" else I32
        return call_pointer(b, fn, ir.FunctionType(ret, _API[name]), args)

    def _elem(self, b: ir.IRBuilder, g: ir.Value, elem: ir.Type, index: ir.Value) -> ir.Value:
        return b.gep(g, [ir.Constant(I64, 0), b.sext(index, I64) if index.type != I64 else index],
                     source_etype=ir.ArrayType(elem, MAX_DEVICES))

    # -- helpers ---------------------------------------------------------------------------
    def _error_helper(self) -> ir.Function:
        """``__tirc_hip_error(status, what, msg)``: "WHAT failed: NAME (hipError_t S)"."""
        f, b = self._helper("__tirc_hip_error", ir.VoidType(), [I32, PTR, PTR], cold=True)
        if b is None:
            return f
        status, what, buf = f.args
        name_slot = b.alloca(PTR)
        b.store(self._string("an unknown HIP error"), name_slot)
        fn_slot = b.gep(self.api, [ir.Constant(I64, 0), ir.Constant(I64, _API_INDEX["hipGetErrorName"])],
                        source_etype=self.api_type)
        with b.if_then(b.icmp_unsigned("!=", b.load(fn_slot, typ=PTR), ir.Constant(PTR, None))):
            name = self.api_call(b, "hipGetErrorName", [status])
            with b.if_then(b.icmp_unsigned("!=", name, ir.Constant(PTR, None))):
                b.store(name, name_slot)
        snprintf = self._declare("snprintf", I32, [PTR, I64, PTR], var_arg=True)
        b.call(snprintf, [buf, ir.Constant(I64, MSG_BYTES),
                          self._string("%s failed: %s (hipError_t %d)"), what,
                          b.load(name_slot, typ=PTR), status])
        b.ret_void()
        return f

    def _runtime_helper(self) -> ir.Function:
        """``__tirc_hip_runtime(msg)`` (mutex held): dlopen + dlsym + hipInit once; 0, or
        -1 with the message in ``msg``."""
        f, b = self._helper("__tirc_hip_runtime", I32, [PTR], cold=True)
        if b is None:
            return f
        msg = f.args[0]
        with b.if_then(b.icmp_unsigned("!=", b.load(self.lib, typ=PTR), ir.Constant(PTR, None))):
            b.ret(ir.Constant(I32, 0))
        dlopen = self._declare("dlopen", PTR, [PTR, I32])
        handle_slot = b.alloca(PTR)
        b.store(ir.Constant(PTR, None), handle_slot)
        for lib in RUNTIMES:
            with b.if_then(b.icmp_unsigned("==", b.load(handle_slot, typ=PTR), ir.Constant(PTR, None))):
                b.store(b.call(dlopen, [self._string(lib), ir.Constant(I32, RTLD_NOW)]), handle_slot)
        handle = b.load(handle_slot, typ=PTR, name="handle")
        with b.if_then(b.icmp_unsigned("==", handle, ir.Constant(PTR, None)), likely=False):
            reason = b.call(self._declare("dlerror", PTR, []), [])
            reason = b.select(b.icmp_unsigned("==", reason, ir.Constant(PTR, None)),
                              self._string("not found"), reason)
            self._message(b, msg, NO_RUNTIME + f" (tried {', '.join(RUNTIMES)}; the last: %s); "
                          "GPU functions need ROCm's HIP runtime", [reason])
            b.ret(ir.Constant(I32, -1))
        dlsym = self._declare("dlsym", PTR, [PTR, PTR])
        for i, name in enumerate(_API):
            p = b.call(dlsym, [handle, self._string(name)])
            with b.if_then(b.icmp_unsigned("==", p, ir.Constant(PTR, None)), likely=False):
                self._message(b, msg, f"{NO_RUNTIME}: it has no '{name}'", [])
                b.ret(ir.Constant(I32, -1))
            b.store(p, b.gep(self.api, [ir.Constant(I64, 0), ir.Constant(I64, i)],
                             source_etype=self.api_type))
        r = self.api_call(b, "hipInit", [ir.Constant(I32, 0)])
        with b.if_then(b.icmp_signed("!=", r, ir.Constant(I32, 0)), likely=False):
            b.call(self.error_fn, [r, self._string("hipInit"), msg])
            b.ret(ir.Constant(I32, -1))
        b.store(handle, self.lib)
        b.ret(ir.Constant(I32, 0))
        return f

    def _switch_device(self, b, dev, old, fail_text: str, fail) -> None:
        """The caller's device into ``old``; ``dev`` made current when it is not."""
        r = self.api_call(b, "hipGetDevice", [old])
        fail(r, "hipGetDevice")
        with b.if_then(b.icmp_signed("!=", b.load(old, typ=I32), dev)):
            fail(self.api_call(b, "hipSetDevice", [dev]), fail_text)

    def _restore_device(self, b, dev, old) -> ir.Value:
        """The caller's device made current again (when it was switched); the status."""
        status = b.alloca(I32)
        b.store(ir.Constant(I32, 0), status)
        back = b.load(old, typ=I32)
        with b.if_then(b.icmp_signed("!=", back, dev)):
            b.store(self.api_call(b, "hipSetDevice", [back]), status)
        return b.load(status, typ=I32)

    def _load_helper(self, i: int) -> ir.Function:
        """``__tirc_hip_load<i>(dev, msg)``: code object ``i`` loaded on device ``dev``
        once, under the mutex; its functions published with a release store of the
        ready flag."""
        f, b = self._helper(f"__tirc_hip_load{i}", I32, [I32, PTR], cold=True)
        if b is None:
            return f
        dev, msg = f.args
        dev.name, msg.name = "dev", "msg"
        self._lock(b, "lock")
        ready = self._elem(b, self.ready[i], I32, dev)
        with b.if_then(b.icmp_signed("!=", b.load_atomic(ready, "monotonic", 4, typ=I32),
                                     ir.Constant(I32, 0))):
            self._lock(b, "unlock")
            b.ret(ir.Constant(I32, 0))
        with b.if_then(b.icmp_signed("!=", b.call(self.runtime_fn, [msg]), ir.Constant(I32, 0)),
                       likely=False):
            self._lock(b, "unlock")
            b.ret(ir.Constant(I32, -1))
        old = b.alloca(I32)
        b.store(dev, old)
        restore = [False]

        def check(status: ir.Value, what: str) -> None:
            with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
                b.call(self.error_fn, [status, self._string(what), msg])
                if restore[0]:
                    self._restore_device(b, dev, old)
                self._lock(b, "unlock")
                b.ret(ir.Constant(I32, -1))

        self._switch_device(b, dev, old, "hipSetDevice", check)
        restore[0] = True
        mod = b.alloca(PTR)
        check(self.api_call(b, "hipModuleLoadData", [mod, self.images[i]]),
              f"hipModuleLoadData (the {self.code.labels[i]} code object)")
        module = b.load(mod, typ=PTR)
        fn = b.alloca(PTR)
        for name, k in self.code.kernels.items():
            if k.image != i:
                continue
            check(self.api_call(b, "hipModuleGetFunction", [fn, module, self._string(k.symbol)]),
                  f"hipModuleGetFunction({k.symbol})")
            b.store(b.load(fn, typ=PTR), self._elem(b, self.funcs[name], PTR, dev))
        restore[0] = False
        check(self._restore_device(b, dev, old), "hipSetDevice")
        store_atomic(b, ir.Constant(I32, 1), ready, "release", 4)
        self._lock(b, "unlock")
        b.ret(ir.Constant(I32, 0))
        return f

    def _launch_helper(self) -> ir.Function:
        """``__tirc_hip_launch(funcs, ready, load, dev, stream, gx, gy, gz, bx, by, bz,
        dyn, params, name, symbol, msg)``: one launch of the kernel whose per-device
        ``hipFunction_t`` are ``funcs``: nothing for an empty grid; the device id
        checked, the code object loaded on first use, the device made current,
        ``hipModuleLaunchKernel``, the caller's device set back. 0, or -1 with the
        message in ``msg``."""
        args = [PTR, PTR, PTR, I32, PTR] + [I32] * 7 + [PTR, PTR, PTR, PTR]
        f, b = self._helper("__tirc_hip_launch", I32, args)
        if b is None:
            return f
        names = ("funcs", "ready", "load", "dev", "stream", "gx", "gy", "gz", "bx", "by", "bz",
                 "dyn", "params", "name", "symbol", "msg")
        for arg, n in zip(f.args, names):
            arg.name = n
        funcs, ready, load, dev, stream = f.args[:5]
        dims = list(f.args[5:11])
        dyn, params, name, symbol, msg = f.args[11:]
        grid = b.mul(b.mul(dims[0], dims[1]), dims[2])
        block = b.mul(b.mul(dims[3], dims[4]), dims[5])
        with b.if_then(b.or_(b.icmp_unsigned("==", grid, ir.Constant(I32, 0)),
                             b.icmp_unsigned("==", block, ir.Constant(I32, 0))), likely=False):
            b.ret(ir.Constant(I32, 0))
        with b.if_then(b.icmp_unsigned(">=", dev, ir.Constant(I32, MAX_DEVICES)), likely=False):
            self._message(b, msg, "launching kernel '%s': the device id is outside "
                          f"0..{MAX_DEVICES - 1}", [name])
            b.ret(ir.Constant(I32, -1))
        slot = b.gep(ready, [b.zext(dev, I64)], source_etype=I32)
        is_ready = b.icmp_signed("!=", b.load_atomic(slot, "acquire", 4, typ=I32), ir.Constant(I32, 0))
        with b.if_then(b.not_(is_ready), likely=False):
            load_slot = b.alloca(PTR)
            b.store(load, load_slot)
            r = call_pointer(b, b.load(load_slot, typ=PTR), ir.FunctionType(I32, [I32, PTR]),
                             [dev, msg])
            with b.if_then(b.icmp_signed("!=", r, ir.Constant(I32, 0)), likely=False):
                b.ret(ir.Constant(I32, -1))
        func = b.load(b.gep(funcs, [b.zext(dev, I64)], source_etype=PTR), typ=PTR, name="func")
        what = b.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="what")
        old = b.alloca(I32)
        b.store(dev, old)
        restore = [False]

        def check(status: ir.Value, what_text: str) -> None:
            with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
                self._message(b, what, what_text, [symbol] if "%s" in what_text else [])
                b.call(self.error_fn, [status, what, msg])
                if restore[0]:
                    self._restore_device(b, dev, old)
                b.ret(ir.Constant(I32, -1))

        self._switch_device(b, dev, old, "hipSetDevice", check)
        restore[0] = True
        check(self.api_call(b, "hipModuleLaunchKernel", [func, *dims, dyn, stream, params,
                                                         ir.Constant(PTR, None)]),
              "hipModuleLaunchKernel(%s)")
        restore[0] = False
        check(self._restore_device(b, dev, old), "hipSetDevice")
        b.ret(ir.Constant(I32, 0))
        return f

    def _alloc_helper(self) -> ir.Function:
        """``__tirc_hip_alloc(dev, stream, nbytes, out, name, msg)``: ``nbytes`` of device
        ``dev``'s memory into ``*out``, ordered on ``stream`` (``hipMallocAsync``: the
        kernels launched after it on the stream see it), the device made current for the
        call; null for 0 bytes. 0, or -1 with the message in ``msg`` (``name``: the
        buffer's)."""
        f, b = self._alloc_helper_start("__tirc_hip_alloc")
        if b is None:
            return f
        dev, stream, nbytes, out, name, msg = f.args
        self._lock(b, "lock")
        r = b.call(self.runtime_fn, [msg])
        self._lock(b, "unlock")
        with b.if_then(b.icmp_signed("!=", r, ir.Constant(I32, 0)), likely=False):
            b.ret(ir.Constant(I32, -1))
        what = b.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="what")
        old = b.alloca(I32)
        b.store(dev, old)
        restore = [False]

        def check(status: ir.Value, call: str) -> None:
            with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
                self._message(b, what, f"{call} (buffer '%s', %lld bytes)", [name, nbytes])
                b.call(self.error_fn, [status, what, msg])
                if restore[0]:
                    self._restore_device(b, dev, old)
                b.store(ir.Constant(PTR, None), out)
                b.ret(ir.Constant(I32, -1))

        self._switch_device(b, dev, old, "hipSetDevice", check)
        restore[0] = True
        check(self.api_call(b, "hipMallocAsync", [out, nbytes, stream]), "hipMallocAsync")
        restore[0] = False
        self._restore_device(b, dev, old)
        b.ret(ir.Constant(I32, 0))
        return f

    def _free_helper(self) -> ir.Function:
        """``__tirc_hip_free(dev, stream, p)``: device memory from ``__tirc_hip_alloc``
        given back, ordered on ``stream`` after the kernels launched on it
        (``hipFreeAsync``); nothing for null. On the way out of a function, after its
        work is queued or on its failure path: a failure here is not reported."""
        f, b = self._free_helper_start("__tirc_hip_free")
        if b is None:
            return f
        dev, stream, p = f.args
        old = b.alloca(I32)
        b.store(dev, old)
        r = self.api_call(b, "hipGetDevice", [old])
        switched = b.icmp_signed("!=", b.load(old, typ=I32), dev)
        with b.if_then(b.and_(b.icmp_signed("==", r, ir.Constant(I32, 0)), switched)):
            self.api_call(b, "hipSetDevice", [dev])
        self.api_call(b, "hipFreeAsync", [p, stream])
        self._restore_device(b, dev, old)
        b.ret_void()
        return f

    allocate = LauncherSupport.allocate_on_stream

    # -- one launch --------------------------------------------------------------------------
    def launch(self, fl, call: Call, device_type: ir.Value | None, device_id: ir.Value | None) -> ir.Value:
        span = call.span or fl.func.span
        name, kernel, nargs, tags, all_tags = self._launch_call(fl, call)
        flags = [t for t in LAUNCH_FLAGS if t in all_tags]
        if flags:
            raise Diagnostic(f"kernel '{name}' asks for {', '.join(flags)}: not supported on "
                             "target rocm (HIP launches it as a plain kernel)", span)
        b = fl.b
        values = self._argument_values(fl, call, kernel, nargs)
        dims, dyn = self._launch_sizes(fl, call, tags, nargs)
        dev = fl.int_cast(device_id, I32) if device_id is not None else ir.Constant(I32, 0)
        dtype_v = (fl.int_cast(device_type, I32) if device_type is not None
                   else ir.Constant(I32, KDL_ROCM))
        msg = fl.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="hip_msg")
        stream = self._env_stream(fl, dtype_v, dev)
        array_t = ir.ArrayType(PTR, max(len(values), 1))
        params = fl.alloca(array_t, name=f"{name}.args")
        for i, v in enumerate(values):
            slot = fl.alloca(v.type, name=f"{name}.arg{i}")
            b.store(v, slot)
            b.store(slot, b.gep(params, [ir.Constant(I64, 0), ir.Constant(I64, i)],
                                source_etype=array_t))
        loader = formatted_constant(PTR, self.load_fns[kernel.image].get_reference())
        r = b.call(self.launch_fn, [self._func_slots(name), self.ready[kernel.image], loader,
                                    dev, stream, *dims, dyn, params, fl.string(name),
                                    fl.string(kernel.symbol), msg])
        self._check_or_fail(fl, b.icmp_signed("==", r, ir.Constant(I32, 0)), msg)
        return ir.Constant(I32, 0)
