"""DefaultGPUSchedule (opt-in: ``--default-gpu-schedule``): a GPU function that nobody
scheduled gets TVM's default schedule, so that it runs at all; without the option such a
function stays the "Did you forget to bind?" error of VerifyMemory.

TVM's rule (its ``s_tir.transform.DefaultGPUSchedule``), for every leaf block of a function
bound to a GPU target and not marked ``tirx.is_scheduled``, whose loops carry no thread
binding yet:

* the loops around the block whose block iterators are spatial (the i-th loop for the
  i-th iterator) are fused into one loop ``<names>_fused`` (a unit loop ``u`` is added
  when there are none: a full reduction, a block without loops);
* with ``M`` the target's ``max_num_threads``, a fused extent of at most ``256 * M`` is
  split into ``blockIdx.x`` by ``threadIdx.x`` loops of ``min(extent, M)`` threads; a
  larger (or symbolic) one into ``256`` blocks of ``M`` threads with a serial loop inside;
  a ``T.where`` keeps the tail in range where the split does not divide the extent;
* reduction loops stay serial, inside the bound loops;
* every function of the module is marked ``tirx.is_scheduled``.

The fused loop's iterator values are TVM's (``f // 18``, ``f % 18 // 6``, ... simplified
over the fused range); the split substitutes ``f0 * M + f1`` for the fused variable as
TVM's Split does. A block this rule cannot schedule (its loops are not one perfect nest
of its own, one loop per iterator, the spatial ones consecutive; a block inside a block
other than the root) is a located error, where TVM fails an internal check.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import TARGET
from tirc.ir.block import BlockIterVar, Range, SBlock, SBlockRealize
from tirc.ir.dtype import BOOL, INT32
from tirc.ir.expr import BinOp, IntImm, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.renew import substitute
from tirc.ir.stmt import For, SeqStmt, Stmt, seq
from tirc.ir.visitor import walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.target.kinds import Target

IS_SCHEDULED = "tirx.is_scheduled"
MAX_BLOCKS = 256  # TVM's max_threadblocks


def default_gpu_schedule(mod: IRModule, ctx=None) -> IRModule:
    functions = {}
    for name, func in mod.functions.items():
        if _on_gpu(func, ctx) and not func.attrs.get(IS_SCHEDULED):
            func = _schedule(func, _target(func, ctx))
        if not func.attrs.get(IS_SCHEDULED):
            func = func.with_attr(IS_SCHEDULED, True)
        functions[name] = func
    return replace(mod, functions=functions)


def _target(func: PrimFunc, ctx) -> Target | None:
    t = func.attrs.get(TARGET)
    if isinstance(t, Target):
        return t
    return getattr(ctx, "target", None)


def _on_gpu(func: PrimFunc, ctx) -> bool:
    t = _target(func, ctx)
    return t is None or t.is_device


def _schedule(func: PrimFunc, target: Target | None) -> PrimFunc:
    if target is None:
        raise Diagnostic("DefaultGPUSchedule: the function has no target to take its "
                         "max_num_threads from", func.span)
    max_threads = target.get("max_num_threads")
    body = func.body
    if not isinstance(body, SBlockRealize):
        return func  # not block-level TIR: nothing TVM's schedule would see
    block = body.block
    if not block.iter_vars and _is_leaf(block) and not isinstance(block.body, (For, SBlockRealize)):
        body = _wrap_bare_block(body)
        block = body.block
    new_body = _Scheduler(max_threads).stmt(block.body)
    if new_body is block.body:
        return func
    return func.with_body(replace(body, block=replace(block, body=new_body)))


def _is_leaf(block: SBlock) -> bool:
    return not any(isinstance(n, SBlockRealize) for n in walk(block.body))


def _wrap_bare_block(realize: SBlockRealize) -> SBlockRealize:
    """A function whose body is one block without loops: that block under a unit loop
    ``u`` (iterator ``vu``) inside a new root block, as TVM wraps it."""
    u, vu = Var("u", INT32), Var("vu", INT32)
    zero, one = IntImm(INT32, 0), IntImm(INT32, 1)
    inner = replace(realize.block, iter_vars=(BlockIterVar(vu, Range(zero, one), "spatial"),))
    loop = For(u, zero, one, "serial", SBlockRealize((u,), realize.predicate, inner, realize.span),
               span=realize.span)
    root = SBlock("root", (), (), (), loop, span=realize.span)
    return SBlockRealize((), IntImm(BOOL, 1), root, realize.span)


class _Scheduler:
    def __init__(self, max_threads: int):
        self.max_threads = max_threads

    def stmt(self, s: Stmt) -> Stmt:
        """``s`` (a statement of the root block's body) with its leaf blocks bound."""
        if isinstance(s, SeqStmt):
            items = [self.stmt(x) for x in s.stmts]
            if all(a is b for a, b in zip(items, s.stmts)):
                return s
            return seq(items, s.span)
        loops: list[For] = []
        inner = s
        while isinstance(inner, For):
            loops.append(inner)
            inner = inner.body
        if isinstance(inner, SBlockRealize) and _is_leaf(inner.block):
            if any(l.kind == "thread_binding" for l in loops):
                return s
            return self.bind(loops, inner)
        if isinstance(inner, SBlockRealize):
            raise Diagnostic(f"DefaultGPUSchedule: block '{inner.block.name_hint}' holds blocks "
                             "of its own; only leaf blocks under the root block are scheduled",
                             inner.span)
        if any(isinstance(n, SBlockRealize) for n in walk(s)):
            if any(isinstance(n, For) and n.kind == "thread_binding" for n in walk(s)):
                return s
            where = next(n for n in walk(s) if isinstance(n, SBlockRealize))
            raise Diagnostic(f"DefaultGPUSchedule: the loops around block "
                             f"'{where.block.name_hint}' are not a perfect nest of its own "
                             "(they hold other statements or blocks)", where.span)
        return s

    def bind(self, loops: list[For], realize: SBlockRealize) -> Stmt:
        block = realize.block
        iters = block.iter_vars
        if loops and len(loops) != len(iters):
            raise Diagnostic(f"DefaultGPUSchedule: block '{block.name_hint}' has {len(iters)} "
                             f"iterators under {len(loops)} loops; TVM's rule pairs them one "
                             "to one", realize.span)
        spatial = [i for i, it in enumerate(iters) if it.iter_type == "spatial"] if loops else []
        if spatial and spatial != list(range(spatial[0], spatial[-1] + 1)):
            raise Diagnostic(f"DefaultGPUSchedule: the spatial loops of block "
                             f"'{block.name_hint}' are not consecutive, so they cannot be "
                             "fused", realize.span)
        if not spatial:
            # a unit loop u over the outermost loop (or the block), fused alone
            u = Var("u", INT32)
            top = loops[0] if loops else realize
            chain = [For(u, IntImm(INT32, 0), IntImm(INT32, 1), "serial", top, span=top.span)]
            rest_outer, rest_inner = [], loops
            fused_loops = chain
        else:
            rest_outer = loops[:spatial[0]]
            fused_loops = loops[spatial[0]:spatial[-1] + 1]
            rest_inner = loops[spatial[-1] + 1:]
        return self._fuse_split_bind(rest_outer, fused_loops, rest_inner, realize,
                                     unit_top=not spatial)

    def _fuse_split_bind(self, outer, fused_loops, inner, realize, unit_top: bool) -> Stmt:
        dtype = fused_loops[0].loop_var.dtype
        name = "_".join(l.loop_var.name for l in fused_loops) + "_fused"
        ana = Analyzer()
        # Fuse (preserve_unit_iters=False): a unit loop's variable becomes its minimum
        kept = [l for l in fused_loops if not _is_one(l.extent)]
        subst: dict[int, PrimExpr] = {id(l.loop_var): l.min for l in fused_loops
                                      if _is_one(l.extent)}
        extent: PrimExpr = IntImm(dtype, 1)
        for l in kept:
            extent = _mul(extent, l.extent)
        extent = ana.simplify(extent)
        f = Var(name, dtype)
        ana.bind_range(f, IntImm(dtype, 0), extent)
        stride: PrimExpr = IntImm(dtype, 1)
        for idx, l in reversed(list(enumerate(kept))):
            value = BinOp("floordiv", f, stride, dtype) if not _is_one(stride) else f
            if idx > 0:
                value = BinOp("floormod", value, l.extent, dtype)
            subst[id(l.loop_var)] = ana.simplify(value)
            stride = _mul(stride, l.extent)

        # Split, bind and (for three parts) reorder
        product = extent.value if isinstance(extent, IntImm) else None
        c = lambda v: IntImm(dtype, v)  # noqa: E731
        if product is not None and product <= self.max_threads * MAX_BLOCKS:
            factors = [c(min(product, self.max_threads))]
        else:
            factors = [c(MAX_BLOCKS), c(self.max_threads)]
        total = 1
        for fac in factors:
            total *= fac.value
        parts = [Var(f"{name}_{i}", dtype) for i in range(len(factors) + 1)]
        first_extent = ana.simplify(BinOp("floordiv", _add(extent, c(total - 1)), c(total), dtype))
        extents = [first_extent, *factors]
        raw: PrimExpr = parts[0]
        for v, fac in zip(parts[1:], factors):
            raw = _add(_mul(raw, fac), v)
        value = Analyzer().simplify(raw)  # as TVM's Split: without the parts' ranges
        subst = {k: substitute(v, {id(f): value}) for k, v in subst.items()}
        divides = product is not None and product % total == 0
        predicate = realize.predicate
        if not divides:
            cond = BinOp("lt", raw, extent, BOOL)
            predicate = cond if _is_true(predicate) else BinOp("and", predicate, cond, BOOL)

        # the block with its new iterator values, under the loops kept
        body: Stmt = replace(realize, predicate=predicate,
                             iter_values=tuple(substitute(v, subst) if not isinstance(v, IntImm)
                                               else v for v in realize.iter_values))
        if not unit_top:
            for l in reversed(inner):
                body = replace(l, body=body)
        else:
            body = fused_loops[0].body  # the loops under the unit loop, unchanged
            body = _replace_innermost(body, realize, replace(
                realize, predicate=predicate))
        tags = ["blockIdx.x", "threadIdx.x"]
        if len(parts) == 2:
            order = [(parts[0], extents[0], tags[0]), (parts[1], extents[1], tags[1])]
        else:
            order = [(parts[1], extents[1], tags[0]), (parts[2], extents[2], tags[1]),
                     (parts[0], extents[0], None)]
        span = fused_loops[0].span or realize.span
        for v, e, tag in reversed(order):
            body = For(v, c(0), e, "thread_binding" if tag else "serial", body, thread_tag=tag,
                       span=span)
        for l in reversed(outer):
            body = replace(l, body=body)
        return body


def _replace_innermost(s: Stmt, old: SBlockRealize, new: SBlockRealize) -> Stmt:
    if s is old:
        return new
    if isinstance(s, For):
        return replace(s, body=_replace_innermost(s.body, old, new))
    return s


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if _is_one(a):
        return b
    if _is_one(b):
        return a
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(a.dtype, a.value * b.value)
    return BinOp("mul", a, b, a.dtype)


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(a.dtype, a.value + b.value)
    return BinOp("add", a, b, a.dtype)
