"""Functions and modules."""
from __future__ import annotations

from dataclasses import field, replace
from typing import Any, Iterator

from tirc.diagnostics import Span
from tirc.ir.facts import BuildFacts
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import GlobalVar, Var
from tirc.ir.stmt import Stmt
from tirc.records import record


@record(frozen=True, slots=True, eq=False)
class PrimFunc:
    """A TIR function. ``buffer_map`` pairs handle parameters with the buffers they
    carry; ``attrs`` holds ``T.func_attr`` (``target``, ``global_symbol``, ...);
    ``private`` functions are not visible outside the module."""

    params: tuple[Var, ...]
    body: Stmt
    ret_type: DataType | None = None
    buffer_map: tuple[tuple[Var, Buffer], ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    private: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)
    # TVM's s_tir flag (``@T.prim_func(s_tir=True)``): block-level semantics, printed in
    # the decorator; kept through lowering as TVM keeps it.
    s_tir: bool = False

    def buffer_of(self, param: Var) -> Buffer | None:
        for var, buf in self.buffer_map:
            if var is param:
                return buf
        return None

    def with_attr(self, key: str, value: Any) -> "PrimFunc":
        return replace(self, attrs={**self.attrs, key: value})

    def with_body(self, body: Stmt) -> "PrimFunc":
        return replace(self, body=body)

    def source_lines(self) -> int:
        """The lines of source it was read from (1 without a location): the estimate of
        its cost by which ``-j N`` hands out the largest pieces of work first."""
        span = self.span
        return (span.end_line - span.line + 1) if span and span.end_line else 1


@record(frozen=True, slots=True, eq=False)
class IRModule:
    """Functions by name, in insertion order. ``name`` is the class name in the text,
    None for a bare ``@T.prim_func``."""

    functions: dict[str, PrimFunc]
    name: str | None = "Module"
    span: Span | None = field(default=None, compare=False, repr=False)
    # what passes decided for the outputs (kernels, exported signatures): tirc.ir.facts
    facts: BuildFacts = field(default_factory=BuildFacts, compare=False, repr=False)

    def __getitem__(self, name: str) -> PrimFunc:
        return self.functions[name]

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def __iter__(self) -> Iterator[tuple[GlobalVar, PrimFunc]]:
        for name, func in self.functions.items():
            yield GlobalVar(name), func

    def map_bodies(self, rewrite) -> "IRModule":
        """Every function's body through ``rewrite(body) -> body``; functions whose body
        comes back the same object stay as they are."""
        funcs = {}
        for name, f in self.functions.items():
            body = rewrite(f.body)
            funcs[name] = f if body is f.body else f.with_body(body)
        return replace(self, functions=funcs)

    def with_function(self, name: str, func: PrimFunc) -> "IRModule":
        return replace(self, functions={**self.functions, name: func})

    def without_function(self, name: str) -> "IRModule":
        return replace(self, functions={k: v for k, v in self.functions.items() if k != name})
