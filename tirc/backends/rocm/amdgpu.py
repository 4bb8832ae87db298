"""The AMDGPU device backend: the shared TIR -> LLVM lowering with an AMDGPU target
context, optimised and emitted as an ELF relocatable object by llvmlite's AMDGPU target,
then linked by ``ld.lld`` into a code object (:mod:`tirc.backends.rocm.link`).

Device facts, all from the ``rocm`` target (nothing asks a GPU, nothing comes from a
ROCm install):

* triple ``amdgcn-amd-amdhsa``; the target machine's CPU is the target's ``mcpu``
  (``gfx90a``), its features the target's ``mattr`` and, where ``thread_warp_size`` is
  not the arch's wavefront size, ``+wavefrontsize32``/``+wavefrontsize64``;
* kernels (``calling_conv`` 2) use the ``amdgpu_kernel`` calling convention: LLVM lays
  their arguments out in the kernarg segment (pointers are 8 bytes, global memory,
  address space 1; scalars at their natural alignment) and the code object's metadata
  describes that layout to the HIP runtime, which packs the arguments of
  ``hipModuleLaunchKernel``; a kernel whose ``threadIdx`` extents are constants gets
  ``amdgpu-flat-work-group-size`` ``1,<its block size>``, any other
  ``1,<max_num_threads>``; every other function is a device subroutine, an internal,
  never-inlined function taking flat (generic, address space 0) pointers;
* ``T.launch_thread`` axes read ``llvm.amdgcn.workitem.id.x``/``workgroup.id.x``/...;
* allocations: scope ``shared`` is a static LDS array (an addrspace(3) global; its
  bytes are the kernel's ``group_segment_fixed_size``), ``shared.dyn`` the module's one
  external zero-length LDS array (``buf_dyn_shmem``, sized at launch), anything else a
  per-thread ``alloca`` in the private address space 5, used through a flat pointer
  (LLVM's InferAddressSpaces turns its accesses back into private ones);
* ``T.tvm_storage_sync("shared")`` is ``__syncthreads()`` as HIP writes it: a
  workgroup-scope release fence, ``s_barrier`` (``llvm.amdgcn.s.barrier``), a
  workgroup-scope acquire fence; ``"warp"`` is a wavefront-scope fence (a wavefront
  runs in lockstep); the wavefront shuffles are in :mod:`tirc.backends.rocm.warp`; a
  failed assertion traps (``s_trap``);
* an integer division by a divisor not proven nonzero gives set values (x / 0 is -1,
  x % 0 is x, INT_MIN / -1 wraps), as on NVPTX;
* math: LLVM intrinsics the AMDGPU backend lowers to instructions — float32 and float16
  exp, exp2, exp10, log, log2, log10, pow, sin, cos, sqrt; float64 only sqrt; and for
  all three floor, ceil, trunc, round/nearbyint, fabs, fma, copysign — and expansions of
  our own for tanh (TVM's numerically stable form; its Taylor series near 0), erf
  (Numerical Recipes' erfc, relative error below 1.2e-7; its Taylor series near 0), tan,
  sinh (its Taylor series near 0) and cosh of float32/float16, and for exp, exp2, exp10,
  log, log2, log10, tanh and sigmoid of float64 scalars (:func:`expand_f64`, within 4
  ulp). TVM links ROCm's device libraries (ocml) for the rest; tirc links nothing, so any
  other math function (float64 sin, cos, tan, pow; atan, ...) is a located error naming
  the target. C math names in
  extern calls (``expf``, ``__expf``, ``hexp``, ``exp``) are the TIR functions they
  compute; any other extern name is a located error.
"""
from __future__ import annotations

import math
import re
from contextlib import contextmanager

