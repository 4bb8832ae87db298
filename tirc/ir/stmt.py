"""Statement nodes. Immutable; ``span`` takes no part in equality.

Scoped statements (``LetStmt``, ``AllocBuffer``, ``DeclBuffer``, ``AttrStmt``) own the
body their definition is visible in. The printer writes them in TVM's flat form
(``x: T.int32 = v`` followed by the body's statements).
"""
from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.diagnostics import Span
from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, Var
from tirc.records import record

_SPAN = dict(default=None, compare=False, repr=False)


class Stmt:
    __slots__ = ()


@record(frozen=True, slots=True)
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class LetStmt(Stmt):
    """Binds an immutable ``var`` to ``value`` for ``body``.

    ``form`` records how the text spelled it (``"annotated"``: ``x: T.int32 = v``,
    ``"let"``: ``x: T.let[T.int32] = v``) so printing keeps it; it is not compared."""

    var: Var
    value: PrimExpr
    body: Stmt
    span: Span | None = field(**_SPAN)
    form: str = field(default="annotated", compare=False)


@record(frozen=True, slots=True)
class IterVar:
    """A thread axis: ``var`` bound to ``thread_tag`` (``blockIdx.x``, ``threadIdx.y``...)."""

    var: Var
    thread_tag: str
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class AttrStmt(Stmt):
    """``T.attr(node, key, value)`` over ``body``. With key ``thread_extent`` and an
    :class:`IterVar` node this is ``T.launch_thread``; with key ``target`` and a
    :class:`~tirc.target.kinds.Target` node, a region delegated to another target. A ``None``
    node is TVM's annotation form ``T.attr({key: value})``."""

    node: Any
    key: str
    value: PrimExpr
    body: Stmt
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class AssertStmt(Stmt):
    """Checks ``condition`` before ``body``; on failure raises ``kind`` (an error class
    name such as ``"ValueError"``) with the concatenated ``message`` parts."""

    condition: PrimExpr
    kind: str
    message: tuple[str, ...]
    body: Stmt
    span: Span | None = field(**_SPAN)


FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread_binding")


@record(frozen=True, slots=True)
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt
    thread_tag: str | None = None
    annotations: tuple[tuple[str, Any], ...] = ()
    step: PrimExpr | None = None
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class While(Stmt):
    condition: PrimExpr
    body: Stmt
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class SeqStmt(Stmt):
    stmts: tuple[Stmt, ...]
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class Evaluate(Stmt):
    value: PrimExpr
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class AllocBuffer(Stmt):
    """Allocates ``buffer`` (in its scope) for ``body``. ``annotations`` are sorted
    ``(key, value)`` pairs (TVM marks allocations ``buffer_data_alignment``, ...)."""

    buffer: Buffer
    body: Stmt
    span: Span | None = field(**_SPAN)
    annotations: tuple[tuple[str, Any], ...] = ()


@record(frozen=True, slots=True)
class DeclBuffer(Stmt):
    """Declares ``buffer`` as a view of memory allocated elsewhere, for ``body``.
    ``view_of`` records that the text wrote ``X.view(...)``, ``data_from`` that it wrote
    ``data=X.data`` (TVM 0.27 keeps which buffer's pointer was named); printing keeps both."""

    buffer: Buffer
    body: Stmt
    span: Span | None = field(**_SPAN)
    view_of: Buffer | None = field(default=None, compare=False)
    data_from: Buffer | None = field(default=None, compare=False)


@record(frozen=True, slots=True)
class Return(Stmt):
    value: PrimExpr
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class Break(Stmt):
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class Continue(Stmt):
    span: Span | None = field(**_SPAN)


def is_loop_pragma(s: AttrStmt) -> bool:
    """``T.attr(loop_var, "pragma_<key>", value)`` around a loop (a scheduled loop's
    pragma annotation, as LowerOpaqueBlock writes it): the node names the loop, outside
    the loop that defines it. It is a reference, not a use of the variable's value."""
    return s.key.startswith("pragma_") and isinstance(s.node, Var)


def seq(stmts: list[Stmt] | tuple[Stmt, ...], span: Span | None = None) -> Stmt:
    """One statement for a list: the statement itself when there is one. A sequence
    given no location is located at its first statement."""
    flat: list[Stmt] = []
    for s in stmts:
        if isinstance(s, SeqStmt):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    if span is None and flat:
        span = flat[0].span
    return SeqStmt(tuple(flat), span)


def ends_with_return(s: Stmt) -> bool:
    """Whether every path through the end of ``s`` finishes with a ``Return``."""
    while True:
        if isinstance(s, SeqStmt):
            if not s.stmts:
                return False
            s = s.stmts[-1]
        elif isinstance(s, (LetStmt, AttrStmt, AssertStmt, DeclBuffer, AllocBuffer)):
            s = s.body
        else:
            return isinstance(s, Return)
