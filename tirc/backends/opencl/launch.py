"""The host side of an OpenCL kernel launch: ``T.call_ffi_kernel`` in host code, lowered to
OpenCL API calls with llvmlite's IRBuilder (reached from the shared lowering through
``CPUContext.lower_call``, as the CUDA launches are).

What the host object gets:

* each device module's OpenCL C source, NUL-terminated, as a private constant
  ``__tirc_ocl_image<i>``;
* the OpenCL API, found at first use: the entry points of an OpenCL loader already in the
  process's global scope (``dlopen(NULL)``: the one ``tirc.runtime`` loaded, which may be
  the ``pyopencl`` wheel's), else ``dlopen("libOpenCL.so.1")``; looked up with ``dlsym``
  into ``__tirc_ocl_api``, so the library loads and its CPU functions run where there is
  no OpenCL, and the object needs only libc, libdl and libpthread;
* a cache, per image, of up to 16 OpenCL contexts: the program built from the source for
  the context's device at the first launch in it (``clCreateProgramWithSource``,
  ``clBuildProgram``) and each kernel's ``cl_kernel`` (``clCreateKernel``);
* at each launch, under one ``pthread_mutex_t`` (``clSetKernelArg`` changes the shared
  ``cl_kernel``): the command queue is tvm-ffi's environment stream for the device
  (``TVMFFIEnvGetStream(kDLOpenCL, device_id)``) when one is set, and the launch is
  queued on it; otherwise the context is the first buffer argument's
  (``clGetMemObjectInfo(CL_MEM_CONTEXT)``), the queue one the library keeps for that
  context, and the launch waits for the kernel (``clFinish``). Arguments go in with
  ``clSetKernelArg`` (a buffer is its ``cl_mem``, the DLTensor's data pointer), dynamic
  local memory as a trailing ``__local`` argument of its size, and
  ``clEnqueueNDRangeKernel`` runs global = grid x block work-items in work-groups of
  block. A launch with an empty grid does nothing.

Every API call is checked; a failure raises RuntimeError the way the calling function
raises errors, with the call, the OpenCL error name and the status (a failed build adds the
driver's build log), and the function returns -1: never ``exit()``, never a crash.
"""
from __future__ import annotations

from dataclasses import field

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.launch_support import LauncherSupport
from tirc.backends.llvm.llvmlite_compat import call_pointer, opaque
from tirc.backends.llvm.text import bytes_constant
from tirc.ir.attrs import is_kernel
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call
from tirc.ir.function import IRModule
from tirc.records import record

MAX_CONTEXTS = 16
RTLD_NOW = 2
KDL_OPENCL = 4
LOADER = "libOpenCL.so.1"
NO_LOADER = f"the OpenCL loader ({LOADER}) could not be loaded"
MSG_BYTES = 1024
CL_QUEUE_CONTEXT, CL_QUEUE_DEVICE = 0x1090, 0x1091
CL_MEM_CONTEXT = 0x1106
CL_MEM_READ_WRITE = 1
CL_CONTEXT_DEVICES = 0x1081
CL_PROGRAM_BUILD_LOG = 0x1183
MAX_CONTEXT_DEVICES = 64