from llvmlite import binding as llvm
from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.context import LLVM_MATH, LLVMTargetContext, init_llvm
from tirc.backends.llvm.lower import ModuleLowering
from tirc.backends.llvm.llvmlite_compat import private_alloca
from tirc.backends.llvm.text import module_text
from tirc.backends.rocm.warp import lower_warp_call
from tirc.diagnostics import Diagnostic
from tirc.ir import ptx_ops
from tirc.ir.attrs import GLOBAL_SYMBOL, NOALIAS_KEYS, is_kernel
from tirc.ir.buffer import SHARED_SCOPES
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call, StringImm
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.expr import IntImm
from tirc.ir.stmt import AttrStmt, IterVar
from tirc.ir.attrs import THREAD_EXTENT
from tirc.ir.visitor import walk
from tirc.records import record
from tirc.target.kinds import Target, rocm_features

TRIPLE = "amdgcn-amd-amdhsa"
FLAT, GLOBAL, LDS, PRIVATE = 0, 1, 3, 5  # AMDGPU address spaces
_INTRINSIC = {"threadIdx": "workitem", "blockIdx": "workgroup"}
# math the AMDGPU backend lowers to instructions, by element type
_NATIVE_ANY = {"floor", "ceil", "trunc", "round", "nearbyint", "fabs", "fma", "copysign", "sqrt"}
_NATIVE_F32 = _NATIVE_ANY | {"exp", "exp2", "exp10", "log", "log2", "log10", "pow", "sin", "cos"}
_NATIVE = {"float32": _NATIVE_F32, "float16": _NATIVE_F32, "float64": _NATIVE_ANY}
_EXPANDED = {"tanh", "erf", "tan", "sinh", "cosh"}  # float32/float16, here
_EXPANDED_F64 = {"exp", "exp2", "exp10", "log", "log2", "log10", "tanh", "sigmoid"}  # scalars
# what the shared lowering composes some functions of (tirc.backends.llvm.intrin._math)
_COMPOSED_OF = {"sigmoid": "exp", "rsqrt": "sqrt", "ldexp": "exp2"}
MATH_OPS = frozenset(("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                      "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
                      "asinh", "acosh", "atanh", "erf", "sigmoid", "floor", "ceil", "round",
                      "trunc", "nearbyint", "fabs", "pow", "atan2", "hypot", "copysign",
                      "nextafter", "fmod", "ldexp", "fma"))
# C and CUDA math names of extern calls -> the TIR function they compute
_EXTERN_ARITY = {"pow": 2, "atan2": 2, "hypot": 2, "copysign": 2, "fmod": 2, "nextafter": 2,
                 "ldexp": 2, "fma": 3}
_RENAMES = {"rint": "nearbyint"}  # C names of TIR functions


def target_machine(target: Target) -> llvm.TargetMachine:
    init_llvm()
    return llvm.Target.from_triple(TRIPLE).create_target_machine(
        cpu=str(target.get("mcpu")), features=rocm_features(target), opt=3, reloc="pic")


def extern_math(name: str) -> str | None:
    """The TIR math function a C or CUDA math name of an extern call computes
    (``expf``, ``exp``, ``__expf``, ``hexp``, ``rintf``), or None."""
    base = name
    if base.startswith("__ocml_"):
        base = base[len("__ocml_"):].rsplit("_f", 1)[0]
    elif base.startswith("__nv_"):
        base = base[len("__nv_"):]
    elif base.startswith("__"):
        base = base[2:]
    candidates = [base]
    if base.endswith("f"):
        candidates.append(base[:-1])
    if base.startswith("h"):
        candidates.append(base[1:])
    for c in candidates:
        c = _RENAMES.get(c, c)
        if c in MATH_OPS:
            return c
    return None


def kernel_symbols(mod: IRModule) -> tuple[str, ...]:
    """The entry symbols of ``mod``'s kernels, in module order, known before they are
    compiled."""
    return tuple(str(f.attrs.get(GLOBAL_SYMBOL, n)) for n, f in mod.functions.items()
                 if is_kernel(f))


