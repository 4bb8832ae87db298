"""Structural equality up to renaming: two trees are equal when they have the same shape
and dtypes and their variables and buffers correspond one to one. Spans and printing
hints take no part."""
from __future__ import annotations

import math
from dataclasses import fields, is_dataclass
from functools import lru_cache
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.target.kinds import Target


class StructuralMismatch(AssertionError):
    pass


@lru_cache(maxsize=None)
def _compared_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls) if f.compare)


class _Comparer:
    def __init__(self) -> None:
        self.fwd: dict[int, Any] = {}
        self.bwd: dict[int, Any] = {}
        self._keep: list[Any] = []  # keeps mapped objects alive so ids stay unique

    def fail(self, path: list[str], message: str) -> None:
        raise StructuralMismatch(f"at {'.'.join(path) or '<root>'}: {message}")

    def bind(self, a: Any, b: Any, path: list[str]) -> bool:
        """Map ``a`` to ``b``; False if they were already mapped (and agree)."""
        if id(a) in self.fwd:
            if self.fwd[id(a)] is not b:
                self.fail(path, f"{_show(a)} corresponds to two different objects")
            return False
        if id(b) in self.bwd:
            self.fail(path, f"{_show(b)} corresponds to two different objects")
        self.fwd[id(a)] = b
        self.bwd[id(b)] = a
        self._keep.extend((a, b))
        return True

    def eq(self, a: Any, b: Any, path: list[str]) -> None:
        if a is b and not isinstance(a, (Var, Buffer)):
            return
        if type(a) is not type(b):
            self.fail(path, f"{type(a).__name__} vs {type(b).__name__}: {_show(a)} vs {_show(b)}")
        if isinstance(a, Var):
            if a.dtype != b.dtype or a.ptr != b.ptr:
                self.fail(path, f"variable types differ: {a.dtype} {a.ptr} vs {b.dtype} {b.ptr}")
            self.bind(a, b, path)
            return
        if isinstance(a, Buffer):
            if self.bind(a, b, path):
                for name in ("data", "dtype", "shape", "strides", "elem_offset", "align",
                             "offset_factor", "layout_none"):
                    self.eq(getattr(a, name), getattr(b, name), path + [f"{a.name}.{name}"])
            return
        if isinstance(a, PrimFunc):
            self.func(a, b, path)
            return
        if isinstance(a, IRModule):
            if sorted(a.functions) != sorted(b.functions):
                self.fail(path, f"functions {sorted(a.functions)} vs {sorted(b.functions)}")
            for name in sorted(a.functions):
                self.eq(a.functions[name], b.functions[name], path + [name])
            return
        if isinstance(a, Target):
            if a != b:
                self.fail(path, f"targets differ: {a} vs {b}")
            return
        if isinstance(a, float):
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                self.fail(path, f"{a} vs {b}")
            return
        if isinstance(a, (tuple, list)):
            if len(a) != len(b):
                self.fail(path, f"lengths differ: {len(a)} vs {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                self.eq(x, y, path + [str(i)])
            return
        if isinstance(a, dict):
            if set(a) != set(b):
                self.fail(path, f"keys differ: {sorted(a)} vs {sorted(b)}")
            for key in sorted(a):
                self.eq(a[key], b[key], path + [str(key)])
            return
        if is_dataclass(a):
            for name in _compared_fields(type(a)):
                self.eq(getattr(a, name), getattr(b, name), path + [name])
            return
        if a != b:
            self.fail(path, f"{_show(a)} vs {_show(b)}")

    def func(self, a: PrimFunc, b: PrimFunc, path: list[str]) -> None:
        for name in ("private", "ret_type", "s_tir"):
            if getattr(a, name) != getattr(b, name):
                self.fail(path + [name], f"{getattr(a, name)} vs {getattr(b, name)}")
        self.eq(a.params, b.params, path + ["params"])
        self.eq(a.buffer_map, b.buffer_map, path + ["buffer_map"])
        self.eq(a.attrs, b.attrs, path + ["attrs"])
        self.eq(a.body, b.body, path + ["body"])


def _show(x: Any) -> str:
    text = repr(x)
    return text if len(text) < 80 else text[:77] + "..."


def assert_structural_equal(a: Any, b: Any) -> None:
    """Raise :class:`StructuralMismatch` naming the first difference."""
    _Comparer().eq(a, b, [])


def structural_equal(a: Any, b: Any) -> bool:
    try:
        assert_structural_equal(a, b)
    except StructuralMismatch:
        return False
    return True
