"""How deep tirc's input may nest, and the recursion room tirc's walks get while it works.

Limits checked where the text is read, each a located error:

- an expression nests at most :data:`MAX_EXPR_DEPTH` levels in the text (parentheses,
  calls, subscripts: ``tirc.frontend.exprs``);
- statement blocks nest at most :data:`MAX_BLOCK_DEPTH` levels (``for``/``if``/``with``
  bodies: ``tirc.frontend.builder``).

Two shapes are deep in the IR without being nested in the text: a chain of operators
(``a + b + c + ...``: one level per operator, as in TVM, whose own parser stops at about
240 operators of one chain) and the statements of one block (each ``let``, ``assert``
or allocation wraps the statements after it; MakePackedAPI adds about ten per
parameter). The IR's visitors, printer and code generators recurse over both, so while
tirc works (:func:`room`) Python's recursion limit is :data:`RECURSION_ROOM`: chains of
about 1,900 operators and functions of 300 buffer parameters build. The limit is
restored when the outermost tirc call returns, so a program that uses tirc keeps its own;
input deeper than the room is the located error "input nested too deeply".
"""
from __future__ import annotations

import functools
import sys
import threading
from contextlib import contextmanager

MAX_EXPR_DEPTH = 150
MAX_BLOCK_DEPTH = 100
RECURSION_ROOM = 10000

_lock = threading.Lock()
_active = 0  # tirc calls in progress (all threads)
_saved: int | None = None  # the limit before the first of them


@contextmanager
def room():
    """Python's recursion limit at least :data:`RECURSION_ROOM` inside; the caller's
    limit again once the outermost ``room()`` of the process ends."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = sys.getrecursionlimit()
            if _saved < RECURSION_ROOM:
                sys.setrecursionlimit(RECURSION_ROOM)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                sys.setrecursionlimit(_saved)
                _saved = None


def with_room(function):
    """``function`` run inside :func:`room`."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        with room():
            return function(*args, **kwargs)
    return run
