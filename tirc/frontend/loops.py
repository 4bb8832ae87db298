"""``for`` statements: ``range``, ``T.serial``, ``T.parallel``, ``T.vectorized``,
``T.unroll``, ``T.thread_binding`` and ``T.grid``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.arith import cast_to, difference
from tirc.frontend.calls import Construct
from tirc.frontend.values import describe
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import For, Stmt
from tirc.syntax.tree import Token, Tree

if TYPE_CHECKING:
    from tirc.frontend.builder import FunctionBuilder

_KINDS = {"serial": "serial", "range": "serial", "parallel": "parallel",
          "vectorized": "vectorized", "unroll": "unrolled", "thread_binding": "thread_binding"}
THREAD_TAGS = tuple(f"{p}.{a}" for p in ("blockIdx", "threadIdx", "vthread") for a in "xyz") + ("vthread",)


def _iter_construct(b: "FunctionBuilder", node) -> Construct:
    """The loop's iterator; ``range(...)`` is read here since ``range`` is no script name."""
    if (isinstance(node, Tree) and node.data == "call" and isinstance(node.children[0], Tree)
            and node.children[0].data == "name" and str(node.children[0].children[0]) == "range"
            and b.scope.lookup("range") is None):
        args, kwargs = b.arguments(node.children[1])
        return Construct("range", args, kwargs, b.span(node), node)
    v = b.value(node)
    if not isinstance(v, Construct) or v.name not in (*_KINDS, "grid"):
        raise Diagnostic(f"cannot loop over {describe(v)}; expected range(...), T.serial, "
                         "T.parallel, T.vectorized, T.unroll, T.thread_binding or T.grid", b.span(node))
    return v


def _bounds(b: "FunctionBuilder", c: Construct, args) -> tuple[PrimExpr, PrimExpr]:
    if not 1 <= len(args) <= 2:
        raise Diagnostic(f"{_label(c)} takes 1 to 3 arguments, got {len(args)}", c.span)
    if len(args) == 1:
        extent = b.as_expr(*args[0])
        start = IntImm(extent.dtype if extent.dtype.is_integer else DataType("int32"), 0, c.span)
    else:
        (lo, lspan), (hi, hspan) = args
        lo_e, hi_e = b.as_expr(lo, lspan), b.as_expr(hi, hspan)
        if isinstance(lo, int) and not isinstance(lo, bool):
            lo_e = cast_to(lo_e, hi_e.dtype, lspan) if hi_e.dtype.is_integer else lo_e
        if isinstance(hi, int) and not isinstance(hi, bool):
            hi_e = cast_to(hi_e, lo_e.dtype, hspan) if lo_e.dtype.is_integer else hi_e
        start = lo_e
        extent = difference(hi_e, lo_e, c.span)
    for e, what in ((start, "start"), (extent, "extent")):
        if not (e.dtype.is_integer and e.dtype.lanes == 1):
            raise Diagnostic(f"loop {what} must be a scalar integer, got {e.dtype}", c.span)
    return start, extent


def _label(c: Construct) -> str:
    return "range" if c.name == "range" else f"T.{c.name}"


def build_for(b: "FunctionBuilder", tree: Tree, span: Span | None) -> Stmt:
    target, iter_node, body_tree = tree.children
    c = _iter_construct(b, iter_node)
    names = _target_names(b, target)
    steps: list[PrimExpr | None] = []
    if c.name == "grid":
        if c.kwargs:
            raise Diagnostic("T.grid takes no keyword arguments", c.span)
        if len(names) != len(c.args):
            raise Diagnostic(f"T.grid has {len(c.args)} extents but {len(names)} loop variables", c.span)
        loops = [(IntImm(b.as_expr(*a).dtype, 0, c.span), b.as_expr(*a)) for a in c.args]
        kind, tag, annotations = "serial", None, ()
    else:
        if len(names) != 1:
            raise Diagnostic(f"{_label(c)} binds one loop variable", b.span(target))
        args = list(c.args)
        kwargs = dict(c.kwargs)
        tag = None
        if c.name == "thread_binding":
            if "thread" in kwargs:
                tag_v, tag_span = kwargs.pop("thread")
            elif args and isinstance(args[-1][0], str):
                tag_v, tag_span = args.pop()
            else:
                raise Diagnostic("T.thread_binding needs thread=\"blockIdx.x\" or similar", c.span)
            if not isinstance(tag_v, str) or tag_v not in THREAD_TAGS:
                raise Diagnostic(f"unknown thread tag {tag_v!r}; expected one of: "
                                 + ", ".join(THREAD_TAGS), tag_span)
            tag = tag_v
        annotations = ()
        if "annotations" in kwargs:
            ann, aspan = kwargs.pop("annotations")
            if not isinstance(ann, dict):
                raise Diagnostic("annotations must be a dict", aspan)
            annotations = tuple(sorted(ann.items()))
        step_arg = kwargs.pop("step", None)
        if step_arg is None and len(args) == 3:
            step_arg = args.pop()
        for key, (_, kspan) in kwargs.items():
            raise Diagnostic(f"{_label(c)} got an unexpected keyword argument '{key}'", kspan)
        loops = [_bounds(b, c, args)]
        if step_arg is not None:
            step = b.as_expr(step_arg[0], step_arg[1], loops[0][1].dtype)
            if not (step.dtype.is_integer and step.dtype.lanes == 1):
                raise Diagnostic(f"loop step must be a scalar integer, got {step.dtype}", step_arg[1])
            if isinstance(step, IntImm) and step.value <= 0:
                raise Diagnostic("loop step must be positive", step_arg[1])
            if not (isinstance(step, IntImm) and step.value == 1):
                steps = [step]
        kind = _KINDS[c.name]
    steps = steps or [None] * len(loops)
    b.scope.push()
    try:
        loop_vars = []
        for (name, nspan), (start, extent) in zip(names, loops):
            var = Var(name, extent.dtype, None, nspan)
            b.scope.define(name, var)
            b.loop_doms[id(var)] = (start, extent)
            loop_vars.append((var, start, extent))
        body = b.suite(body_tree)
    finally:
        b.scope.pop()
    for (var, start, extent), step in reversed(list(zip(loop_vars, steps))):
        body = For(var, start, extent, kind, body, tag, annotations, step, span)
    return body


def _target_names(b: "FunctionBuilder", target) -> list[tuple[str, Span | None]]:
    if isinstance(target, Token):
        return [(str(target), b.span(target))]
    return [(str(t), b.span(t)) for t in target.children if t is not None]
