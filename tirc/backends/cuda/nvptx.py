"""The NVPTX device backend: the shared TIR -> LLVM lowering with an NVPTX target
context, optimised and printed as PTX text through llvmlite's NVPTX target.

Device facts, all from the ``cuda`` target (nothing asks a GPU):

* triple ``nvptx64-nvidia-cuda``; the target machine's CPU is the target's ``arch``
  (``sm_90``) and its PTX ISA version the target's ``ptx_version`` (feature ``+ptx78``),
  so the PTX says ``.version 7.8`` / ``.target sm_90``;
* kernels (``calling_conv`` 2) are ``.visible .entry`` functions (LLVM's ``ptx_kernel``
  calling convention) whose pointer parameters are global memory (address space 1),
  with ``.maxntid`` from their constant ``threadIdx`` extents (``nvvm.annotations``,
  which LLVM turns into the ``"nvvm.maxntid"`` attribute); every other function is a
  device subroutine, an internal, never-inlined ``.func`` taking generic pointers;
* WMMA fragments (``wmma.*`` scopes) are per-thread arrays of their registers, and the
  WMMA builtins ``wmma`` instructions (:mod:`tirc.backends.cuda.wmma_asm`);
* ``T.launch_thread`` axes read ``llvm.nvvm.read.ptx.sreg.tid.x``/``ctaid.x``/...;
* allocations: scope ``shared`` is a static ``.shared`` array (an addrspace(3) global),
  ``shared.dyn`` the module's one ``.extern .shared .align 16`` array
  (``buf_dyn_shmem``, sized at launch), anything else a per-thread ``alloca`` (local
  memory); all need a constant size except ``shared.dyn``;
* ``T.tvm_storage_sync("shared")`` is ``bar.sync 0`` (``llvm.nvvm.barrier0``, which
  LLVM 22 upgrades to ``llvm.nvvm.barrier.cta.sync.aligned.all``), ``"warp"`` and the
  warp shuffles are in :mod:`tirc.backends.cuda.warp`; a failed assertion traps;
* an integer division by a divisor not proven nonzero gives set values (x / 0 is -1,
  x % 0 is x, INT_MIN / -1 wraps): the GPU does not trap and LLVM must not see it;
* math: sqrt, fabs, fma, floor, ceil, trunc, round/nearbyint and copysign are PTX
  instructions; the rest (exp, log, tanh, pow, erf, ...) are libdevice's ``__nv_*``
  functions, linked from ``libdevice.10.bc`` as located by ``cuda.pathfinder`` (a
  Diagnostic when it is not installed).
"""
from __future__ import annotations

import re
from contextlib import contextmanager

from llvmlite import binding as llvm
from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.context import LIBM, LLVM_MATH, LLVMTargetContext, init_llvm
from tirc.backends.llvm.lower import ModuleLowering
from tirc.backends.llvm.text import module_text
from tirc.backends.cuda import libdevice
from tirc.backends.cuda.ptx_asm import lower_ptx_call, required_ptx_version
from tirc.backends.cuda.warp import lower_warp_call, sync_warp
from tirc.diagnostics import Diagnostic
from tirc.ir import ptx_ops
from tirc.ir.attrs import GLOBAL_SYMBOL, NOALIAS_KEYS, THREAD_EXTENT, is_kernel
from tirc.ir.buffer import SHARED_SCOPES, WMMA_SCOPES
from tirc.ir.dtype import FLOAT32, DataType
from tirc.ir.expr import Call, IntImm, StringImm
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import AttrStmt, IterVar
from tirc.ir.visitor import walk_statements
from tirc.records import record
from tirc.target.kinds import Target

