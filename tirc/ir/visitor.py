"""Visitor and mutator bases over expressions and statements.

Dispatch is by class name: a subclass defines ``visit_For``, ``visit_BufferLoad``, ...
and calls ``self.generic_visit(node)`` to descend. Buffers are leaves unless a subclass
overrides ``visit_buffer``. The mutator rebuilds a node only when a child changed, so
unchanged subtrees are returned as they are.
"""
from __future__ import annotations

import inspect
from dataclasses import fields, replace
from functools import lru_cache
from operator import attrgetter
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr
from tirc.ir.block import BLOCK_NODES, SBlock, SBlockRealize
from tirc.ir.stmt import IterVar, Stmt
from tirc.ir.trampoline import drive

Node = Any


NODE_TYPES = (PrimExpr, Stmt, IterVar, *BLOCK_NODES)


def is_node(value: object) -> bool:
    return isinstance(value, NODE_TYPES)


# Field types that hold plain data, never a node or a buffer (as the records annotate
# them: IntImm.value, StringImm.value, Ramp.scalable, AssertStmt.message, ...).
_PLAIN_TYPES = frozenset({"int", "float", "str", "bool", "tuple[str, ...]", int, float, str, bool})


@lru_cache(maxsize=None)
def child_fields(cls: type) -> tuple[str, ...]:
    """Fields of ``cls`` that may hold nodes or buffers (everything but plain data: the
    fields named here, and those whose declared type is plain data)."""
    skip = {"span", "dtype", "op", "name", "kind", "thread_tag", "lanes", "form", "key",
            "value_str", "ptr", "name_hint", "iter_type"}
    return tuple(f.name for f in fields(cls) if f.name not in skip and f.type not in _PLAIN_TYPES)


class _Walk:
    """What Visitor and Mutator share: dispatch by node class, cached per walker class,
    and the loop that walks statements without recursion.

    A ``visit_*`` method is either a plain function or a generator. A generator method
    descends into a statement by yielding it (``body = yield s.body``; the walk sends
    back what visiting it gave) and into all of a statement's children with
    ``yield from self.descend(s)``. Statements without a method of their own are walked
    the same way. So a chain of statements (every ``let``, assert or allocation wraps the
    statements after it) is walked in a loop, not by recursion, whatever its length:
    Python's recursion limit bounds only expression depth (see :mod:`tirc.nesting`).

    A walker with ``expressions = False`` leaves expressions as they are, unvisited.

    A walker that must act around every node defines ``enter(node)`` and
    ``leave(node)`` (``leave`` runs also when visiting the node failed) instead of
    overriding ``visit``. One that handles some nodes whatever their class defines
    ``intercept(node)``: None for the usual visit, or a generator of steps (which may
    ``yield from self.steps_of(node)`` for the usual visit). A walker that overrides
    ``visit`` still works, but recursively.
    """

    _table: dict = {}
    _hooked = False      # defines enter/leave
    _intercepts = False  # defines intercept
    _own_visit = False   # overrides visit: children go through it
    _spans = False       # a statement put in place of another takes its location
    expressions = True   # False: expressions are not visited

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._table = {}
        cls._hooked = getattr(cls, "enter", None) is not None
        cls._intercepts = getattr(cls, "intercept", None) is not None
        cls._own_visit = cls.visit is not _Walk.visit

    @classmethod
    def _resolve(cls, node_type: type) -> tuple:
        method = getattr(cls, "visit_" + node_type.__name__, None)
        if not cls.expressions and issubclass(node_type, PrimExpr):
            entry = (_as_is, False)
        elif method is None:
            entry = (cls.descend, True) if issubclass(node_type, Stmt) else (cls.generic_visit, False)
        else:
            entry = (method, inspect.isgeneratorfunction(method))
        cls._table[node_type] = entry
        return entry

    def _finish(self, node: Node, out: Node) -> Node:
        return out

    def visit(self, node: Node):
        # One Python frame here per level of an expression: its depth is what the
        # recursion limit bounds (tirc.nesting), so what follows is written out in place.
        cls = type(self)
        try:
            fn, gen = cls._table[type(node)]
        except KeyError:
            fn, gen = cls._resolve(type(node))
        hooked = cls._hooked
        if hooked:
            self.enter(node)
        try:
            steps = self.intercept(node) if cls._intercepts else None
            if steps is not None:
                out = self._run(steps)
            elif gen:
                out = self._run(fn(self, node))
            else:
                out = fn(self, node)
            if cls._spans and out is not node and isinstance(out, Stmt) and out.span is None:
                out = carry_span(out, node)
            return out
        finally:
            if hooked:
                self.leave(node)

    def steps_of(self, node: Node):
        """Generator: ``node`` visited by its own method (not intercepted), as steps of a
        statement walk; for ``yield from`` in :meth:`intercept`."""
        try:
            fn, gen = type(self)._table[type(node)]
        except KeyError:
            fn, gen = type(self)._resolve(type(node))
        if gen:
            return (yield from fn(self, node))
        return fn(self, node)

    def _start(self, node: Node):
        """``(steps, None)``: a generator to drive; ``(None, result)``: done."""
        cls = type(self)
        if cls._intercepts:
            steps = self.intercept(node)
            if steps is not None:
                return steps, None
        try:
            fn, gen = cls._table[type(node)]
        except KeyError:
            fn, gen = cls._resolve(type(node))
        return (fn(self, node), None) if gen else (None, fn(self, node))

    def _run(self, steps):
        """Drive a generator method and, in the same loop, those of the statements it
        yields; the result of ``steps``."""
        if type(self)._hooked:
            return drive(steps, self._begin, self._end, self.leave)
        return drive(steps, self._begin, self._finish)

    def _begin(self, child: Node):
        cls = type(self)
        if cls._own_visit:
            return None, self.visit(child)
        if not cls._hooked:
            steps, out = self._start(child)
            return (steps, None) if steps is not None else (None, self._finish(child, out))
        self.enter(child)
        try:
            steps, out = self._start(child)
        except BaseException:
            self.leave(child)
            raise
        if steps is not None:
            return steps, None  # left in _end, or by drive when it fails
        try:
            return None, self._finish(child, out)
        finally:
            self.leave(child)

    def _end(self, child: Node, out: Node) -> Node:
        self.leave(child)
        return self._finish(child, out)


