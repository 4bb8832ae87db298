"""Unique names: one rule for every place that makes up a name (kernels, host copies,
C identifiers)."""
from __future__ import annotations


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, else ``base_1``, ``base_2``, ...: the first not in ``taken``, which it
    is added to."""
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name
