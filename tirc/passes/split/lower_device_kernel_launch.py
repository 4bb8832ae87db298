"""LowerDeviceKernelLaunch: host calls of kernels become launches with their sizes.

For each kernel (``"calling_conv": 2``, made by SplitHostDevice) this pass collects the
launch parameters: the thread axes in order of first appearance (``blockIdx.x``,
``threadIdx.x``, ...) with their extents, and, when the kernel allocates ``shared.dyn``
memory, ``tirx.use_dyn_shared_memory`` with the byte count. They are recorded on the
kernel as ``"tirx.kernel_launch_params"``, and every host call ``Module.k(args)``
becomes ``T.call_ffi_kernel("k", args..., extents..., launch_params=[...])`` with the
extents written in terms of the call's arguments.

A call is a launch only when the callee is a kernel and the caller is host code — the
caller's target kind does not matter (a ``cuda`` function with a host is a host caller),
and host-to-host calls stay plain calls whatever their targets. Errors: a
thread axis with two different extents, an extent that depends on something other than
the kernel's parameters, more threads per block than the target allows, a kernel called
from device code, a device subroutine called from host code.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir import describe, facts
from tirc.diagnostics import Diagnostic
from tirc.ir.facts import BuildFacts
from tirc.ir.attrs import (GLOBAL_SYMBOL, KERNEL_LAUNCH_PARAMS, LAUNCH_FLAGS, TARGET,
                           THREAD_EXTENT, USE_DYN_SHARED_MEMORY, is_kernel, sized_launch_params)
from tirc.ir.dtype import INT32, INT64
from tirc.ir.equal import structural_equal
from tirc.ir.expr import Call, GlobalVar, IntImm, PrimExpr, StringImm
from tirc.ir.freevars import region_uses
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.index_arith import arith, cast
from tirc.ir.renew import substitute
from tirc.ir.stmt import AllocBuffer, AttrStmt, Evaluate, IterVar
from tirc.ir.visitor import Mutator, walk_statements
from tirc.passes.analysis.context import HOST, body_context
from tirc.target.kinds import Target, thread_axis_limits



def _product(values: list[PrimExpr]) -> PrimExpr:
    out: PrimExpr = IntImm(INT64, 1)
    for v in values:
        out = arith("mul", out, cast(v, INT64))
    return out


def launch_params(name: str, kernel: PrimFunc) -> tuple[list[str], list[PrimExpr]]:
    """The kernel's launch parameters and the extents of those that take a size
    (``sized_launch_params``), in terms of its parameters. The kinds of launch the
    kernel asks for in its own ``tirx.kernel_launch_params`` (SplitHostDevice copies them
    from its host function) come after the thread axes, as in TVM."""
    tags: list[str] = []
    extents: list[PrimExpr] = []
    dyn: list[PrimExpr] = []
    for node in walk_statements(kernel.body):
        if isinstance(node, AttrStmt) and node.key == THREAD_EXTENT and isinstance(node.node, IterVar):
            tag = node.node.thread_tag
            if tag in tags:
                if not structural_equal(extents[tags.index(tag)], node.value):
                    raise Diagnostic(f"thread axis '{tag}' of kernel '{name}' has two different "
                                     "extents", node.span)
                continue
            tags.append(tag)
            extents.append(node.value)
        elif isinstance(node, AllocBuffer) and node.buffer.scope == "shared.dyn":
            b = node.buffer
            dyn.append(arith("mul", _product(list(b.shape)),
                             IntImm(INT64, b.dtype.bits * b.dtype.lanes // 8)))
    params = {id(p) for p in kernel.params}
    for tag, extent in zip(tags, extents):
        outside = [v for v in region_uses(_eval(extent)).vars if id(v) not in params]
        if outside:
            raise Diagnostic(f"the extent of '{tag}' in kernel '{name}' depends on "
                             f"'{outside[0].name}', which the host does not know", kernel.span)
    _check_block_size(name, kernel, tags, extents)
    requested = kernel.attrs.get(KERNEL_LAUNCH_PARAMS, ())
    tags += [t for t in LAUNCH_FLAGS if t in requested]  # no size: extents stay as they are
    if dyn:
        total = dyn[0]
        for d in dyn[1:]:
            total = arith("add", total, d)
        tags.append(USE_DYN_SHARED_MEMORY)
        extents.append(total)
    return tags, extents


def _eval(e: PrimExpr):
    return Evaluate(e)


def _check_block_size(name: str, kernel: PrimFunc, tags: list[str], extents: list[PrimExpr]) -> None:
    target = kernel.attrs.get(TARGET)
    if not isinstance(target, Target):
        return
    threads: int | None = 1
    for tag, extent in zip(tags, extents):
        if not isinstance(extent, IntImm):
            if tag.startswith("threadIdx."):
                threads = None
            continue
        if extent.value < 1:
            raise Diagnostic(f"kernel '{name}' launches '{tag}' with extent {extent.value}: a "
                             "thread extent must be at least 1", kernel.span)
        if tag.startswith("threadIdx.") and threads is not None:
            threads *= extent.value
    limit = target.get("max_num_threads")
    if threads is not None and limit is not None and threads > limit:
        raise Diagnostic(f"kernel '{name}' uses {threads} threads per block; target "
                         f"'{target.describe()}' allows {limit}", kernel.span)
    limits = thread_axis_limits(target)  # the grid's, and each block axis's
    for tag, extent in zip(tags, extents):
        most = limits.get(tag)
        if isinstance(extent, IntImm) and most is not None and extent.value > most:
            raise Diagnostic(f"kernel '{name}' launches '{tag}' with extent {extent.value}; "
                             f"target '{target.describe()}' allows at most {most} for "
                             f"'{tag}'", kernel.span)


class _Launches(Mutator):
    def __init__(self, mod: IRModule, launches: dict[str, tuple[list[str], list[PrimExpr]]],
                 caller: str, host: bool):
        self.mod = mod
        self.launches = launches
        self.caller = caller
        self.host = host

    def visit_Call(self, e: Call):
        e = self.generic_visit(e)
        if not isinstance(e.op, GlobalVar) or e.op.name not in self.mod.functions:
            return e
        callee = self.mod.functions[e.op.name]
        if e.op.name in self.launches:
            if not self.host:
                raise Diagnostic(f"kernel '{e.op.name}' is launched from device code in "
                                 f"'{self.caller}'", e.span)
            tags, extents = self.launches[e.op.name]
            mapping = {id(p): a for p, a in zip(callee.params, e.args)}
            sizes = tuple(substitute(x, mapping) for x in extents)
            return Call(INT32, "call_ffi_kernel", (StringImm(e.op.name, e.span), *e.args, *sizes),
                        e.span, (("launch_params", tuple(tags)),))
        target = callee.attrs.get(TARGET)
        if (self.host and isinstance(target, Target) and target.is_device and target.host is None):
            raise Diagnostic(f"'{e.op.name}' is device code (target '{target.describe()}') but "
                             f"is called from host code in '{self.caller}'", e.span)
        return e


def lower_device_kernel_launch(mod: IRModule, ctx) -> IRModule:
    launches = {name: launch_params(name, f) for name, f in mod.functions.items() if is_kernel(f)}
    funcs: dict[str, PrimFunc] = {}
    for name, f in mod.functions.items():
        if name in launches:
            tags = tuple(launches[name][0])
            funcs[name] = f.with_attr(KERNEL_LAUNCH_PARAMS, tags)
            continue
        host = body_context(f) == HOST
        body = _Launches(mod, launches, name, host).visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs, facts=_kernel_facts(mod.facts, funcs, launches))


def _kernel_facts(record: BuildFacts, funcs: dict[str, PrimFunc], launches) -> BuildFacts:
    """The record with each kernel: its launch parameters and sizes, and its host launch
    sites (caller and sizes in the caller's terms), in module order."""
    sites: dict[str, list[facts.Launch]] = {}
    for caller, f in funcs.items():
        for call in describe.launch_calls(f.body):
            kname, _, sizes = describe.launch_of(call)
            sites.setdefault(kname, []).append(facts.Launch(caller, sizes))
    for name, (tags, extents) in launches.items():
        f = funcs[name]
        target, summary = describe.target_of(f)
        record = record.with_kernel(facts.Kernel(
            name, str(f.attrs.get(GLOBAL_SYMBOL, name)), target, summary, describe.params(f),
            tuple(tags), describe.launch_sizes(sized_launch_params(tags), extents),
            tuple(sites.get(name, ())),
            f.span))
    return record