def _as_is(walker: _Walk, node: Node) -> Node:
    return node


class Visitor(_Walk):
    def generic_visit(self, node: Node) -> None:
        if isinstance(node, Stmt):
            self._run(self.descend(node))
            return
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, NODE_TYPES):
                self.visit(value)
            else:
                self._visit_value(value)

    def descend(self, node: Node):
        """Generator: visit every child of the statement ``node``."""
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, Stmt):
                yield value
            elif isinstance(value, tuple):
                yield from self._steps(value)
            else:
                self._visit_value(value)

    def _steps(self, value: object):
        if isinstance(value, Stmt):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                yield from self._steps(item)
        else:
            self._visit_value(value)

    def _visit_value(self, value: object) -> None:
        if isinstance(value, NODE_TYPES):
            self.visit(value)
        elif isinstance(value, Buffer):
            self.visit_buffer(value)
        elif isinstance(value, tuple):
            for item in value:
                self._visit_value(item)

    def visit_buffer(self, buffer: Buffer) -> None:
        """Called for every buffer reference; descend into its fields by overriding."""


class Mutator(_Walk):
    """Rebuilds nodes. A statement a ``visit_*`` method puts in place of another one
    takes the replaced statement's source location when it has none of its own, so the
    location survives passes (line info, diagnostics after lowering)."""

    _spans = True

    def _finish(self, node: Node, out: Node) -> Node:
        if out is not node and isinstance(out, Stmt) and out.span is None:
            return carry_span(out, node)
        return out

    def generic_visit(self, node: Node) -> Node:
        if isinstance(node, Stmt):
            return self._run(self.descend(node))
        changes: dict[str, object] = {}
        for name in child_fields(type(node)):
            old = getattr(node, name)
            new = self.visit(old) if isinstance(old, NODE_TYPES) else self._mutate_value(old)
            if new is not old:
                changes[name] = new
        return rebuild(node, changes) if changes else node

    def descend(self, node: Node):
        """Generator: ``node`` (a statement) with every child visited; rebuilt only when
        a child changed."""
        changes: dict[str, object] = {}
        for name in child_fields(type(node)):
            old = getattr(node, name)
            if isinstance(old, Stmt):
                new = yield old
            elif isinstance(old, tuple):
                new = yield from self._steps(old)
            else:
                new = self._mutate_value(old)
            if new is not old:
                changes[name] = new
        return rebuild(node, changes) if changes else node

    def _steps(self, value: object):
        if isinstance(value, Stmt):
            return (yield value)
        if isinstance(value, tuple):
            items = []
            for v in value:
                items.append((yield from self._steps(v)))
            if any(a is not b for a, b in zip(items, value)):
                return tuple(items)
            return value
        return self._mutate_value(value)

    def _mutate_value(self, value: object) -> object:
        if isinstance(value, NODE_TYPES):
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


