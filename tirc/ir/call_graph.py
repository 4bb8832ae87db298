"""The call graph of a module: which functions reach each other through calls of
``GlobalVar``s (``Module.f(...)`` before the split, kernel launches after it do not
count: they name the kernel by string)."""
from __future__ import annotations

from tirc.ir.expr import Call, GlobalVar
from tirc.ir.function import IRModule
from tirc.ir.visitor import walk


def components(mod: IRModule) -> list[list[str]]:
    """The module's functions grouped by calls (a call binds caller and callee), each
    group in module order, groups ordered by their first function."""
    names = list(mod.functions)
    parent = {n: n for n in names}
    order = {n: i for i, n in enumerate(names)}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for name, func in mod.functions.items():
        for node in walk(func.body):
            if isinstance(node, Call) and isinstance(node.op, GlobalVar) \
                    and node.op.name in parent:
                a, b = root(name), root(node.op.name)
                if a != b:
                    parent[max(a, b, key=order.get)] = min(a, b, key=order.get)
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(root(n), []).append(n)
    return list(groups.values())
