"""``-MD``: the Make rule of a build's outputs."""
from __future__ import annotations


def depfile_text(targets: list[str], prerequisites: list[str]) -> str:
    """A Make rule ``T1 T2 ...: P1 ...`` (one target per line, continued with ``\\``);
    spaces, ``#`` and ``$`` escaped the way Make reads them."""
    def esc(p: str) -> str:
        return p.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")
    head = " \\\n  ".join(esc(t) for t in targets)
    return f"{head}: {' '.join(esc(p) for p in prerequisites)}\n"
