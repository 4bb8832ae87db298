"""LowerCrossThreadReduction: a reduction block whose reduce iterators are bound (through
the loops around it) to ``threadIdx`` loops is a reduction *across threads*, which as an
ordinary block would let every thread update the same element at once. It becomes, as
TVM rewrites it:

1. ``<name>_in_thread_init``: per-thread partial results (``in_thread_<buf>``, a local
   one-element buffer) set to the reducer's identity;
2. ``<name>_in_thread``: the reduction loops that are not thread-bound, accumulating
   into the partial results (steps 1-2 only when some reduction loop is not
   thread-bound or the block has a predicate);
3. ``<name>_cross_thread``: ``T.tvm_thread_allreduce`` of the partial results (or the
   update's right-hand sides) over the reduction threads into ``cross_thread_<buf>``,
   under ``T.attr(<reducer>, "reduce_scope", 0)`` (LowerThreadAllreduce lowers it);
4. ``<name>_write_back``: the result stored into the block's outputs (by thread 0 of
   the reduction threads unless the output is local),

all inside the thread-bound reduction loops, in place of the outermost reduction loop.
The reducer is recognised from the init values and the update (see ``reducer_match``).
After such a rewrite, a later block of the same kernel that reads a reduced buffer and
writes non-local memory outside the reduction threads' loops gets those thread loops
around it with ``t == min`` in its predicate, so one thread writes (TVM's broadcast
rewrite).

A block that reduces across threads but cannot be rewritten is a located error: one
that is not a reduction block as TVM defines it (no init, another writer of its output,
a reduce iterator indexing its output) while its threads still store to a common element
(TVM leaves it unchanged: the data race above); or one whose reduction loops are not
innermost or are bound to blockIdx, whose update matches no known reducer, whose outputs
are partly local, or that is not the last block under its first reduction loop. A block
whose thread-bound reduce iterators index all its stores is no reduction and stays.

Not checked here: that the iterator bindings are affine (TVM's IsAffineBinding).

Precondition: Verify, BindTarget. Guarantees: no reduce iterator of a block is bound to
a thread axis.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import REDUCE_SCOPE
from tirc.ir.block import BlockIterVar, BufferRegion, Range, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, HANDLE, INT32, UINT32, VOID
from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, PointerType, PrimExpr, Var
from tirc.ir.freevars import uses_any
from tirc.ir.function import IRModule
from tirc.ir.reducer import CommReducer
from tirc.ir.renew import substitute
from tirc.ir.stmt import AttrStmt, BufferStore, Evaluate, For, LetStmt, SeqStmt, Stmt, seq
from tirc.ir.visitor import Mutator, walk
from tirc.passes.blocks.reducer_match import deep_equal, find_reducer


def _thread_scope(tag: str | None) -> tuple[int, int] | None:
    """(rank, dimension) of a thread tag: blockIdx.* rank 0, threadIdx.* rank 1."""
    for prefix, rank in (("blockIdx.", 0), ("threadIdx.", 1)):
        if tag and tag.startswith(prefix):
            return rank, "xyz".index(tag[-1])
    return None


def _is_thread_loop(loop: For) -> bool:
    return loop.kind == "thread_binding"


def _zero(span=None) -> IntImm:
    return IntImm(INT32, 0, span)


def _scratch(prefix: str, buf: Buffer) -> Buffer:
    name = f"{prefix}_thread_{buf.name}"
    data = Var(name, HANDLE, PointerType(buf.dtype, "local"), buf.span)
    return Buffer(name, data, buf.dtype, (IntImm(INT32, 1),), (IntImm(INT32, 1),), span=buf.span)


def _one_region(buf: Buffer) -> BufferRegion:
    return BufferRegion(buf, (Range(_zero(), IntImm(INT32, 1)),))


def _and(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a && b``, constant-true operands folded as TVM's operator does."""
    if isinstance(a, IntImm) and a.dtype == BOOL:
        return b if a.value else a
    if isinstance(b, IntImm) and b.dtype == BOOL:
        return a if b.value else b
    return BinOp("and", a, b, BOOL)


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _fail(block: SBlock, why: str) -> Diagnostic:
    return Diagnostic(f"block '{block.name_hint}' reduces across threads but cannot be "
                      f"lowered: {why}", block.span)


# -- the reduction block's parts -------------------------------------------------------

def _stores(s: Stmt | None) -> list[BufferStore] | None:
    if isinstance(s, BufferStore):
        return [s]
    if isinstance(s, SeqStmt) and all(isinstance(x, BufferStore) for x in s.stmts):
        return list(s.stmts)
    return None