PTR = ir.PointerType()
I32, I64 = lt.I32, lt.I64
# The API entry points: (dlsym name, return type, parameter types)
_API: dict[str, tuple[ir.Type, list[ir.Type]]] = {
    "clGetCommandQueueInfo": (I32, [PTR, I32, I64, PTR, PTR]),
    "clGetMemObjectInfo": (I32, [PTR, I32, I64, PTR, PTR]),
    "clGetContextInfo": (I32, [PTR, I32, I64, PTR, PTR]),
    "clCreateCommandQueue": (PTR, [PTR, PTR, I64, PTR]),
    "clCreateProgramWithSource": (PTR, [PTR, I32, PTR, PTR, PTR]),
    "clBuildProgram": (I32, [PTR, I32, PTR, PTR, PTR, PTR]),
    "clGetProgramBuildInfo": (I32, [PTR, PTR, I32, I64, PTR, PTR]),
    "clReleaseProgram": (I32, [PTR]),
    "clCreateKernel": (PTR, [PTR, PTR, PTR]),
    "clSetKernelArg": (I32, [PTR, I32, I64, PTR]),
    "clEnqueueNDRangeKernel": (I32, [PTR, PTR, I32, PTR, PTR, PTR, I32, PTR, PTR]),
    "clFinish": (I32, [PTR]),
    "clCreateBuffer": (PTR, [PTR, I64, I64, PTR, PTR]),
    "clReleaseMemObject": (I32, [PTR]),
}
_API_INDEX = {name: i for i, name in enumerate(_API)}
# cl_int status names (CL/cl.h), by -status
_ERRORS = {
    1: "CL_DEVICE_NOT_FOUND", 2: "CL_DEVICE_NOT_AVAILABLE", 3: "CL_COMPILER_NOT_AVAILABLE",
    4: "CL_MEM_OBJECT_ALLOCATION_FAILURE", 5: "CL_OUT_OF_RESOURCES", 6: "CL_OUT_OF_HOST_MEMORY",
    11: "CL_BUILD_PROGRAM_FAILURE", 30: "CL_INVALID_VALUE", 32: "CL_INVALID_PLATFORM",
    33: "CL_INVALID_DEVICE", 34: "CL_INVALID_CONTEXT", 36: "CL_INVALID_COMMAND_QUEUE",
    38: "CL_INVALID_MEM_OBJECT", 44: "CL_INVALID_PROGRAM", 45: "CL_INVALID_PROGRAM_EXECUTABLE",
    46: "CL_INVALID_KERNEL_NAME", 47: "CL_INVALID_KERNEL_DEFINITION", 48: "CL_INVALID_KERNEL",
    49: "CL_INVALID_ARG_INDEX", 50: "CL_INVALID_ARG_VALUE", 51: "CL_INVALID_ARG_SIZE",
    52: "CL_INVALID_KERNEL_ARGS", 53: "CL_INVALID_WORK_DIMENSION",
    54: "CL_INVALID_WORK_GROUP_SIZE", 55: "CL_INVALID_WORK_ITEM_SIZE",
    56: "CL_INVALID_GLOBAL_OFFSET", 58: "CL_INVALID_EVENT", 59: "CL_INVALID_OPERATION",
    61: "CL_INVALID_BUFFER_SIZE", 63: "CL_INVALID_GLOBAL_WORK_SIZE",
}
_ERROR_SLOTS = max(_ERRORS) + 1


@record(frozen=True)
class Kernel:
    image: int  # index into OpenCLCode.images
    symbol: str
    params: tuple[DataType, ...]


@record
class OpenCLCode:
    """The OpenCL C sources a host module launches from, and where each kernel lives."""

    images: list[bytes] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    kernels: dict[str, Kernel] = field(default_factory=dict)  # by TIR function name
    filled: int = 0

    def launcher(self, module) -> "OpenCLLauncher":
        return OpenCLLauncher(module, self)

    def add_variants(self, mod: IRModule, symbols: tuple[str, ...],
                     variants: list[tuple[bytes, str, str]]) -> None:
        """One device module's source (one variant: OpenCL C has no per-arch images)."""
        if self.filled < len(self.images):
            group = self.filled
            announced = tuple(k.symbol for k in self.kernels.values() if k.image == group)
            if announced != tuple(symbols):
                raise AssertionError(f"device module {group} announced kernels {announced}, "
                                     f"compiled {tuple(symbols)}")
        else:
            group = self.expect(mod, symbols)
        (data, _fmt, label), = variants
        self.images[group] = data + b"\0"
        self.labels[group] = label
        self.filled += 1

    def expect(self, mod: IRModule, symbols: tuple[str, ...]) -> int:
        group = len(self.images)
        self.images.append(b"\0")
        self.labels.append("")
        names = [n for n, f in mod.functions.items() if is_kernel(f)]
        for name, symbol in zip(names, symbols):
            self.kernels[name] = Kernel(group, symbol, tuple(p.dtype for p in mod.functions[name].params))
        return group


def _arg_type(dtype: DataType) -> DataType:
    """How a scalar kernel argument is passed: a bool as an int (OpenCL kernels take no
    bool arguments)."""
    return DataType("int32") if dtype.is_bool else dtype