def rebuild(node: Node, changes: dict[str, object]) -> Node:
    """``dataclasses.replace(node, **changes)`` for a node (a frozen record, whose fields
    are all positional ``__init__`` parameters), without ``replace``'s checks of every
    field: the class called with each field's value, from ``changes`` or ``node``."""
    cls = type(node)
    plan = _REBUILD.get(cls)
    if plan is None:
        plan = _REBUILD[cls] = _rebuild_plan(cls)
    if plan is _GENERAL:
        return replace(node, **changes)
    get, index = plan
    values = list(get(node))
    for name, value in changes.items():
        values[index[name]] = value
    return cls(*values)


_GENERAL = object()  # a class whose fields are not all positional __init__ parameters
_REBUILD: dict[type, object] = {}


def _rebuild_plan(cls: type):
    fs = fields(cls)
    if len(fs) < 2 or any(not f.init or f.kw_only for f in fs):
        return _GENERAL
    names = [f.name for f in fs]
    return attrgetter(*names), {n: i for i, n in enumerate(names)}


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
    for name in child_fields(type(s)):
        value = getattr(s, name)
        if isinstance(value, Stmt):
            if value.span is None:
                changes[name] = fill_span(value, span)
        elif isinstance(value, tuple) and any(isinstance(v, Stmt) and v.span is None
                                              for v in value):
            changes[name] = tuple(fill_span(v, span) if isinstance(v, Stmt) and v.span is None
                                  else v for v in value)
    return rebuild(s, changes) if changes else s


def walk(node: Node):
    """Every expression and statement under ``node`` (pre-order), ``node`` included."""
    stack = [node]
    pop, push, fields = stack.pop, stack.append, _REVERSED_FIELDS
    while stack:
        n = pop()
        yield n
        names = fields.get(type(n))
        if names is None:
            names = fields[type(n)] = child_fields(type(n))[::-1]
        for name in names:  # children pushed last first, so the first is walked next
            value = getattr(n, name)
            if isinstance(value, NODE_TYPES):
                push(value)
            elif isinstance(value, tuple):
                push_reversed(value, stack)


_REVERSED_FIELDS: dict[type, tuple[str, ...]] = {}  # walk's copy of child_fields, reversed


def walk_statements(node: Stmt):
    """Every statement under ``node`` (pre-order), ``node`` included, without entering
    expressions (no statement is under an expression): for what looks at statements
    only, a fraction of :func:`walk`'s nodes."""
    stack = [node]
    pop, push, fields = stack.pop, stack.append, _STMT_FIELDS
    while stack:
        n = pop()
        yield n
        names = fields.get(type(n))
        if names is None:
            names = fields[type(n)] = child_fields(type(n))[::-1]
        for name in names:
            value = getattr(n, name)
            if isinstance(value, Stmt):
                push(value)
            elif type(value) is tuple and value and isinstance(value[0], Stmt):
                for item in reversed(value):
                    push(item)


_STMT_FIELDS: dict[type, tuple[str, ...]] = {}


def push_reversed(value: tuple, stack: list) -> None:
    """The nodes of ``value`` (nested tuples flattened) onto ``stack``, last first."""
    for item in reversed(value):
        if isinstance(item, NODE_TYPES):
            stack.append(item)
        elif isinstance(item, tuple):
            push_reversed(item, stack)


def _collect(value: object, out: list) -> None:
    if isinstance(value, NODE_TYPES):
        out.append(value)
    elif isinstance(value, tuple):
        for item in value:
            _collect(item, out)


def contains_blocks(stmt: Stmt) -> bool:
    """Whether ``stmt`` holds a block (``T.sblock`` or its realize)."""
    return any(isinstance(n, (SBlock, SBlockRealize)) for n in walk_statements(stmt))