def _inits_and_updates(block: SBlock) -> tuple[list[PrimExpr], list[BufferStore]]:
    """The identity values (ordered like the updates) and the updates of a reduction
    block: ``B[i] = B[i] + A[i, k]``, or for several values TVM's form ``v0 = ...;
    v1 = ...; B0[i] = v0; B1[i] = v1`` (one let per value), given as stores of the let
    values."""
    inits = _stores(block.init)
    if inits is None:
        raise _fail(block, "its init is not a sequence of buffer stores")
    if len({id(s.buffer) for s in inits}) != len(inits):
        raise _fail(block, "its init stores a buffer twice")
    n = len(inits)
    body, lets = block.body, []
    while isinstance(body, LetStmt):
        lets.append(body)
        body = body.body
    if n == 1 and not lets:
        updates = _stores(body)
    else:
        if len(lets) != n:
            raise _fail(block, f"its body must bind one value per output ({n}) before storing them")
        stored = _stores(body)
        if stored is None or len(stored) != n:
            raise _fail(block, "its body must end in one store per output")
        by_var = {id(let.var): let for let in lets}
        updates, seen = [None] * n, set()
        for st in stored:
            let = by_var.get(id(st.value)) if isinstance(st.value, Var) else None
            if let is None or id(let.var) in seen:
                raise _fail(block, "each output must store one of the bound values")
            seen.add(id(let.var))
            updates[lets.index(let)] = BufferStore(st.buffer, let.value, st.indices, st.span)
    if updates is None or len(updates) != n:
        raise _fail(block, "its update is not one store per initialised output")
    if len({id(u.buffer) for u in updates}) != n:
        raise _fail(block, "it updates a buffer twice")
    shape, index = updates[0].buffer.shape, updates[0].indices
    values: list[PrimExpr | None] = [None] * n
    for init in inits:
        pos = next((k for k, u in enumerate(updates) if u.buffer is init.buffer), None)
        if pos is None:
            raise _fail(block, f"buffer '{init.buffer.name}' is initialised but not updated")
        values[pos] = init.value
    for st in (*inits, *updates):
        if len(st.buffer.shape) != len(shape) or not all(
                deep_equal(a, b) for a, b in zip(st.buffer.shape, shape)):
            raise _fail(block, "its outputs do not all have the same shape")
        if len(st.indices) != len(index) or not all(deep_equal(a, b) for a, b in zip(st.indices, index)):
            raise _fail(block, "its outputs are not all accessed at the same indices")
    return values, updates


# -- the rewrite -----------------------------------------------------------------------

def _has_reduce_block(s: Stmt) -> bool:
    return any(isinstance(n, SBlock) and any(iv.iter_type == "reduce" for iv in n.iter_vars)
               for n in walk(s))


def _replace_realize(s: Stmt, src: SBlockRealize, tgt: SBlockRealize | None) -> Stmt | None:
    """``s`` with ``src`` replaced by ``tgt`` (or removed), thread-bound loops over
    reduction blocks unwrapped (the caller puts them around everything)."""
    if s is src:
        return tgt
    if isinstance(s, SBlockRealize):
        return s
    if isinstance(s, SeqStmt):
        kept = [x for x in (_replace_realize(c, src, tgt) for c in s.stmts) if x is not None]
        return seq(kept, s.span) if kept else None
    if isinstance(s, For):
        body = _replace_realize(s.body, src, tgt)
        if body is None:
            return None
        if _is_thread_loop(s) and _has_reduce_block(body):
            return body
        return replace(s, body=body)
    body = getattr(s, "body", None)
    if isinstance(body, Stmt):
        new = _replace_realize(body, src, tgt)
        return None if new is None else replace(s, body=new)
    return s


class _ToScratch(Mutator):
    """Loads and stores of the outputs become accesses of their partial results."""

    def __init__(self, mapping: dict[int, Buffer]):
        self.mapping = mapping

    def visit_BufferLoad(self, e: BufferLoad):
        new = self.mapping.get(id(e.buffer))
        if new is None:
            return self.generic_visit(e)
        return BufferLoad(new, (_zero(),), e.dtype, e.span)

    def visit_BufferStore(self, s: BufferStore):
        new = self.mapping.get(id(s.buffer))
        if new is None:
            return self.generic_visit(s)
        return BufferStore(new, self.visit(s.value), (_zero(),), s.span)


