"""``T.parallel`` loops on the CPU through libgomp, as GCC compiles ``#pragma omp parallel``:
the loop becomes an internal function ``void body(void* data)`` that runs a static
chunk of the iterations on each thread, the variables it uses travel in a struct on the
caller's stack, and the caller runs ``GOMP_parallel(body, &data, num_threads, 0)``.

An assertion failing inside the loop cannot raise on a worker thread (tvm-ffi's error
is thread-local): the first failing thread records kind and message in the struct and
the caller raises them after the loop.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.lower import FunctionLowering, likely
from tirc.backends.llvm.llvmlite_compat import opaque
from tirc.diagnostics import Diagnostic
from tirc.ir.expr import BinOp, Var
from tirc.ir.freevars import region_uses
from tirc.ir.stmt import For, LetStmt

_FLAG, _KIND, _MESSAGE, _FIRST = 0, 1, 2, 3  # fields of the struct before captured values


class _ParallelBody(FunctionLowering):
    """The outlined body: failures are recorded in the shared struct."""

    def setup(self, parent: FunctionLowering, data: ir.Value, struct_t: ir.Type) -> None:
        self.data, self.struct_t = data, struct_t
        self.data_align = dict(parent.data_align)
        self.offset_applied = set(parent.offset_applied)
        self.alias = parent.alias  # one set of scopes per function, attached at its end

    handles_errors = True  # a callee's error goes to the struct like any failure here
    parallel_body = True  # runs on a worker thread (tvm-ffi's error slot is per thread)

    def field(self, k: int) -> ir.Value:
        return self.b.gep(self.data, [ir.Constant(lt.I32, 0), ir.Constant(lt.I32, k)],
                          source_etype=self.struct_t)

    def fail(self, kind, message) -> None:
        if kind is not None:
            old = self.b.cmpxchg(self.field(_FLAG), ir.Constant(lt.I32, 0), ir.Constant(lt.I32, 1),
                                 "seq_cst", "seq_cst")
            first, done = self.block("first_error"), self.block("error_done")
            self.b.cbranch(self.b.extract_value(old, 1), first, done)
            self.b.position_at_end(first)
            self.b.store(kind, self.field(_KIND))
            self.b.store(message, self.field(_MESSAGE))
            self.b.branch(done)
            self.b.position_at_end(done)
        self.free_heap(0)
        self.b.ret_void()
        self.dead_block()

    def emit_return(self, value) -> None:
        raise Diagnostic("'return' inside a parallel loop", self.func.span)


def lower_parallel(fl: FunctionLowering, loop: For, num_threads: int) -> None:
    ptr_t, m = fl.ctx.pointer(), fl.module
    captured = [v for v in region_uses(loop).vars if id(v) in fl.vars]
    values = [fl.vars[id(v)] for v in captured]
    struct_t = ir.LiteralStructType([lt.I32, ptr_t, ptr_t] + [v.type for v in values])
    data = fl.alloca(struct_t, name="parallel_data", align=8)

    def field(b: ir.IRBuilder, base: ir.Value, k: int) -> ir.Value:
        return b.gep(base, [ir.Constant(lt.I32, 0), ir.Constant(lt.I32, k)], source_etype=struct_t)

    fl.b.store(ir.Constant(lt.I32, 0), field(fl.b, data, _FLAG))
    for k, v in enumerate(values):
        fl.b.store(v, field(fl.b, data, _FIRST + k))

    fl.counter += 1
    outlined = ir.Function(m.ir, ir.FunctionType(ir.VoidType(), [ptr_t]),
                           f"{fl.llfunc.name}.parallel{fl.counter}")
    outlined.linkage = "internal"
    opaque(outlined, ptr_t)
    outlined.attributes.add("nounwind")
    body = _ParallelBody(m, fl.name, fl.func, outlined)
    body.setup(fl, outlined.args[0], struct_t)
    for k, (var, v) in enumerate(zip(captured, values)):
        body.vars[id(var)] = body.b.load(field(body.b, outlined.args[0], _FIRST + k), typ=v.type,
                                         name=var.name)
    _chunk_loop(body, loop)
    if not body.b.block.is_terminated:
        body.free_heap(0)
        body.b.ret_void()
    body.seal()

    gomp = m.declare("GOMP_parallel", ir.FunctionType(
        ir.VoidType(), [ptr_t, ptr_t, lt.I32, lt.I32]))
    fl.b.call(gomp, [outlined, data, ir.Constant(lt.I32, num_threads), ir.Constant(lt.I32, 0)])
    failed = fl.b.load(field(fl.b, data, _FLAG), typ=lt.I32)
    bad, ok = fl.block("parallel_fail"), fl.block("parallel_ok")
    likely(fl.b.cbranch(fl.b.icmp_unsigned("==", failed, ir.Constant(lt.I32, 0)), ok, bad))
    fl.b.position_at_end(bad)
    kind = fl.b.load(field(fl.b, data, _KIND), typ=ptr_t)
    fl.fail(kind, fl.b.load(field(fl.b, data, _MESSAGE), typ=ptr_t))
    fl.b.position_at_end(ok)


def _chunk_loop(body: _ParallelBody, loop: For) -> None:
    """This thread's static chunk of the iterations ``j`` in ``[0, trips)``; the loop
    variable is ``min + j * step``."""
    b = body.b
    start, extent = body.expr(loop.min), body.expr(loop.extent)
    t = start.type
    extent = body.int_cast(extent, t)
    trips = extent
    if loop.step is not None:
        step = body.int_cast(body.expr(loop.step), t)
        trips = b.sdiv(b.sub(b.add(extent, step), ir.Constant(t, 1)), step)
    m = body.module
    nt_fn = m.declare("omp_get_num_threads", ir.FunctionType(lt.I32, []))
    tid_fn = m.declare("omp_get_thread_num", ir.FunctionType(lt.I32, []))
    nt = body.int_cast(b.call(nt_fn, []), t)
    tid = body.int_cast(b.call(tid_fn, []), t)
    chunk = b.sdiv(b.sub(b.add(trips, nt), ir.Constant(t, 1)), nt)
    begin = b.mul(tid, chunk)
    end = b.add(begin, chunk)
    end = b.select(b.icmp_signed("<", end, trips), end, trips)
    j = Var(f"{loop.loop_var.name}_j", loop.loop_var.dtype)
    d = loop.loop_var.dtype
    value = BinOp("mul", j, loop.step, d) if loop.step is not None else j
    value = BinOp("add", loop.min, value, d)
    inner = LetStmt(loop.loop_var, value, loop.body)
    body.serial_loop(j, begin, b.sub(end, begin), None, inner)
