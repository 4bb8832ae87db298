"""Host or device: where a piece of code runs, as BindTarget and the split passes see it.

Code is device code inside a thread binding (``T.thread_binding`` loops, ``T.launch_thread``,
virtual threads) and inside a ``T.attr(T.target(...), "target", 0)`` region of a device
target; a region of a host target is host code again. Everything else is host code,
unless the function itself is bound to a device target without a host.
"""
from __future__ import annotations

from tirc.ir.attrs import DEVICE_SCOPE, TARGET, THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import AttrStmt, For, Stmt
from tirc.target.kinds import Target

HOST = "host"
DEVICE = "device"


def scope_change(s: Stmt) -> str | None:
    """The context ``s``'s body runs in, when ``s`` changes it; None otherwise."""
    if isinstance(s, For) and s.kind == "thread_binding":
        return DEVICE
    if isinstance(s, AttrStmt):
        if s.key in (THREAD_EXTENT, VIRTUAL_THREAD, DEVICE_SCOPE):
            return DEVICE
        if s.key == TARGET and isinstance(s.node, Target):
            return DEVICE if s.node.is_device else HOST
    return None


def body_context(func: PrimFunc) -> str | None:
    """The context of a function's top level decided by its own target, if it has one."""
    t = func.attrs.get(TARGET)
    if not isinstance(t, Target):
        return None
    if not t.is_device or t.host is not None:
        return HOST
    return DEVICE
