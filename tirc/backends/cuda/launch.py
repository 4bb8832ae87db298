"""The host side of a GPU kernel launch: ``T.call_ffi_kernel`` in host code, lowered to
CUDA driver API calls with llvmlite's IRBuilder (reached from the shared lowering through
``CPUContext.lower_call``; nothing here lowers TIR expressions itself).

What the host object gets, per LLVM module:

* each device image (PTX text with a closing NUL, a cubin, or a fatbin) as a private
  constant ``__tirc_cuda_image<i>``; a fatbin (``--device-format fatbin``) is a device
  module's one image whatever its archs, and ``cuModuleLoadData`` picks the cubin or PTX
  in it that fits the device; otherwise a device module built for several archs (``cuda
  -arch=sm_80,sm_90``) has one image per arch, and its loader picks, from the device's
  compute capability (``cuDeviceGetAttribute``), a cubin of the device's major version
  and the highest minor not above the device's, else the PTX of the highest arch not
  above the device (arch-specific images such as ``sm_90a`` only on exactly that
  device), or raises RuntimeError naming the device's capability and the archs it has;
* the CUDA driver, opened at first use with ``dlopen("libcuda.so.1")`` and its entry
  points looked up with ``dlsym`` into ``__tirc_cuda_api`` — so the library loads and its
  CPU functions run where there is no driver, and the object needs only libc, libdl and
  libpthread; without the driver a launch raises RuntimeError "the CUDA driver
  (libcuda.so.1) could not be loaded";
* a per-device cache (devices 0..63): the device's primary context
  (``cuDevicePrimaryCtxRetain``), and per image its ``CUmodule`` and ``CUfunction``s,
  filled once per device under one ``pthread_mutex_t`` and published with a release
  store of a ready flag that the launch reads with an acquire load (the fast path takes
  no lock);
* at each launch: the device from the enclosing ``device_id``/``device_type`` attributes
  (the tensors' device, bound by MakePackedAPI; device 0 when there are none), the
  primary context pushed and popped around the launch, ``cuFuncSetAttribute(MAX_DYNAMIC_
  SHARED_SIZE_BYTES)`` when the dynamic shared memory exceeds 48 KiB, and
  ``cuLaunchKernel`` on tvm-ffi's environment stream for the device
  (``TVMFFIEnvGetStream(device_type, device_id)``). A launch with an empty grid does
  nothing. Each launch is a call of the module's ``__tirc_cuda_launch``, which does all
  of that but getting the stream (and ``cuLaunchKernelEx`` for launches with launch
  attributes).

A buffer the host code allocates for its kernels (``allocate``) is device memory from
``cuMemAllocAsync`` on the launches' stream, given back with ``cuMemFreeAsync`` on it when
the function leaves (docs/codegen-runtime.md).

Every driver call is checked; a failure raises RuntimeError the way the calling function
raises errors (the context's ``raise_error``: ``TVMFFIErrorSetRaisedFromCStr`` for packed
functions) with the call, the CUDA error name (``cuGetErrorName``) and the status, and the
function returns -1: never ``exit()``, never a crash. ``--abi c`` functions (attribute
``tirc.c_api``) launch on the default stream, having no tvm-ffi environment.
"""
from __future__ import annotations

from dataclasses import field

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.builder import formatted_constant
from tirc.backends.llvm.text import bytes_constant
from tirc.backends.llvm.launch_support import LauncherSupport
from tirc.backends.llvm.llvmlite_compat import call_pointer, opaque, store_atomic
from tirc.ir.attrs import LAUNCH_FLAGS, USE_COOPERATIVE_LAUNCH, USE_PDL
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call
from tirc.ir.function import IRModule
from tirc.records import record
from tirc.ir.attrs import is_kernel

MAX_DEVICES = 64
DYN_SHMEM_DEFAULT_LIMIT = 48 * 1024  # above it a kernel must opt in (cuFuncSetAttribute)
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
# cuLaunchKernelEx's launch attributes (CUlaunchAttributeID) for TVM's kinds of launch
LAUNCH_ATTRIBUTE = {USE_COOPERATIVE_LAUNCH: 2,  # CU_LAUNCH_ATTRIBUTE_COOPERATIVE
                    USE_PDL: 6}  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
_LAUNCH_KIND = {USE_PDL: "programmatic dependent launch", USE_COOPERATIVE_LAUNCH: "cooperative launch"}
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
RTLD_NOW = 2
KDL_CUDA = 2
DRIVER = "libcuda.so.1"
NO_DRIVER = f"the CUDA driver ({DRIVER}) could not be loaded"
MSG_BYTES = 512  # the message buffer a failing helper fills

