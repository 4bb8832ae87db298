"""AnnotateDeviceRegions: mark where host code hands over to the device.

In a function whose top level is host code (a CPU target, or a device target with a
host), every outermost thread scope (``T.launch_thread``) and every ``device_scope`` region
(``T.attr(0, "device_scope", 0)``: code for the device without thread axes, launched as
one thread, as TVM does) is wrapped in
``T.attr(<device target>, "target", 0)`` — the device target being the function's own
target without its host. Regions the text already delegated with
``T.attr(T.target(...), "target", 0)`` are kept. Functions bound to a device target
without a host (kernels, device subroutines) are device code throughout: untouched.

Precondition: LowerThreadBindings (thread axes are ``thread_extent`` scopes).
A thread scope in a function for a CPU target is a diagnostic: there is no device to run it.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import DEVICE_SCOPE, TARGET, THREAD_EXTENT
from tirc.ir.function import IRModule
from tirc.ir.stmt import AttrStmt, For, IterVar
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.context import HOST, body_context
from tirc.target.kinds import Target
from tirc.ir.dtype import INT32
from tirc.ir.expr import IntImm


class _Annotate(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self, device: Target | None, func_target: Target):
        self.device = device
        self.func_target = func_target

    def visit_For(self, s: For):
        if s.kind == "thread_binding":
            raise Diagnostic("thread-bound loops must be lowered first (LowerThreadBindings)", s.span)
        return (yield from self.descend(s))

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == TARGET and isinstance(s.node, Target):
            if s.node.is_device:
                return s  # already a device region
            return (yield from self.descend(s))
        if (s.key == THREAD_EXTENT and isinstance(s.node, IterVar)) or s.key == DEVICE_SCOPE:
            if self.device is None:
                what = (f"thread axis '{s.node.thread_tag}'" if s.key == THREAD_EXTENT
                        else "a 'device_scope' region")
                raise Diagnostic(f"{what} in a function for the CPU target "
                                 f"'{self.func_target.describe()}'; bind the function "
                                 "to a device target", s.span)
            return AttrStmt(self.device, "target", _zero(s), s, s.span)
        return (yield from self.descend(s))


def _zero(s):
    return IntImm(INT32, 0, s.span)


def annotate_device_regions(mod: IRModule, ctx) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        target = f.attrs.get(TARGET)
        if not isinstance(target, Target) or body_context(f) != HOST:
            funcs[name] = f
            continue
        device = target.without_host() if target.is_device else None
        body = _Annotate(device, target).visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)


