"""Block-level constructs: ``with T.sblock(...)`` (``T.block`` in older text) and what
stands directly inside one: ``T.axis.*`` iterators, ``T.reads``/``T.writes``,
``T.where``, ``T.sblock_attr``, ``with T.init()``, allocations and matched buffers.

Each ``with T.sblock`` opens a :class:`BlockFrame`; the declarations in its suite fill
the frame, the remaining statements form the body, and the frame becomes an
:class:`~tirc.ir.block.SBlockRealize` when the suite ends.
"""
from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.arith import cast_to, difference
from tirc.frontend.calls import Construct
from tirc.frontend.values import attr_value, describe
from tirc.ir.block import (BlockIterVar, BufferRegion, MatchBufferRegion, Range, SBlock,
                           SBlockRealize, full_region)
from tirc.ir.attrs import DETECT_ACCESS
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import Stmt
from tirc.records import record
from tirc.syntax.tree import Tree

if TYPE_CHECKING:
    from tirc.frontend.builder import FunctionBuilder

_AXIS_KINDS = {"axis.spatial": "spatial", "axis.S": "spatial", "axis.reduce": "reduce",
               "axis.R": "reduce", "axis.scan": "scan", "axis.opaque": "opaque"}
_REMAP_LETTERS = {"S": "spatial", "R": "reduce"}
BLOCK_NAMES = ("sblock", "block")


@record
class BlockFrame:
    name: str
    span: Span | None
    depth: int
    iter_vars: list[BlockIterVar] = field(default_factory=list)
    iter_values: list[PrimExpr] = field(default_factory=list)
    reads: tuple[BufferRegion, ...] | None = None
    writes: tuple[BufferRegion, ...] | None = None
    predicate: PrimExpr | None = None
    annotations: tuple | None = None
    alloc_buffers: list[Buffer] = field(default_factory=list)
    match_buffers: list[MatchBufferRegion] = field(default_factory=list)
    init: Stmt | None = None


def current_frame(b: "FunctionBuilder", what: str, span: Span | None) -> BlockFrame:
    """The block this statement stands directly in, or a diagnostic."""
    frames = b.block_frames
    if not frames or frames[-1].depth != b.block_depth:
        raise Diagnostic(f"{what} must stand directly inside a 'with T.sblock(...)' block", span)
    return frames[-1]


def in_block(b: "FunctionBuilder") -> bool:
    return bool(b.block_frames) and b.block_frames[-1].depth == b.block_depth


def build_block(b: "FunctionBuilder", c: Construct, suite: Tree, span: Span | None) -> Stmt:
    """``with T.sblock("name"):`` and its suite."""
    if c.name == "block":
        b.old_blocks = True
    if c.args and len(c.args) > 1:
        raise Diagnostic(f"T.{c.name} takes one name", c.span)
    name = c.args[0][0] if c.args else ""
    if not isinstance(name, str):
        raise Diagnostic(f"a block name is a string, not {describe(name)}", c.args[0][1])
    for key, (value, kspan) in c.kwargs.items():
        if key == "no_realize":
            raise Diagnostic("blocks without a realization (no_realize=True) are not supported", kspan)
        raise Diagnostic(f"T.{c.name} got an unexpected keyword argument '{key}'", kspan)
    frame = BlockFrame(name, span, b.block_depth + 1)
    b.block_frames.append(frame)
    try:
        body = b.suite(suite)
    finally:
        b.block_frames.pop()
    annotations = frame.annotations or ()
    detect = (frame.reads is None) | (frame.writes is None) << 1
    if detect:
        # regions left out are inferred from the body, as TVM's parser does, by the first
        # passes (InferBlockRegions): the front end does not analyse regions
        annotations = tuple(sorted(annotations + ((DETECT_ACCESS, detect),)))
    block = SBlock(name, tuple(frame.iter_vars), frame.reads or (), frame.writes or (), body,
                   frame.init, tuple(frame.alloc_buffers), tuple(frame.match_buffers),
                   annotations, span)
    predicate = frame.predicate if frame.predicate is not None else IntImm(BOOL, 1, span)
    return SBlockRealize(tuple(frame.iter_values), predicate, block, span)


def block_statement(b: "FunctionBuilder", c: Construct) -> None:
    """``T.reads``, ``T.writes``, ``T.where``, ``T.sblock_attr`` inside a block."""
    frame = current_frame(b, f"T.{c.name}", c.span)
    if c.kwargs:
        key, (_, kspan) = next(iter(c.kwargs.items()))
        raise Diagnostic(f"T.{c.name} got an unexpected keyword argument '{key}'", kspan)
    if c.name in ("reads", "writes"):
        if getattr(frame, c.name) is not None:
            raise Diagnostic(f"block '{frame.name}' has T.{c.name} twice", c.span)
        regions: list[BufferRegion] = []
        for value, vspan in c.args:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, Buffer):
                    item = full_region(item, vspan)
                if not isinstance(item, BufferRegion):
                    raise Diagnostic(f"T.{c.name} takes buffer regions such as A[i, 0:16], "
                                     f"not {describe(item)}", vspan)
                regions.append(item)
        setattr(frame, c.name, tuple(regions))
        return
    if c.name == "where":
        if len(c.args) != 1:
            raise Diagnostic("T.where takes one condition", c.span)
        if frame.predicate is not None:
            raise Diagnostic(f"block '{frame.name}' has T.where twice", c.span)
        frame.predicate = b._as_bool(*c.args[0])
        return
    # sblock_attr / block_attr
    if len(c.args) != 1 or not isinstance(c.args[0][0], dict):
        raise Diagnostic(f"T.{c.name} takes a dict", c.span)
    if frame.annotations is not None:
        raise Diagnostic(f"block '{frame.name}' has T.{c.name} twice", c.span)
    frame.annotations = annotation_items(b, c.args[0][0], c.args[0][1], "a block attribute")


