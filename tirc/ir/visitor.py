"""Visitor and mutator bases over expressions and statements.

Dispatch is by class name: a subclass defines ``visit_For``, ``visit_BufferLoad``, ...
and calls ``self.generic_visit(node)`` to descend. Buffers are leaves unless a subclass
overrides ``visit_buffer``. The mutator rebuilds a node only when a child changed, so
unchanged subtrees are returned as they are.
"""
from __future__ import annotations

from dataclasses import fields, replace
from functools import lru_cache
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr
from tirc.ir.block import BLOCK_NODES
from tirc.ir.stmt import IterVar, Stmt

Node = Any


_NODE_TYPES = (PrimExpr, Stmt, IterVar, *BLOCK_NODES)


def is_node(value: object) -> bool:
    return isinstance(value, _NODE_TYPES)


@lru_cache(maxsize=None)
def _child_fields(cls: type) -> tuple[str, ...]:
    """Fields of ``cls`` that may hold nodes or buffers (everything but plain data)."""
    skip = {"span", "dtype", "op", "name", "kind", "thread_tag", "lanes", "form", "key",
            "value_str", "ptr", "name_hint", "iter_type"}
    return tuple(f.name for f in fields(cls) if f.name not in skip)


class Visitor:
    def visit(self, node: Node) -> None:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: Node) -> None:
        for name in _child_fields(type(node)):
            self._visit_value(getattr(node, name))

    def _visit_value(self, value: object) -> None:
        if is_node(value):
            self.visit(value)
        elif isinstance(value, Buffer):
            self.visit_buffer(value)
        elif isinstance(value, tuple):
            for item in value:
                self._visit_value(item)

    def visit_buffer(self, buffer: Buffer) -> None:
        """Called for every buffer reference; descend into its fields by overriding."""


class Mutator:
    """Rebuilds nodes. A statement a ``visit_*`` method puts in place of another one
    takes the replaced statement's source location when it has none of its own, so the
    location survives passes (line info, diagnostics after lowering)."""

    def visit(self, node: Node) -> Node:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            return self.generic_visit(node)
        out = method(node)
        if out is not node and isinstance(out, Stmt) and out.span is None:
            return carry_span(out, node)
        return out

    def generic_visit(self, node: Node) -> Node:
        changes: dict[str, object] = {}
        for name in _child_fields(type(node)):
            old = getattr(node, name)
            new = self._mutate_value(old)
            if new is not old:
                changes[name] = new
        return replace(node, **changes) if changes else node

    def _mutate_value(self, value: object) -> object:
        if is_node(value):
            return self.visit(value)
        if isinstance(value, Buffer):
            return self.visit_buffer(value)
        if isinstance(value, tuple):
            items = [self._mutate_value(v) for v in value]
            if any(a is not b for a, b in zip(items, value)):
                return tuple(items)
        return value

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return buffer


def carry_span(new: Stmt, old: Node) -> Stmt:
    """``new`` located at ``old`` when it has no location of its own (code a pass wrote
    in place of ``old``): see :func:`fill_span`."""
    span = getattr(old, "span", None)
    if span is None or new.span is not None:
        return new
    return fill_span(new, span)


def fill_span(s: Stmt, span) -> Stmt:
    """``s`` with ``span`` on itself and on every statement under it that has no location,
    down to the statements that have one (those keep theirs, and so does their code)."""
    changes: dict[str, object] = {} if s.span is not None else {"span": span}
    for name in _child_fields(type(s)):
        value = getattr(s, name)
        if isinstance(value, Stmt):
            if value.span is None:
                changes[name] = fill_span(value, span)
        elif isinstance(value, tuple) and any(isinstance(v, Stmt) and v.span is None
                                              for v in value):
            changes[name] = tuple(fill_span(v, span) if isinstance(v, Stmt) and v.span is None
                                  else v for v in value)
    return replace(s, **changes) if changes else s


def walk(node: Node):
    """Every expression and statement under ``node`` (pre-order), ``node`` included."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids: list[Node] = []
        for name in _child_fields(type(n)):
            _collect(getattr(n, name), kids)
        stack.extend(reversed(kids))


def _collect(value: object, out: list) -> None:
    if is_node(value):
        out.append(value)
    elif isinstance(value, tuple):
        for item in value:
            _collect(item, out)