TRIPLE = "nvptx64-nvidia-cuda"
GLOBAL, SHARED, GENERIC = 1, 3, 0  # NVPTX address spaces
_SREG = {"threadIdx": "tid", "blockIdx": "ctaid"}
# math functions that are PTX instructions (f32/f64); the rest come from libdevice
_NATIVE = {"sqrt", "fabs", "fma", "floor", "ceil", "trunc", "round", "nearbyint", "copysign"}
_LIBDEVICE = (set(LLVM_MATH) | set(LIBM) | {"exp10"}) - _NATIVE
_MATH_OPS = _LIBDEVICE | {"sigmoid", "ldexp"}  # TIR calls that may reach libdevice
# where TVMScript text spells one of them, or an extern call
_MATH_TEXT = re.compile(r"\bT\.(?:%s)\(" % "|".join(
    sorted(_MATH_OPS | {"call_extern", "call_pure_extern"}, key=len, reverse=True)))


def may_call_libdevice(text: str) -> bool:
    """Whether TVMScript ``text`` spells a call that may reach libdevice (``T.exp(``,
    ``T.call_extern(``): a guess from the text (a name inside a comment counts), for
    deciding whether to cut libdevice ahead of the device code; no code depends on it."""
    return _MATH_TEXT.search(text) is not None


def target_machine(target: Target, ptx_version: int | None = None) -> llvm.TargetMachine:
    """``ptx_version``: a newer PTX ISA version than the target's, which the module's
    instructions need (``nvptx_ptx_asm.required_ptx_version``)."""
    init_llvm()
    arch, ptx = str(target.get("arch")), max(int(target.get("ptx_version")), ptx_version or 0)
    return llvm.Target.from_triple(TRIPLE).create_target_machine(
        cpu=arch, features=f"+ptx{ptx}", opt=3)


def max_threads(func: PrimFunc) -> tuple[int, int, int] | None:
    """The block size (x, y, z) when every ``threadIdx`` extent is a constant."""
    dims = {"x": 1, "y": 1, "z": 1}
    for node in walk_statements(func.body):
        if isinstance(node, AttrStmt) and node.key == THREAD_EXTENT and isinstance(node.node, IterVar):
            axis, _, dim = node.node.thread_tag.partition(".")
            if axis != "threadIdx":
                continue
            if not isinstance(node.value, IntImm):
                return None
            dims[dim] = node.value.value
    return dims["x"], dims["y"], dims["z"]