PTR = ir.PointerType()
I32, I64 = lt.I32, lt.I64
# The driver entry points: (dlsym name, parameter types); all return CUresult (i32).
_API: dict[str, list[ir.Type]] = {
    "cuGetErrorName": [I32, PTR],
    "cuInit": [I32],
    "cuDeviceGet": [PTR, I32],
    "cuDeviceGetAttribute": [PTR, I32, I32],
    "cuDevicePrimaryCtxRetain": [PTR, I32],
    "cuCtxPushCurrent_v2": [PTR],
    "cuCtxPopCurrent_v2": [PTR],
    "cuModuleLoadData": [PTR, PTR],
    "cuModuleGetFunction": [PTR, PTR, PTR],
    "cuFuncSetAttribute": [PTR, I32, I32],
    "cuLaunchKernel": [PTR] + [I32] * 7 + [PTR, PTR, PTR],
    "cuLaunchKernelEx": [PTR, PTR, PTR, PTR],  # CUDA 12: launches with attributes
    # CUDA 11.2: stream-ordered device memory, for the buffers host code allocates
    "cuMemAllocAsync": [PTR, I64, PTR],
    "cuMemFreeAsync": [PTR, PTR],
}
# Entry points an older driver may lack: their slot stays null, and a launch that needs
# one says so. They come last in _API: the driver helper requires the ones before.
_OPTIONAL_API = {"cuLaunchKernelEx", "cuMemAllocAsync", "cuMemFreeAsync"}
_REQUIRED_API = len(_API) - len(_OPTIONAL_API)
assert not _OPTIONAL_API & set(list(_API)[:_REQUIRED_API])
# CUlaunchConfig (grid, block, shared memory, stream, attributes) and CUlaunchAttribute
# (id, padding, a 64-byte value), laid out as cuda.h lays them out on 64-bit hosts
_LAUNCH_CONFIG = ir.LiteralStructType([I32] * 7 + [PTR, PTR, I32])
_LAUNCH_ATTR = ir.LiteralStructType([I32, ir.ArrayType(lt.I8, 4), ir.ArrayType(I64, 8)])
_API_INDEX = {name: i for i, name in enumerate(_API)}


@record(frozen=True)
class Kernel:
    """A kernel as the host sees it: its module (the group of images it is loaded from),
    its entry symbol, its parameter dtypes."""

    image: int  # index into DeviceCode.groups
    symbol: str
    params: tuple[DataType, ...]


@record
class DeviceCode:
    """The device images a host module launches from, and where each kernel lives."""

    images: list[bytes] = field(default_factory=list)  # as cuModuleLoadData takes them
    labels: list[str] = field(default_factory=list)  # "sm_90 ptx", for messages
    archs: list[tuple[str, str]] = field(default_factory=list)  # (arch, fmt) per image
    groups: list[tuple[int, ...]] = field(default_factory=list)  # a module's images
    kernels: dict[str, Kernel] = field(default_factory=dict)  # by TIR function name
    filled: int = 0  # groups whose images have come (the others only expected)

    def launcher(self, module) -> "CudaLauncher":
        """The launch support of a host module (a ``ModuleLowering``) that launches
        these kernels: what a host backend asks for at its first kernel launch."""
        return CudaLauncher(module, self)

    def add(self, mod: IRModule, symbols: tuple[str, ...], data: bytes, fmt: str, arch: str) -> None:
        """One compiled device module: its image bytes (``fmt`` "ptx", "cubin" or "fatbin") and
        its kernels' entry symbols, in module order of its kernels."""
        self.add_variants(mod, symbols, [(data, fmt, arch)])

    def add_variants(self, mod: IRModule, symbols: tuple[str, ...],
                     variants: list[tuple[bytes, str, str]]) -> None:
        """One device module compiled for one arch or several: ``(data, fmt, arch)``
        per image; with several, the host loads the one that fits the device (a fatbin
        is one image: ``arch`` names its archs, ``sm_80-sm_90``). A module announced
        by :meth:`expect` gets the group announced for it (the next one in order), and
        its kernels must be those announced."""
        if self.filled < len(self.groups):
            group = self.filled
            announced = tuple(k.symbol for k in self.kernels.values() if k.image == group)
            if announced != tuple(symbols):
                raise AssertionError(f"device module {group} announced kernels {announced}, "
                                     f"compiled {tuple(symbols)}")
        else:
            group = self.expect(mod, symbols)
        indices = []
        for data, fmt, arch in variants:
            indices.append(len(self.images))
            self.images.append(data + b"\0" if fmt == "ptx" else data)
            self.labels.append(f"{arch} {fmt}")
            self.archs.append((arch, fmt))
        self.groups[group] = tuple(indices)
        self.filled += 1

    def expect(self, mod: IRModule, symbols: tuple[str, ...]) -> int:
        """A device module whose images come later (:meth:`add_variants`, in the same
        order): its kernels' entry ``symbols`` (module order) under the next group, so
        that host code can launch them before the images exist (``cpu.start_chunks``);
        the group's index."""
        group = len(self.groups)
        self.groups.append(())
        names = [n for n, f in mod.functions.items() if is_kernel(f)]
        for name, symbol in zip(names, symbols):
            self.kernels[name] = Kernel(group, symbol, tuple(p.dtype for p in mod.functions[name].params))
        return group


