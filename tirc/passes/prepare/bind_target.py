"""BindTarget: give every function a ``target`` attribute (docs/targets.md).

An existing ``target`` is the single source of truth and is never overwritten; the bind
target (``--target`` with ``--host``) only fills in functions that have none:

* externally visible functions get the device target with its host;
* a private function called only from host code gets the host target, only from device
  code the device target without host, from both the device target plus a duplicate
  ``<name>_host`` (a fresh name if taken) with the host target, and host call sites are
  rewritten to the duplicate;
* callers' contexts propagate to callees transitively (host -> a -> b makes b a
  host-called function; a duplicate's callees are host-called too);
* a private function nobody calls gets the device target without host
  (kept as TVM has it).

Where TVM would miscompile, tirc differs and says so here: a private function that is
called from host code and itself contains device regions (thread bindings) gets the full
target, like an entry point, rather than the host target; a function whose explicit
target is a CPU target but that is called from device code is a diagnostic at the call, and
so is a public function (an entry point, itself included) called from device code.
A device target's host is filled in on externally visible functions that lack one,
whatever the bind target (with a CPU bind target, that target is the host; TVM fills it
in only from a bind target with a host, and leaves a device function it cannot build).
An externally visible function with an explicit CPU target gets the bind target's host
when there is one, as TVM's BindTarget gives it (``llvm`` with host ``llvm``); code is
still made for its own target. When the bind target is itself a CPU target there is
no device, and nothing is duplicated.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic, Span
from tirc.ir.attrs import IS_HOST_FUNC, TARGET
from tirc.ir.expr import Call, GlobalVar
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.renew import renew_defs
from tirc.ir.visitor import Mutator, Visitor
from tirc.ir.names import unique_name
from tirc.passes.analysis.context import DEVICE, HOST, body_context, scope_change
from tirc.target.kinds import Target, parse_target


class _Calls(Visitor):
    """Every call of a module function in a body, with the context it is made in."""

    def __init__(self, context: str):
        self.context = context
        self.calls: list[tuple[str, str, Span | None]] = []
        self.has_device_region = False
        self.outer: list[str] = []  # ``context`` outside each region entered

    def enter(self, node) -> None:
        change = scope_change(node)
        if change is not None:
            self.has_device_region |= change == DEVICE
            self.outer.append(self.context)
            self.context = change

    def leave(self, node) -> None:
        if scope_change(node) is not None:
            self.context = self.outer.pop()

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar):
            self.calls.append((e.op.name, self.context, e.span))
        self.generic_visit(e)


class _RewriteHostCalls(Mutator):
    """Point host-context calls of duplicated functions at their ``_host`` copies."""

    def __init__(self, context: str, duplicates: dict[str, str]):
        self.context = context
        self.duplicates = duplicates
        self.outer: list[str] = []  # ``context`` outside each region entered

    def enter(self, node) -> None:
        change = scope_change(node)
        if change is not None:
            self.outer.append(self.context)
            self.context = change

    def leave(self, node) -> None:
        if scope_change(node) is not None:
            self.context = self.outer.pop()

    def visit_Call(self, e: Call):
        e = self.generic_visit(e)
        if self.context == HOST and isinstance(e.op, GlobalVar) and e.op.name in self.duplicates:
            return replace(e, op=GlobalVar(self.duplicates[e.op.name]))
        return e


def _is_exposed(func: PrimFunc) -> bool:
    return not func.private


def bind_target(mod: IRModule, target: Target) -> IRModule:
    """Bind ``target`` (a device or CPU target, possibly with a host) to ``mod``."""
    host = target.host if target.host is not None else (target if not target.is_device else None)
    if host is None:
        host = parse_target("llvm")
    device = target.without_host()
    full = device.with_host(host) if target.is_device else device
    funcs = mod.functions

    # Step 1: which contexts call each function, transitively from the entry points.
    contexts: dict[str, set[str]] = {name: set() for name in funcs}
    device_regions: dict[str, bool] = {}
    seen: set[tuple[str, str]] = set()
    queue = [(name, body_context(f) or HOST) for name, f in funcs.items() if _is_exposed(f)]
    while queue:
        name, ctx = queue.pop(0)
        if (name, ctx) in seen:
            continue
        seen.add((name, ctx))
        func = funcs[name]
        walker = _Calls(body_context(func) or ctx)
        walker.visit(func.body)
        device_regions[name] = device_regions.get(name, False) or walker.has_device_region
        for callee, call_ctx, span in walker.calls:
            if callee not in funcs:
                continue  # Verify reports it
            _check_explicit(funcs[callee], callee, call_ctx, span)
            if call_ctx == DEVICE and _is_exposed(funcs[callee]):
                what = "itself" if callee == name else f"the public function '{callee}'"
                raise Diagnostic(f"'{name}' calls {what} from device code; a public function "
                                 "is an entry point with host code and cannot run on the "
                                 "device: call a private function (@T.prim_func(private=True))",
                                 span)
            contexts[callee].add(call_ctx)
            queue.append((callee, call_ctx))

    # Step 2: bind. Explicit targets stay; the others are filled in.
    new: dict[str, PrimFunc] = {}
    duplicates: dict[str, str] = {}
    host_copies: dict[str, PrimFunc] = {}
    taken = set(funcs)
    for name, func in funcs.items():
        explicit = func.attrs.get(TARGET)
        if isinstance(explicit, Target):
            if _is_exposed(func) and explicit.host is None:
                if explicit.is_device:
                    func = func.with_attr(TARGET, explicit.with_host(host))
                elif target.host is not None:  # TVM's rule: the bind target's host, if any
                    func = func.with_attr(TARGET, explicit.with_host(target.host))
            new[name] = func
            continue
        if func.attrs.get(IS_HOST_FUNC):
            attrs = {k: v for k, v in func.attrs.items() if k != IS_HOST_FUNC}
            new[name] = replace(func, attrs={**attrs, TARGET: host})
            continue
        if _is_exposed(func):
            new[name] = func.with_attr(TARGET, full)
            continue
        called = contexts[name]
        if not target.is_device:
            new[name] = func.with_attr(TARGET, device)
        elif called == {HOST, DEVICE}:
            new[name] = func.with_attr(TARGET, device)
            dup = unique_name(f"{name}_host", taken)
            duplicates[name] = dup
            host_copies[dup] = renew_defs(func).with_attr(TARGET, host)
        elif called == {HOST}:
            new[name] = func.with_attr(TARGET, full if device_regions.get(name) else host)
        else:
            new[name] = func.with_attr(TARGET, device)
    new.update(host_copies)

    # Step 3: host-context calls of duplicated functions go to the host copies.
    if duplicates:
        for name, func in new.items():
            start = body_context(func)
            if start is None:
                continue
            body = _RewriteHostCalls(start, duplicates).visit(func.body)
            if body is not func.body:
                new[name] = func.with_body(body)
    return replace(mod, functions=new)


def _check_explicit(callee: PrimFunc, name: str, ctx: str, span: Span | None) -> None:
    t = callee.attrs.get(TARGET)
    if isinstance(t, Target) and ctx == DEVICE and not t.is_device:
        raise Diagnostic(f"'{name}' has the CPU target '{t.describe()}' but is called from "
                         "device code; give it a device target or call it from host code", span)