class NVPTXContext(LLVMTargetContext):
    global_addrspace = GLOBAL
    float_flags = ("contract",)  # FFMA, as nvcc/NVRTC's default -fmad=true (TVM's CUDA C)
    # integer division does not trap on the GPU (PTX leaves x / 0 machine-specific): x / 0
    # is -1 and x % 0 is x, INT_MIN / -1 wraps to INT_MIN (llvm_expr.division_guard)
    division_fails = False
    byte_atomics = False  # PTX's atom has no 8-bit forms
    private_local = True

    def __init__(self, target: Target, libdevice: str | None = None, ptx_version: int | None = None):
        self.machine = target_machine(target, ptx_version)
        super().__init__(target, TRIPLE, str(self.machine.target_data))
        self.libdevice = libdevice  # path; None: look it up when first needed
        self.uses_libdevice = False
        # WMMA fragments: (fragment_shape, fragment_layout) by id of the data variable
        self.fragments: dict[int, tuple[str, str]] = {}

    def pointer(self, scope: str = "global") -> ir.PointerType:
        space = {"shared": SHARED, "shared.dyn": SHARED, "local": GENERIC,
                 "generic": GENERIC}.get(scope, GLOBAL)
        return lt.pointer_type(space)

    def param_pointer(self, func: PrimFunc) -> ir.PointerType:
        return self.pointer("global" if is_kernel(func) else "generic")

    # -- functions --------------------------------------------------------------------
    def is_exported(self, func: PrimFunc) -> bool:
        return is_kernel(func)

    def decorate(self, llfunc: ir.Function, func: PrimFunc) -> None:
        llfunc.attributes.add("nounwind")
        if not is_kernel(func):
            llfunc.linkage = "internal"
            llfunc.attributes.add("noinline")  # keep the subroutine a .func, as the IR says
            return
        if func.ret_type is not None and not func.ret_type.is_void:
            raise Diagnostic(f"kernel '{llfunc.name}' returns a value", func.span)
        llfunc.linkage = "external"
        llfunc.calling_convention = "ptx_kernel"
        if any(func.attrs.get(k) for k in NOALIAS_KEYS):
            for arg in llfunc.args:
                if isinstance(arg.type, ir.PointerType):
                    arg.add_attribute("noalias")
        bounds = max_threads(func)
        if bounds is not None:
            m = llfunc.module
            notes = m.add_named_metadata("nvvm.annotations")
            for dim, n in zip("xyz", bounds):
                notes.add(m.add_metadata([llfunc, f"maxntid{dim}", ir.Constant(lt.I32, n)]))

    # -- math -------------------------------------------------------------------------
    def math(self, name: str, dtype_base: str) -> tuple[str, str] | None:
        if name in _NATIVE:
            return super().math(name, dtype_base)
        if name in _LIBDEVICE:
            self.uses_libdevice = True
            return "libm", f"__nv_{name}" + ("" if dtype_base == "float64" else "f")
        return None

    def extern_symbol(self, name: str, call: Call) -> str:
        """The libdevice function an extern call on the GPU names, as CUDA C resolves the
        names TVM's code uses: ``expf``/``exp`` -> ``__nv_expf``/``__nv_exp``, the fast
        intrinsics ``__expf`` -> ``__nv_fast_expf``, ``__fdividef`` ->
        ``__nv_fast_fdividef``, ``__saturatef`` -> ``__nv_saturatef``. Device code links
        nothing else, so any other name is a diagnostic at the call."""
        path = self.find_libdevice()
        if path is None:
            raise Diagnostic(f"the extern function '{name}' on the GPU needs libdevice "
                             "(libdevice.10.bc), which was not found: install the PyPI wheel "
                             "nvidia-nvvm", call.span)
        defined = libdevice.functions(path)
        if name.startswith("__nv_"):
            tries = [name]
        elif name.startswith("__"):
            tries = [f"__nv_fast_{name[2:]}", f"__nv_{name[2:]}"]
        else:
            tries = [f"__nv_{name}"]
        for t in tries:
            if t in defined:
                self.uses_libdevice = True
                return t
        raise Diagnostic(f"unknown extern function '{name}' on the GPU: device code links "
                         "only libdevice (CUDA math names such as expf, __expf)", call.span)

    def find_libdevice(self) -> str | None:
        if self.libdevice is None:
            self.libdevice = libdevice.locate() or ""
        return self.libdevice or None

    # -- hooks ------------------------------------------------------------------------
    def allocate_buffer(self, fl, buf, nbytes, const_bytes, elem, count):
        shared = self.shared_buffer(fl, buf, const_bytes, elem, count, SHARED)
        if shared is not None:
            return shared
        scope = buf.scope
        # VerifyMemory allows nothing else in a kernel (a global allocation would be a
        # private copy per thread); WMMA fragments are per-thread registers (wmma_asm.py)
        if not (scope.startswith("local") or scope in WMMA_SCOPES):
            raise Diagnostic(f"buffer '{buf.name}' in scope '{scope}' cannot be allocated in "
                             "device code", buf.span or fl.func.span)
        return fl.alloca(elem, max(count, 1), name=buf.name, align=16), 16, False

    def lower_attr(self, fl, s: AttrStmt) -> bool:
        queue = ptx_ops.queue_call(s)
        if queue is not None:
            # a commit group closes after its copies; a wait comes before what it guards
            if s.key == ptx_ops.COMMIT_QUEUE:
                fl.stmt(s.body)
                lower_ptx_call(fl, queue)
            else:
                lower_ptx_call(fl, queue)
                fl.stmt(s.body.body)
            return True
        if s.key in ("fragment_shape", "fragment_layout") and isinstance(s.value, StringImm):
            shape, layout = self.fragments.get(id(s.node), ("", ""))
            self.fragments[id(s.node)] = ((s.value.value, layout) if s.key == "fragment_shape"
                                          else (shape, s.value.value))
            return False
        if s.key != THREAD_EXTENT or not isinstance(s.node, IterVar):
            return False
        axis, _, dim = s.node.thread_tag.partition(".")
        if axis not in _SREG or dim not in ("x", "y", "z"):
            raise Diagnostic(f"unknown thread axis '{s.node.thread_tag}'", s.span)
        fn = fl.module.declare(f"llvm.nvvm.read.ptx.sreg.{_SREG[axis]}.{dim}",
                               ir.FunctionType(lt.I32, []))
        var = s.node.var
        fl.vars[id(var)] = fl.int_cast(fl.b.call(fn, [], name=var.name), ir.IntType(var.dtype.bits),
                                       signed=False)
        fl.stmt(s.body)
        return True

    def lower_call(self, fl, call: Call) -> ir.Value | None:
        if ptx_ops.is_ptx(call.op):
            return lower_ptx_call(fl, call)
        if call.op == "tvm_storage_sync":
            scope = call.args[0].value if call.args and isinstance(call.args[0], StringImm) else ""
            if scope in SHARED_SCOPES:
                fl.b.call(fl.module.declare("llvm.nvvm.barrier0", ir.FunctionType(ir.VoidType(), [])), [])
            elif scope == "warp":
                sync_warp(fl)
            else:
                raise Diagnostic(f"T.tvm_storage_sync(\"{scope}\") is not supported on the GPU",
                                 call.span)
            return ir.Constant(lt.I32, 0)
        warp = lower_warp_call(fl, call)
        if warp is not None:
            return warp
        if (call.op in ("call_pure_extern", "call_extern") and call.args
                and isinstance(call.args[0], StringImm) and call.args[0].value in HALF_MATH):
            return self.half_math(fl, call)
        if call.op in _MATH_OPS and call.dtype.is_float and self.find_libdevice() is None:
            raise Diagnostic(f"the math function T.{call.op} needs libdevice (libdevice.10.bc), "
                             "which was not found: install the PyPI wheel nvidia-nvvm (or "
                             "nvidia-cuda-nvcc) so that cuda.pathfinder finds it", call.span)
        return None

    def half_math(self, fl, call: Call) -> ir.Value:
        """A CUDA half-precision math function (``hexp``, ``hlog``, ... of cuda_fp16.h,
        which TVM's CUDA code calls, on a float32 value too after BF16 legalization): the
        argument rounded to float16, the float function of libdevice, the result rounded
        to float16, then converted to the call's type."""
        name = call.args[0].value
        if (len(call.args) != 2 or not call.args[1].dtype.is_float or call.args[1].dtype.lanes != 1
                or not call.dtype.is_float or call.dtype.lanes != 1):
            raise Diagnostic(f"'{name}' takes one scalar floating-point value", call.span)
        arg = call.args[1]
        x = fl.convert(fl.convert(fl.expr(arg), arg.dtype, FLOAT16, call.span), FLOAT16,
                       FLOAT32, call.span)
        fn = self.extern_symbol(HALF_MATH[name], call)
        y = fl.b.call(fl.module.declare(fn, ir.FunctionType(x.type, [x.type])), [x])
        y = fl.convert(fl.convert(y, FLOAT32, FLOAT16, call.span), FLOAT16, call.dtype, call.span)
        return y

    def raise_error(self, fl, kind, message) -> None:
        fl.b.call(fl.module.declare("llvm.trap", ir.FunctionType(ir.VoidType(), [])), [])