def _rewrite(realize: SBlockRealize, loops: list[For], reducer: CommReducer, rhs: list[PrimExpr],
             outputs: list[Buffer], out_index: tuple[PrimExpr, ...],
             partial: list[Buffer] | None, cross: list[Buffer]) -> Stmt:
    block = realize.block
    name = block.name_hint
    cross_regions = tuple(_one_region(b) for b in cross)
    stmts: list[Stmt] = []
    if partial is not None:
        partial_regions = tuple(_one_region(b) for b in partial)
        inits = [BufferStore(b, ident, (_zero(),), block.span)
                 for b, ident in zip(partial, reducer.identity)]
        stmts.append(SBlockRealize((), IntImm(BOOL, 1), SBlock(
            f"{name}_in_thread_init", (), (), partial_regions, seq(inits, block.span),
            span=block.span), span=block.span))
        body = _ToScratch({id(o): p for o, p in zip(outputs, partial)}).visit(block.body)
        in_thread = replace(realize, block=replace(block, name_hint=f"{name}_in_thread",
                                                   writes=partial_regions, body=body, init=None))
    else:
        in_thread = None
    rest = _replace_realize(loops[0], realize, in_thread)
    if rest is not None:
        stmts.append(rest)

    threads = [lp.loop_var for lp in loops if _is_thread_loop(lp)]
    sources = [BufferLoad(b, (_zero(),), b.dtype) for b in partial] if partial is not None else rhs
    args = (IntImm(UINT32, len(outputs)), *sources, IntImm(BOOL, 1),
            *(BufferLoad(b, (_zero(),), b.dtype) for b in cross), *threads)
    allreduce = AttrStmt(reducer, REDUCE_SCOPE, _zero(),
                         Evaluate(Call(VOID, "tvm_thread_allreduce", tuple(args)), block.span),
                         block.span)
    if partial is not None:
        cross_block = SBlock(f"{name}_cross_thread", (), partial_regions, cross_regions, allreduce,
                             span=block.span)
        stmts.append(SBlockRealize((), IntImm(BOOL, 1), cross_block, span=block.span))
    else:
        cross_block = SBlock(f"{name}_cross_thread", block.iter_vars, block.reads, cross_regions,
                             allreduce, span=block.span)
        stmts.append(SBlockRealize(realize.iter_values, IntImm(BOOL, 1), cross_block,
                                  span=block.span))

    # Write-back: spatial iterators renewed; the predicate's clauses free of reduction
    # loops kept, plus ``t == 0`` for each reduction thread unless the output is local.
    renamed: dict[int, Var] = {}
    iters, values = [], []
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.iter_type == "reduce":
            continue
        var = Var(iv.var.name, iv.var.dtype, iv.var.ptr, iv.var.span)
        renamed[id(iv.var)] = var
        iters.append(BlockIterVar(var, iv.dom, iv.iter_type, iv.span))
        values.append(value)
    region = tuple(substitute(r, renamed) for r in block.writes[0].region)
    index = tuple(substitute(i, renamed) for i in out_index)
    stores = [BufferStore(o, BufferLoad(c, (_zero(),), c.dtype), index, block.span)
              for o, c in zip(outputs, cross)]
    loop_ids = {id(lp.loop_var) for lp in loops}
    pred = IntImm(BOOL, 1)
    for clause in _conjuncts(realize.predicate):
        if not uses_any(clause, loop_ids):
            pred = _and(pred, clause)
    if outputs[0].scope != "local":
        for v in threads:
            pred = _and(pred, BinOp("eq", v, IntImm(v.dtype, 0), BOOL))
    stmts.append(SBlockRealize(tuple(values), pred, SBlock(
        f"{name}_write_back", tuple(iters), cross_regions,
        tuple(BufferRegion(o, region) for o in outputs), seq(stores, block.span),
        span=block.span), span=block.span))

    result = seq(stmts, realize.span)
    for lp in reversed(loops):
        if _is_thread_loop(lp):
            result = replace(lp, body=result)
    return result


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    """The clauses of ``a && b && ...`` in TVM's post-order; a lone clause is itself
    (TVM drops a lone clause; keeping a spatial one is what keeps writes in bounds)."""
    if not (isinstance(e, BinOp) and e.op == "and"):
        return [] if _is_true(e) else [e]
    out: list[PrimExpr] = []

    def post(node: PrimExpr) -> None:
        if isinstance(node, BinOp) and node.op == "and":
            post(node.a)
            post(node.b)
            out.extend(x for x in (node.a, node.b) if not (isinstance(x, BinOp) and x.op == "and"))
    post(e)
    return out


