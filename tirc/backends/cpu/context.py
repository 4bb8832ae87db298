"""The CPU target context of the shared LLVM lowering, and the optimisation of its
modules: the target machine from the target's ``mtriple`` (default: this machine's),
``mcpu``, ``mattr`` and ``opt-level`` (default 3), position-independent so the object
links into a shared library. CPU facts: one address space; stack allocations up to
1 KiB of constant size, ``malloc``/``free`` otherwise; errors through tvm-ffi's
``TVMFFIErrorSetRaisedFromCStr`` and a -1 return (C-API functions of ``--abi c``:
a thread-local message, :mod:`tirc.backends.cpu.c_api_errors`); ``T.parallel`` loops through
libgomp (:mod:`tirc.backends.cpu.parallel`); math through LLVM intrinsics and libm.
Public functions (``calling_conv`` 1 after MakePackedAPI) are exported as their
``global_symbol``; every other function is internal.
"""
from __future__ import annotations

from llvmlite import binding as llvm
from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.context import LLVMTargetContext, init_llvm
from tirc.backends.cpu.packed_call import PACKED_CALLS, STACK_VALUES, lower_packed_call, lower_stack_value
from tirc.backends.llvm.lower import likely
from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import C_API, DEVICE_ID, DEVICE_TYPE, SYMBOL_PREFIX
from tirc.ir.stmt import For
from tirc.target.kinds import Target, fast_math_flags, host_triple, vscale_range
from tirc.backends.host_faults import may_fail

KDL_CPU = 1  # DLPack's device type of host memory


def target_machine(target: Target, opt: int | None = None) -> llvm.TargetMachine:
    """The LLVM target machine a CPU target describes (a Diagnostic if LLVM lacks it);
    ``opt``: its code generation level instead of the target's ``opt-level``."""
    init_llvm()
    triple = target.get("mtriple") or host_triple()
    try:
        llvm_target = llvm.Target.from_triple(triple)
    except RuntimeError as e:
        raise Diagnostic(f"LLVM cannot generate code for triple '{triple}': {e}") from None
    features = ",".join(target.get("mattr") or ())
    cpu = target.get("mcpu") or ""
    if not cpu and triple.startswith(("x86_64", "i386", "i486", "i586", "i686", "amd64")):
        # LLVM's x86 subtarget tunes for the i586 when given no CPU name (its features
        # are the generic x86-64's either way): unaligned 16-byte moves count as slow,
        # so small copies become `rep movs` and the scheduling model is the Pentium's.
        # TVM names "generic" (modern tuning, the same features); so does tirc.
        cpu = "generic"
    if cpu == "native":  # this machine's CPU and features, as llc -mcpu=native
        cpu = llvm.get_host_cpu_name()
        features = ",".join(f for f in (llvm.get_host_cpu_features().flatten(), features) if f)
    return llvm_target.create_target_machine(
        cpu=cpu, features=features,
        opt=int(target.get("opt-level", 3)) if opt is None else opt,
        reloc="pic", codemodel="default", abiname=target.get("mabi") or "")


