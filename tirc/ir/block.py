"""Schedulable (block-level) TIR: blocks, their realizations, iterators and regions.

A block (``with T.sblock("C"):``) is a unit of computation with its own iterator
variables, the buffer regions it reads and writes, an optional ``init`` statement run
before the first step of a reduction, buffers it allocates and buffer views it matches
onto regions of others. A realization binds the block's iterators to values (usually
expressions of the surrounding loop variables) under a predicate (``T.where``).

TVM keeps these nodes until its S-TIR lowering phase (``tirc/passes/``: LowerInitBlock,
ConvertBlocksToOpaque, LowerOpaqueBlock, ...) turns them into plain loops and
allocations. Immutable like every IR node; ``span`` takes no part in equality.
"""
from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.diagnostics import Span
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import Stmt
from tirc.records import record

_SPAN = dict(default=None, compare=False, repr=False)

# Iterator kinds, spelled as in ``T.axis.<kind>``; ``remap`` letters S and R.
ITER_TYPES = ("spatial", "reduce", "scan", "opaque")


@record(frozen=True, slots=True)
class Range:
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class BufferRegion:
    """A rectangular region of ``buffer``: one :class:`Range` per dimension."""

    buffer: Buffer
    region: tuple[Range, ...]
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class BlockIterVar:
    """A block iterator: ``var`` ranges over ``dom``; ``iter_type`` is one of ITER_TYPES."""

    var: Var
    dom: Range
    iter_type: str
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class MatchBufferRegion:
    """``buffer`` is a view of ``source`` (``X = T.match_buffer(A[i, 0:16], (16,))``)."""

    buffer: Buffer
    source: BufferRegion
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class SBlock(Stmt):
    name_hint: str
    iter_vars: tuple[BlockIterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple[Buffer, ...] = ()
    match_buffers: tuple[MatchBufferRegion, ...] = ()
    annotations: tuple[tuple[str, Any], ...] = ()
    span: Span | None = field(**_SPAN)


@record(frozen=True, slots=True)
class SBlockRealize(Stmt):
    """Runs ``block`` with its iterators bound to ``iter_values`` when ``predicate`` holds."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: SBlock
    span: Span | None = field(**_SPAN)


BLOCK_NODES = (Range, BufferRegion, BlockIterVar, MatchBufferRegion)


def full_region(buffer: Buffer, span: Span | None = None) -> BufferRegion:
    """The whole of ``buffer``."""
    return BufferRegion(buffer, tuple(Range(IntImm(e.dtype, 0, span), e, span) for e in buffer.shape),
                        span)



def annotation_buffers(annotations) -> list[Buffer]:
    """The buffers an annotation's values hold (``{"layout_free_placeholders": [B]}``),
    each once, in order."""
    out: dict[int, Buffer] = {}
    stack = [v for _, v in reversed(annotations)]
    while stack:
        v = stack.pop()
        if isinstance(v, Buffer):
            out.setdefault(id(v), v)
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
    return list(out.values())
