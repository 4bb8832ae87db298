"""``T.parallel`` loops on the CPU through libgomp, as GCC compiles ``#pragma omp parallel``:
the loop becomes an internal function ``void body(void* data)`` that runs a static
chunk of the iterations on each thread, the variables it uses travel in a struct on the
caller's stack, and the caller runs ``GOMP_parallel(body, &data, num_threads, 0)``.

An assertion failing inside the loop cannot raise on a worker thread (tvm-ffi's error
is thread-local): the first failing thread records kind and message in the struct and
the caller raises them after the loop.

libgomp is loaded at the first parallel loop (``dlopen("libgomp.so.1")``, its three
entry points kept in a table), not linked, so that its wait policy can be chosen
before it starts: when the environment sets neither ``OMP_WAIT_POLICY`` nor
``GOMP_SPINCOUNT``, ``GOMP_SPINCOUNT=10000`` is set first: a waiting thread spins
briefly, then sleeps, as TVM's pool spins then yields. libgomp's default spins for
about 300000 iterations at the end of each loop and between loops; on a machine whose
cores are shared (CI runners, another process on a core) a spinning thread takes the
time slices of the thread still working, and a 2-thread loop ran 1.3x-2x slower than
TVM's pool beside one busy process. Sleeping at once (``OMP_WAIT_POLICY=passive``)
fixes that but makes a short loop on an idle machine pay for waking its threads (a
0.4 ms row sum went from 0.5x to 1.1x-1.45x TVM's time); the short spin kept both
near TVM's (bench/README.md, "Parallel loops under load"). A process that loaded
libgomp before keeps its setting.
Failing to load it raises a RuntimeError from the function.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.lower import FunctionLowering, likely
from tirc.backends.llvm.llvmlite_compat import call_pointer, opaque, store_atomic
from tirc.diagnostics import Diagnostic
from tirc.ir.expr import BinOp, Var
from tirc.ir.freevars import region_uses
from tirc.ir.stmt import For, LetStmt

SPIN_COUNT = "10000"  # libgomp's GOMP_SPINCOUNT unless the environment chose a policy
_FLAG, _KIND, _MESSAGE, _FIRST = 0, 1, 2, 3  # fields of the struct before captured values

# libgomp's entry points, in the order of the table the loader fills
_GOMP_PARALLEL, _NUM_THREADS, _THREAD_NUM = 0, 1, 2
_ENTRIES = ("GOMP_parallel", "omp_get_num_threads", "omp_get_thread_num")
_TABLE, _LOADER = "__tirc_gomp", "__tirc_gomp_load"
_RTLD_NOW_GLOBAL = 0x2 | 0x100


def _gomp_table(m) -> ir.GlobalVariable:
    """The module's table of libgomp's entry points, null until loaded."""
    existing = m.ir.globals.get(_TABLE)
    if existing is not None:
        return existing
    ptr_t = m.ctx.pointer()
    ty = ir.ArrayType(ptr_t, len(_ENTRIES))
    table = ir.GlobalVariable(m.ir, ty, _TABLE)
    table.linkage, table.align = "internal", 8
    table.initializer = ir.Constant(ty, None)
    opaque(table, ptr_t)
    return table


def _entry(b: ir.IRBuilder, table: ir.Value, k: int, ptr_t) -> ir.Value:
    return b.gep(table, [ir.Constant(lt.I32, 0), ir.Constant(lt.I32, k)],
                 source_etype=ir.ArrayType(ptr_t, len(_ENTRIES)))


def _gomp_loader(m) -> ir.Function:
    """``__tirc_gomp_load()``: 0 once the table holds libgomp's entry points, loading
    libgomp the first time (a short spin unless the environment says otherwise),
    -1 when it cannot be loaded. Threads racing here all store the same pointers;
    GOMP_parallel's slot is stored last, with release, and read with acquire."""
    existing = m.ir.globals.get(_LOADER)
    if existing is not None:
        return existing
    ptr_t = m.ctx.pointer()
    table = _gomp_table(m)
    f = ir.Function(m.ir, ir.FunctionType(lt.I32, []), _LOADER)
    f.linkage = "internal"
    f.attributes.add("nounwind")
    f.attributes.add("noinline")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    first = _entry(b, table, _GOMP_PARALLEL, ptr_t)
    loaded = b.load_atomic(first, "acquire", 8, typ=ptr_t)
    done, load = f.append_basic_block("loaded"), f.append_basic_block("load")
    likely(b.cbranch(b.icmp_unsigned("!=", loaded, ir.Constant(ptr_t, None)), done, load))
    b.position_at_end(done)
    b.ret(ir.Constant(lt.I32, 0))
    b.position_at_end(load)
    getenv = m.declare("getenv", ir.FunctionType(ptr_t, [ptr_t]))
    unset = b.and_(
        b.icmp_unsigned("==", b.call(getenv, [m.string("OMP_WAIT_POLICY")]),
                        ir.Constant(ptr_t, None)),
        b.icmp_unsigned("==", b.call(getenv, [m.string("GOMP_SPINCOUNT")]),
                        ir.Constant(ptr_t, None)))
    with b.if_then(unset):
        setenv = m.declare("setenv", ir.FunctionType(lt.I32, [ptr_t, ptr_t, lt.I32]))
        b.call(setenv, [m.string("GOMP_SPINCOUNT"), m.string(SPIN_COUNT),
                        ir.Constant(lt.I32, 0)])
    dlopen = m.declare("dlopen", ir.FunctionType(ptr_t, [ptr_t, lt.I32]))
    dlsym = m.declare("dlsym", ir.FunctionType(ptr_t, [ptr_t, ptr_t]))
    handle = b.call(dlopen, [m.string("libgomp.so.1"), ir.Constant(lt.I32, _RTLD_NOW_GLOBAL)])
    fail = f.append_basic_block("fail")
    ok = f.append_basic_block("opened")
    b.cbranch(b.icmp_unsigned("==", handle, ir.Constant(ptr_t, None)), fail, ok)
    b.position_at_end(ok)
    found = []
    for k in (_NUM_THREADS, _THREAD_NUM, _GOMP_PARALLEL):
        sym = b.call(dlsym, [handle, m.string(_ENTRIES[k])])
        nxt = f.append_basic_block(f"found_{_ENTRIES[k]}")
        b.cbranch(b.icmp_unsigned("==", sym, ir.Constant(ptr_t, None)), fail, nxt)
        b.position_at_end(nxt)
        found.append((k, sym))
    for k, sym in found:
        if k == _GOMP_PARALLEL:
            store_atomic(b, sym, _entry(b, table, k, ptr_t), "release", 8)
        else:
            b.store(sym, _entry(b, table, k, ptr_t))
    b.ret(ir.Constant(lt.I32, 0))
    b.position_at_end(fail)
    b.ret(ir.Constant(lt.I32, -1))
    return f


