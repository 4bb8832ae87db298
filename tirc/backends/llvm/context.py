"""The target context: every target fact the shared TIR -> LLVM lowering needs, as small
hooks (numba-cuda's target context, tinygrad's table per renderer). The lowering in
:mod:`tirc.backends.llvm.lower`/:mod:`tirc.backends.llvm.expr`/:mod:`tirc.backends.llvm.intrin` never asks which target it is on; a backend
subclasses :class:`LLVMTargetContext` and overrides what differs: address spaces, math
functions, how functions are exposed, how buffers are allocated, parallel loops,
how an error is raised, and target-specific calls.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.llvmlite_compat import opaque
from tirc.backends.host_faults import exported
from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import GLOBAL_SYMBOL
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Call
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import AttrStmt, For
from tirc.target.kinds import Target

if TYPE_CHECKING:
    from tirc.backends.llvm.lower import FunctionLowering

# Math functions with an LLVM intrinsic every backend expands (to instructions or libm).
LLVM_MATH = {"exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
             "log10": "llvm.log10", "sqrt": "llvm.sqrt", "sin": "llvm.sin", "cos": "llvm.cos",
             "floor": "llvm.floor", "ceil": "llvm.ceil", "round": "llvm.nearbyint",
             "trunc": "llvm.trunc", "nearbyint": "llvm.nearbyint", "fabs": "llvm.fabs",
             "pow": "llvm.pow", "fma": "llvm.fma", "copysign": "llvm.copysign"}
# The rest come from the C math library (``f`` suffix for float32).
LIBM = ("tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
        "erf", "log1p", "atan2", "hypot", "nextafter", "fmod")


# the dynamic shared memory of a GPU module: one external array, sized at launch
DYN_SHMEM = "buf_dyn_shmem"


class LLVMTargetContext:
    """Defaults describe a plain CPU; device backends override."""

    global_addrspace = 0
    max_stack_alloca = 1024  # bytes: larger or non-constant allocations go elsewhere
    # fast-math flags of float add/sub/mul (("contract",): a * b + c may become an fma)
    float_flags: tuple[str, ...] = ()
    # the adds of latency-bound accumulator chains stay uncontracted (accumulator_chains;
    # CPUs: a GPU hides an FMA's latency with other warps)
    split_accumulator_chains = False
    # fast-math flags the target asks for (-fast-math, -fast-math-<flag>), on every float
    # operation (float_flags include them)
    fast_flags: tuple[str, ...] = ()
    # scoped alias metadata on buffer accesses (llvm_alias): buffers known distinct are
    # declared not to alias
    alias_scopes = False
    # a buffer address as gep(gep(data, rest), c) for an int32 index rest + c
    # (llvm_expr.split_index_constant): accesses a constant apart are seen disjoint
    split_index_constants = False
    # an integer division that would trap (by zero, INT_MIN by -1) makes the function
    # fail with an error (host code); False: it gives set values instead (llvm_expr's
    # division_guard), as on the GPU, whose division does not trap
    division_fails = True
    # (min, max) of T.vscale() where the target has scalable vectors (tirc.target.kinds's
    # vscale_range); None: it has none, and T.vscale() is an error (llvm_vla)
    vscale_range: tuple[int, int] | None = None
    # atomic read-modify-write of one byte (llvm_subbyte stores part of a shared byte so)
    byte_atomics = True
    # 'local' buffers are each thread's own (a GPU's); on a CPU the iterations of a
    # T.parallel loop may share one
    private_local = False

    def __init__(self, target: Target, triple: str, data_layout: str = ""):
        self.target, self.triple, self.data_layout = target, triple, data_layout

    def pointer(self, scope: str = "global") -> ir.PointerType:
        return lt.pointer_type(self.global_addrspace)

    def param_pointer(self, func: PrimFunc) -> ir.PointerType:
        """The type of ``func``'s handle parameters."""
        return self.pointer()

    # -- functions --------------------------------------------------------------------
    def symbol(self, name: str, func: PrimFunc) -> str:
        """The LLVM name of module function ``name``."""
        return str(func.attrs.get(GLOBAL_SYMBOL, name)) if self.is_exported(func) else name

    def is_exported(self, func: PrimFunc) -> bool:
        """Whether ``func`` is external here (default: :func:`exported`)."""
        return exported(func)

    def decorate(self, llfunc: ir.Function, func: PrimFunc) -> None:
        llfunc.linkage = "external" if self.is_exported(func) else "internal"
        llfunc.attributes.add("nounwind")

    # -- math -------------------------------------------------------------------------
    def math(self, name: str, dtype_base: str) -> tuple[str, str] | None:
        """(``"llvm"``, intrinsic) or (``"libm"``, symbol) for a float math function of
        one lane of ``dtype_base``; None when not available (the caller composes)."""
        if name in LLVM_MATH:
            return "llvm", LLVM_MATH[name]
        if name in LIBM:
            return "libm", name + ("f" if dtype_base in ("float32", "float16") else "")
        return None

    # -- hooks ------------------------------------------------------------------------
    def allocate(self, fl: FunctionLowering, nbytes: ir.Value, const_bytes: int | None,
                 elem: ir.Type, count: int | None) -> tuple[ir.Value, int, bool]:
        """Memory for a buffer of ``nbytes`` (``const_bytes`` when constant):
        (pointer, its known alignment, whether it is on the heap and must be freed)."""
        raise NotImplementedError

    def allocate_buffer(self, fl: FunctionLowering, buf: Buffer, nbytes: ir.Value,
                        const_bytes: int | None, elem: ir.Type,
                        count: int | None) -> tuple[ir.Value, int, object]:
        """Memory for ``buf``, whose scope may matter (devices); default: :meth:`allocate`.
        The third item may also be a callable ``(fl, pointer)`` that emits the release of
        memory ``free`` does not take (a device's)."""
        return self.allocate(fl, nbytes, const_bytes, elem, count)

    def shared_buffer(self, fl: FunctionLowering, buf: Buffer, const_bytes: int | None,
                      elem: ir.Type, count: int | None, addrspace: int,
                      where: str = "") -> tuple[ir.Value, int, bool] | None:
        """A GPU's memory shared by a block, for ``buf`` in scope ``shared.dyn`` (the
        module's one external array ``buf_dyn_shmem``, sized at launch) or ``shared``
        (an internal array of the function) in address space ``addrspace``; None for any
        other scope. A ``shared`` buffer needs a constant size (``where``: what the
        message adds after "device code")."""
        scope, m = buf.scope, fl.module.ir
        if scope == "shared.dyn":
            g = m.globals.get(DYN_SHMEM)
            if g is None:
                g = ir.GlobalVariable(m, ir.ArrayType(lt.I8, 0), DYN_SHMEM, addrspace=addrspace)
                g.linkage, g.align = "external", 16
                opaque(g, self.pointer("shared.dyn"))
            return g, 16, False
        if const_bytes is None:
            raise Diagnostic(f"buffer '{buf.name}' (scope '{scope}') needs a constant size in "
                             f"device code{where}", buf.span or fl.func.span)
        if scope != "shared":
            return None
        ty = ir.ArrayType(elem, count)
        g = ir.GlobalVariable(m, ty, m.get_unique_name(f"{fl.llfunc.name}_{buf.name}"),
                              addrspace=addrspace)
        g.linkage, g.align, g.initializer = "internal", 16, ir.Constant(ty, ir.Undefined)
        opaque(g, self.pointer("shared"))
        return g, 16, False

    def lower_parallel(self, fl: FunctionLowering, loop: For) -> None:
        raise Diagnostic("parallel loops are not supported on this target", loop.span)

    def lower_attr(self, fl: FunctionLowering, s: AttrStmt) -> bool:
        """Lower an AttrStmt with a target meaning; False: just its body."""
        return False

    def lower_call(self, fl: FunctionLowering, call: Call) -> ir.Value | None:
        """Target-specific intrinsics; None: not one of them."""
        return None

    def outlines_loops(self, fl: FunctionLowering) -> bool:
        """Whether ``fl``'s outermost loops are lowered by :meth:`outline_loop` (as
        functions of their own) instead of in its body."""
        return False

    def outline_loop(self, fl: FunctionLowering, loop: For) -> None:
        """Lower an outermost loop of a function that :meth:`outlines_loops`."""
        raise NotImplementedError

    def loops_outlined(self, fl: FunctionLowering) -> None:
        """After a function whose loops were outlined is lowered."""

    def after_call(self, fl: FunctionLowering, name: str, callee: PrimFunc) -> None:
        """After a call of module function ``name``: how its failure reaches the caller."""

    def extern_symbol(self, name: str, call: Call) -> str:
        """The symbol ``T.call_extern``/``T.call_pure_extern`` of ``name`` calls."""
        return name

    def raise_error(self, fl: FunctionLowering, kind: ir.Value, message: ir.Value) -> None:
        """Record an error (C strings ``kind``, ``message``) before the function fails."""

    def error_parts(self, fl: FunctionLowering) -> bool:
        """Whether ``fl`` raises a message given in parts (``raise_error_parts``)."""
        return False

    def raise_error_parts(self, fl: FunctionLowering, kind: ir.Value,
                          parts: list[ir.Value]) -> None:
        """Record an error whose message is the concatenation of the C strings ``parts``
        (only where ``error_parts`` says so)."""
        raise NotImplementedError


_llvm_initialized = False


def init_llvm() -> None:
    """Initialise LLVM's targets and asm printers once per process (llvmlite)."""
    global _llvm_initialized
    if not _llvm_initialized:
        import llvmlite.binding as llvm
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _llvm_initialized = True