def work_group_size(func: PrimFunc) -> int | None:
    """The work-items of one workgroup when every ``threadIdx`` extent is a constant."""
    dims = {"x": 1, "y": 1, "z": 1}
    for node in walk(func.body):
        if isinstance(node, AttrStmt) and node.key == THREAD_EXTENT and isinstance(node.node, IterVar):
            axis, _, dim = node.node.thread_tag.partition(".")
            if axis != "threadIdx":
                continue
            if not isinstance(node.value, IntImm):
                return None
            dims[dim] = node.value.value
    return dims["x"] * dims["y"] * dims["z"]


class AMDGPUContext(LLVMTargetContext):
    global_addrspace = GLOBAL
    float_flags = ("contract",)  # v_fma, as hipcc's default -ffp-contract=fast-honor-pragmas
    division_fails = False  # the GPU does not trap on x / 0 (llvm_expr.division_guard)
    byte_atomics = False
    private_local = True

    def __init__(self, target: Target):
        self.machine = target_machine(target)
        super().__init__(target, TRIPLE, str(self.machine.target_data))
        self.work_group_sizes: dict[str, int] = {}  # kernel symbol -> its largest block

    def pointer(self, scope: str = "global") -> ir.PointerType:
        space = {"shared": LDS, "shared.dyn": LDS, "local": FLAT,
                 "generic": FLAT}.get(scope, GLOBAL)
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
            llfunc.attributes.add("noinline")
            return
        if func.ret_type is not None and not func.ret_type.is_void:
            raise Diagnostic(f"kernel '{llfunc.name}' returns a value", func.span)
        llfunc.linkage = "external"
        llfunc.calling_convention = "amdgpu_kernel"
        if any(func.attrs.get(k) for k in NOALIAS_KEYS):
            for arg in llfunc.args:
                if isinstance(arg.type, ir.PointerType):
                    arg.add_attribute("noalias")
        size = work_group_size(func)
        most = int(self.target.get("max_num_threads") or 256)
        if size is not None:
            most = size
            if most > 1024:
                raise Diagnostic(f"kernel '{llfunc.name}' has {most} work-items a workgroup; "
                                 "an AMD GPU runs at most 1024 (target rocm)", func.span)
        self.work_group_sizes[llfunc.name] = max(most, 1)

    def finish_text(self, text: str) -> str:
        """The module's text with each kernel's ``amdgpu-flat-work-group-size`` (llvmlite
        has no string function attributes)."""
        def attrs(m: re.Match) -> str:
            size = self.work_group_sizes.get(m.group(1).strip('"'))
            if size is None:
                return m.group(0)
            return f'{m.group(0)} "amdgpu-flat-work-group-size"="1,{size}"'

        return re.sub(r'^define external amdgpu_kernel void @("[^"]+"|[\w.$]+)\(.*$',
                      attrs, text, flags=re.M)

    # -- math -------------------------------------------------------------------------
    def math(self, name: str, dtype_base: str) -> tuple[str, str] | None:
        if name in _NATIVE.get(dtype_base, ()):
            return "llvm", "llvm.exp10" if name == "exp10" else LLVM_MATH[name]
        return None

    def extern_symbol(self, name: str, call: Call) -> str:
        raise Diagnostic(f"unknown extern function '{name}' on target rocm: device code links "
                         "no library (C math names such as expf are the AMDGPU backend's "
                         "own math)", call.span)

    # -- hooks ------------------------------------------------------------------------
    def allocate_buffer(self, fl, buf, nbytes, const_bytes, elem, count):
        shared = self.shared_buffer(fl, buf, const_bytes, elem, count, LDS, " (target rocm)")
        if shared is not None:
            return shared
        scope = buf.scope
        assert scope.startswith("local"), scope
        return private_alloca(fl, elem, max(count, 1), buf.name, 16, PRIVATE,
                              self.pointer("local")), 16, False

    def lower_attr(self, fl, s: AttrStmt) -> bool:
        if s.key != THREAD_EXTENT or not isinstance(s.node, IterVar):
            return False
        axis, _, dim = s.node.thread_tag.partition(".")
        if axis not in _INTRINSIC or dim not in ("x", "y", "z"):
            raise Diagnostic(f"unknown thread axis '{s.node.thread_tag}'", s.span)
        fn = fl.module.declare(f"llvm.amdgcn.{_INTRINSIC[axis]}.id.{dim}",
                               ir.FunctionType(lt.I32, []))
        var = s.node.var
        fl.vars[id(var)] = fl.int_cast(fl.b.call(fn, [], name=var.name),
                                       ir.IntType(var.dtype.bits), signed=False)
        fl.stmt(s.body)
        return True

    def lower_call(self, fl, call: Call) -> ir.Value | None:
        if ptx_ops.is_ptx(call.op):
            raise Diagnostic(f"T.{call.op} is a PTX instruction of CUDA device code: it has no "
                             "AMDGPU form (target rocm)", call.span)
        if call.op == "tvm_storage_sync":
            scope = call.args[0].value if call.args and isinstance(call.args[0], StringImm) else ""
            if scope in SHARED_SCOPES:
                fl.b.fence("release", "workgroup")
                fl.b.call(fl.module.declare("llvm.amdgcn.s.barrier",
                                            ir.FunctionType(ir.VoidType(), [])), [])
                fl.b.fence("acquire", "workgroup")
            elif scope == "warp":
                fl.b.fence("acq_rel", "wavefront")
            else:
                raise Diagnostic(f"T.tvm_storage_sync(\"{scope}\") is not supported on target "
                                 "rocm", call.span)
            return ir.Constant(lt.I32, 0)
        warp = lower_warp_call(fl, call)
        if warp is not None:
            return warp
        if call.op in ("call_pure_extern", "call_extern") and call.args \
                and isinstance(call.args[0], StringImm):
            return self.extern_call(fl, call)
        if call.op in MATH_OPS and call.dtype.is_float:
            return self.math_call(fl, call)
        return None

    def extern_call(self, fl, call: Call) -> ir.Value:
        name = call.args[0].value
        op = extern_math(name)
        args = call.args[1:]
        if op is None or not call.dtype.is_float or len(args) != _EXTERN_ARITY.get(op, 1):
            self.extern_symbol(name, call)
        return fl.expr(Call(call.dtype, op, tuple(args), span=call.span))

    def math_call(self, fl, call: Call) -> ir.Value | None:
        """Our expansions; a located error for what neither the backend nor they give;
        None: the shared lowering's (an intrinsic the backend lowers)."""
        base = call.dtype.base
        if call.op in _EXPANDED and base in ("float32", "float16"):
            return expand(fl, call)
        if call.op in _EXPANDED_F64 and base == "float64" and call.dtype.lanes == 1:
            return expand_f64(fl, call)
        need = _COMPOSED_OF.get(call.op, call.op)
        if self.math(need, base) is None:
            raise Diagnostic(f"T.{call.op} of {call.dtype} is not available on target rocm: "
                             "the AMDGPU backend has no instruction for it and tirc links no "
                             "device library (TVM links ROCm's ocml)", call.span)
        return None

    def raise_error(self, fl, kind, message) -> None:
        fl.b.call(fl.module.declare("llvm.trap", ir.FunctionType(ir.VoidType(), [])), [])