def _omp_call(body: "_ParallelBody", k: int) -> ir.Value:
    """``omp_get_num_threads()`` or ``omp_get_thread_num()`` through the table (filled
    before the loop started)."""
    ptr_t = body.ctx.pointer()
    fn = body.b.load(_entry(body.b, _gomp_table(body.module), k, ptr_t), typ=ptr_t)
    return call_pointer(body.b, fn, ir.FunctionType(lt.I32, []), [])


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

    status = fl.b.call(_gomp_loader(m), [])
    no_gomp, have_gomp = fl.block("gomp_fail"), fl.block("gomp_ok")
    likely(fl.b.cbranch(fl.b.icmp_signed("==", status, ir.Constant(lt.I32, 0)), have_gomp,
                        no_gomp))
    fl.b.position_at_end(no_gomp)
    fl.fail(fl.string("RuntimeError"),
            fl.string(f"cannot load libgomp.so.1 for the parallel loop of function "
                      f"'{fl.name}'"))
    fl.b.position_at_end(have_gomp)
    gomp = fl.b.load(_entry(fl.b, _gomp_table(m), _GOMP_PARALLEL, ptr_t), typ=ptr_t)
    call_pointer(fl.b, gomp, ir.FunctionType(ir.VoidType(), [ptr_t, ptr_t, lt.I32, lt.I32]),
                 [outlined, data, ir.Constant(lt.I32, num_threads), ir.Constant(lt.I32, 0)])
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
    nt = body.int_cast(_omp_call(body, _NUM_THREADS), t)
    tid = body.int_cast(_omp_call(body, _THREAD_NUM), t)
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
