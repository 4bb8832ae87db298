"""Walking statements without recursion.

A walk over statements is written as generator methods: a method descends into a
statement by yielding it and receives, as the value of the ``yield``, what walking that
statement gave. :func:`drive` runs such a generator and, in one loop, the generators of
the statements it yields, so a chain of statements (every ``let``, assert or allocation
wraps the statements after it; MakePackedAPI writes ten a parameter) costs no Python
stack however long it is. Used by the IR visitors (:mod:`tirc.ir.visitor`) and by the
code generators' statement lowering.
"""
from __future__ import annotations

from typing import Any, Callable, Generator

Steps = Generator[Any, Any, Any]


def drive(steps: Steps, begin: Callable[[Any], tuple[Steps | None, Any]],
          end: Callable[[Any, Any], Any], fail: Callable[[Any], None] | None = None) -> Any:
    """What ``steps`` returns, each value it yields walked in the same loop.

    ``begin(child)`` starts walking a yielded child: it returns ``(generator, None)`` for
    a walk to drive here, or ``(None, result)`` for one it finished itself. When a driven
    generator returns ``value``, ``end(child, value)`` gives the result sent back to its
    parent; when it raises, ``fail(child)`` runs (if given) and the exception is thrown
    into the parent, so ``try``/``finally`` and ``with`` in a walker behave as they do in
    recursive code.
    """
    stack: list = []   # (generator, child) of the walks under way above ``steps``
    child = _ROOT
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            nxt = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            error = None
            value = stop.value if child is _ROOT else end(child, stop.value)
            if not stack:
                return value
            steps, child = stack.pop()
            continue
        except BaseException as e:
            if child is not _ROOT and fail is not None:
                fail(child)
            if not stack:
                raise
            error = e
            steps, child = stack.pop()
            continue
        value = error = None
        try:
            inner, value = begin(nxt)
        except BaseException as e:
            error = e
            continue
        if inner is not None:
            stack.append((steps, child))
            steps, child = inner, nxt


_ROOT = object()  # ``child`` of the generator ``drive`` was given