def expand(fl, call: Call) -> ir.Value:
    """tanh, erf, tan, sinh, cosh of float32/float16 from exp, sin and cos, computed in
    float32 (float16 rounded at the end)."""
    d = call.dtype
    f32 = DataType("float32", d.lanes)
    x = fl.convert(fl.expr(call.args[0]), call.args[0].dtype, f32, call.span)
    b = fl.b

    def c(v: float) -> ir.Value:
        return lt.const(f32, v, fl.ctx.pointer())

    def exp(v: ir.Value) -> ir.Value:
        return fl.math("exp", "float32", [v])

    def series(z: ir.Value, coefficients: tuple[float, ...]) -> ir.Value:
        """z * (c0 + c1 z^2 + c2 z^4 + ...), by Horner's rule."""
        z2, acc = b.fmul(z, z), c(coefficients[-1])
        for k in reversed(coefficients[:-1]):
            acc = b.fadd(c(k), b.fmul(z2, acc))
        return b.fmul(z, acc)

    op = call.op
    ax = fl.math("fabs", "float32", [x])
    if op == "tanh":  # TVM's DispatchNumericalStableTanh; near 0, where 1 - e^-2x cancels,
        # its Taylor series (relative error below 1e-9 for |x| < 1/8)
        en, ep = exp(b.fmul(c(-2.0), x)), exp(b.fmul(c(2.0), x))
        pos = b.fdiv(b.fsub(c(1.0), en), b.fadd(c(1.0), en))
        neg = b.fdiv(b.fsub(ep, c(1.0)), b.fadd(ep, c(1.0)))
        r = b.select(b.fcmp_ordered(">=", x, c(0.0)), pos, neg)
        small = series(x, (1.0, -1 / 3, 2 / 15, -17 / 315, 62 / 2835))
        r = b.select(b.fcmp_ordered("<", ax, c(0.125)), small, r)
    elif op == "erf":  # Numerical Recipes' erfc: |relative error| < 1.2e-7; near 0, where
        # 1 - erfc cancels, erf's Taylor series (relative error below 1e-9 for |x| < 1/2)
        t = b.fdiv(c(1.0), b.fadd(c(1.0), b.fmul(c(0.5), ax)))
        poly = c(0.17087277)
        for k in (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
                  0.09678418, 0.37409196, 1.00002368, -1.26551223):
            poly = b.fadd(c(k), b.fmul(t, poly))
        erfc = b.fmul(t, exp(b.fadd(b.fneg(b.fmul(ax, ax)), poly)))
        r = fl.math("copysign", "float32", [b.fsub(c(1.0), erfc), x])
        two_over_sqrt_pi = 1.1283791670955126
        small = series(x, tuple(two_over_sqrt_pi * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                                for n in range(7)))
        r = b.select(b.fcmp_ordered("<", ax, c(0.5)), small, r)
    elif op == "tan":
        r = b.fdiv(fl.math("sin", "float32", [x]), fl.math("cos", "float32", [x]))
    else:  # sinh, cosh; sinh near 0, where e^x - e^-x cancels, by its Taylor series
        ep, en = exp(x), exp(b.fneg(x))
        r = b.fmul(c(0.5), b.fsub(ep, en) if op == "sinh" else b.fadd(ep, en))
        if op == "sinh":
            small = series(x, tuple(1 / math.factorial(2 * n + 1) for n in range(5)))
            r = b.select(b.fcmp_ordered("<", ax, c(0.5)), small, r)
    return fl.convert(r, f32, d, call.span)


