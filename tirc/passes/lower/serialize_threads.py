"""SerializeThreads: kernels as serial CPU code, for ``tirc run --check-against llvm``.

Not a pipeline pass: ``tirc run`` applies it to a module as written, before the pipeline,
to build a CPU reference of a CUDA module. Every ``T.thread_binding`` loop becomes a
serial loop and device targets are dropped (the functions then get the CPU target). A
module whose meaning depends on threads running together is refused, with the reason at
the construct: shared or warp memory, barriers and cross-thread reductions, warp
shuffles, ``T.launch_thread``, a thread-local buffer that outlives a thread loop, a
region for another target.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import TARGET, THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import AllocBuffer, AttrStmt, Evaluate, For
from tirc.ir.visitor import Mutator, walk
from tirc.target.kinds import Target

_BARRIERS = ("tvm_storage_sync", "tvm_thread_allreduce")


class _Serialize(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_For(self, s: For):
        s = (yield from self.descend(s))
        if s.kind == "thread_binding":
            return replace(s, kind="serial", thread_tag=None)
        return s


def _cannot(fname: str, why: str, span) -> Diagnostic:
    return Diagnostic(f"'{fname}' {why}; only kernels whose thread-bound loops can run as "
                      "serial loops (no shared memory, barriers, warp operations or "
                      "T.launch_thread) can be built for the CPU", span)


def serialize_threads(mod: IRModule) -> IRModule:
    """The module with every ``T.thread_binding`` loop a serial loop and no device
    target, or a Diagnostic at the construct that makes that change the meaning."""
    funcs: dict[str, PrimFunc] = {}
    for name, f in mod.functions.items():
        for node in walk(f.body):
            span = getattr(node, "span", None)
            if isinstance(node, AllocBuffer):
                scope = node.buffer.scope
                if scope.startswith("shared") or scope == "warp":
                    raise _cannot(name, f"uses {scope} memory ('{node.buffer.name}')", span)
                if scope.startswith("local") and any(
                        isinstance(n, For) and n.kind == "thread_binding" for n in walk(node.body)):
                    raise _cannot(name, f"allocates the thread-local '{node.buffer.name}' "
                                        "outside a thread loop", span)
            elif isinstance(node, AttrStmt) and node.key in (THREAD_EXTENT, VIRTUAL_THREAD):
                raise _cannot(name, "uses T.launch_thread", span)
            elif isinstance(node, AttrStmt) and node.key == TARGET:
                raise _cannot(name, "has a region for another target", span)
            elif isinstance(node, Evaluate) or type(node).__name__ == "Call":
                op = getattr(getattr(node, "value", node), "op", None)
                if isinstance(op, str) and (op in _BARRIERS or "shuffle" in op
                                            or op.startswith(("tvm_warp", "ptx_"))):
                    raise _cannot(name, f"calls T.{op}", span)
        attrs = dict(f.attrs)
        t = attrs.get(TARGET)
        if isinstance(t, Target) and t.is_device:
            del attrs[TARGET]
        funcs[name] = replace(f, body=_Serialize().visit(f.body), attrs=attrs)
    return IRModule(funcs, mod.name, mod.span)
