"""LowerThreadAllreduce: ``T.tvm_thread_allreduce`` (made by LowerCrossThreadReduction,
under ``T.attr(<reducer>, "reduce_scope", 0)``) becomes code that combines one value per
thread over the reduction threads, as TVM emits it.

The call's thread arguments name the reduction threads; the other ``threadIdx`` axes of
the kernel (extent above 1) form independent groups. Both are flattened x-fastest into a
reduce index and a group index. The warp size is the target's ``thread_warp_size`` (32
on CUDA; a wavefront, 64 or 32 by arch, on rocm). On rocm, as in TVM, shuffles reduce
only 32-bit values over exactly one wavefront; everything else takes the tree below.
On CUDA, when the reduction threads are the lowest
``threadIdx`` dimensions and their count divides the warp (or is a multiple of it with
at most 32 warps, or the only group is at most one warp), the reduction uses warp
shuffles:

* up to a warp: ``shfl.down`` by halving offsets (a lane reads only lanes that exist:
  the first step of a non-power-of-two count is guarded), then the result is broadcast
  from the group's first lane with ``shfl``;
* more than a warp: each warp reduces, its lane 0 writes a shared staging buffer, the
  first warp reduces the staged values, and thread 0 of each group writes the result to
  a shared buffer all threads read (two ``__syncthreads``).

Otherwise (other targets, several groups that do not fit warps, values of other sizes)
every thread writes its value to a shared buffer and a tree reduction combines them,
halving with a ``__syncthreads`` after each step. (TVM ends this tree with
warp-synchronous steps under a branch, each with a full-mask ``__syncwarp`` that half
the named lanes never reach: undefined behaviour in CUDA; tirc keeps block barriers.)

The buffer the call wrote (``cross_thread_<buf>``) is replaced everywhere by where the
result lives: its allocation becomes the result's (volatile when shared), declarations
over it disappear, and its loads read the result.

Diagnostics: a thread extent that is not a constant, a reduction thread that is not
launched around the call, a vthread among the axes, a call outside a reducer scope.

Precondition: LowerThreadBindings, FlattenBuffer, ThreadSync (the barriers emitted here
are complete). Guarantees: no ``tvm_thread_allreduce`` call remains.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic, Span
from tirc.ir.attrs import REDUCE_SCOPE, TARGET, THREAD_EXTENT, VOLATILE
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, HANDLE, INT32, UINT32, DataType
from tirc.ir.expr import (BinOp, BufferLoad, Call, Cast, IntImm, PointerType, PrimExpr,
                          Select, StringImm, Var, is_one)
from tirc.ir.function import IRModule
from tirc.ir.reducer import CommReducer
from tirc.ir.stmt import (AllocBuffer, AttrStmt, BufferStore, DeclBuffer, Evaluate, IfThenElse,
                          IterVar, SeqStmt, Stmt, seq)
from tirc.ir.visitor import Mutator
from tirc.ir.index_arith import arith
from tirc.records import record
from tirc.target.kinds import Target

_WARP_KINDS = ("cuda", "nvptx", "rocm")


@record
class _Thread:
    dim: int
    var: Var
    extent: int


def _buffer(name: str, dtype: DataType, size: PrimExpr, scope: str, span: Span | None) -> Buffer:
    data = Var(name, HANDLE, PointerType(dtype, scope), span)
    return Buffer(name, data, dtype, (size,), span=span)


def _at(buf: Buffer, index: PrimExpr) -> BufferLoad:
    return BufferLoad(buf, (index,), buf.dtype)


def _sync(scope: str) -> Stmt:
    return Evaluate(Call(INT32, "tvm_storage_sync", (StringImm(scope),)))


def _cmp(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return BinOp(op, a, b, BOOL)


def _int(value: int, like: PrimExpr) -> IntImm:
    return IntImm(like.dtype, value)


def _flatten(threads: list[_Thread]) -> tuple[PrimExpr, int]:
    """The x-fastest linear index of ``threads`` and their total count."""
    if not threads:
        return IntImm(INT32, 0), 1
    index: PrimExpr = threads[0].var
    total = threads[0].extent
    for t in threads[1:]:
        index = BinOp("add", index, BinOp("mul", t.var, IntImm(t.var.dtype, total), t.var.dtype),
                      index.dtype)
        total *= t.extent
    return index, total


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


class _Builder(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self, target: Target | None):
        self.targets = [target]
        self.threads: list[AttrStmt] = []
        self.reducers: list[CommReducer] = []
        # data variable of a replaced buffer -> (its replacement, the load of the result)
        self.remap: dict[int, tuple[Buffer, PrimExpr]] = {}

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key == THREAD_EXTENT and isinstance(s.node, IterVar):
            stack, item = self.threads, s
        elif s.key == REDUCE_SCOPE and isinstance(s.node, CommReducer):
            stack, item = self.reducers, s.node
        elif s.key == TARGET and isinstance(s.node, Target):
            stack, item = self.targets, s.node
        else:
            return (yield from self.descend(s))
        stack.append(item)
        try:
            return (yield from self.descend(s))
        finally:
            stack.pop()

    def visit_Evaluate(self, s: Evaluate):
        call = s.value
        if isinstance(call, Call) and call.op == "tvm_thread_allreduce":
            return self.allreduce(call, s.span or call.span)
        return self.generic_visit(s)

    # -- the call ------------------------------------------------------------------------
    def allreduce(self, call: Call, span: Span | None) -> Stmt:
        if not self.reducers:
            raise Diagnostic("T.tvm_thread_allreduce outside a T.attr(<reducer>, "
                             "\"reduce_scope\", ...) scope", span)
        reducer = self.reducers[-1]
        n = reducer.size
        count = call.args[0]
        if not isinstance(count, IntImm) or count.value != n or len(call.args) < 2 + 2 * n:
            raise Diagnostic(f"T.tvm_thread_allreduce of {n} value(s) needs the count {n}, "
                             f"{n} values, a condition and {n} destinations", span)
        cond = call.args[n + 1]
        values = [call.args[1 + i] if is_one(cond) else Select(cond, call.args[1 + i], reducer.identity[i])
                  for i in range(n)]
        dtypes = [v.dtype for v in values]
        dests = []
        for a in call.args[2 + n: 2 + 2 * n]:
            a = a.value if isinstance(a, Cast) else a
            if not isinstance(a, BufferLoad):
                raise Diagnostic("a destination of T.tvm_thread_allreduce must be a buffer "
                                 "element", span)
            dests.append(a.buffer)
        reduce_vars = set()
        for a in call.args[2 + 2 * n:]:
            if isinstance(a, Var):
                reduce_vars.add(id(a))
            elif not _is_zero(a):
                raise Diagnostic("the threads of T.tvm_thread_allreduce must be thread "
                                 "variables", span)
        vred, vpar = self.split_threads(reduce_vars, span)
        reduce_index, reduce_extent = _flatten(vred)
        group_index, group_extent = _flatten(vpar)
        contiguous = 1
        for _, extent, is_reduce in sorted([(t.dim, t.extent, True) for t in vred]
                                           + [(t.dim, t.extent, False) for t in vpar]):
            if not is_reduce:
                break
            contiguous *= extent
        ctx = _Context(reducer, dtypes, reduce_index, group_index, self.warp_size, span)
        if self.is_warp_reduction(dtypes, group_extent, reduce_extent, contiguous):
            return self.warp_path(ctx, values, dests, reduce_extent, group_extent)
        return self.shared_path(ctx, values, dests, reduce_extent, group_extent)

    @property
    def target(self) -> Target | None:
        return self.targets[-1]

    @property
    def warp_size(self) -> int:
        t = self.target
        return int(t.get("thread_warp_size", 1) or 1) if t is not None else 1

    def split_threads(self, reduce_vars: set[int], span) -> tuple[list[_Thread], list[_Thread]]:
        vred, vpar = [], []
        found = 0
        for attr in self.threads:
            tag = attr.node.thread_tag
            if tag.startswith("blockIdx."):
                continue
            if not tag.startswith("threadIdx."):
                raise Diagnostic(f"a cross-thread reduction inside a {tag} axis is not supported",
                                 span)
            if not isinstance(attr.value, IntImm):
                raise Diagnostic(f"a cross-thread reduction needs a constant extent for {tag}",
                                 attr.span or span)
            extent = attr.value.value
            if extent == 1:
                continue
            t = _Thread("xyz".index(tag[-1]), attr.node.var, extent)
            if id(attr.node.var) in reduce_vars:
                vred.append(t)
                found += 1
            else:
                vpar.append(t)
        if found != len(reduce_vars):
            raise Diagnostic("a reduction thread of T.tvm_thread_allreduce is not launched "
                             "around it", span)
        return sorted(vred, key=lambda t: t.dim), sorted(vpar, key=lambda t: t.dim)

    def is_warp_reduction(self, dtypes, group_extent: int, reduce_extent: int, contiguous: int) -> bool:
        t = self.target
        if t is None or t.kind not in _WARP_KINDS:
            return False
        # rocm, as TVM: 32-bit values only (ds_bpermute moves 32 bits), and only a
        # reduction over exactly one wavefront
        if t.kind == "rocm" and any(d.bits * d.lanes != 32 if d.lanes > 1 else d.bits != 32
                                    for d in dtypes):
            return False
        for d in dtypes:
            if d.is_float and d.bits == 16:
                if d.lanes > 2:
                    return False
            elif d.lanes > 1 or d.bits // 8 < 4 or d.bits // 8 > 8:
                return False
        if not self.threads or contiguous != reduce_extent:
            return False
        if t.kind == "rocm":
            return reduce_extent == self.warp_size
        if reduce_extent == 1:
            return False
        warp = self.warp_size
        max_threads = t.get("max_num_threads", -1)
        if warp % reduce_extent == 0:
            return True
        if max_threads is not None and max_threads != -1 and max_threads <= warp * warp \
                and reduce_extent % warp == 0:
            return True
        return group_extent == 1 and reduce_extent <= warp

    # -- warp shuffles ----------------------------------------------------------------------
    def warp_path(self, c: "_Context", values, dests, reduce_extent: int, group_extent: int) -> Stmt:
        out: list[Stmt] = []
        allocs: list[Buffer] = []
        mask = Call(UINT32, "tvm_warp_activemask", ())
        zero = _int(0, c.reduce_index)
        if reduce_extent <= c.warp:
            results, locals_ = c.warp_reduce(values, reduce_extent, mask, None, out)
            allocs += locals_
            lane = arith("mul", IntImm(INT32, reduce_extent), c.group_index)
            for r in results:
                buf = r.buffer
                out.append(BufferStore(buf, c.shuffle("tvm_warp_shuffle", locals_[-1], _at(buf, zero), lane),
                                       (zero,)))
        else:
            n_warps = reduce_extent // c.warp
            staging = [_buffer("red_buf_staging", d.dtype, _int(n_warps * group_extent, c.reduce_index),
                               "shared", c.span) for d in dests]
            allocs += staging
            results, locals_ = c.warp_reduce(values, c.warp, mask, None, out)
            allocs += locals_
            slot = arith("add", arith("mul", c.group_index, IntImm(INT32, n_warps)),
                         BinOp("floordiv", c.reduce_index, _int(c.warp, c.reduce_index), c.reduce_index.dtype))
            writes = []
            for st, r in zip(staging, results):
                allocs.append(r.buffer)
                writes.append(BufferStore(st, r, (slot,)))
            lane_zero = _cmp("eq", BinOp("floormod", c.reduce_index, _int(c.warp, c.reduce_index),
                                         c.reduce_index.dtype), zero)
            out += [IfThenElse(lane_zero, seq(writes)), _sync("shared")]
            staged = [_at(st, arith("add", arith("mul", c.group_index, IntImm(INT32, n_warps)), c.reduce_index))
                      for st in staging]
            results, locals_ = c.warp_reduce(staged, n_warps, mask,
                                             _cmp("lt", c.reduce_index, _int(n_warps, c.reduce_index)), out)
            allocs += locals_
            writes, final = [], []
            for d, r in zip(dests, results):
                allocs.append(r.buffer)
                shared = _buffer("red_result", d.dtype, _int(group_extent, c.reduce_index), "shared", c.span)
                writes.append(BufferStore(shared, r, (c.group_index,)))
                final.append(_at(shared, c.group_index))
            results = final
            out += [IfThenElse(_cmp("eq", c.reduce_index, zero), seq(writes)), _sync("shared")]
        for d, r in zip(dests, results):
            self.remember(d, r.buffer, r, c.span)
        return _allocate(allocs, seq(out))

    # -- shared-memory tree -------------------------------------------------------------
    def shared_path(self, c: "_Context", values, dests, reduce_extent: int, group_extent: int) -> Stmt:
        if reduce_extent == 1:
            return seq([BufferStore(d, v, (IntImm(INT32, 0),)) for d, v in zip(dests, values)])
        out: list[Stmt] = [_sync("shared")]
        bufs = []
        for i, v in enumerate(values):
            buf = _buffer(f"red_buf{i}", v.dtype, IntImm(c.group_index.dtype, group_extent * reduce_extent),
                          "shared", c.span)
            bufs.append(buf)
            out.append(BufferStore(buf, v, (c.buf_index(c.reduce_index, reduce_extent),)))
        out.append(_sync("shared"))
        out.append(c.tree_reduce(bufs, reduce_extent))
        for d, buf in zip(dests, bufs):
            self.remember(d, buf, _at(buf, c.buf_index(_int(0, c.reduce_index), reduce_extent)), c.span)
        return seq(out)

    def remember(self, dest: Buffer, new: Buffer, load: PrimExpr, span) -> None:
        if id(dest.data) in self.remap:
            raise Diagnostic(f"buffer '{dest.name}' receives two cross-thread reductions", span)
        self.remap[id(dest.data)] = (new, load)


def _allocate(bufs: list[Buffer], body: Stmt) -> Stmt:
    for b in reversed(bufs):
        body = AllocBuffer(b, body)
    return body


@record
class _Context:
    reducer: CommReducer
    dtypes: list[DataType]
    reduce_index: PrimExpr
    group_index: PrimExpr
    warp: int
    span: Span | None

    def shuffle(self, op: str, mask_buf: Buffer | None, value: PrimExpr, lane: PrimExpr) -> Call:
        mask = _at(mask_buf, IntImm(INT32, 0)) if mask_buf is not None else IntImm(INT32, 0)
        width = IntImm(INT32, self.warp)
        return Call(value.dtype, op, (mask, value, lane, width, width))

    def buf_index(self, reduce_index: PrimExpr, reduce_extent: int) -> PrimExpr:
        if _is_zero(self.group_index):
            return reduce_index
        return arith("add", arith("mul", self.group_index, IntImm(self.group_index.dtype, reduce_extent)),
                     reduce_index)

    def warp_reduce(self, values, reduce_extent: int, mask: PrimExpr, predicate, out: list[Stmt]):
        """Reduce ``values`` over ``reduce_extent`` lanes with ``shfl.down``; the results
        stay in lane 0 of each group (``red_buf<i>[0]``). Returns the result loads and the
        local buffers to allocate (shuffled values, then the mask)."""
        zero = IntImm(INT32, 0)
        one = IntImm(INT32, 1)
        accs, temps, loads = [], [], []
        for i, (v, d) in enumerate(zip(values, self.dtypes)):
            accs.append(_buffer(f"red_buf{i}", d, one, "local", self.span))
            temps.append(_buffer(f"t{i}", d, one, "local", self.span))
            loads.append(BufferStore(accs[-1], v, (zero,)))
        out.append(IfThenElse(predicate, seq(loads)) if predicate is not None else seq(loads))
        mask_buf = _buffer("mask", UINT32, one, "local", self.span)
        out.append(BufferStore(mask_buf, mask, (zero,)))
        locals_ = temps + [mask_buf]
        offset = 1
        while offset * 2 < reduce_extent:
            offset *= 2
        while offset > 0:
            a, b = [], []
            for acc, tmp in zip(accs, temps):
                cur = _at(acc, zero)
                a.append(cur)
                out.append(BufferStore(tmp, self.shuffle("tvm_warp_shuffle_down", mask_buf, cur,
                                                         IntImm(INT32, offset)), (zero,)))
                b.append(_at(tmp, zero))
            stores = seq([BufferStore(acc, r, (zero,)) for acc, r in zip(accs, self.reducer.combine(a, b))])
            if offset * 2 > reduce_extent:
                inside = _cmp("lt", arith("add", self.reduce_index, _int(offset, self.reduce_index)),
                              _int(reduce_extent, self.reduce_index))
                out.append(IfThenElse(inside, stores))
            else:
                out.append(stores)
            offset //= 2
        return [_at(acc, zero) for acc in accs], locals_

    def tree_reduce(self, bufs: list[Buffer], reduce_extent: int) -> Stmt:
        align = 1
        while reduce_extent > align:
            align <<= 1
        here = self.buf_index(self.reduce_index, reduce_extent)

        def load(offset: int) -> tuple[PrimExpr, ...]:
            other = self.buf_index(arith("add", self.reduce_index, _int(offset, self.reduce_index)),
                                   reduce_extent)
            return self.reducer.combine([_at(b, here) for b in bufs], [_at(b, other) for b in bufs])

        def store(values) -> Stmt:
            return seq([BufferStore(b, v, (here,)) for b, v in zip(bufs, values)])

        out: list[Stmt] = []
        if align > reduce_extent:
            align >>= 1
            cond = _cmp("lt", self.reduce_index, _int(reduce_extent - align, self.reduce_index))
            out += [IfThenElse(cond, store(load(align))), _sync("shared")]
        # Every further halving step is a guarded combine and a __syncthreads. TVM ends
        # the tree with warp-synchronous steps under ``if reduce_index < n`` with a
        # full-mask __syncwarp inside: lanes named by the mask never arrive, which CUDA
        # leaves undefined (found by tirc.testing.simt). The few extra block barriers
        # only cost on this fallback path.
        while align > 1:
            align >>= 1
            out += [IfThenElse(_cmp("lt", self.reduce_index, _int(align, self.reduce_index)),
                               store(load(align))), _sync("shared")]
        return seq(out)


class _Remap(Mutator):
    """Every use of a buffer a reduction wrote reads its result instead."""

    def __init__(self, remap: dict[int, tuple[Buffer, PrimExpr]]):
        self.remap = remap

    def visit_AllocBuffer(self, s: AllocBuffer):
        hit = self.remap.get(id(s.buffer.data))
        if hit is None:
            return (yield from self.descend(s))
        new = hit[0]
        notes = s.annotations
        if new.scope == "shared":
            notes = tuple(sorted(dict(notes, **{VOLATILE: True}).items()))
        return AllocBuffer(new, (yield s.body), s.span, notes)

    def visit_DeclBuffer(self, s: DeclBuffer):
        if id(s.buffer.data) in self.remap:
            return (yield s.body)
        return (yield from self.descend(s))

    def visit_SeqStmt(self, s: SeqStmt):
        out = (yield from self.descend(s))
        return seq(out.stmts, out.span) if out is not s else s

    def visit_BufferLoad(self, e: BufferLoad):
        hit = self.remap.get(id(e.buffer.data))
        return hit[1] if hit is not None else self.generic_visit(e)

    def visit_BufferStore(self, s: BufferStore):
        hit = self.remap.get(id(s.buffer.data))
        if hit is None:
            return self.generic_visit(s)
        target = hit[1]
        return BufferStore(target.buffer, self.visit(s.value), target.indices, s.span)


def lower_thread_allreduce(mod: IRModule, ctx=None) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        target = f.attrs.get(TARGET)
        builder = _Builder(target if isinstance(target, Target) else None)
        body = builder.visit(f.body)
        if builder.remap:
            body = _Remap(builder.remap).visit(body)
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)