_LN2_HI, _LN2_LO = 0.6931471805599453, 2.3190468138462996e-17  # ln 2, hi + lo
_LN10_HI, _LN10_LO = 2.302585092994046, -2.1707562233822494e-16  # ln 10, hi + lo
_LOG10_2_HI, _LOG10_2_LO = 0.3010299956639812, -2.8037281277851704e-18  # log10 2, hi + lo
_LOG2E, _LOG10E = 1.4426950408889634, 0.4342944819032518


def expand_f64(fl, call: Call) -> ir.Value:
    """exp, exp2, exp10, log, log2, log10, tanh and sigmoid of a float64 scalar, which the
    AMDGPU backend has no instruction for (ROCm's ocml has them), as fma, rint, ldexp and
    frexp, which it has:

    * exp: ``n = rint(x log2 e)``, ``r = x - n ln 2`` (ln 2 in two parts, by fma), a
      degree-13 Taylor polynomial of e^r (|r| <= 0.35), ``ldexp(p, n)``; x clamped to
      +-1100 first (so n fits; e^x is then 0 or inf anyway), NaN kept. exp2 reduces
      ``x - n`` exactly, then ``r = (x - n) ln 2``; exp10 takes ``x ln 10`` as a
      double-double (fma) and reduces both parts;
    * log: ``frexp``, the mantissa m in [sqrt(1/2), sqrt(2)), ``s = (m - 1) / (m + 1)``,
      ``log m = 2 atanh s`` by its series to s^21 (|s| <= 0.172); ``e ln 2 + log m`` (ln 2
      in two parts); log2 ``e + log m log2 e``, log10 ``e log10 2 + log m log10 e``; a
      negative x is NaN, 0 is -inf, inf is inf, NaN is NaN;
    * tanh: TVM's stable form over the exp above, its Taylor series for |x| < 1/8;
      sigmoid: ``1 / (1 + exp(-x))``."""
    b = fl.b
    f64, i32 = ir.DoubleType(), lt.I32
    x = fl.convert(fl.expr(call.args[0]), call.args[0].dtype, call.dtype, call.span)

    def c(v: float) -> ir.Value:
        return ir.Constant(f64, v)

    def fma(a, m, add) -> ir.Value:
        return fl.call_intrinsic("llvm.fma", [a, m, add])

    def poly(z, coefficients) -> ir.Value:  # c0 + c1 z + c2 z^2 + ...
        acc = c(coefficients[-1])
        for k in reversed(coefficients[:-1]):
            acc = fma(acc, z, c(k))
        return acc

    def is_nan(v) -> ir.Value:
        return b.fcmp_unordered("uno", v, v)

    def exp_of(hi: ir.Value, lo: ir.Value | None, kind: str) -> ir.Value:
        """e^(hi + lo) (kind "e"), 2^hi (kind "2")."""
        clamped = fl.call_intrinsic("llvm.minnum", [fl.call_intrinsic("llvm.maxnum", [hi, c(-1100.0)]), c(1100.0)])
        if kind == "2":
            n = fl.call_intrinsic("llvm.rint", [clamped])
            r = b.fmul(b.fsub(clamped, n), c(_LN2_HI))
        else:
            n = fl.call_intrinsic("llvm.rint", [b.fmul(clamped, c(_LOG2E))])
            r = fma(b.fneg(n), c(_LN2_HI), clamped)
            r = fma(b.fneg(n), c(_LN2_LO), r)
            if lo is not None:
                r = b.fadd(r, lo)
        p = poly(r, tuple(1 / math.factorial(k) for k in range(14)))
        ldexp = fl.module.declare("llvm.ldexp.f64.i32", ir.FunctionType(f64, [f64, i32]))
        y = b.call(ldexp, [p, b.fptosi(n, i32)])
        return b.select(is_nan(hi), hi, y)

    def log_of(v: ir.Value, kind: str) -> ir.Value:
        pair = ir.LiteralStructType([f64, i32])
        frexp = fl.module.declare("llvm.frexp.f64.i32", ir.FunctionType(pair, [f64]))
        parts = b.call(frexp, [v])
        m, e = b.extract_value(parts, 0), b.extract_value(parts, 1)
        low = b.fcmp_ordered("<", m, c(0.7071067811865476))
        m = b.select(low, b.fmul(m, c(2.0)), m)
        e = b.sitofp(b.select(low, b.sub(e, ir.Constant(i32, 1)), e), f64)
        f = b.fsub(m, c(1.0))
        s = b.fdiv(f, b.fadd(m, c(1.0)))
        s2 = b.fmul(s, s)
        log_m = b.fmul(b.fmul(c(2.0), s), poly(s2, tuple(1 / (2 * k + 1) for k in range(11))))
        if kind == "e":
            y = fma(e, c(_LN2_HI), fma(e, c(_LN2_LO), log_m))
        elif kind == "2":
            y = fma(log_m, c(_LOG2E), e)
        else:
            y = fma(e, c(_LOG10_2_HI), fma(e, c(_LOG10_2_LO), b.fmul(log_m, c(_LOG10E))))
        y = b.select(b.fcmp_ordered("==", v, c(math.inf)), v, y)
        y = b.select(b.fcmp_ordered("==", v, c(0.0)), c(-math.inf), y)
        return b.select(b.fcmp_unordered("<", v, c(0.0)), c(math.nan), y)  # and NaN

    op = call.op
    if op in ("exp", "exp2"):
        return exp_of(x, None, "e" if op == "exp" else "2")
    if op == "exp10":
        hi = b.fmul(x, c(_LN10_HI))
        lo = fma(x, c(_LN10_LO), fma(x, c(_LN10_HI), b.fneg(hi)))
        far = b.fcmp_unordered(">=", fl.call_intrinsic("llvm.fabs", [hi]), c(1000.0))
        lo = b.select(far, c(0.0), lo)  # e^hi is 0 or inf there (and lo NaN at inf)
        return b.select(is_nan(x), x, exp_of(hi, lo, "e"))
    if op in ("log", "log2", "log10"):
        return log_of(x, {"log": "e", "log2": "2", "log10": "10"}[op])
    if op == "sigmoid":
        return b.fdiv(c(1.0), b.fadd(c(1.0), exp_of(b.fneg(x), None, "e")))
    # tanh
    en, ep = exp_of(b.fmul(c(-2.0), x), None, "e"), exp_of(b.fmul(c(2.0), x), None, "e")
    pos = b.fdiv(b.fsub(c(1.0), en), b.fadd(c(1.0), en))
    neg = b.fdiv(b.fsub(ep, c(1.0)), b.fadd(ep, c(1.0)))
    r = b.select(b.fcmp_ordered(">=", x, c(0.0)), pos, neg)
    x2 = b.fmul(x, x)
    series = b.fmul(x, poly(x2, (1.0, -1 / 3, 2 / 15, -17 / 315, 62 / 2835, -1382 / 155925,
                                 21844 / 6081075, -929569 / 638512875,
                                 6404582 / 10854718875)))
    small = b.fcmp_ordered("<", fl.call_intrinsic("llvm.fabs", [x]), c(0.125))
    return b.select(small, series, r)