def annotation_items(b: "FunctionBuilder", entries: dict, span: Span | None,
                     what: str = "an annotation") -> tuple:
    """A dict of annotations as sorted ``(key, value)`` pairs (TVM prints them sorted);
    ``what`` names them in errors (a block's may hold buffers)."""
    return tuple(sorted((k, attr_value(v, span, what)) for k, v in entries.items()))


def init_block(b: "FunctionBuilder", c: Construct, suite: Tree) -> None:
    frame = current_frame(b, "T.init()", c.span)
    if c.args or c.kwargs:
        raise Diagnostic("T.init takes no arguments", c.span)
    if frame.init is not None:
        raise Diagnostic(f"block '{frame.name}' has two T.init() blocks", c.span)
    frame.init = b.suite(suite)


def axis(b: "FunctionBuilder", names: list[tuple[str, Span | None]], c: Construct) -> None:
    """``v = T.axis.spatial(dom, value)`` or ``a, b = T.axis.remap("SR", [i, k])``."""
    frame = current_frame(b, f"T.{c.name}", c.span)
    if c.kwargs:
        key, (_, kspan) = next(iter(c.kwargs.items()))
        raise Diagnostic(f"T.{c.name} got an unexpected keyword argument '{key}'", kspan)
    if c.name == "axis.remap":
        if len(c.args) != 2:
            raise Diagnostic("T.axis.remap takes a kind string and a list of loop variables", c.span)
        (kinds, kspan), (values, vspan) = c.args
        if not isinstance(kinds, str) or any(k not in _REMAP_LETTERS for k in kinds):
            raise Diagnostic("T.axis.remap kinds are a string of 'S' and 'R'", kspan)
        if not isinstance(values, (list, tuple)) or len(values) != len(kinds):
            raise Diagnostic(f"T.axis.remap needs {len(kinds)} loop variables", vspan)
        if len(names) != len(kinds):
            raise Diagnostic(f"{len(names)} names for {len(kinds)} block iterators", c.span)
        for (name, nspan), kind, value in zip(names, kinds, values):
            if not isinstance(value, Var) or id(value) not in b.loop_doms:
                raise Diagnostic(f"T.axis.remap binds loop variables, not {describe(value)}", vspan)
            lo, extent = b.loop_doms[id(value)]
            _define(b, frame, name, nspan, Range(lo, extent, vspan), _REMAP_LETTERS[kind], value)
        return
    kind = _AXIS_KINDS[c.name]
    if len(names) != 1:
        raise Diagnostic(f"T.{c.name} defines one block iterator", c.span)
    if len(c.args) != 2:
        raise Diagnostic(f"T.{c.name} takes a domain and a binding", c.span)
    (dom_v, dspan), (value_v, vspan) = c.args
    value = b.as_expr(value_v, vspan)
    if not (value.dtype.is_integer and value.dtype.lanes == 1):
        raise Diagnostic(f"a block iterator binds an integer, got {value.dtype}", vspan)
    dom = _domain(b, dom_v, dspan, value.dtype)
    _define(b, frame, names[0][0], names[0][1], dom, kind, value)


def _domain(b: "FunctionBuilder", dom: object, span: Span | None, dtype) -> Range:
    if isinstance(dom, (tuple, list)):
        if len(dom) != 2:
            raise Diagnostic("a block iterator's domain is an extent or (start, stop)", span)
        lo = b.as_expr(dom[0], span, dtype)
        hi = b.as_expr(dom[1], span, dtype)
        return Range(lo, difference(hi, lo, span), span)
    extent = b.as_expr(dom, span, dtype)
    if not extent.dtype.is_integer:
        raise Diagnostic(f"a block iterator's domain is an integer, got {extent.dtype}", span)
    return Range(IntImm(extent.dtype, 0, span), extent, span)


def _define(b, frame: BlockFrame, name: str, span, dom: Range, kind: str, value: PrimExpr) -> None:
    dtype = value.dtype
    if dom.extent.dtype != dtype:
        dom = Range(cast_to(dom.min, dtype, span), cast_to(dom.extent, dtype, span), dom.span)
    var = Var(name, dtype, None, span)
    b.scope.define(name, var)
    frame.iter_vars.append(BlockIterVar(var, dom, kind, span))
    frame.iter_values.append(value)


def match_buffer(b: "FunctionBuilder", name: str, c: Construct, nspan: Span | None) -> None:
    """``X = T.match_buffer(A[i, 0:16], (16,), ...)`` inside a block."""
    from tirc.frontend.buffers import make_buffer
    frame = current_frame(b, "T.match_buffer of a region", c.span)
    source, sspan = c.args[0]
    if isinstance(source, Buffer):
        source = full_region(source, sspan)
    if not isinstance(source, BufferRegion):
        raise Diagnostic(f"T.match_buffer in a block takes a buffer region, not {describe(source)}", sspan)
    buf = make_buffer(b, name, c, nspan, skip=1)
    if buf.dtype != source.buffer.dtype:
        raise Diagnostic(f"T.match_buffer of {source.buffer.dtype} region as {buf.dtype}", c.span)
    frame.match_buffers.append(MatchBufferRegion(buf, source, c.span))
    b.scope.define(name, buf)
