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

A public function of a device target (with a host) that hands nothing over to the device
itself, returns nothing, and is called by another function is device code throughout, as
TVM treats it: it becomes a kernel (its buffer parameters become their data pointers),
and LowerDeviceKernelLaunch launches it as one thread where it is called.

Device functions that return a value are device subroutines called from kernels and are
never split; calls inside device code stay direct calls; host functions without device
regions are untouched — so a value-returning host helper never becomes a kernel, and a
host caller whose target is ``cuda`` with a host is still a host caller.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import (CALLING_CONV, GLOBAL_SYMBOL, IS_GLOBAL_FUNC, KERNEL_LAUNCH_PARAMS,
                           LAUNCH_FLAGS, NOALIAS, NOALIAS_KEYS, TARGET, CallingConv)
from tirc.ir.dtype import HANDLE, VOID
from tirc.ir.expr import Call, GlobalVar, IntImm, PointerType, Var
from tirc.ir.freevars import region_uses
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.renew import renew_defs, substitute
from tirc.ir.stmt import AttrStmt, DeclBuffer, Evaluate, Return
from tirc.ir.visitor import Mutator, walk, walk_statements
from tirc.ir.names import unique_name
from tirc.passes.analysis.context import HOST, body_context
from tirc.target.kinds import Target

KERNEL_ATTRS = {CALLING_CONV: int(CallingConv.DEVICE_KERNEL_LAUNCH), IS_GLOBAL_FUNC: True}


class _Split(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self, func_name: str, func: PrimFunc, taken: set[str]):
        self.func_name = func_name
        self.func = func
        self.taken = taken
        self.kernels: dict[str, PrimFunc] = {}

    def fresh(self) -> str:
        return unique_name(f"{self.func_name}_kernel", self.taken)

    def visit_AttrStmt(self, s: AttrStmt):
        if not (s.key == TARGET and isinstance(s.node, Target) and s.node.is_device):
            return (yield from self.descend(s))
        for node in walk_statements(s.body):
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
        # what the region takes from outside becomes the kernel's own: a pointer parameter
        # for each data pointer, a fresh variable for each scalar (what the region defines
        # itself leaves the host function with it)
        outside = {id(p): Var(f"{p.name}_ptr", HANDLE, p.ptr or PointerType(None, "global"),
                              p.span) for p in pointers}
        outside.update((id(v), Var(v.name, v.dtype, v.ptr, v.span)) for v in scalars)
        body = s.body
        for b in reversed(uses.buffers):
            body = DeclBuffer(b, body, s.span)
        kernel = PrimFunc(tuple(outside[id(v)] for v in args), substitute(body, outside), None,
                          (), {TARGET: s.node, **KERNEL_ATTRS, **_noalias(self.func),
                               **_requested_launch(self.func)},
                          False, s.span)
        name = self.fresh()
        self.kernels[name] = kernel
        call = Call(VOID, GlobalVar(name), tuple(args), s.span)
        return Evaluate(call, s.span)


def _requested_launch(func: PrimFunc) -> dict:
    """The kinds of launch ``func`` asks for its kernels (TVM's ``tirx.kernel_launch_params``
    on the host function, copied to each kernel)."""
    flags = tuple(t for t in func.attrs.get(KERNEL_LAUNCH_PARAMS, ()) if t in LAUNCH_FLAGS)
    return {KERNEL_LAUNCH_PARAMS: flags} if flags else {}


def _noalias(func: PrimFunc) -> dict:
    for key in NOALIAS_KEYS:
        if func.attrs.get(key):
            return {NOALIAS: True}
    return {}


def _called(mod: IRModule) -> set[str]:
    return {n.op.name for f in mod.functions.values() for n in walk(f.body)
            if isinstance(n, Call) and isinstance(n.op, GlobalVar)}


def _runs_on_device(f: PrimFunc) -> bool:
    """Whether ``f`` is a public function of a device target whose code is all for the
    device: no region of its own hands over to the device, nothing is returned, and its
    buffers have constant shapes (a launch passes their data pointers only)."""
    target = f.attrs.get(TARGET)
    if not (isinstance(target, Target) and target.is_device and target.host is not None):
        return False
    if f.private or (f.ret_type is not None and not f.ret_type.is_void):
        return False
    for _, b in f.buffer_map:
        if not all(isinstance(e, IntImm) for e in (*b.shape, *b.strides)) or \
                not (b.elem_offset is None or isinstance(b.elem_offset, IntImm)):
            return False
    return not any(isinstance(n, AttrStmt) and n.key == TARGET for n in walk_statements(f.body))


def _as_kernel(f: PrimFunc) -> PrimFunc:
    """``f`` as a kernel: each buffer parameter becomes its data pointer (the buffer
    declared over it), the target loses its host."""
    buffers = {id(p): b for p, b in f.buffer_map}
    params, pointers, declared = [], {}, []
    for p in f.params:
        b = buffers.get(id(p))
        if b is None:
            params.append(p)
            continue
        ptr = Var(f"{b.data.name}_ptr", HANDLE, b.data.ptr or PointerType(None, "global"), p.span)
        pointers[id(b.data)] = ptr
        params.append(ptr)
        declared.append(b)
    body = f.body
    for b in reversed(declared):
        body = DeclBuffer(b, body, f.span)
    attrs = {k: v for k, v in f.attrs.items() if k not in (TARGET, GLOBAL_SYMBOL)}
    kernel = PrimFunc(tuple(params), body, None, (),
                      {**attrs, TARGET: f.attrs[TARGET].without_host(), **KERNEL_ATTRS},
                      False, f.span)
    return renew_defs(kernel, pointers)


def split_host_device(mod: IRModule, ctx) -> IRModule:
    funcs: dict[str, PrimFunc] = {}
    kernels: dict[str, PrimFunc] = {}
    taken = set(mod.functions) | ctx.module_names
    # which functions are called matters only for those that may run on the device whole
    whole = {name for name, f in mod.functions.items() if _runs_on_device(f)}
    called = _called(mod) if whole else set()
    for name, f in mod.functions.items():
        target = f.attrs.get(TARGET)
        if name in called and name in whole:
            funcs[name] = _as_kernel(f)  # TVM launches it, as one thread
            continue
        if not isinstance(target, Target) or body_context(f) != HOST:
            funcs[name] = f
            continue
        splitter = _Split(name, f, taken)
        body = splitter.visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
        kernels.update(splitter.kernels)
    funcs.update(kernels)
    return replace(mod, functions=funcs)

