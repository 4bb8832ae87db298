"""InjectPTXAsyncCopy (TVM's ``s_tir.InjectPTXAsyncCopy``, run when the pass option
``tirx.use_async_copy`` is set): under ``T.attr(..., "async_scope", 1)`` (what
InjectSoftwarePipeline puts around the statements of an asynchronous stage), a copy of
4, 8 or 16 bytes from global to shared memory becomes one ``cp.async``
(``T.s_tir.cp_async_raw(dtype, dst, dst_offset, src, src_offset, bytes[, predicate])``);
a copy guarded by ``T.if_then_else(c, load, 0.0)`` becomes the predicated form, which
writes zeros where ``c`` is false. The attribute goes; other statements stay as they are
(the copy then runs synchronously, which the commit and wait around it allow).

The code generator turns the commit and wait scopes into ``cp.async.commit_group`` and
``cp.async.wait_group N`` (sm_80 and later).

Precondition: FlattenBuffer (one index per access), ThreadSync.
Guarantees: no ``async_scope`` attribute remains.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.buffer import SHARED_SCOPES
from tirc.ir.expr import BinOp, Broadcast, BufferLoad, Call, FloatImm, Ramp
from tirc.ir.function import IRModule
from tirc.ir.ptx_ops import CP_ASYNC
from tirc.ir.stmt import AttrStmt, BufferStore, Evaluate
from tirc.ir.visitor import Mutator
from tirc.passes.analysis.arith_ops import binop, imm
from tirc.ir.dtype import INT32, DataType

UINT8 = DataType("uint8")

ASYNC_SCOPE = "async_scope"
OPTION = "tirx.use_async_copy"


def inject_ptx_async_copy(mod: IRModule, ctx=None, force: bool = False) -> IRModule:
    """The pass; in the pipeline only with ``--pass-config tirx.use_async_copy=1``
    (``force``: run regardless, as TVM's pass object called directly)."""
    if not force and (ctx is None or not ctx.config_of(OPTION, False)):
        return mod
    return mod.map_bodies(_Injector().visit)


def _bytes(dt: DataType) -> int:
    return (dt.bits + 7) // 8


def _is_zero(e) -> bool:
    if isinstance(e, Broadcast):
        e = e.value
    return isinstance(e, FloatImm) and e.value == 0.0


class _Injector(Mutator):
    def __init__(self):
        self.in_async = False

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key != ASYNC_SCOPE:
            return self.generic_visit(s)
        if self.in_async:
            raise Diagnostic("nested async scopes are not supported", s.span)
        self.in_async = True
        try:
            return self.visit(s.body)
        finally:
            self.in_async = False

    def visit_BufferStore(self, s: BufferStore):
        if self.in_async and s.buffer.scope in SHARED_SCOPES:
            v = s.value
            if isinstance(v, BufferLoad):
                return self._inject(v, s, None)
            if (isinstance(v, Call) and v.op == "if_then_else" and len(v.args) == 3
                    and isinstance(v.args[1], BufferLoad) and _is_zero(v.args[2])):
                return self._inject(v.args[1], s, v.args[0])
        return self.generic_visit(s)

    def _inject(self, load: BufferLoad, store: BufferStore, predicate):
        if load.buffer.scope != "global":
            return self.generic_visit(store)
        if len(load.indices) != 1 or len(store.indices) != 1:
            raise Diagnostic("an asynchronous copy needs flat buffers (one index); "
                             "FlattenBuffer must run first", store.span)
        lanes = load.indices[0].dtype.lanes
        if lanes != store.indices[0].dtype.lanes:
            raise Diagnostic("an asynchronous copy loads and stores different numbers of "
                             "elements", store.span)
        nbytes = lanes * _bytes(load.buffer.dtype)
        if nbytes not in (4, 8, 16):
            return self.generic_visit(store)
        factor = 1
        dst_elem, src_elem = store.buffer.data.ptr.dtype, load.buffer.data.ptr.dtype
        if dst_elem != src_elem:
            if store.buffer.scope != "shared.dyn" or dst_elem != UINT8:
                raise Diagnostic(f"an asynchronous copy from {src_elem} to {dst_elem} memory: "
                                 "only merged dynamic shared memory (bytes) may differ", store.span)
            factor = _bytes(src_elem)
        if lanes == 1:
            src, dst = load.indices[0], store.indices[0]
        else:
            src = load.indices[0].base if isinstance(load.indices[0], Ramp) else None
            dst = _vector_base(store.indices[0])
            if src is None or dst is None:
                return self.generic_visit(store)
        args = [store.buffer.data, binop("mul", dst, imm(INT32, factor)), load.buffer.data, src,
                imm(INT32, nbytes)]
        if predicate is not None:
            args.append(predicate)
        return Evaluate(Call(store.buffer.dtype, CP_ASYNC, tuple(args), store.span), store.span)


def _vector_base(index):
    if isinstance(index, Ramp):
        return index.base
    if (isinstance(index, BinOp) and index.op == "add" and isinstance(index.a, Ramp)
            and isinstance(index.b, Broadcast)):
        return BinOp("add", index.a.base, index.b.value, index.a.base.dtype)
    return None