class CPUContext(LLVMTargetContext):
    """``share``: None when the module is lowered whole; when it is lowered in chunks
    (:mod:`tirc.backends.cpu.chunks`), "define" in the owner chunk, which defines the module-wide state
    (CUDA launch tables and helpers, the C API's error buffer) with external linkage
    for the link (their names in ``shared``, made internal again after it), "declare"
    in the others, which only declare it."""

    def __init__(self, target: Target, device_code=None, share: str | None = None):
        self.machine = target_machine(target)
        super().__init__(target, self.machine.triple, str(self.machine.target_data))
        if target.get("mcpu") or target.get("mattr"):
            # a named CPU may have FMA: a * b + c may become one fma, as TVM's CPU code
            # allows (it lowers a * b + c to llvm.fmuladd); the generic CPU, which has
            # no FMA on x86-64, keeps separate operations in the IR
            self.float_flags = ("contract",)
            self.split_accumulator_chains = True
        self.fast_flags = fast_math_flags(target)
        self.vscale_range = vscale_range(target)
        if self.fast_flags:
            self.float_flags = tuple(sorted(set(self.float_flags) | set(self.fast_flags)))
        self.alias_scopes = True  # buffers known distinct do not alias (llvm_alias)
        self.split_index_constants = True  # tile rows a constant apart are disjoint
        self.uses_openmp = False
        self.device_code = device_code  # cuda_launch.DeviceCode: images the launches use
        self.launcher = None  # the device code's launcher, made at the first launch
        self.device_attrs: list[tuple[str, ir.Value]] = []  # enclosing device_id/device_type
        self.share = share
        self.shared: list[str] = []

    def module_wide(self, name: str) -> str:
        """The linkage of module-wide state ``name`` defined here."""
        if self.share == "define":
            self.shared.append(name)
            return ""  # external (a definition's default) until the chunks are linked
        return "internal"

    def lower_attr(self, fl, s):
        if s.key not in (DEVICE_ID, DEVICE_TYPE):
            return False
        self.device_attrs.append((s.key, fl.expr(s.value)))
        try:
            fl.stmt(s.body)
        finally:
            self.device_attrs.pop()
        return True

    def lower_call(self, fl, call):
        if call.op in PACKED_CALLS:
            return lower_packed_call(fl, call)
        if call.op in STACK_VALUES:
            return lower_stack_value(fl, call)
        if call.op != "call_ffi_kernel" or self.device_code is None:
            return None
        attrs = dict(self.device_attrs)  # innermost wins
        return self._launcher(fl).launch(fl, call, attrs.get(DEVICE_TYPE), attrs.get(DEVICE_ID))

    def _launcher(self, fl):
        """The device code's launcher, made at the first launch or device allocation."""
        if self.launcher is None:
            self.launcher = self.device_code.launcher(fl.module)
        return self.launcher

    def allocate_buffer(self, fl, buf, nbytes, const_bytes, elem, count):
        # host code of a device function (MakePackedAPI's device_type attribute, a
        # constant other than the CPU's) allocates what its kernels use: device memory,
        # as TVM's LowerTVMBuiltin makes it TVMBackendAllocWorkspace(device_type, ...)
        attrs = dict(self.device_attrs)
        device_type = attrs.get(DEVICE_TYPE)
        if (isinstance(device_type, ir.Constant) and device_type.constant != KDL_CPU
                and buf.scope in ("", "global")):
            span = buf.span or fl.func.span
            if self.device_code is None:
                raise Diagnostic(f"buffer '{buf.name}' lives on the device: its allocation "
                                 "needs the build's device code (tirc build)", span)
            allocate = getattr(self._launcher(fl), "allocate", None)
            if allocate is None:
                raise Diagnostic(f"buffer '{buf.name}' lives on the device: allocating device "
                                 "memory in host code is not supported for this device "
                                 "kind", span)
            return allocate(fl, buf, nbytes, device_type, attrs.get(DEVICE_ID))
        return self.allocate(fl, nbytes, const_bytes, elem, count)

    def allocate(self, fl, nbytes, const_bytes, elem, count):
        if const_bytes is not None and const_bytes <= self.max_stack_alloca:
            return fl.alloca(elem, max(count, 1), name="stack", align=64), 64, False
        ptr_t = self.pointer()
        malloc = fl.module.declare("malloc", ir.FunctionType(ptr_t, [lt.I64]))
        ptr = fl.b.call(malloc, [nbytes])
        ok, bad = fl.block("alloc_ok"), fl.block("alloc_fail")
        likely(fl.b.cbranch(fl.b.icmp_unsigned("!=", ptr, ir.Constant(ptr_t, None)), ok, bad))
        fl.b.position_at_end(bad)
        fl.fail(fl.string("RuntimeError"), fl.string(f"cannot allocate memory for a buffer "
                                                      f"in function '{fl.name}'"))
        fl.b.position_at_end(ok)
        return ptr, 16, True

    def decorate(self, llfunc, func):
        super().decorate(llfunc, func)
        if func.attrs.get(C_API):  # --abi c: the module's <NAME>_last_error()
            from tirc.backends.cpu.c_api_errors import error_buffer
            prefix = str(func.attrs.get(SYMBOL_PREFIX, ""))  # --symbol-prefix
            error_buffer(llfunc.module, self, prefix)

    def raise_error(self, fl, kind, message):
        if not self.is_exported(fl.func):  # a private function: the caller raises it
            from tirc.backends.cpu.errors import record
            record(fl, kind, message)
            return
        if fl.func.attrs.get(C_API):  # --abi c: no tvm-ffi; a thread-local message
            from tirc.backends.cpu.c_api_errors import record_error
            record_error(fl, kind, message)
            return
        ptr_t = self.pointer()
        setter = fl.module.declare("TVMFFIErrorSetRaisedFromCStr",
                                   ir.FunctionType(ir.VoidType(), [ptr_t, ptr_t]))
        fl.b.call(setter, [kind, message])

    def error_parts(self, fl):
        """An exported packed function raises through tvm-ffi, which takes parts."""
        return (self.is_exported(fl.func) and not fl.func.attrs.get(C_API)
                and not getattr(fl, "parallel_body", False))

    def raise_error_parts(self, fl, kind, parts):
        ptr_t = self.pointer()
        array_t = ir.ArrayType(ptr_t, len(parts))
        array = fl.alloca(array_t, name="error_parts", align=8)
        for i, part in enumerate(parts):
            fl.b.store(part, fl.b.gep(array, [ir.Constant(lt.I32, 0), ir.Constant(lt.I32, i)],
                                      source_etype=array_t))
        setter = fl.module.declare("TVMFFIErrorSetRaisedFromCStrParts",
                                   ir.FunctionType(ir.VoidType(), [ptr_t, ptr_t, lt.I32]))
        fl.b.call(setter, [kind, array, ir.Constant(lt.I32, len(parts))])

    def outlines_loops(self, fl):
        from tirc.backends.cpu.outline import splits
        return splits(fl)

    def outline_loop(self, fl, loop):
        from tirc.backends.cpu.outline import outline_loop
        outline_loop(fl, loop)

    def loops_outlined(self, fl):
        from tirc.backends.cpu.outline import mark_wrapper
        mark_wrapper(fl.llfunc)

    def after_call(self, fl, name, callee):
        from tirc.backends.cpu.errors import check_after_call
        failing = getattr(fl.module, "may_fail", None)
        if failing is None:
            failing = fl.module.may_fail = may_fail(fl.module.mod)
        if name in failing and not self.is_exported(callee):
            check_after_call(fl)

    def lower_parallel(self, fl, loop: For) -> None:
        from tirc.backends.cpu.parallel import lower_parallel
        self.uses_openmp = True
        lower_parallel(fl, loop, int(self.target.get("num-cores") or 0))