FLOAT16 = DataType("float16")
# cuda_fp16.h's half-precision math functions and the float function each rounds
HALF_MATH = {"hexp": "expf", "hexp2": "exp2f", "hexp10": "exp10f", "hlog": "logf",
             "hlog2": "log2f", "hlog10": "log10f", "hsin": "sinf", "hcos": "cosf",
             "htan": "tanf", "htanh": "tanhf", "hsqrt": "sqrtf", "hrsqrt": "rsqrtf",
             "hceil": "ceilf", "hfloor": "floorf", "htrunc": "truncf", "hrint": "rintf"}


@record(frozen=True)
class DeviceImage:
    """What the NVPTX backend makes of a device module."""

    ptx: str
    llvm_ir: str  # the optimised module the PTX was printed from ("" unless asked for)
    arch: str  # sm_90
    kernels: tuple[str, ...]  # entry symbols, in module order


def lower_to_llvm(mod: IRModule, target: Target, name: str = "module",
                  line_info: bool = False,
                  ptx_version: int | None = None) -> tuple[str, NVPTXContext]:
    """The device module as LLVM IR text, before optimisation and libdevice;
    ``line_info``: with ``.file``/``.loc`` directives for the ``.tir`` lines;
    ``ptx_version``: the PTX ISA version its instructions need (default: found in
    ``mod``; a chunk of a module takes the whole module's)."""
    if ptx_version is None:
        ptx_version = required_ptx_version(mod)
    ctx = NVPTXContext(target, ptx_version=ptx_version)
    lowering = ModuleLowering(mod, ctx, name, "directives" if line_info else None)
    return module_text(lowering.lower()), ctx