def image_preference(archs: list[tuple[str, str]]) -> list[tuple[int, str, int, int]]:
    """The images of one module in the order the loader tries them, each as
    ``(index, rule, major, minor)``: ``rule`` "exact" (the device's capability is
    major.minor: arch-specific images, sm_90a, in either format), "major" (a cubin or a
    family image, sm_100f: same major, minor <= the device's) or "atmost" (PTX:
    capability <= the device's), as :mod:`tirc.target.cuda_arch` rules. Cubins come first, then
    PTX; within each, arch- and family-specific images first, then the newest arch
    first — so the first image whose rule holds is the best fit."""
    from tirc.target.cuda_arch import image_rule, parse_arch
    order = []
    for i, (arch, fmt) in enumerate(archs):
        major, minor, suffix, _ = parse_arch(arch)
        rule = image_rule(arch, fmt)
        order.append(((fmt != "cubin", not suffix, -(major * 10 + minor)), (i, rule, major, minor)))
    return [item for _, item in sorted(order)]


class CudaLauncher(LauncherSupport):
    """The launch support of one host LLVM module, created at its first launch. When
    the module is one chunk of several (:mod:`tirc.backends.cpu.chunks`), the owner chunk defines it all
    and every other chunk only declares what its launches use."""

    msg_bytes = MSG_BYTES
    label = "cuda"

    def __init__(self, module, code: DeviceCode):
        self.module, self.code = module, code  # a ModuleLowering
        self.declare_only = module.ctx.share == "declare"
        m = module.ir
        self.mutex = self._global("__tirc_cuda_mutex", ir.ArrayType(lt.I8, 64), 16)
        self.lib = self._global("__tirc_cuda_lib", PTR, 8)
        self.api = self._global("__tirc_cuda_api", ir.ArrayType(PTR, len(_API)), 8)
        self.ctxs = self._global("__tirc_cuda_ctx", ir.ArrayType(PTR, MAX_DEVICES), 8)
        self.images: list[ir.GlobalVariable] = []
        for i, data in enumerate(code.images if not self.declare_only else ()):
            ty = ir.ArrayType(lt.I8, len(data))
            g = ir.GlobalVariable(m, ty, f"__tirc_cuda_image{i}")
            g.linkage, g.global_constant, g.align = "private", True, 64
            g.initializer = bytes_constant(ty, bytes(data))
            opaque(g, PTR)
            self.images.append(g)
        self.ready = [self._global(f"__tirc_cuda_ready{i}", ir.ArrayType(I32, MAX_DEVICES), 4)
                      for i in range(len(code.groups))]
        self.modules = [self._global(f"__tirc_cuda_module{i}", ir.ArrayType(PTR, MAX_DEVICES), 8)
                        for i in range(len(code.groups))]
        # per kernel; a chunk that only declares them declares those it launches
        self.funcs: dict[str, ir.GlobalVariable] = {}
        for name in code.kernels if not self.declare_only else ():
            self._func_slots(name)
        self.error_fn = self._error_helper()
        self.driver_fn = self._driver_helper()
        self.load_fns = [self._load_helper(i) for i in range(len(code.groups))]
        self.launch_fn = self._launch_helper()

    # -- module-level pieces -----------------------------------------------------------
    def _func_slots(self, name: str) -> ir.GlobalVariable:
        """Kernel ``name``'s CUfunction per device."""
        if name not in self.funcs:
            self.funcs[name] = self._global(f"__tirc_cuda_func.{name}",
                                            ir.ArrayType(PTR, MAX_DEVICES), 8)
        return self.funcs[name]

    def api_call(self, b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
        """Call a driver entry point through the table (loaded before any call)."""
        slot = b.gep(self.api, [ir.Constant(I64, 0), ir.Constant(I64, _API_INDEX[name])],
                     source_etype=self.api_type)
        fn = b.load(slot, typ=PTR, name=name)
        return call_pointer(b, fn, ir.FunctionType(I32, _API[name]), args)

    @property
    def api_type(self) -> ir.Type:
        return ir.ArrayType(PTR, len(_API))

    def _elem(self, b: ir.IRBuilder, g: ir.Value, elem: ir.Type, index: ir.Value) -> ir.Value:
        return b.gep(g, [ir.Constant(I64, 0), b.sext(index, I64) if index.type != I64 else index],
                     source_etype=ir.ArrayType(elem, MAX_DEVICES))

    def _error_helper(self) -> ir.Function:
        """``__tirc_cuda_error(status, what, msg)``: "WHAT failed: NAME (CUresult S)" into
        ``msg`` (MSG_BYTES)."""
        f, b = self._helper("__tirc_cuda_error", ir.VoidType(), [I32, PTR, PTR], cold=True)
        if b is None:
            return f
        status, what, buf = f.args
        name_slot = b.alloca(PTR)
        b.store(self._string("an unknown CUDA error"), name_slot)
        fn_slot = b.gep(self.api, [ir.Constant(I64, 0), ir.Constant(I64, _API_INDEX["cuGetErrorName"])],
                        source_etype=self.api_type)
        have = b.icmp_unsigned("!=", b.load(fn_slot, typ=PTR), ir.Constant(PTR, None))
        with b.if_then(have):
            tmp = b.alloca(PTR)
            b.store(ir.Constant(PTR, None), tmp)
            r = self.api_call(b, "cuGetErrorName", [status, tmp])
            name = b.load(tmp, typ=PTR)
            ok = b.and_(b.icmp_signed("==", r, ir.Constant(I32, 0)),
                        b.icmp_unsigned("!=", name, ir.Constant(PTR, None)))
            with b.if_then(ok):
                b.store(name, name_slot)
        snprintf = self._declare("snprintf", I32, [PTR, I64, PTR], var_arg=True)
        b.call(snprintf, [buf, ir.Constant(I64, MSG_BYTES), self._string("%s failed: %s (CUresult %d)"),
                          what, b.load(name_slot, typ=PTR), status])
        b.ret_void()
        return f

    def _driver_helper(self) -> ir.Function:
        """``__tirc_cuda_driver(msg)`` (mutex held): dlopen + dlsym + cuInit once; 0, or
        -1 with the message in ``msg``."""
        f, b = self._helper("__tirc_cuda_driver", I32, [PTR], cold=True)
        if b is None:
            return f
        msg = f.args[0]
        loaded = b.icmp_unsigned("!=", b.load(self.lib, typ=PTR), ir.Constant(PTR, None))
        with b.if_then(loaded):
            b.ret(ir.Constant(I32, 0))
        handle = b.call(self._declare("dlopen", PTR, [PTR, I32]), [self._string(DRIVER), ir.Constant(I32, RTLD_NOW)])
        with b.if_then(b.icmp_unsigned("==", handle, ir.Constant(PTR, None)), likely=False):
            reason = b.call(self._declare("dlerror", PTR, []), [])
            no_reason = b.icmp_unsigned("==", reason, ir.Constant(PTR, None))
            reason = b.select(no_reason, self._string("not found"), reason)
            self._message(b, msg, NO_DRIVER + " (%s); GPU functions need an NVIDIA driver", [reason])
            b.ret(ir.Constant(I32, -1))
        # each entry point by name into its slot of the table, in a loop over a constant
        # array of the names (one call and one message for all of them)
        names_type = ir.ArrayType(PTR, len(_API))
        names = ir.GlobalVariable(self.module.ir, names_type, "__tirc_cuda_api_names")
        names.linkage, names.global_constant, names.align = "private", True, 8
        names.initializer = ir.Constant(names_type, [self._string(n) for n in _API])
        opaque(names, PTR)
        dlsym = self._declare("dlsym", PTR, [PTR, PTR])
        index = b.alloca(I64, name="api_index")
        b.store(ir.Constant(I64, 0), index)
        head, body, done = (f.append_basic_block(n) for n in ("dlsym_next", "dlsym", "dlsym_done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.load(index, typ=I64, name="i")
        b.cbranch(b.icmp_unsigned("<", i, ir.Constant(I64, len(_API))), body, done)
        b.position_at_end(body)
        name = b.load(b.gep(names, [ir.Constant(I64, 0), i], source_etype=names_type), typ=PTR,
                      name="name")
        p = b.call(dlsym, [handle, name])
        missing = b.and_(b.icmp_unsigned("==", p, ir.Constant(PTR, None)),
                         b.icmp_unsigned("<", i, ir.Constant(I64, _REQUIRED_API)))
        with b.if_then(missing, likely=False):
            self._message(b, msg, f"{NO_DRIVER}: it has no '%s' (the driver is too old)", [name])
            b.ret(ir.Constant(I32, -1))
        b.store(p, b.gep(self.api, [ir.Constant(I64, 0), i], source_etype=self.api_type))
        b.store(b.add(i, ir.Constant(I64, 1)), index)
        b.branch(head)
        b.position_at_end(done)
        r = self.api_call(b, "cuInit", [ir.Constant(I32, 0)])
        with b.if_then(b.icmp_signed("!=", r, ir.Constant(I32, 0)), likely=False):
            b.call(self.error_fn, [r, self._string("cuInit"), msg])
            b.ret(ir.Constant(I32, -1))
        b.store(handle, self.lib)
        b.ret(ir.Constant(I32, 0))
        return f

    def _load_helper(self, i: int) -> ir.Function:
        """``__tirc_cuda_load<i>(dev)``: module ``i`` loaded on device ``dev`` once, under
        the mutex; its functions published with a release store of the ready flag. A
        module with several images (one per arch) loads the one that fits the device's
        compute capability (``image_preference``), or fails naming the capability and
        the archs it has."""
        f, b = self._helper(f"__tirc_cuda_load{i}", I32, [I32, PTR], cold=True)
        if b is None:
            return f
        dev, msg = f.args
        dev.name, msg.name = "dev", "msg"
        fail = f.append_basic_block("fail")
        fail_popped = f.append_basic_block("fail_pop")
        self._lock(b, "lock")
        ready = self._elem(b, self.ready[i], I32, dev)
        done = b.icmp_signed("!=", b.load_atomic(ready, "monotonic", 4, typ=I32), ir.Constant(I32, 0))
        with b.if_then(done):
            self._lock(b, "unlock")
            b.ret(ir.Constant(I32, 0))
        r = b.call(self.driver_fn, [msg])
        b.cbranch(b.icmp_signed("!=", r, ir.Constant(I32, 0)), fail, b.append_basic_block("driver_ok"))
        b.position_at_end(f.blocks[-1])

        def check(status: ir.Value, what: "str | ir.Value", on_fail: ir.Block) -> None:
            bad = f.append_basic_block("bad")
            ok = f.append_basic_block("ok")
            b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), bad, ok)
            b.position_at_end(bad)
            b.call(self.error_fn, [status, self._string(what) if isinstance(what, str) else what, msg])
            b.branch(on_fail)
            b.position_at_end(ok)

        ctx_slot = self._retain_context(f, b, dev, check, fail)
        group = self.code.groups[i]
        if len(group) == 1:
            image, what = self.images[group[0]], self._string(
                f"cuModuleLoadData (the {self.code.labels[group[0]]} image)")
        else:
            image, what = self._select_image(f, b, group, dev, msg, fail, check)
        check(self.api_call(b, "cuCtxPushCurrent_v2", [b.load(ctx_slot, typ=PTR)]), "cuCtxPushCurrent", fail)
        mod = b.alloca(PTR)
        check(self.api_call(b, "cuModuleLoadData", [mod, image]), what, fail_popped)
        module = b.load(mod, typ=PTR)
        fn = b.alloca(PTR)
        for name, k in self.code.kernels.items():
            if k.image != i:
                continue
            check(self.api_call(b, "cuModuleGetFunction", [fn, module, self._string(k.symbol)]),
                  f"cuModuleGetFunction({k.symbol})", fail_popped)
            b.store(b.load(fn, typ=PTR), self._elem(b, self.funcs[name], PTR, dev))
        b.store(module, self._elem(b, self.modules[i], PTR, dev))
        old = b.alloca(PTR)
        check(self.api_call(b, "cuCtxPopCurrent_v2", [old]), "cuCtxPopCurrent", fail)
        store_atomic(b, ir.Constant(I32, 1), ready, "release", 4)
        self._lock(b, "unlock")
        b.ret(ir.Constant(I32, 0))
        b.position_at_end(fail_popped)
        self.api_call(b, "cuCtxPopCurrent_v2", [b.alloca(PTR)])
        b.branch(fail)
        b.position_at_end(fail)
        self._lock(b, "unlock")
        b.ret(ir.Constant(I32, -1))
        return f

    def _retain_context(self, f, b: ir.IRBuilder, dev, check, fail) -> ir.Value:
        """(Mutex held) device ``dev``'s primary context retained into its slot unless
        it is there already; the slot."""
        ctx_slot = self._elem(b, self.ctxs, PTR, dev)
        no_ctx = b.icmp_unsigned("==", b.load(ctx_slot, typ=PTR), ir.Constant(PTR, None))
        retain, have = f.append_basic_block("retain"), f.append_basic_block("have_ctx")
        b.cbranch(no_ctx, retain, have)
        b.position_at_end(retain)
        cudev = b.alloca(I32)
        check(self.api_call(b, "cuDeviceGet", [cudev, dev]), "cuDeviceGet", fail)
        ctx = b.alloca(PTR)
        check(self.api_call(b, "cuDevicePrimaryCtxRetain", [ctx, b.load(cudev, typ=I32)]),
              "cuDevicePrimaryCtxRetain", fail)
        b.store(b.load(ctx, typ=PTR), ctx_slot)
        b.branch(have)
        b.position_at_end(have)
        return ctx_slot

    def _alloc_helper(self) -> ir.Function:
        """``__tirc_cuda_alloc(dev, stream, nbytes, out, name, msg)``: ``nbytes`` of
        device ``dev``'s memory into ``*out``, ordered on ``stream``
        (``cuMemAllocAsync``: the kernels launched after it on the stream see it), in the
        device's primary context (retained here when no launch has yet); null for 0
        bytes. 0, or -1 with the message in ``msg`` (``name``: the buffer's)."""
        f, b = self._alloc_helper_start("__tirc_cuda_alloc")
        if b is None:
            return f
        dev, stream, nbytes, out, name, msg = f.args
        with b.if_then(b.icmp_unsigned(">=", dev, ir.Constant(I32, MAX_DEVICES)), likely=False):
            self._message(b, msg, "allocating buffer '%s': the device id is outside "
                          f"0..{MAX_DEVICES - 1}", [name])
            b.ret(ir.Constant(I32, -1))
        fail = f.append_basic_block("fail")
        what = b.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="what")

        def check(status: ir.Value, call: str, on_fail: ir.Block) -> None:
            bad, ok = f.append_basic_block("bad"), f.append_basic_block("ok")
            b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), bad, ok)
            b.position_at_end(bad)
            self._message(b, what, f"{call} (buffer '%s', %lld bytes)", [name, nbytes])
            b.call(self.error_fn, [status, what, msg])
            b.branch(on_fail)
            b.position_at_end(ok)

        self._lock(b, "lock")
        r = b.call(self.driver_fn, [msg])
        b.cbranch(b.icmp_signed("!=", r, ir.Constant(I32, 0)), fail, f.append_basic_block("driver_ok"))
        b.position_at_end(f.blocks[-1])
        ctx_slot = self._retain_context(f, b, dev, check, fail)
        self._lock(b, "unlock")
        slot = b.gep(self.api, [ir.Constant(I64, 0), ir.Constant(I64, _API_INDEX["cuMemAllocAsync"])],
                     source_etype=self.api_type)
        with b.if_then(b.icmp_unsigned("==", b.load(slot, typ=PTR), ir.Constant(PTR, None)),
                       likely=False):
            self._message(b, msg, "allocating buffer '%s' on the device: the CUDA driver has "
                          "no cuMemAllocAsync (CUDA 11.2)", [name])
            b.ret(ir.Constant(I32, -1))
        popped, unlocked = b.alloca(PTR), f.append_basic_block("fail_unlocked")
        check(self.api_call(b, "cuCtxPushCurrent_v2", [b.load(ctx_slot, typ=PTR)]),
              "cuCtxPushCurrent", unlocked)
        status = self.api_call(b, "cuMemAllocAsync", [out, nbytes, stream])
        self.api_call(b, "cuCtxPopCurrent_v2", [popped])
        check(status, "cuMemAllocAsync", unlocked)
        b.ret(ir.Constant(I32, 0))
        b.position_at_end(fail)
        self._lock(b, "unlock")
        b.branch(unlocked)
        b.position_at_end(unlocked)
        b.store(ir.Constant(PTR, None), out)
        b.ret(ir.Constant(I32, -1))
        return f

    def _free_helper(self) -> ir.Function:
        """``__tirc_cuda_free(dev, stream, p)``: device memory from ``__tirc_cuda_alloc``
        given back, ordered on ``stream`` after the kernels launched on it
        (``cuMemFreeAsync``); nothing for null. On the way out of a function, after
        its work is queued or on its failure path: a failure here is not reported."""
        f, b = self._free_helper_start("__tirc_cuda_free")
        if b is None:
            return f
        dev, stream, p = f.args
        ctx = b.load(self._elem(b, self.ctxs, PTR, dev), typ=PTR, name="ctx")
        pushed = self.api_call(b, "cuCtxPushCurrent_v2", [ctx])
        with b.if_then(b.icmp_signed("==", pushed, ir.Constant(I32, 0))):
            self.api_call(b, "cuMemFreeAsync", [p, stream])
            self.api_call(b, "cuCtxPopCurrent_v2", [b.alloca(PTR)])
        b.ret_void()
        return f

    def _select_image(self, f, b: ir.IRBuilder, group: tuple[int, ...], dev, msg, fail, check):
        """The image of ``group`` that fits device ``dev`` (its compute capability from
        cuDeviceGetAttribute) and the text for a failing cuModuleLoadData; no fit: the
        message in ``msg`` and a branch to ``fail``."""
        cudev, major, minor = b.alloca(I32), b.alloca(I32), b.alloca(I32)
        check(self.api_call(b, "cuDeviceGet", [cudev, dev]), "cuDeviceGet", fail)
        for slot, attr in ((major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                           (minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)):
            check(self.api_call(b, "cuDeviceGetAttribute", [slot, ir.Constant(I32, attr),
                                                            b.load(cudev, typ=I32)]),
                  "cuDeviceGetAttribute(COMPUTE_CAPABILITY)", fail)
        maj, mnr = b.load(major, typ=I32, name="cc_major"), b.load(minor, typ=I32, name="cc_minor")
        cc = b.add(b.mul(maj, ir.Constant(I32, 10)), mnr, name="cc")
        image_slot, what_slot = b.alloca(PTR), b.alloca(PTR)
        chosen = f.append_basic_block("image_chosen")
        archs = [self.code.archs[j] for j in group]
        for k, rule, want_major, want_minor in image_preference(archs):
            j = group[k]
            if rule == "exact":
                ok = b.and_(b.icmp_signed("==", maj, ir.Constant(I32, want_major)),
                            b.icmp_signed("==", mnr, ir.Constant(I32, want_minor)))
            elif rule == "major":
                ok = b.and_(b.icmp_signed("==", maj, ir.Constant(I32, want_major)),
                            b.icmp_signed(">=", mnr, ir.Constant(I32, want_minor)))
            else:
                ok = b.icmp_signed(">=", cc, ir.Constant(I32, want_major * 10 + want_minor))
            take, nxt = f.append_basic_block("image_take"), f.append_basic_block("image_next")
            b.cbranch(ok, take, nxt)
            b.position_at_end(take)
            b.store(self.images[j], image_slot)
            b.store(self._string(f"cuModuleLoadData (the {self.code.labels[j]} image)"), what_slot)
            b.branch(chosen)
            b.position_at_end(nxt)
        have = ", ".join(self.code.labels[j] for j in group)
        self._message(b, msg, "no device image of this module fits device %d (compute "
                      f"capability %d.%d); it has images for {have}", [dev, maj, mnr])
        b.branch(fail)
        b.position_at_end(chosen)
        return b.load(image_slot, typ=PTR), b.load(what_slot, typ=PTR)

    def _launch_helper(self) -> ir.Function:
        """``__tirc_cuda_launch(funcs, ready, load, dev, stream, gx, gy, gz, bx, by, bz,
        dyn, params, attrs, nattrs, no_ex, name, symbol, msg)``: one launch of the kernel
        whose per-device ``CUfunction``s are ``funcs``, from the image whose ready flags
        are ``ready`` and loader ``load``: nothing for an empty grid; the device id
        checked, the image loaded on first use, the context pushed; the kernel's dynamic
        shared memory limit raised (``cuFuncSetAttribute``) when ``dyn`` exceeds 48 KiB;
        ``cuLaunchKernel``, or ``cuLaunchKernelEx`` with the ``nattrs`` launch attributes
        ``attrs`` (``no_ex``: the message when the driver lacks it); the context popped.
        0, or -1 with the message in ``msg`` (``name``: the kernel's TIR name,
        ``symbol``: its entry). Every launch is a call of it."""
        args = [PTR, PTR, PTR, I32, PTR] + [I32] * 7 + [PTR, PTR, I32, PTR, PTR, PTR, PTR]
        f, b = self._helper("__tirc_cuda_launch", I32, args)
        if b is None:
            return f
        names = ("funcs", "ready", "load", "dev", "stream", "gx", "gy", "gz", "bx", "by", "bz",
                 "dyn", "params", "attrs", "nattrs", "no_ex", "name", "symbol", "msg")
        for arg, n in zip(f.args, names):
            arg.name = n
        funcs, ready, load, dev, stream = f.args[:5]
        dims = list(f.args[5:11])
        dyn, params, attrs, nattrs, no_ex, name, symbol, msg = f.args[11:]
        grid = b.mul(b.mul(dims[0], dims[1]), dims[2])
        block = b.mul(b.mul(dims[3], dims[4]), dims[5])
        empty = b.or_(b.icmp_unsigned("==", grid, ir.Constant(I32, 0)),
                      b.icmp_unsigned("==", block, ir.Constant(I32, 0)))
        with b.if_then(empty, likely=False):
            b.ret(ir.Constant(I32, 0))
        with b.if_then(b.icmp_unsigned(">=", dev, ir.Constant(I32, MAX_DEVICES)), likely=False):
            self._message(b, msg, "launching kernel '%s': the device id is outside "
                          f"0..{MAX_DEVICES - 1}", [name])
            b.ret(ir.Constant(I32, -1))
        slot = b.gep(ready, [b.zext(dev, I64)], source_etype=I32)
        is_ready = b.icmp_signed("!=", b.load_atomic(slot, "acquire", 4, typ=I32), ir.Constant(I32, 0))
        with b.if_then(b.not_(is_ready), likely=False):
            load_slot = b.alloca(PTR)  # call_pointer calls a loaded pointer
            b.store(load, load_slot)
            r = call_pointer(b, b.load(load_slot, typ=PTR), ir.FunctionType(I32, [I32, PTR]),
                             [dev, msg])
            with b.if_then(b.icmp_signed("!=", r, ir.Constant(I32, 0)), likely=False):
                b.ret(ir.Constant(I32, -1))
        func = b.load(b.gep(funcs, [b.zext(dev, I64)], source_etype=PTR), typ=PTR, name="func")
        ctx = b.load(self._elem(b, self.ctxs, PTR, dev), typ=PTR, name="ctx")
        popped = b.alloca(PTR)
        what = b.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="what")

        def check(status: ir.Value, what_text: str, pop: bool) -> None:
            """A failed driver call: "WHAT failed: ..." (``what_text``, ``%s`` the
            kernel's symbol) in ``msg``, the context popped when ``pop``, -1."""
            with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
                if "%s" in what_text:
                    self._message(b, what, what_text, [symbol])
                    b.call(self.error_fn, [status, what, msg])
                else:
                    b.call(self.error_fn, [status, self._string(what_text), msg])
                if pop:
                    self.api_call(b, "cuCtxPopCurrent_v2", [popped])
                b.ret(ir.Constant(I32, -1))

        check(self.api_call(b, "cuCtxPushCurrent_v2", [ctx]), "cuCtxPushCurrent", False)
        big = b.icmp_unsigned(">", dyn, ir.Constant(I32, DYN_SHMEM_DEFAULT_LIMIT))
        with b.if_then(big, likely=False):
            r = self.api_call(b, "cuFuncSetAttribute", [
                func, ir.Constant(I32, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), dyn])
            check(r, "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES)", True)
        with b.if_else(b.icmp_unsigned("==", nattrs, ir.Constant(I32, 0))) as (plain, ex):
            with plain:
                r = self.api_call(b, "cuLaunchKernel", [func, *dims, dyn, stream, params,
                                                        ir.Constant(PTR, None)])
                check(r, "cuLaunchKernel(%s)", True)
            with ex:
                slot = b.gep(self.api, [ir.Constant(I64, 0),
                                        ir.Constant(I64, _API_INDEX["cuLaunchKernelEx"])],
                             source_etype=self.api_type)
                with b.if_then(b.icmp_unsigned("==", b.load(slot, typ=PTR),
                                               ir.Constant(PTR, None)), likely=False):
                    self._message(b, msg, "%s", [no_ex])
                    self.api_call(b, "cuCtxPopCurrent_v2", [popped])
                    b.ret(ir.Constant(I32, -1))
                config = opaque(b.alloca(_LAUNCH_CONFIG, name="launch_config"), PTR)
                for i, v in enumerate([*dims, dyn, stream, attrs, nattrs]):
                    b.store(v, b.gep(config, [ir.Constant(I64, 0), ir.Constant(I32, i)],
                                     source_etype=_LAUNCH_CONFIG))
                r = self.api_call(b, "cuLaunchKernelEx", [config, func, params,
                                                          ir.Constant(PTR, None)])
                check(r, "cuLaunchKernelEx(%s)", True)
        check(self.api_call(b, "cuCtxPopCurrent_v2", [popped]), "cuCtxPopCurrent", False)
        b.ret(ir.Constant(I32, 0))
        return f

    # -- one launch ----------------------------------------------------------------------
    def launch(self, fl, call: Call, device_type: ir.Value | None, device_id: ir.Value | None) -> ir.Value:
        name, kernel, nargs, tags, all_tags = self._launch_call(fl, call)
        flags = [t for t in LAUNCH_FLAGS if t in all_tags]
        b = fl.b
        # kernel arguments, each in a stack slot, and the array of their addresses
        values = self._argument_values(fl, call, kernel, nargs)
        dims, dyn = self._launch_sizes(fl, call, tags, nargs)
        dev = (fl.int_cast(device_id, I32) if device_id is not None else ir.Constant(I32, 0))
        dtype_v = (fl.int_cast(device_type, I32) if device_type is not None else ir.Constant(I32, KDL_CUDA))
        msg = fl.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="cuda_msg")
        stream = self._env_stream(fl, dtype_v, dev)
        params = self._params(fl, name, values)
        attrs, no_ex = ir.Constant(PTR, None), ir.Constant(PTR, None)
        if flags:
            attrs = self._launch_attributes(fl, kernel.symbol, flags)
            no_ex = fl.string(f"launching kernel '{kernel.symbol}': the CUDA driver has no "
                              "cuLaunchKernelEx (CUDA 12), which its "
                              + " and ".join(_LAUNCH_KIND[f] for f in flags) + " needs")
        # the loader's address, as a ptr (llvmlite types a function's address as a typed
        # pointer)
        loader = formatted_constant(PTR, self.load_fns[kernel.image].get_reference())
        r = b.call(self.launch_fn, [self._func_slots(name), self.ready[kernel.image], loader,
                                    dev, stream, *dims, dyn, params, attrs,
                                    ir.Constant(I32, len(flags)), no_ex, fl.string(name),
                                    fl.string(kernel.symbol), msg])
        self._check_or_fail(fl, b.icmp_signed("==", r, ir.Constant(I32, 0)), msg)
        return ir.Constant(I32, 0)

    allocate = LauncherSupport.allocate_on_stream

    def _params(self, fl, name: str, values: list[ir.Value]) -> ir.Value:
        """The kernel arguments, each in a stack slot, and the array of their addresses
        that ``cuLaunchKernel`` takes."""
        b = fl.b
        array_t = ir.ArrayType(PTR, max(len(values), 1))
        params = fl.alloca(array_t, name=f"{name}.args")
        for i, v in enumerate(values):
            slot = fl.alloca(v.type, name=f"{name}.arg{i}")
            b.store(v, slot)
            b.store(slot, b.gep(params, [ir.Constant(I64, 0), ir.Constant(I64, i)],
                                source_etype=array_t))
        return params

    def _launch_attributes(self, fl, symbol: str, flags: list[str]) -> ir.Value:
        """The launch attributes of ``cuLaunchKernelEx``, one set to 1 for each of
        ``flags`` (programmatic dependent launch, cooperative launch), as TVM's CUDA
        runtime launches them."""
        b = fl.b
        array_t = ir.ArrayType(_LAUNCH_ATTR, len(flags))
        attrs = fl.alloca(array_t, name=f"{symbol}.launch_attrs")
        for i, flag in enumerate(flags):
            item = [ir.Constant(I64, 0), ir.Constant(I64, i)]
            b.store(ir.Constant(_LAUNCH_ATTR, None), b.gep(attrs, item, source_etype=array_t))
            b.store(ir.Constant(I32, LAUNCH_ATTRIBUTE[flag]),
                    b.gep(attrs, item + [ir.Constant(I32, 0)], source_etype=array_t))
            b.store(ir.Constant(I64, 1),  # the value's first int: 1
                    b.gep(attrs, item + [ir.Constant(I32, 2), ir.Constant(I64, 0)],
                          source_etype=array_t))
        return attrs