class _Lower(Mutator):
    def __init__(self) -> None:
        self.path: list[Stmt] = []
        self.loops: list[For] = []
        self.blocks: list[SBlock] = []
        self.new_buffers: dict[int, list[Buffer]] = {}
        self.loop_result: dict[int, Stmt] = {}
        self.reduced: dict[int, list[tuple[tuple[int, int], str, For]]] = {}
        self.any_rewrite = False
        self.thread_depth = 0
        self.block_idx_depth = 0

    def enter(self, node) -> None:
        if isinstance(node, Stmt):
            self.path.append(node)

    def leave(self, node) -> None:
        if isinstance(node, Stmt):
            self.path.pop()

    def visit_For(self, s: For):
        scope = _thread_scope(s.thread_tag) if _is_thread_loop(s) else None
        self.loops.append(s)
        if scope is not None:
            if scope[0] == 1:
                self.thread_depth += 1
            else:
                self.block_idx_depth += 1
        try:
            result = (yield from self.descend(s))
        finally:
            self.loops.pop()
            if scope is not None:
                if scope[0] == 1:
                    self.thread_depth -= 1
                else:
                    self.block_idx_depth -= 1
        if scope is not None and (scope[0] == 0 or (self.thread_depth == 0 and self.block_idx_depth == 0)):
            self.reduced.clear()
        return self.loop_result.get(id(s), result)

    def visit_SBlock(self, s: SBlock):
        self.blocks.append(s)
        try:
            result = (yield from self.descend(s))
        finally:
            self.blocks.pop()
        extra = self.new_buffers.get(id(s))
        if extra:
            result = replace(result, alloc_buffers=result.alloc_buffers + tuple(extra))
        return result

    def visit_SBlockRealize(self, s: SBlockRealize):
        loops = self._reduction_loops(s)
        if loops:
            self.any_rewrite = True
            self._cross_thread(s, loops)
            return None
        if self.any_rewrite:
            free = self._broadcast_threads(s)
            if free:
                return self._broadcast(s, free)
        return (yield from self.descend(s))

    # -- detection ---------------------------------------------------------------------
    def _reduction_loops(self, s: SBlockRealize) -> list[For]:
        reduce_vars: set[int] = set()
        for iv, value in zip(s.block.iter_vars, s.iter_values):
            if iv.iter_type == "reduce":
                reduce_vars |= {id(n) for n in walk(value) if isinstance(n, Var)}
        loops = [lp for lp in self.loops if id(lp.loop_var) in reduce_vars]
        bound = [lp for lp in loops if _is_thread_loop(lp)]
        if not bound:
            return []
        why = self._not_reduction(s)
        if why is not None:
            if not _threads_share_a_store(s, {id(lp.loop_var) for lp in bound}):
                return []  # each thread writes elements of its own: not a reduction
            thread = bound[0]
            raise Diagnostic(
                f"block '{s.block.name_hint}' reduces across threads (a reduce iterator is "
                f"bound to the {thread.thread_tag} loop '{thread.loop_var.name}') but is not a "
                f"reduction block tirc can lower: {why}", s.block.span or s.span)
        return loops

    def _not_reduction(self, s: SBlockRealize) -> str | None:
        block = s.block
        if not self.blocks:
            return "it is not inside a root block"
        if block.init is None:
            return "it has no T.init()"
        if any(iv.iter_type not in ("spatial", "reduce") for iv in block.iter_vars):
            return "it has iterators other than spatial and reduce ones"
        writers: dict[int, int] = {}
        for n in _direct_blocks(self.blocks[-1].body):
            for r in n.writes:
                writers[id(r.buffer)] = writers.get(id(r.buffer), 0) + 1
        for r in block.writes:
            if writers.get(id(r.buffer), 0) != 1:
                return f"buffer '{r.buffer.name}' has other writers"
        reduce_ids = {id(iv.var) for iv in block.iter_vars if iv.iter_type == "reduce"}
        for n in walk(block.body):
            if isinstance(n, BufferStore) and any(uses_any(i, reduce_ids) for i in n.indices):
                return f"a reduce iterator indexes its output '{n.buffer.name}'"
        return None

    # -- the cross-thread rewrite -----------------------------------------------------
    def _cross_thread(self, s: SBlockRealize, loops: list[For]) -> None:
        block = s.block
        # The reduction loops must be the innermost statements around the block.
        ancestors = [p for p in reversed(self.path[:-1]) if not isinstance(p, SeqStmt)]
        ids = {id(lp) for lp in loops}
        depth = 0
        for p in ancestors:
            if id(p) not in ids:
                break
            depth += 1
        if depth != len(loops):
            raise _fail(block, "its reduction loops are not the innermost loops around it")
        for lp in loops:
            if _is_thread_loop(lp) and (_thread_scope(lp.thread_tag) or (0, 0))[0] != 1:
                raise _fail(block, f"its reduction loop '{lp.loop_var.name}' is bound to "
                                   f"{lp.thread_tag}; only threadIdx.x/y/z can reduce together")
        values, updates = _inits_and_updates(block)
        found = find_reducer(values, [BufferLoad(u.buffer, u.indices, u.buffer.dtype) for u in updates],
                             [u.value for u in updates])
        if found is None:
            raise _fail(block, "its init and update match no known reducer (sum, product, "
                               "min, max, argmax, argmin)")
        reducer, rhs = found
        outputs = [u.buffer for u in updates]
        if len({o.scope == "local" for o in outputs}) > 1:
            raise _fail(block, "its outputs are partly local and partly not")
        realizes = [n for n in _direct_realizes(loops[0])]
        if realizes and realizes[-1] is not s:
            raise _fail(block, "it is not the last block under its outermost reduction loop")
        partial_needed = any(not _is_thread_loop(lp) for lp in loops) or not _is_true(s.predicate)
        cross = [_scratch("cross", o) for o in outputs]
        partial = [_scratch("in", o) for o in outputs] if partial_needed else None
        self.new_buffers.setdefault(id(self.blocks[-1]), []).extend(cross + (partial or []))
        self.loop_result[id(loops[0])] = _rewrite(s, loops, reducer, rhs, outputs,
                                                  updates[0].indices, partial, cross)
        threads = [(_thread_scope(lp.thread_tag), lp.thread_tag, lp) for lp in loops
                   if _is_thread_loop(lp)]
        for o in outputs:
            self.reduced[id(o)] = threads

    # -- the broadcast rewrite -----------------------------------------------------------
    def _broadcast_threads(self, s: SBlockRealize):
        if any(r.buffer.scope == "local" for r in s.block.writes):
            return []
        free: dict[tuple[int, int], tuple[str, For]] = {}
        for r in s.block.reads:
            for scope, tag, loop in self.reduced.get(id(r.buffer), []):
                free[scope] = (tag, loop)
        for lp in self.loops:
            if _is_thread_loop(lp):
                free.pop(_thread_scope(lp.thread_tag), None)
        return list(free.values())

    def _broadcast(self, s: SBlockRealize, free) -> Stmt:
        result: Stmt = self.generic_visit(s)
        pred = s.predicate
        loop_vars = []
        for tag, loop in free:
            var = Var("t" + tag[-1], loop.min.dtype)
            loop_vars.append(var)
            pred = _and(BinOp("eq", var, loop.min, BOOL), pred)
        result = replace(result, predicate=pred)
        for var, (tag, loop) in zip(loop_vars, free):
            result = For(var, loop.min, loop.extent, "thread_binding", result, thread_tag=tag)
        return result