def generate(mod: IRModule, target: Target, name: str = "module",
             keep_ir: bool = True, line_info: bool = False, timed=None,
             jobs: int = 1, made: dict | None = None) -> DeviceImage:
    """The PTX of ``mod``; ``line_info``: with ``.loc`` directives (``-lineinfo``);
    ``timed(substage)``: a context that times each sub-stage (``DeviceOutputs.timed``);
    ``jobs``: processes that may make it in chunks side by side
    (:mod:`tirc.backends.cuda.ptx_chunks`; not with ``keep_ir`` or ``line_info``, which
    describe one LLVM module); ``made``: chunks already compiled
    (:func:`compile_kernels`)."""
    if jobs > 1 and not keep_ir and not line_info:
        image = _generate_chunked(mod, target, name, jobs, timed or _untimed, made or {})
        if image is not None:
            return image
    return _generate(mod, target, name, keep_ir, line_info, timed or _untimed)


def compile_kernels(mod: IRModule, target: Target, name: str) -> dict:
    """The PTX of each kernel of ``mod`` (a device module, or the part of one a
    call-graph component holds) compiled as a chunk of its own, for each arch of
    ``target``: by :func:`chunk_key`, for :func:`generate` (``made``) to join instead of
    compiling them again. Run in a component's process after its passes (``-j N``): a
    kernel goes from its passes to its PTX in one process. The PTX ISA version is the
    part's; a module whose kernels need a higher one compiles that chunk again. Empty
    when the module holds a device subroutine (``ptx_chunks.kernels``); a kernel that
    fails is left out, to fail where the whole module is compiled."""
    from tirc.backends.cuda import ptx_chunks
    from tirc.target.kinds import arch_target, image_archs
    measured = ptx_chunks.kernels(mod, frozenset(_MATH_OPS))
    if not measured:
        return {}
    chunks = [chunk for chunk, _ in measured]
    version = required_ptx_version(mod)
    path = libdevice.locate() if any(c.math for c in chunks) else None
    pieces = path is not None and libdevice.is_cut(path)
    archs = image_archs(target)
    made = {}
    for arch in archs:
        at = arch_target(target, arch, len(archs))
        for chunk in chunks:
            try:
                ptx = _chunk_ptx(chunk.mod, at, name, version, pieces)
            except Exception:  # noqa: BLE001 - compiled again, and reported, with the module
                continue
            made[chunk_key(chunk.mod, at, version)] = ptx
    return made