class OpenCLLauncher(LauncherSupport):
    """The launch support of one host LLVM module, created at its first launch; a chunk
    that is not the owner (:mod:`tirc.backends.cpu.chunks`) only declares it."""

    msg_bytes = MSG_BYTES
    label = "ocl"

    def __init__(self, module, code: OpenCLCode):
        self.module, self.code = module, code
        self.declare_only = module.ctx.share == "declare"
        m = module.ir
        self.mutex = self._global("__tirc_ocl_mutex", ir.ArrayType(lt.I8, 64), 16)
        self.lib = self._global("__tirc_ocl_lib", PTR, 8)
        self.api = self._global("__tirc_ocl_api", ir.ArrayType(PTR, len(_API)), 8)
        self.queue_ctx = self._global("__tirc_ocl_queue_ctx", ir.ArrayType(PTR, MAX_CONTEXTS), 8)
        self.queues = self._global("__tirc_ocl_queue", ir.ArrayType(PTR, MAX_CONTEXTS), 8)
        self.images = []  # the sources, defined by the owner chunk, declared by the others
        for i, data in enumerate(code.images):
            ty = ir.ArrayType(lt.I8, len(data))
            g = ir.GlobalVariable(m, ty, f"__tirc_ocl_image{i}")
            g.align = 16
            if not self.declare_only:
                g.linkage, g.global_constant = module.ctx.module_wide(g.name), True
                g.initializer = bytes_constant(ty, bytes(data))
            opaque(g, PTR)
            self.images.append(g)
        slots = ir.ArrayType(PTR, MAX_CONTEXTS)
        self.contexts = [self._global(f"__tirc_ocl_ctx{i}", slots, 8) for i in range(len(code.images))]
        self.programs = [self._global(f"__tirc_ocl_prog{i}", slots, 8) for i in range(len(code.images))]
        self.kernel_slots: dict[str, ir.GlobalVariable] = {}
        for name in code.kernels if not self.declare_only else ():
            self._kernel_slots(name)
        self.error_fn = self._error_helper()
        self.driver_fn = self._driver_helper()
        self.launch_fn = self._launch_helper()

    # -- module-level pieces -------------------------------------------------------------
    def _kernel_slots(self, name: str) -> ir.GlobalVariable:
        if name not in self.kernel_slots:
            self.kernel_slots[name] = self._global(f"__tirc_ocl_kernel.{name}",
                                                   ir.ArrayType(PTR, MAX_CONTEXTS), 8)
        return self.kernel_slots[name]

    def api_call(self, b, name: str, args: list[ir.Value]) -> ir.Value:
        slot = b.gep(self.api, [ir.Constant(I64, 0), ir.Constant(I64, _API_INDEX[name])],
                     source_etype=ir.ArrayType(PTR, len(_API)))
        fn = b.load(slot, typ=PTR, name=name)
        ret, params = _API[name]
        return call_pointer(b, fn, ir.FunctionType(ret, params), args)

    def _slot(self, b, g: ir.Value, index: ir.Value) -> ir.Value:
        return b.gep(g, [ir.Constant(I64, 0), index], source_etype=ir.ArrayType(PTR, MAX_CONTEXTS))

    def _error_helper(self) -> ir.Function:
        """``__tirc_ocl_error(status, what, msg)``: "WHAT failed: NAME (cl_int S)" into
        ``msg``."""
        f, b = self._helper("__tirc_ocl_error", ir.VoidType(), [I32, PTR, PTR])
        if b is None:
            return f
        status, what, buf = f.args
        names_t = ir.ArrayType(PTR, _ERROR_SLOTS)
        names = ir.GlobalVariable(self.module.ir, names_t, "__tirc_ocl_error_names")
        names.linkage, names.global_constant, names.align = "private", True, 8
        unknown = self._string("an unknown OpenCL error")
        names.initializer = ir.Constant(names_t, [self._string(_ERRORS[i]) if i in _ERRORS
                                                  else unknown for i in range(_ERROR_SLOTS)])
        opaque(names, PTR)
        neg = b.sub(ir.Constant(I32, 0), status)
        known = b.and_(b.icmp_signed(">", neg, ir.Constant(I32, 0)),
                       b.icmp_signed("<", neg, ir.Constant(I32, _ERROR_SLOTS)))
        index = b.select(known, neg, ir.Constant(I32, 0))
        name = b.load(b.gep(names, [ir.Constant(I64, 0), b.zext(index, I64)], source_etype=names_t),
                      typ=PTR)
        snprintf = self._declare("snprintf", I32, [PTR, I64, PTR], var_arg=True)
        b.call(snprintf, [buf, ir.Constant(I64, MSG_BYTES), self._string("%s failed: %s (cl_int %d)"),
                          what, name, status])
        b.ret_void()
        return f

    def _driver_helper(self) -> ir.Function:
        """``__tirc_ocl_driver(msg)`` (mutex held): the OpenCL API found once; 0, or -1
        with the message in ``msg``."""
        f, b = self._helper("__tirc_ocl_driver", I32, [PTR])
        if b is None:
            return f
        msg = f.args[0]
        with b.if_then(b.icmp_unsigned("!=", b.load(self.lib, typ=PTR), ir.Constant(PTR, None))):
            b.ret(ir.Constant(I32, 0))
        dlopen = self._declare("dlopen", PTR, [PTR, I32])
        dlsym = self._declare("dlsym", PTR, [PTR, PTR])
        handle_slot = b.alloca(PTR)
        own = b.call(dlopen, [ir.Constant(PTR, None), ir.Constant(I32, RTLD_NOW)])
        b.store(own, handle_slot)
        in_process = b.icmp_unsigned("!=", b.call(dlsym, [own, self._string("clGetPlatformIDs")]),
                                     ir.Constant(PTR, None))
        with b.if_then(b.not_(in_process)):
            h = b.call(dlopen, [self._string(LOADER), ir.Constant(I32, RTLD_NOW)])
            with b.if_then(b.icmp_unsigned("==", h, ir.Constant(PTR, None)), likely=False):
                reason = b.call(self._declare("dlerror", PTR, []), [])
                reason = b.select(b.icmp_unsigned("==", reason, ir.Constant(PTR, None)),
                                  self._string("not found"), reason)
                self._message(b, msg, NO_LOADER + " (%s); OpenCL functions need an OpenCL "
                              "driver (an ICD such as pocl)", [reason])
                b.ret(ir.Constant(I32, -1))
            b.store(h, handle_slot)
        handle = b.load(handle_slot, typ=PTR)
        for i, name in enumerate(_API):
            p = b.call(dlsym, [handle, self._string(name)])
            with b.if_then(b.icmp_unsigned("==", p, ir.Constant(PTR, None)), likely=False):
                self._message(b, msg, f"{NO_LOADER}: it has no '{name}'", [])
                b.ret(ir.Constant(I32, -1))
            b.store(p, b.gep(self.api, [ir.Constant(I64, 0), ir.Constant(I64, i)],
                             source_etype=ir.ArrayType(PTR, len(_API))))
        b.store(handle, self.lib)
        b.ret(ir.Constant(I32, 0))
        return f

    def _locked_with_driver(self, f, b, msg) -> tuple[ir.Block, ir.Value]:
        """A helper's start: the lock taken and the OpenCL API found (else to the
        returned ``fail`` block, which the helper fills: unlock, -1), and a message
        buffer for the failing call's name."""
        fail = f.append_basic_block("fail")
        self._lock(b, "lock")
        ok = f.append_basic_block("driver_ok")
        b.cbranch(b.icmp_signed("!=", b.call(self.driver_fn, [msg]), ir.Constant(I32, 0)), fail, ok)
        b.position_at_end(ok)
        return fail, opaque(b.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="what"), PTR)

    def _launch_helper(self) -> ir.Function:
        """``__tirc_ocl_launch(source, contexts, programs, kernels, symbol, queue, mem,
        nargs, sizes, values, gx, gy, gz, bx, by, bz, dyn, msg)``: one launch; 0, or -1
        with the message in ``msg``."""
        args = [PTR, PTR, PTR, PTR, PTR, PTR, PTR, I32, PTR, PTR] + [I32] * 7 + [PTR]
        f, b = self._helper("__tirc_ocl_launch", I32, args)
        if b is None:
            return f
        names = ("source", "contexts", "programs", "kernels", "symbol", "queue", "mem", "nargs",
                 "sizes", "values", "gx", "gy", "gz", "bx", "by", "bz", "dyn", "msg")
        for arg, n in zip(f.args, names):
            arg.name = n
        source, contexts, programs, kernels, symbol, queue_in, mem, nargs, sizes, values = f.args[:10]
        dims = list(f.args[10:16])
        dyn, msg = f.args[16], f.args[17]
        null = ir.Constant(PTR, None)
        zero = ir.Constant(I32, 0)
        grid = b.mul(b.mul(dims[0], dims[1]), dims[2])
        block = b.mul(b.mul(dims[3], dims[4]), dims[5])
        with b.if_then(b.or_(b.icmp_unsigned("==", grid, zero), b.icmp_unsigned("==", block, zero)),
                       likely=False):
            b.ret(zero)
        fail, what = self._locked_with_driver(f, b, msg)

        def check(status: ir.Value, text: str) -> None:
            bad, good = f.append_basic_block("bad"), f.append_basic_block("ok")
            b.cbranch(b.icmp_signed("!=", status, zero), bad, good)
            b.position_at_end(bad)
            if "%s" in text:
                self._message(b, what, text, [symbol])
                b.call(self.error_fn, [status, what, msg])
            else:
                b.call(self.error_fn, [status, self._string(text), msg])
            b.branch(fail)
            b.position_at_end(good)

        ctx_slot, dev_slot, queue_slot = b.alloca(PTR), b.alloca(PTR), b.alloca(PTR)
        err = b.alloca(I32)
        b.store(queue_in, queue_slot)
        given = b.icmp_unsigned("!=", queue_in, null)
        with b.if_else(given) as (with_queue, without):
            with with_queue:
                check(self.api_call(b, "clGetCommandQueueInfo", [queue_in, ir.Constant(I32, CL_QUEUE_CONTEXT),
                                                                 ir.Constant(I64, 8), ctx_slot, null]),
                      "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)")
                check(self.api_call(b, "clGetCommandQueueInfo", [queue_in, ir.Constant(I32, CL_QUEUE_DEVICE),
                                                                 ir.Constant(I64, 8), dev_slot, null]),
                      "clGetCommandQueueInfo(CL_QUEUE_DEVICE)")
            with without:
                no_mem = f.append_basic_block("no_mem")
                has_mem = f.append_basic_block("has_mem")
                b.cbranch(b.icmp_unsigned("==", mem, null), no_mem, has_mem)
                b.position_at_end(no_mem)
                self._message(b, msg, "launching OpenCL kernel '%s': no command queue is set for "
                              "the device (tvm-ffi's stream) and no buffer argument gives the "
                              "context", [symbol])
                b.branch(fail)
                b.position_at_end(has_mem)
                check(self.api_call(b, "clGetMemObjectInfo", [mem, ir.Constant(I32, CL_MEM_CONTEXT),
                                                              ir.Constant(I64, 8), ctx_slot, null]),
                      "clGetMemObjectInfo(CL_MEM_CONTEXT) of the first buffer of kernel %s")
                self._own_queue(f, b, ctx_slot, dev_slot, queue_slot, err, msg, fail, check)
        ctx, dev = b.load(ctx_slot, typ=PTR, name="ctx"), b.load(dev_slot, typ=PTR, name="dev")
        queue = b.load(queue_slot, typ=PTR, name="queue")
        # the context's slot in this image's cache, building the program there the first time
        index = self._find_slot(f, b, contexts, ctx, msg, fail,
                                "more than 16 OpenCL contexts launched kernels of one module")
        prog_slot = self._slot(b, programs, index)
        with b.if_then(b.icmp_unsigned("==", b.load(prog_slot, typ=PTR), null), likely=False):
            src_slot, len_slot = b.alloca(PTR), b.alloca(I64)
            b.store(source, src_slot)
            b.store(b.call(self._declare("strlen", I64, [PTR]), [source]), len_slot)
            prog = self.api_call(b, "clCreateProgramWithSource", [ctx, ir.Constant(I32, 1), src_slot,
                                                                  len_slot, err])
            check(b.load(err, typ=I32), "clCreateProgramWithSource")
            devs = b.alloca(PTR)
            b.store(dev, devs)
            status = self.api_call(b, "clBuildProgram", [prog, ir.Constant(I32, 1), devs,
                                                         self._string(""), null, null])
            with b.if_then(b.icmp_signed("!=", status, zero), likely=False):
                log = opaque(b.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="build_log"), PTR)
                b.store(ir.Constant(lt.I8, 0), b.gep(log, [ir.Constant(I64, 0), ir.Constant(I64, 0)],
                                                     source_etype=ir.ArrayType(lt.I8, MSG_BYTES)))
                self.api_call(b, "clGetProgramBuildInfo", [prog, dev, ir.Constant(I32, CL_PROGRAM_BUILD_LOG),
                                                           ir.Constant(I64, MSG_BYTES - 1), log, null])
                b.store(ir.Constant(lt.I8, 0), b.gep(log, [ir.Constant(I64, 0), ir.Constant(I64, MSG_BYTES - 1)],
                                                     source_etype=ir.ArrayType(lt.I8, MSG_BYTES)))
                b.call(self.error_fn, [status, self._string("clBuildProgram"), what])
                self._message(b, msg, "%s, building the OpenCL C of kernel '%s': %s", [what, symbol, log])
                self.api_call(b, "clReleaseProgram", [prog])
                b.branch(fail)
                b.position_at_end(b.append_basic_block("built"))
            b.store(prog, prog_slot)
            b.store(ctx, self._slot(b, contexts, index))
        kernel_slot = self._slot(b, kernels, index)
        with b.if_then(b.icmp_unsigned("==", b.load(kernel_slot, typ=PTR), null), likely=False):
            k = self.api_call(b, "clCreateKernel", [b.load(prog_slot, typ=PTR), symbol, err])
            check(b.load(err, typ=I32), "clCreateKernel(%s)")
            b.store(k, kernel_slot)
        kernel = b.load(kernel_slot, typ=PTR, name="kernel")
        # the arguments, then the dynamic local memory
        i_slot = b.alloca(I32)
        b.store(zero, i_slot)
        head, body, done = (f.append_basic_block(n) for n in ("arg_next", "arg", "args_done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.load(i_slot, typ=I32)
        b.cbranch(b.icmp_signed("<", i, nargs), body, done)
        b.position_at_end(body)
        i64 = b.zext(i, I64)
        size = b.load(b.gep(sizes, [i64], source_etype=I64), typ=I64)
        value = b.load(b.gep(values, [i64], source_etype=PTR), typ=PTR)
        check(self.api_call(b, "clSetKernelArg", [kernel, i, size, value]), "clSetKernelArg(%s)")
        b.store(b.add(i, ir.Constant(I32, 1)), i_slot)
        b.branch(head)
        b.position_at_end(done)
        with b.if_then(b.icmp_signed(">=", dyn, zero)):
            check(self.api_call(b, "clSetKernelArg", [kernel, nargs, b.zext(dyn, I64), null]),
                  "clSetKernelArg(%s, dynamic local memory)")
        sizes_t = ir.ArrayType(I64, 3)
        global_size = opaque(b.alloca(sizes_t, name="global"), PTR)
        local_size = opaque(b.alloca(sizes_t, name="local"), PTR)
        for d in range(3):
            at = [ir.Constant(I64, 0), ir.Constant(I64, d)]
            blk = b.zext(dims[3 + d], I64)
            b.store(b.mul(b.zext(dims[d], I64), blk), b.gep(global_size, at, source_etype=sizes_t))
            b.store(blk, b.gep(local_size, at, source_etype=sizes_t))
        check(self.api_call(b, "clEnqueueNDRangeKernel", [queue, kernel, ir.Constant(I32, 3), null,
                                                          global_size, local_size, zero, null, null]),
              "clEnqueueNDRangeKernel(%s)")
        with b.if_then(b.not_(given)):
            check(self.api_call(b, "clFinish", [queue]), "clFinish after kernel %s")
        self._lock(b, "unlock")
        b.ret(zero)
        b.position_at_end(fail)
        self._lock(b, "unlock")
        b.ret(ir.Constant(I32, -1))
        return f

    def _alloc_helper(self) -> ir.Function:
        """``__tirc_ocl_alloc(queue, mem, nbytes, out, name, msg)``: a ``cl_mem`` of
        ``nbytes`` into ``*out`` (``clCreateBuffer``), in the context of ``queue`` (the
        launches' queue, when set) else of ``mem`` (the function's first buffer
        argument), which the launches then use; null for 0 bytes. 0, or -1 with the
        message in ``msg`` (``name``: the buffer's)."""
        f, b = self._helper("__tirc_ocl_alloc", I32, [PTR, PTR, I64, PTR, PTR, PTR])
        if b is None:
            return f
        queue, mem, nbytes, out, name, msg = f.args
        for arg, n in zip(f.args, ("queue", "mem", "nbytes", "out", "name", "msg")):
            arg.name = n
        null, zero = ir.Constant(PTR, None), ir.Constant(I32, 0)
        b.store(null, out)
        with b.if_then(b.icmp_unsigned("==", nbytes, ir.Constant(I64, 0)), likely=False):
            b.ret(zero)
        fail, what = self._locked_with_driver(f, b, msg)

        def check(status: ir.Value, call: str) -> None:
            bad, good = f.append_basic_block("bad"), f.append_basic_block("ok")
            b.cbranch(b.icmp_signed("!=", status, zero), bad, good)
            b.position_at_end(bad)
            self._message(b, what, f"{call} (buffer '%s', %lld bytes)", [name, nbytes])
            b.call(self.error_fn, [status, what, msg])
            b.branch(fail)
            b.position_at_end(good)

        ctx_slot, err = b.alloca(PTR), b.alloca(I32)
        with b.if_else(b.icmp_unsigned("!=", queue, null)) as (with_queue, without):
            with with_queue:
                check(self.api_call(b, "clGetCommandQueueInfo", [
                    queue, ir.Constant(I32, CL_QUEUE_CONTEXT), ir.Constant(I64, 8), ctx_slot, null]),
                    "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)")
            with without:
                no_mem, has_mem = f.append_basic_block("no_mem"), f.append_basic_block("has_mem")
                b.cbranch(b.icmp_unsigned("==", mem, null), no_mem, has_mem)
                b.position_at_end(no_mem)
                self._message(b, msg, "allocating buffer '%s' on the OpenCL device: no command "
                              "queue is set for the device (tvm-ffi's stream) and no buffer "
                              "argument gives the context", [name])
                b.branch(fail)
                b.position_at_end(has_mem)
                check(self.api_call(b, "clGetMemObjectInfo", [
                    mem, ir.Constant(I32, CL_MEM_CONTEXT), ir.Constant(I64, 8), ctx_slot, null]),
                    "clGetMemObjectInfo(CL_MEM_CONTEXT) of the first buffer argument")
        p = self.api_call(b, "clCreateBuffer", [b.load(ctx_slot, typ=PTR),
                                                ir.Constant(I64, CL_MEM_READ_WRITE), nbytes, null,
                                                err])
        check(b.load(err, typ=I32), "clCreateBuffer")
        b.store(p, out)
        self._lock(b, "unlock")
        b.ret(zero)
        b.position_at_end(fail)
        self._lock(b, "unlock")
        b.ret(ir.Constant(I32, -1))
        return f

    def _free_helper(self) -> None:
        return None  # a cl_mem is released by one API call, in place

    def allocate(self, fl, buf, nbytes: ir.Value, device_type: ir.Value,
                 device_id: ir.Value | None) -> tuple[ir.Value, int, object]:
        """A ``cl_mem`` for ``buf``, allocated in host code for the kernels it launches
        (TVM's ``TVMBackendAllocWorkspace`` on the device), released when the function
        leaves (``clReleaseMemObject``: OpenCL frees it once the kernels queued with it
        are done)."""
        b = fl.b
        dev = fl.int_cast(device_id, I32) if device_id is not None else ir.Constant(I32, 0)
        queue = self._stream(fl, dev)
        mem = fl.first_declared if fl.first_declared is not None else ir.Constant(PTR, None)
        if mem.type != PTR:
            mem = b.inttoptr(mem, PTR)
        msg = fl.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="ocl_msg")
        out = fl.alloca(PTR, name=f"{buf.name}.device")
        r = b.call(self.memory_helpers()[0], [queue, mem, nbytes, out, fl.string(buf.name), msg])
        self._check_or_fail(fl, b.icmp_signed("==", r, ir.Constant(I32, 0)), msg)
        ptr = b.load(out, typ=PTR, name=buf.name)

        def release(fl2, p: ir.Value) -> None:
            with fl2.b.if_then(fl2.b.icmp_unsigned("!=", p, ir.Constant(PTR, None))):
                self.api_call(fl2.b, "clReleaseMemObject", [p])
        return ptr, 64, release

    def _find_slot(self, f, b, table: ir.Value, key: ir.Value, msg, fail, full: str) -> ir.Value:
        """The index of ``key`` in the 16 slots of ``table``, or of the first empty slot
        (which the caller fills); ``full``: the message when there is none."""
        slot = b.alloca(I64)
        b.store(ir.Constant(I64, 0), slot)
        head, body, nxt, found = (f.append_basic_block(n) for n in ("find", "find_body", "find_next", "found"))
        b.branch(head)
        b.position_at_end(head)
        i = b.load(slot, typ=I64)
        over = f.append_basic_block("find_full")
        b.cbranch(b.icmp_unsigned("<", i, ir.Constant(I64, MAX_CONTEXTS)), body, over)
        b.position_at_end(over)
        self._message(b, msg, full, [])
        b.branch(fail)
        b.position_at_end(body)
        have = b.load(self._slot(b, table, i), typ=PTR)
        hit = b.or_(b.icmp_unsigned("==", have, key), b.icmp_unsigned("==", have, ir.Constant(PTR, None)))
        b.cbranch(hit, found, nxt)
        b.position_at_end(nxt)
        b.store(b.add(i, ir.Constant(I64, 1)), slot)
        b.branch(head)
        b.position_at_end(found)
        return b.load(slot, typ=I64)

    def _own_queue(self, f, b, ctx_slot, dev_slot, queue_slot, err, msg, fail, check) -> None:
        """The queue this library keeps for the context in ``ctx_slot`` (made on the
        context's first device the first time), into ``queue_slot``; the device into
        ``dev_slot``."""
        ctx = b.load(ctx_slot, typ=PTR)
        devs_t = ir.ArrayType(PTR, MAX_CONTEXT_DEVICES)
        devs = opaque(b.alloca(devs_t), PTR)
        check(self.api_call(b, "clGetContextInfo", [ctx, ir.Constant(I32, CL_CONTEXT_DEVICES),
                                                    ir.Constant(I64, 8 * MAX_CONTEXT_DEVICES), devs,
                                                    ir.Constant(PTR, None)]),
              "clGetContextInfo(CL_CONTEXT_DEVICES)")
        dev = b.load(b.gep(devs, [ir.Constant(I64, 0), ir.Constant(I64, 0)], source_etype=devs_t), typ=PTR)
        b.store(dev, dev_slot)
        index = self._find_slot(f, b, self.queue_ctx, ctx, msg, fail,
                                "more than 16 OpenCL contexts launched kernels without a queue set")
        q_slot = self._slot(b, self.queues, index)
        with b.if_then(b.icmp_unsigned("==", b.load(q_slot, typ=PTR), ir.Constant(PTR, None)), likely=False):
            q = self.api_call(b, "clCreateCommandQueue", [ctx, dev, ir.Constant(I64, 0), err])
            check(b.load(err, typ=I32), "clCreateCommandQueue")
            b.store(q, q_slot)
            b.store(ctx, self._slot(b, self.queue_ctx, index))
        b.store(b.load(q_slot, typ=PTR), queue_slot)

    # -- one launch ----------------------------------------------------------------------
    def launch(self, fl, call: Call, device_type, device_id) -> ir.Value:
        name, kernel, nargs, tags, _ = self._launch_call(fl, call)
        b = fl.b
        null = ir.Constant(PTR, None)
        values_t = ir.ArrayType(PTR, max(nargs, 1))
        sizes_t = ir.ArrayType(I64, max(nargs, 1))
        values = fl.alloca(values_t, name=f"{name}.args")
        sizes = fl.alloca(sizes_t, name=f"{name}.sizes")
        first_mem = None
        for i, (a, dtype) in enumerate(zip(call.args[1:1 + nargs], kernel.params)):
            if isinstance(a, Buffer):
                v = fl.buffer_pointer(a, None, call.span)[0]
                nbytes = 8
                first_mem = first_mem if first_mem is not None else v
            else:
                v = fl.expr(a)
                want = dtype if dtype.is_handle else _arg_type(dtype)
                if a.dtype != want:
                    v = fl.convert(v, a.dtype, want, call.span)
                nbytes = 8 if dtype.is_handle else max(want.bits // 8, 1) * want.lanes
                if dtype.is_handle and first_mem is None:
                    first_mem = v
            slot = fl.alloca(v.type, name=f"{name}.arg{i}")
            b.store(v, slot)
            at = [ir.Constant(I64, 0), ir.Constant(I64, i)]
            b.store(slot, b.gep(values, at, source_etype=values_t))
            b.store(ir.Constant(I64, nbytes), b.gep(sizes, at, source_etype=sizes_t))
        dims, dyn = self._launch_sizes(fl, call, tags, nargs, no_dynamic=-1)
        dev = fl.int_cast(device_id, I32) if device_id is not None else ir.Constant(I32, 0)
        queue = self._stream(fl, dev)
        msg = fl.alloca(ir.ArrayType(lt.I8, MSG_BYTES), name="ocl_msg")
        if first_mem is not None and first_mem.type != PTR:
            first_mem = b.inttoptr(first_mem, PTR)
        r = b.call(self.launch_fn, [self.images[kernel.image],
                                    self.contexts[kernel.image], self.programs[kernel.image],
                                    self._kernel_slots(name), fl.string(kernel.symbol), queue,
                                    first_mem if first_mem is not None else null,
                                    ir.Constant(I32, nargs), sizes, values, *dims, dyn, msg])
        self._check_or_fail(fl, b.icmp_signed("==", r, ir.Constant(I32, 0)), msg)
        return ir.Constant(I32, 0)

    def _stream(self, fl, dev: ir.Value) -> ir.Value:
        """tvm-ffi's environment stream for the OpenCL device: a ``cl_command_queue``, or
        null (none set; always null in a ``--abi c`` function)."""
        return self._env_stream(fl, ir.Constant(I32, KDL_OPENCL), dev)