@record(frozen=True)
class DeviceObject:
    """What the AMDGPU backend makes of a device module before linking."""

    obj: bytes  # the ELF relocatable object
    llvm_ir: str  # the optimised module ("" unless asked for)
    arch: str  # gfx90a
    kernels: tuple[str, ...]  # entry symbols, in module order


def lower_to_llvm(mod: IRModule, target: Target, name: str = "module") -> tuple[str, AMDGPUContext]:
    """The device module as LLVM IR text, before optimisation."""
    ctx = AMDGPUContext(target)
    lowering = ModuleLowering(mod, ctx, name)
    return ctx.finish_text(module_text(lowering.lower())), ctx


def generate(mod: IRModule, target: Target, name: str = "module", keep_ir: bool = False,
             timed=None) -> DeviceObject:
    """The relocatable object of ``mod``; ``timed(substage)``: a context that times each
    sub-stage (``DeviceOutputs.timed``)."""
    timed = timed or _untimed
    with timed("lower"):
        text, ctx = lower_to_llvm(mod, target, name)
    with timed("parse-llvm"):
        parsed = llvm.parse_assembly(text)
        parsed.verify()
    with timed("optimize"):
        pb = llvm.create_pass_builder(ctx.machine,
                                      llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(parsed, pb)
    with timed("emit-object"):
        obj = ctx.machine.emit_object(parsed)
    return DeviceObject(obj, str(parsed) if keep_ir else "", str(target.get("mcpu")),
                        kernel_symbols(mod))


@contextmanager
def _untimed(substage: str):
    yield