def chunk_key(chunk: IRModule, target: Target, ptx_version: int) -> tuple:
    """What a chunk's PTX depends on besides its kernel: the kernel's name (a kernel of
    one name comes from one component's passes), the arch target and the PTX version."""
    return tuple(chunk.functions), target.canonical, ptx_version


def _generate_chunked(mod: IRModule, target: Target, name: str, jobs: int,
                      timed, made: dict) -> DeviceImage | None:
    """The PTX of ``mod`` from chunks of its kernels compiled in forked processes (those
    not ``made`` already); None when it is not cut, or its chunks' texts do not join
    (``ptx_chunks.join``). When more than two chunks may call libdevice, they link it by
    the piece (:func:`libdevice.link`), the library cut before the processes fork."""
    from functools import partial

    from tirc.backends.forked import run_pulled
    from tirc.backends.cuda import ptx_chunks
    chunks = ptx_chunks.split(mod, jobs, frozenset(_MATH_OPS))
    if chunks is None:
        return None
    version = required_ptx_version(mod)
    texts = [made.get(chunk_key(chunk.mod, target, version)) for chunk in chunks]
    todo = [chunk for chunk, text in zip(chunks, texts) if text is None]
    pieces = sum(chunk.math for chunk in todo) > 2
    path = libdevice.locate() if pieces else None
    if path is not None:
        with timed("libdevice"):
            libdevice.cut_once(path)
    tasks = [partial(_chunk_ptx, chunk.mod, target, name, version, pieces) for chunk in todo]
    with timed("chunks"):
        compiled = iter(run_pulled(tasks, jobs, "device code process"))
        ptx = ptx_chunks.join([text if text is not None else next(compiled)
                               for text in texts], chunks)
    if ptx is None:
        return None
    return DeviceImage(ptx, "", str(target.get("arch")), kernel_symbols(mod))


def _chunk_ptx(mod: IRModule, target: Target, name: str, ptx_version: int,
               pieces: bool = False) -> str:
    return _generate(mod, target, name, False, False, _untimed, ptx_version, pieces).ptx


def _generate(mod: IRModule, target: Target, name: str, keep_ir: bool, line_info: bool,
              timed, ptx_version: int | None = None, pieces: bool = False) -> DeviceImage:
    """``pieces``: link libdevice by the piece (:func:`libdevice.link`)."""
    with timed("lower"):
        text, ctx = lower_to_llvm(mod, target, name, line_info, ptx_version)
    with timed("parse-llvm"):
        parsed = llvm.parse_assembly(text)
        parsed.verify()
    if ctx.uses_libdevice:
        path = ctx.find_libdevice()
        if path is None:  # lower_call stops this earlier, with the call's location
            raise Diagnostic("the module's math functions need libdevice (libdevice.10.bc), "
                             "which was not found")
        with timed("libdevice"):
            libdevice.link(parsed, path, ctx.machine, pieces=pieces)
    with timed("optimize"):
        pb = llvm.create_pass_builder(ctx.machine,
                                      llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(parsed, pb)
    with timed("emit-ptx"):
        ptx = ctx.machine.emit_assembly(parsed)
    return DeviceImage(ptx, str(parsed) if keep_ir else "", str(target.get("arch")),
                       kernel_symbols(mod))


@contextmanager
def _untimed(substage: str):
    yield


def kernel_symbols(mod: IRModule) -> tuple[str, ...]:
    """The entry symbols of ``mod``'s kernels, in module order: what its images export
    (``NVPTXContext.symbol`` of a kernel), known before they are compiled."""
    return tuple(str(f.attrs.get(GLOBAL_SYMBOL, n)) for n, f in mod.functions.items()
                 if is_kernel(f))
