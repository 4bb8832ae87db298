"""InjectPTXLDG32 (TVM's ``s_tir.InjectPTXLDG32``, run when the pass option
``tirx.s_tir.ldg32`` is set, in CUDA functions only): a guarded load
``C[k] = T.if_then_else(c, A[i], 0.0)`` becomes one predicated ``ld.global.nc.f32``,
``T.s_tir.ldg32(C.data, predicate[0], A[addr[0]], addr[1])``, after storing ``i``, ``k``
and ``c`` in two small local buffers (``addr``, ``predicate``) allocated once per
function, and ``C[k] = 0.0`` as TVM writes it.

TVM's rewrite takes any ``if_then_else`` with a load on either side; its instruction
loads float32 and writes 0 where the guard is false. So a store of another dtype, of a
load that is not from global memory, of a load in the ``else`` side, or with an other
value than zero is left as it is here (TVM's result would differ from the program).
A vector load (``T.Ramp`` index) is left as it is, as TVM leaves it.

Precondition: FlattenBuffer (one index per access). Guarantees: nothing else changes.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, INT32, DataType
from tirc.ir.expr import Broadcast, BufferLoad, Call, FloatImm, IntImm, PointerType, Ramp, Var
from tirc.ir.function import IRModule
from tirc.ir.ptx_ops import LDG32
from tirc.ir.stmt import AllocBuffer, AttrStmt, BufferStore, Evaluate, SeqStmt
from tirc.ir.visitor import Mutator

OPTION = "tirx.s_tir.ldg32"
THREAD_EXTENT = "thread_extent"
FLOAT32 = DataType("float32")


def inject_ptx_ldg32(mod: IRModule, ctx=None, force: bool = False) -> IRModule:
    """The pass; in the pipeline only with ``--pass-config tirx.s_tir.ldg32=1``."""
    if not force and (ctx is None or not ctx.config_of(OPTION, False)):
        return mod
    for name, func in list(mod.functions.items()):
        target = func.attrs.get("target")
        if target is None or getattr(target, "kind", None) != "cuda":
            continue
        r = _Rewriter()
        body = r.visit(func.body)
        if r.used:
            mod = mod.with_function(name, func.with_body(r.allocate(body)))
    return mod


def _local(name: str, dtype: DataType, n: int) -> Buffer:
    data = Var(name, DataType("handle"), PointerType(dtype, "local"))
    return Buffer(name, data, dtype, (IntImm(INT32, n),))


def _zero(e) -> bool:
    if isinstance(e, Broadcast):
        e = e.value
    return isinstance(e, FloatImm) and e.value == 0.0


class _Rewriter(Mutator):
    def __init__(self):
        self.addr = _local("addr", INT32, 2)
        self.predicate = _local("predicate", BOOL, 1)
        self.used = False
        self.placed = False

    def allocate(self, body):
        """The two buffers around ``body`` unless already placed in the kernel."""
        if self.placed:
            return body
        return AllocBuffer(self.predicate, AllocBuffer(self.addr, body, body.span), body.span)

    def visit_AttrStmt(self, s: AttrStmt):
        # inside a kernel the buffers go under its outermost thread launch
        if s.key != THREAD_EXTENT or self.placed:
            return self.generic_visit(s)
        used = self.used
        self.used = False
        out = self.generic_visit(s)
        if self.used:
            out = replace(out, body=self.allocate(out.body))
            self.placed = True
        self.used = self.used or used
        return out

    def visit_BufferStore(self, s: BufferStore):
        v = s.value
        if not (isinstance(v, Call) and v.op == "if_then_else" and len(v.args) == 3):
            return self.generic_visit(s)
        cond, load, other = v.args
        if (not isinstance(load, BufferLoad) or isinstance(load.indices[0], Ramp)
                or len(load.indices) != 1 or len(s.indices) != 1 or s.buffer.dtype != FLOAT32
                or load.dtype != FLOAT32 or load.buffer.scope != "global" or not _zero(other)):
            return self.generic_visit(s)
        self.used = True
        zero = IntImm(INT32, 0)
        one = IntImm(INT32, 1)
        local = BufferLoad(self.addr, (one,), INT32)
        new_load = replace(load, indices=(BufferLoad(self.addr, (zero,), INT32),))
        call = Call(FLOAT32, LDG32, (s.buffer.data, BufferLoad(self.predicate, (zero,), BOOL),
                                      new_load, local), s.span)
        return SeqStmt((BufferStore(self.addr, load.indices[0], (zero,), s.span),
                        BufferStore(self.addr, s.indices[0], (one,), s.span),
                        BufferStore(self.predicate, cond, (zero,), s.span),
                        BufferStore(s.buffer, other, (local,), s.span),
                        Evaluate(call, s.span)), s.span)
