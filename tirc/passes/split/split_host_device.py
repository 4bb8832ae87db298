"""SplitHostDevice: every device region becomes a kernel function of its own.

A region ``T.attr(<device target>, "target", 0)`` in host code (marked by
AnnotateDeviceRegions) becomes a public function ``<func>_kernel`` (then ``_kernel_1``,
... — fresh names across the module) bound to that device target, with
``"calling_conv": 2`` (a kernel the host launches) and ``"tirx.is_global_func"``. Its
parameters are exactly what the region uses from outside: one pointer per distinct
buffer data pointer, then the scalar variables (including the size variables of the
buffers' shapes), each group by name as TVM 0.27 orders them; inside, each buffer is declared again over its
pointer (``T.decl_buffer(..., data=A_ptr)``) with fresh variables, so no Var or Buffer
is shared between host and kernel. The region in the host function becomes a call
``Module.<func>_kernel(A.data, ..., n)``, which LowerDeviceKernelLaunch turns into a
launch.

Device functions that return a value are device subroutines called from kernels and are
never split; calls inside device code stay direct calls; host functions without device
regions are untouched — so a value-returning host helper never becomes a kernel, and a
host caller whose target is ``cuda`` with a host is still a host caller (seed 001).
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import CallingConv, CALLING_CONV, IS_GLOBAL_FUNC, NOALIAS, NOALIAS_KEYS, TARGET
from tirc.ir.dtype import HANDLE, VOID
from tirc.ir.expr import Call, GlobalVar, PointerType, Var
from tirc.ir.freevars import region_uses
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.renew import renew_defs, substitute
from tirc.ir.stmt import AttrStmt, DeclBuffer, Evaluate, Return
from tirc.ir.visitor import Mutator, walk
from tirc.passes.analysis.context import HOST, body_context
from tirc.target import Target

KERNEL_ATTRS = {CALLING_CONV: int(CallingConv.DEVICE_KERNEL_LAUNCH), IS_GLOBAL_FUNC: True}


class _Split(Mutator):
    def __init__(self, func_name: str, func: PrimFunc, taken: set[str]):
        self.func_name = func_name
        self.func = func
        self.taken = taken
        self.kernels: dict[str, PrimFunc] = {}

    def fresh(self) -> str:
        base = f"{self.func_name}_kernel"
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def visit_AttrStmt(self, s: AttrStmt):
        if not (s.key == TARGET and isinstance(s.node, Target) and s.node.is_device):
            return (yield from self.descend(s))
        for node in walk(s.body):
            if isinstance(node, Return):
                raise Diagnostic("'return' inside device code of a host function", node.span)
        uses = region_uses(s.body)
        pointers: list[Var] = []
        for b in uses.buffers:
            if not any(b.data is p for p in pointers):
                pointers.append(b.data)
        scalars = [v for v in uses.vars if not any(v is p for p in pointers)]
        for v in scalars:
            if v.dtype == HANDLE and v.ptr is None:
                raise Diagnostic(f"device code uses the opaque handle '{v.name}'", s.span)
        # TVM's order: pointers, then scalars, each by name (a stable sort: first use
        # orders equal names), so a kernel takes its arguments as TVM's does.
        args = sorted(pointers + scalars, key=lambda v: (v.dtype != HANDLE, v.name))
        ptr_params = {id(p): Var(f"{p.name}_ptr", HANDLE, p.ptr or PointerType(None, "global"),
                                 p.span) for p in pointers}
        params = tuple(ptr_params.get(id(v), v) for v in args)
        body = s.body
        for b in reversed(uses.buffers):
            body = DeclBuffer(b, body, s.span)
        body = substitute(body, ptr_params)
        kernel = PrimFunc(params, body, None, (),
                          {TARGET: s.node, **KERNEL_ATTRS, **_noalias(self.func)},
                          False, s.span)
        kernel = renew_defs(kernel)
        name = self.fresh()
        self.kernels[name] = kernel
        call = Call(VOID, GlobalVar(name), tuple(args), s.span)
        return Evaluate(call, s.span)


def _noalias(func: PrimFunc) -> dict:
    for key in NOALIAS_KEYS:
        if func.attrs.get(key):
            return {NOALIAS: True}
    return {}


def split_host_device(mod: IRModule, ctx) -> IRModule:
    funcs: dict[str, PrimFunc] = {}
    kernels: dict[str, PrimFunc] = {}
    taken = set(mod.functions)
    for name, f in mod.functions.items():
        target = f.attrs.get(TARGET)
        if not isinstance(target, Target) or body_context(f) != HOST:
            funcs[name] = f
            continue
        splitter = _Split(name, f, taken)
        body = splitter.visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
        kernels.update(splitter.kernels)
    funcs.update(kernels)
    return replace(mod, functions=funcs)