def optimize(parsed: llvm.ModuleRef, ctx: CPUContext, level: int) -> llvm.TargetMachine:
    """Optimise ``parsed`` in place and return the machine to emit it with.

    A module with a loop gets LLVM's ``-O<level>`` pipeline (loop and SLP
    vectorisation from -O2) and code generation at that level; the argument checks
    of functions whose loops were outlined (:mod:`tirc.backends.cpu.outline`) are
    ``optnone`` and skip both. A module without one
    is argument checks and kernel launches, straight-line code run once per call:
    unless the target gives ``-opt-level`` explicitly, it gets a short pipeline
    (SROA, DCE) and the fast instruction selector, which makes host objects of CUDA
    modules about ten times faster to produce for some 40 ns more per call
    (bench/README.md). Not simplifycfg: it turns the checks' compare chains into
    ``switch`` instructions, which the fast selector cannot take, so every function fell
    back to the slow one (500 kernels: optimise + emit 1.05 -> 0.72 s without it, and a
    smaller object). Not instcombine: on these wrappers it took 0.2 s of 500 kernels'
    0.25 s of optimisation to save a tenth of their machine code, which a call through
    tvm-ffi does not show (about 200 ns per call either way, bench/README.md)."""
    if level == 0:
        return ctx.machine
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    if ctx.loop_functions or "opt-level" in ctx.target.explicit:
        if level >= 2:
            pto.loop_vectorization = True
            pto.slp_vectorization = True
        pb = llvm.create_pass_builder(ctx.machine, pto)
        pb.getModulePassManager().run(parsed, pb)
        return ctx.machine
    pm = llvm.create_new_module_pass_manager()
    pm.add_sroa_pass()
    pm.add_dead_code_elimination_pass()
    pm.run(parsed, llvm.create_pass_builder(ctx.machine, pto))
    return target_machine(ctx.target, opt=0)