def _threads_share_a_store(s: SBlockRealize, thread_vars: set[int]) -> bool:
    """Whether some store of the block is indexed independently of the reduce iterators
    bound to ``thread_vars``, so that those threads write the same element."""
    shared = {id(iv.var) for iv, value in zip(s.block.iter_vars, s.iter_values)
              if iv.iter_type == "reduce" and uses_any(value, thread_vars)}
    return any(isinstance(n, BufferStore) and not any(uses_any(i, shared) for i in n.indices)
               for n in walk(s.block.body))


def _direct_blocks(s: Stmt):
    """The blocks under ``s`` not nested in another block."""
    stack = [s]
    while stack:
        n = stack.pop()
        if isinstance(n, SBlock):
            yield n
            continue
        stack.extend(reversed([c for c in _children(n)]))


def _direct_realizes(s: Stmt) -> list[SBlockRealize]:
    out, stack = [], [s]
    while stack:
        n = stack.pop()
        if isinstance(n, SBlockRealize):
            out.append(n)
            continue
        stack.extend(reversed(_children(n)))
    return out


def _children(n) -> list:
    if isinstance(n, SeqStmt):
        return list(n.stmts)
    if isinstance(n, SBlockRealize):
        return [n.block]
    kids = []
    for name in ("body", "then_case", "else_case"):
        c = getattr(n, name, None)
        if isinstance(c, Stmt):
            kids.append(c)
    return kids


def lower_cross_thread_reduction(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(lambda body: _Lower().visit(body))
