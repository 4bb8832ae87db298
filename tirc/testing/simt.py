"""A SIMT interpreter of tirc's lowered device code: the test oracle that checks CUDA
modules numerically on machines without a GPU.

**Where it runs the module.** :func:`lower` runs the pipeline up to ``VerifyMemory``, the
last pass before ``MakePackedAPI`` turns host functions into the packed calling
convention. By then SplitHostDevice and LowerDeviceKernelLaunch have run: host code
launches kernels with ``T.call_ffi_kernel("k", args..., extents..., launch_params=[...])``,
and every launch carries the grid, block and dynamic shared memory sizes the pipeline
computed. The passes after ``VerifyMemory`` are run too, and the device functions are
taken from their result, so what is interpreted is exactly what the NVPTX backend
compiles (BF16/FP8 storage legalisation included). Host functions run on the serial
evaluator (:class:`tirc.testing.evaluate.Evaluator`); a launch runs the kernel here on the
host's arrays with the sizes the host passes — so the split, the argument order and the
launch sizes are checked as well as the kernel: a kernel whose ``T.launch_thread``
extents disagree with its launch, or whose dynamic shared memory exceeds what the launch
provides, is an error. Stopping earlier (after MergeSharedMemoryAllocations, before the
split) would leave the interpreter to re-derive launch sizes from the ``T.launch_thread``
scopes, and the split and the launch lowering unchecked; stopping later, the host code
takes packed arguments. :func:`launch` runs one kernel-shaped function directly (tests).

**The model.** All threads of the grid run in lockstep, a batch of whole blocks at a time
(blocks cannot synchronise with each other, so their interleaving does not matter for a
kernel without races between blocks, which the race detector reports). A value is one
NumPy array with an entry per thread (a NumPy scalar when it is the same in every
thread); control flow keeps an active mask: ``if``/``else`` run each side with its
threads, loops whose bounds differ per thread run until the last thread is done, and
``break``/``continue``/``return`` retire threads until the end of the loop, iteration or
function. Memory is in :mod:`tirc.testing.simt_memory`: global memory is the caller's
arrays, shared memory one copy per block, local memory one per thread; value semantics
are :mod:`tirc.testing.evaluate`'s, vectorised in :mod:`tirc.testing.lanes`.

* Thread ids: the linear id is ``x + y * X + z * X * Y``; warps are 32 consecutive
  linear ids (the last one partial when the block is not a multiple of 32); a lane is
  the linear id modulo 32.
* ``T.tvm_storage_sync("shared")`` (``__syncthreads``) must be reached by every thread
  of a block that has not exited, or by none: otherwise :class:`DivergentBarrier`.
  ``T.tvm_storage_sync("warp")`` (``__syncwarp()``, full mask) likewise per warp
  (``Options.strict_warp_sync``).
* ``T.tvm_warp_shuffle``/``_up``/``_down``/``_xor(mask, value, lane, width, warp_size)``
  follow PTX ``shfl.sync`` (``idx``/``up``/``down``/``bfly``) as
  :mod:`tirc.backends.cuda.warp` emits it: ``c = (warp_size - width) << 8 | clamp``
  (clamp 0 for ``up``, 31 otherwise), a source lane outside the segment reads the
  thread's own value, a source lane that does not exist or does not execute the shuffle
  reads garbage (all bits set: NaN for floats). A thread whose lane is not in ``mask``,
  or a mask naming a live lane that does not execute the shuffle, is a
  :class:`ShuffleFault`. ``T.tvm_warp_activemask()`` is the set of executing lanes of
  the thread's warp.
* ``T.ptx_legacy.mma`` is one ``mma.sync`` per warp (:mod:`tirc.testing.simt_mma`: the
  f64, f16 and s8/u8 shapes TVM's tests use); ``T.ptx.add/sub/mul/max/min`` (.f32/.f64,
  round to nearest) store into their destination element; ``ldmatrix`` and ``cp.async``
  copy (:mod:`tirc.testing.simt_copy`); the WMMA builtins (``T.tvm_load_matrix_sync``,
  ...) are warp-wide too (:mod:`tirc.testing.simt_wmma`).
* Out-of-bounds accesses (:class:`OutOfBounds`) and data races (:class:`DataRace`, see
  :mod:`tirc.testing.simt_memory`) are errors naming the kernel, the buffer, the element
  and the threads. Memory never written reads as all bits set. A ``global``-scope
  allocation inside a kernel is per thread, as the NVPTX backend makes it (an ``alloca``).

All errors about the kernel's behaviour derive from :class:`KernelFault` (itself an
:class:`~tirc.testing.evaluate.Undefined`); constructs the interpreter does not know
raise :class:`~tirc.testing.evaluate.Unsupported`.
"""
from __future__ import annotations

from dataclasses import field

import numpy as np

from tirc.ir.attrs import (CallingConv, CALLING_CONV, TARGET, THREAD_EXTENT,
    USE_DYN_SHARED_MEMORY, VIRTUAL_THREAD, sized_launch_params)
from tirc.ir import ptx_ops, wmma_ops
from tirc.ir.buffer import WMMA_SCOPES
from tirc.ir.buffer import Buffer
from tirc.ir.expr import (BinOp, Broadcast, BufferLoad, Call, Cast, FloatImm, GlobalVar, IntImm,
                          Let, Not, PrimExpr, Ramp, Select, Shuffle, StringImm, Var)
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, Break, BufferStore, Continue,
                          DeclBuffer, Evaluate, For, IfThenElse, IterVar, LetStmt, Return, SeqStmt,
                          Stmt, While)
from tirc.ir.visitor import walk
from tirc.records import record
from tirc.testing import lanes, simt_subbyte
from tirc.testing.evaluate import Evaluator, Undefined, Unsupported, scalar, wrap
from tirc.testing.simt_memory import (DataRace, KernelFault, Memory, OutOfBounds, SparseMemory,
                                      Sync, Threads, View, check_load, check_store)

__all__ = ["DataRace", "DivergentBarrier", "KernelFault", "Launch", "LaunchConfig",
           "LaunchMismatch", "Options", "OutOfBounds", "ShuffleFault", "SimtRun", "launch",
           "lower", "run"]


class DivergentBarrier(KernelFault):
    pass


class ShuffleFault(KernelFault):
    pass


class LaunchMismatch(KernelFault):
    pass


@record(frozen=True)
class Options:
    check_races: bool = True  # report data races on global and shared memory
    strict_warp_sync: bool = True  # a warp barrier some live lanes of the warp skip is an error
    max_threads: int = 1 << 17  # threads run together (whole blocks; at least one block)
    dense_local_limit: int = 1 << 22  # elements over all threads; larger local buffers are sparse
    max_steps: int = 2_000_000  # statements executed per launch


@record(frozen=True)
class LaunchConfig:
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    dyn_shared: int | None = None  # bytes; None: what the kernel allocates

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def n_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def extent(self, tag: str) -> int:
        kind, _, dim = tag.partition(".")
        sizes = self.grid if kind == "blockIdx" else self.block
        return sizes["xyz".index(dim)]


@record(frozen=True)
class Launch:
    kernel: str
    config: LaunchConfig


@record
class SimtRun:
    value: object  # the host function's return value
    launches: list[Launch] = field(default_factory=list)


AXES = tuple(f"{k}.{d}" for k in ("blockIdx", "threadIdx") for d in "xyz")
_SHUFFLES = {"tvm_warp_shuffle": ("idx", 31), "tvm_warp_shuffle_up": ("up", 0),
             "tvm_warp_shuffle_down": ("down", 31), "tvm_warp_shuffle_xor": ("bfly", 31)}


# -- the public API ----------------------------------------------------------------------
def lower(source, target="cuda -arch=sm_80", host="llvm", filename: str = "<input>",
          pass_config=(), **pass_options) -> IRModule:
    """``source`` (TIR text or a module) through the pipeline: host functions as after
    ``VerifyMemory``, device functions as the backends receive them. ``pass_config``:
    TVM's pass options, as ``tirc build --pass-config``; ``pass_options``: the opt-in
    passes' :class:`PassContext` flags (``default_gpu_schedule=True``)."""
    from tirc.build.stages import split_module
    from tirc.build.options import bind_target_from
    from tirc.passes.pipeline import PassContext, pipeline
    if isinstance(source, str):
        from tirc.frontend.parse import parse
        source = parse(source, filename)
    from tirc.build.options import parse_pass_config
    ctx = PassContext(bind_target_from(target, host), config=parse_pass_config(pass_config),
                      **pass_options)
    passes = [p for p in pipeline(ctx.abi) if p.option is None or ctx.enabled(p.option)]
    cut = [p.name for p in passes].index("VerifyMemory") + 1
    mod = source
    for p in passes[:cut]:
        mod = p.run(mod, ctx)
    final = mod
    for p in passes[cut:]:
        final = p.run(final, ctx)
    funcs = dict(mod.functions)
    for dev in split_module(final)[1].values():
        funcs.update(dev.functions)
    return IRModule(funcs, mod.name, mod.span)


def run(source, func: str, args: list, target="cuda -arch=sm_80", host="llvm",
        options: Options = Options(), filename: str = "<input>", pass_config=()) -> SimtRun:
    """Build ``source`` (:func:`lower`; a module already lowered by it is taken as is when
    ``target`` is None) and run host function ``func`` on ``args`` (NumPy arrays are
    changed in place), every kernel launch on the interpreter."""
    mod = source if target is None else lower(source, target, host, filename, pass_config)
    h = _Host(mod, options)
    value = h.call(func, args)
    return SimtRun(value, h.launches)


def launch(func: PrimFunc, args: list, grid=None, block=None, dyn_shared: int | None = None,
           mod: IRModule | None = None, options: Options = Options(),
           name: str = "kernel") -> LaunchConfig:
    """Run ``func`` (a kernel, or a function whose body is one kernel region with its
    ``T.launch_thread`` scopes) on ``args``; grid and block sizes default to the extents of
    its ``T.launch_thread`` scopes. Returns the configuration run."""
    if grid is None or block is None:
        found = _scan_extents(func, args)
        grid = grid or tuple(found.get(f"blockIdx.{d}", 1) for d in "xyz")
        block = block or tuple(found.get(f"threadIdx.{d}", 1) for d in "xyz")
    cfg = LaunchConfig(tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block)),
                       dyn_shared)
    _Kernel(mod or IRModule({name: func}), func, name, cfg, args, options).run()
    return cfg


def _scan_extents(func: PrimFunc, args: list) -> dict[str, int]:
    env = {}
    for p, a in zip(func.params, args):
        if not p.dtype.is_handle and func.buffer_of(p) is None:
            env[id(p)] = scalar(a, p.dtype)
    ev = Evaluator(IRModule({}))
    found: dict[str, int] = {}
    for node in walk(func.body):
        if isinstance(node, AttrStmt) and node.key == THREAD_EXTENT and isinstance(node.node, IterVar):
            try:
                n = int(ev.expr(node.value, env, {}))
            except Unsupported:
                raise Unsupported(f"the extent of {node.node.thread_tag} is not known before "
                                  "the launch: give grid and block") from None
            found.setdefault(node.node.thread_tag, n)
    return found


class _Host(Evaluator):
    """Host code on the serial evaluator; ``T.call_ffi_kernel`` runs a kernel."""

    def __init__(self, mod: IRModule, options: Options):
        super().__init__(mod)
        self.options = options
        self.launches: list[Launch] = []

    def e_Call(self, e: Call, env, views):
        if e.op != "call_ffi_kernel":
            return super().e_Call(e, env, views)
        name = e.args[0].value
        kernel = self.mod[name]
        target = kernel.attrs.get(TARGET)
        if (kernel.attrs.get(CALLING_CONV) != CallingConv.DEVICE_KERNEL_LAUNCH or target is None
                or target.host is not None):
            raise LaunchMismatch(f"the host launches '{name}', which is not a device kernel "
                                 f"(calling_conv {kernel.attrs.get(CALLING_CONV)}, target "
                                 f"{target.describe() if target is not None else None})")
        n = len(kernel.params)
        kargs = [self.expr(a, env, views) for a in e.args[1:1 + n]]
        sizes = [int(self.expr(a, env, views)) for a in e.args[1 + n:]]
        # programmatic dependent and cooperative launches run as any other here: the
        # interpreter runs one launch at a time, to its end
        tags = sized_launch_params(dict(e.kwargs).get("launch_params", ()))
        grid, block, dyn = [1, 1, 1], [1, 1, 1], 0  # a launch gives no dynamic shared memory unless told
        for tag, size in zip(tags, sizes):
            if tag in AXES:
                kind, _, dim = tag.partition(".")
                (grid if kind == "blockIdx" else block)["xyz".index(dim)] = size
            elif tag == USE_DYN_SHARED_MEMORY:
                dyn = size
            else:
                raise Unsupported(f"launch parameter {tag}")
        cfg = LaunchConfig(tuple(grid), tuple(block), dyn)
        self.launches.append(Launch(name, cfg))
        _Kernel(self.mod, kernel, name, cfg, kargs, self.options).run()
        return np.int32(0)


class _Pointer:
    __slots__ = ("mem", "byte")

    def __init__(self, mem, byte: int = 0):
        self.mem, self.byte = mem, byte


class _Loop:
    __slots__ = ("broken",)

    def __init__(self, n: int):
        self.broken = np.zeros(n, bool)


def _where(node) -> str:
    span = getattr(node, "span", None)
    return f" at {span.file}:{span.line}" if span is not None else ""


# -- one kernel launch ---------------------------------------------------------------------
class _Kernel:
    def __init__(self, mod: IRModule, func: PrimFunc, name: str, cfg: LaunchConfig, args: list,
                 options: Options):
        if len(args) != len(func.params):
            raise ValueError(f"{name} takes {len(func.params)} arguments, not {len(args)}")
        self.mod, self.func, self.name, self.cfg, self.opts = mod, func, name, cfg, options
        self.T = cfg.threads_per_block
        self.sync = Sync(cfg.n_blocks, self.T)
        self.steps = 0
        self.compiled: dict[int, object] = {}
        self.stmt_fn = {SeqStmt: self.s_seq, BufferStore: self.s_store, LetStmt: self.s_let,
                        AttrStmt: self.s_attr, For: self.s_for, While: self.s_while,
                        IfThenElse: self.s_if, Evaluate: self.s_evaluate, AllocBuffer: self.s_alloc,
                        DeclBuffer: self.s_decl, AssertStmt: self.s_assert, Return: self.s_return,
                        Break: self.s_break, Continue: self.s_continue}
        self.expr_fn = {StringImm: lambda e: e.value, Not: self.e_not, Select: self.e_select,
                        BufferLoad: self.e_load, Ramp: self.e_ramp,
                        Broadcast: self.e_broadcast, Shuffle: self.e_shuffle, Let: self.e_let,
                        Call: self.e_call}
        self.env: dict[int, object] = {}
        self.fragment_shapes: dict[int, tuple[int, int, int]] = {}  # InferFragment's, by data var
        self.views: dict[int, View] = {}
        self._bind_params(args)
        self.param_env, self.param_views = dict(self.env), dict(self.views)

    def _bind_params(self, args: list) -> None:
        for p, a in zip(self.func.params, args):
            buf = self.func.buffer_of(p)
            if isinstance(a, np.ndarray):
                ptr = _Pointer(Memory.of_array(buf.name if buf is not None else p.name, a))
            elif isinstance(a, _Pointer):
                ptr = a
            else:
                ptr = None
            if buf is not None:
                if ptr is None:
                    raise TypeError(f"{self.name}: parameter {p.name} takes an array")
                if len(buf.shape) == np.ndim(a):
                    for e, n in zip(buf.shape, np.shape(a)):
                        if isinstance(e, Var) and id(e) not in self.env:
                            self.env[id(e)] = wrap(n, e.dtype)
                self.env[id(p)] = self.env[id(buf.data)] = ptr
                self.views[id(buf)] = self.view(buf, ptr)
            elif p.dtype.is_handle:
                if ptr is None:
                    raise TypeError(f"{self.name}: parameter {p.name} takes an array")
                self.env[id(p)] = ptr
            else:
                self.env[id(p)] = scalar(a, p.dtype)

    # -- the grid --------------------------------------------------------------------------
    def run(self) -> None:
        per = max(1, self.opts.max_threads // max(self.T, 1))
        with np.errstate(all="ignore"):
            for first in range(0, self.cfg.n_blocks, per):
                self._batch(first, min(self.cfg.n_blocks, first + per))

    def _batch(self, first: int, last: int) -> None:
        T, W = self.T, self.sync.W
        self.first, self.nblk = first, last - first
        n = self.n = self.nblk * T
        self.lin = np.arange(n, dtype=np.int64)
        self.block_local = self.lin // T
        linear = self.lin % T
        self.lane = linear % 32
        self.warp_local = self.block_local * W + linear // 32
        self.warp_starts = (np.arange(self.nblk)[:, None] * T + np.arange(W)[None, :] * 32).reshape(-1)
        self.warp_size = np.minimum(32, T - (linear // 32) * 32)
        self.gtid = first * T + self.lin
        gb = first + self.block_local
        self.threads = Threads(self.gtid, gb, first * W + self.warp_local)
        (gx, gy, _), (dx, dy, _) = self.cfg.grid, self.cfg.block
        self.axis = {"blockIdx.x": gb % gx, "blockIdx.y": (gb // gx) % gy, "blockIdx.z": gb // (gx * gy),
                     "threadIdx.x": linear % dx, "threadIdx.y": (linear // dx) % dy,
                     "threadIdx.z": linear // (dx * dy)}
        self.mask = np.ones(n, bool)
        self.dead = np.zeros(n, bool)  # threads that returned from the kernel
        self.left = self.dead  # threads that returned from the current function
        self.ret = None
        self.loops: list[_Loop] = []
        self.env, self.views = dict(self.param_env), dict(self.param_views)
        self.stmt(self.func.body)

    def who(self, t: int) -> str:
        blk, lin = divmod(t, self.T)
        (gx, gy, _), (dx, dy, _) = self.cfg.grid, self.cfg.block
        b = (blk % gx, (blk // gx) % gy, blk // (gx * gy))
        th = (lin % dx, (lin // dx) % dy, lin // (dx * dy))
        return f"thread {th} of block {b}"

    def _ctx(self, view: View, node) -> None:
        self.ctx = (view, node)

    def message(self, me: int, byte: int, text: str) -> str:
        view, node = self.ctx
        mem = view.mem
        elem = (byte % mem.nbytes) // view.itemsize - view.base
        return (f"{self.name}: data race on {mem.scope} buffer '{view.name}' element {elem}"
                f"{_where(node)}: {self.who(me)} {text}")

    # -- statements -------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        self.steps += 1
        if self.steps > self.opts.max_steps:
            raise Undefined(f"{self.name}: the kernel runs too long")
        fn = self.stmt_fn.get(type(s))
        if fn is None:
            raise Unsupported(type(s).__name__)
        fn(s)

    def s_seq(self, s: SeqStmt) -> None:
        for x in s.stmts:
            if not self.mask.any():
                return
            self.stmt(x)

    def s_let(self, s: LetStmt) -> None:
        self.env[id(s.var)] = self.expr(s.value)
        self.stmt(s.body)

    def s_attr(self, s: AttrStmt) -> None:
        if s.key == THREAD_EXTENT and isinstance(s.node, IterVar):
            tag = s.node.thread_tag
            if tag not in AXES:
                raise Unsupported(f"thread axis {tag}")
            extent, want = self.uniform(s.value, "a thread extent"), self.cfg.extent(tag)
            if extent != want:
                raise LaunchMismatch(f"{self.name}: launched with {tag} = {want}, but its "
                                     f"T.launch_thread(\"{tag}\", {extent}){_where(s)} says {extent}")
            self.env[id(s.node.var)] = self.axis[tag].astype(lanes.np_type(s.node.var.dtype))
        elif s.key == VIRTUAL_THREAD:
            raise Unsupported("virtual threads (InjectVirtualThread has not run)")
        elif s.key == "fragment_shape" and isinstance(s.value, StringImm):
            self.fragment_shapes[id(s.node)] = tuple(int(x) for x in s.value.value.split(","))
        self.stmt(s.body)

    def s_evaluate(self, s: Evaluate) -> None:
        self.expr(s.value)

    def s_assert(self, s: AssertStmt) -> None:
        c = self.expr(s.condition)
        if (self.mask & ~np.asarray(c, bool)).any():
            raise KernelFault(f"{self.name}: assertion fails{_where(s)}: {''.join(s.message)}")
        self.stmt(s.body)

    def s_if(self, s: IfThenElse) -> None:
        c = self.expr(s.condition)
        if np.ndim(c) == 0:
            if c:
                self.stmt(s.then_case)
            elif s.else_case is not None:
                self.stmt(s.else_case)
            return
        m = self.mask
        taken, other = m & c, m & ~c
        if taken.any():
            self.mask = taken
            self.stmt(s.then_case)
            taken = self.mask
        if s.else_case is not None and other.any():
            self.mask = other
            self.stmt(s.else_case)
            other = self.mask
        self.mask = taken | other

    def s_for(self, s: For) -> None:
        if s.kind == "thread_binding":
            raise Unsupported("thread-bound loops (LowerThreadBindings has not run)")
        lo, ext = self.expr(s.min), self.expr(s.extent)
        step = self.expr(s.step) if s.step is not None else 1
        d = s.loop_var.dtype
        entry = self.mask
        frame = _Loop(self.n)
        self.loops.append(frame)
        try:
            if np.ndim(lo) == 0 and np.ndim(ext) == 0 and np.ndim(step) == 0:
                for i in range(int(lo), int(lo) + int(ext), int(step)):
                    active = entry & ~self.left & ~frame.broken
                    if not active.any():
                        break
                    self.mask = active
                    self.env[id(s.loop_var)] = wrap(i, d)
                    self.stmt(s.body)
            else:
                t = lanes.np_type(d)
                lo_, ext_, step_ = (np.broadcast_to(np.asarray(x, np.int64), (self.n,))
                                    for x in (lo, ext, step))
                if (entry & (step_ <= 0)).any():
                    raise Unsupported("a per-thread loop step that is not positive")
                trips = -(-np.maximum(ext_, 0) // step_)
                n_iter = int(trips[entry].max()) if entry.any() else 0
                for k in range(n_iter):
                    active = entry & ~self.left & ~frame.broken & (k < trips)
                    if not active.any():
                        break
                    self.mask = active
                    self.env[id(s.loop_var)] = (lo_ + k * step_).astype(t)
                    self.stmt(s.body)
        finally:
            self.loops.pop()
        self.mask = entry & ~self.left

    def s_while(self, s: While) -> None:
        entry = self.mask
        frame = _Loop(self.n)
        self.loops.append(frame)
        try:
            while True:
                active = entry & ~self.left & ~frame.broken
                if not active.any():
                    break
                self.mask = active
                c = np.broadcast_to(np.asarray(self.expr(s.condition), bool), (self.n,))
                frame.broken |= active & ~c
                self.mask = active & c
                if not self.mask.any():
                    break
                self.steps += 1
                self.stmt(s.body)
        finally:
            self.loops.pop()
        self.mask = entry & ~self.left

    def s_break(self, s: Break) -> None:
        if not self.loops:
            raise Unsupported("break outside a loop")
        self.loops[-1].broken |= self.mask
        self.mask = np.zeros(self.n, bool)

    def s_continue(self, s: Continue) -> None:
        self.mask = np.zeros(self.n, bool)

    def s_return(self, s: Return) -> None:
        v = self.expr(s.value)
        if self.ret is not None:  # a device function: the value per thread
            self.ret = np.where(self.mask, v, self.ret)
        else:
            self.dead |= self.mask
        self.left |= self.mask
        self.mask = np.zeros(self.n, bool)

    def s_decl(self, s: DeclBuffer) -> None:
        ptr = self.env.get(id(s.buffer.data))
        if not isinstance(ptr, _Pointer):
            raise Unsupported(f"decl_buffer over unknown data {s.buffer.data.name}")
        self.views[id(s.buffer)] = self.view(s.buffer, ptr)
        self.stmt(s.body)

    def s_alloc(self, s: AllocBuffer) -> None:
        b = s.buffer
        count = 1
        for e in b.shape:
            count *= self.uniform(e, "an allocation size")
        t = lanes.np_type(b.dtype)
        elems = count * b.dtype.lanes
        nbytes = elems * np.dtype(t).itemsize
        if b.dtype.is_subbyte:  # packed, and never sparse (simt_subbyte reads bytes)
            nbytes = (elems * b.dtype.bits + 7) // 8
        if b.scope in ("shared", "shared.dyn"):
            if b.scope == "shared.dyn" and self.cfg.dyn_shared is not None:
                if nbytes > self.cfg.dyn_shared:
                    raise LaunchMismatch(f"{self.name}: allocates {nbytes} bytes of dynamic shared "
                                         f"memory ('{b.name}'{_where(s)}) but is launched with "
                                         f"{self.cfg.dyn_shared}")
                nbytes = self.cfg.dyn_shared
            mem = Memory.fresh(b.name, "shared", self.nblk, nbytes, self.block_local)
        elif b.scope in ("local", "global") or b.scope in WMMA_SCOPES:
            # a global allocation in a kernel is per thread too; WMMA fragments are (simt_wmma)
            if (self.n * elems > self.opts.dense_local_limit and not b.dtype.is_subbyte
                    and b.scope not in WMMA_SCOPES):
                mem = SparseMemory(b.name, t, elems)
            else:
                mem = Memory.fresh(b.name, "local", self.n, nbytes, self.lin)
        else:
            raise Unsupported(f"allocation in scope '{b.scope}'")
        ptr = _Pointer(mem)
        self.env[id(b.data)] = ptr
        self.views[id(b)] = self.view(b, ptr)
        self.stmt(s.body)

    def view(self, buf: Buffer, ptr: _Pointer) -> View:
        t = lanes.np_type(buf.dtype)
        shape = [self.uniform(e, "a buffer shape") for e in buf.shape]
        if buf.strides:
            strides = [self.uniform(e, "a buffer stride") for e in buf.strides]
        else:
            strides, n = [], 1
            for x in reversed(shape):
                strides.insert(0, n)
                n *= x
        vec = buf.dtype.lanes
        offset = self.uniform(buf.elem_offset, "a buffer offset") if buf.elem_offset is not None else 0
        if buf.dtype.is_subbyte:  # packed: base counts elements, the memory is bytes
            sub = buf.dtype.element()
            return View(buf.name, ptr.mem, t, ptr.byte * sub.packs + offset * vec, shape, strides,
                        vec, sub)
        itemsize = np.dtype(t).itemsize
        if isinstance(ptr.mem, SparseMemory) and (ptr.mem.t != t or ptr.byte):
            raise Unsupported(f"{buf.name}: another view of the large local buffer {ptr.mem.name}")
        if ptr.byte % itemsize:
            raise Unsupported(f"{buf.name}: misaligned view of {ptr.mem.name}")
        return View(buf.name, ptr.mem, t, ptr.byte // itemsize + offset * vec, shape, strides, vec)

    def uniform(self, e: PrimExpr, what: str) -> int:
        v = self.expr(e)
        if np.ndim(v) != 0:
            vals = np.unique(np.asarray(v)[self.mask])
            if len(vals) != 1:
                raise Unsupported(f"{what} that differs between threads")
            v = vals[0]
        return int(v)

    # -- memory ----------------------------------------------------------------------------
    def address(self, view: View, indices, node, what: str):
        """The elements of ``view`` the active threads access, in elements of the view's
        dtype from the start of each thread's copy of the memory. An index of a flat buffer
        is checked against the memory, not the buffer's declared extent: TVM's
        MergeSharedMemoryAllocations declares each merged buffer with its own extent and
        adds its offset to the index."""
        idx = [self.expr(i) for i in indices]
        if len(idx) != len(view.shape):
            raise Unsupported(f"{len(idx)} indices into {view.name}")
        if len(idx) == 1:
            elem = np.asarray(idx[0], np.int64)
            bad = False
        else:
            elem, bad = np.int64(0), False
            for i, n, st in zip(idx, view.shape, view.strides):
                i = np.asarray(i, np.int64)
                bad = bad | (i < 0) | (i >= n)
                elem = elem + i * st
        if view.vec > 1:
            elem = elem[..., None] * view.vec + np.arange(view.vec)
            bad = np.broadcast_to(np.asarray(bad)[..., None], elem.shape)
        pos = view.base + elem
        if view.vec > 1 and np.ndim(pos) == 1:
            pos = pos[None, :]  # one vector element, the same in every thread: (1, lanes)
        limit = view.mem.count if isinstance(view.mem, SparseMemory) else view.mem.row_len(view.itemsize)
        if view.sub is not None:
            limit = view.mem.row_len(1) * view.sub.packs
        bad = bad | (pos < 0) | (pos >= limit)
        if np.any(bad):
            per_lane = np.ndim(bad) > 0 and np.shape(bad)[0] == self.n
            rows = np.broadcast_to(bad, (self.n,) + np.shape(bad)[1:]) if not per_lane else bad
            hit = (rows if rows.ndim == 1 else rows.any(axis=1)) & self.mask
            if hit.any():
                lane = int(np.flatnonzero(hit)[0])
                els = np.broadcast_to(elem, rows.shape)[lane]
                e = int(els[np.flatnonzero(rows[lane])[0]] // view.vec) if rows.ndim == 2 else int(els)
                raise OutOfBounds(f"{self.name}: out-of-bounds {what} of {view.mem.scope} buffer "
                                  f"'{view.name}'{_where(node)}: element {e} (the buffer has "
                                  f"{view.size}, its memory {(limit - view.base) // view.vec}) by "
                                  f"{self.who(int(self.gtid[lane]))}")
        return pos

    def _lanes_of(self, shape) -> np.ndarray:
        """Active thread indices, repeated over a vector's lanes (shape ``(n, L)``)."""
        act = np.flatnonzero(self.mask)
        return act if len(shape) == 1 else np.repeat(act, shape[1])

    def e_load(self, e: BufferLoad):
        view = self.views.get(id(e.buffer))
        if view is None:
            raise Unsupported(f"load of unknown buffer {e.buffer.name}")
        pos = self.address(view, e.indices, e, "load")
        if view.sub is not None:
            return simt_subbyte.load(self, view, pos, e, view.t)
        mem = view.mem
        if isinstance(mem, SparseMemory):
            keys = (self.lin if pos.ndim == 1 or pos.ndim == 0 else self.lin[:, None]) * mem.count + pos
            return mem.gather(keys)
        base = mem.lane_base(view.itemsize)
        typed = mem.typed(view.t)
        if np.ndim(base) == 0 and (pos.ndim == 0 or pos.shape[0] == 1):
            flat = base + pos  # the same element for every thread
            if mem.shadow is not None and self.opts.check_races:
                shape = (self.n,) + np.shape(flat)[1:]
                act = self._lanes_of(shape)
                byte = np.broadcast_to(flat, shape)[self.mask].reshape(-1) * view.itemsize
                self._ctx(view, e)
                check_load(mem, self.sync, byte, self.threads[act], self)
            if pos.ndim == 0:
                return typed[flat][()]
            return typed[flat][0] if view.vec > 1 and pos.ndim == 2 and pos.shape[0] == 1 else typed[flat]
        flat = (base[:, None] if np.ndim(base) and pos.ndim == 2 else base) + pos
        if flat.shape[0] != self.n:
            flat = np.broadcast_to(flat, (self.n,) + flat.shape[1:])
        full = self.mask.all()
        if not full:
            flat = np.where(self.mask if flat.ndim == 1 else self.mask[:, None], flat, 0)
        if self.opts.check_races and mem.scope != "local" and (mem.scope == "shared" or mem.shadow is not None):
            self._ctx(view, e)
            act = self._lanes_of(flat.shape)
            check_load(mem, self.sync, flat[self.mask].reshape(-1) * view.itemsize, self.threads[act],
                       self)
        return typed[flat]

    def s_store(self, s: BufferStore) -> None:
        self.store(s.buffer, s.indices, s, lambda: self.expr(s.value))

    def store(self, buffer: Buffer, indices, s, value_of) -> None:
        """Store ``value_of()`` (computed after the address is checked) at ``indices``
        of ``buffer``; ``s`` is the node that stores (for messages)."""
        view = self.views.get(id(buffer))
        if view is None:
            raise Unsupported(f"store to unknown buffer {buffer.name}")
        pos = self.address(view, indices, s, "store")
        value = value_of()
        if view.sub is not None:
            return simt_subbyte.store(self, view, pos, value, s)
        mem = view.mem
        shape = (self.n,) + np.shape(pos)[1:] if np.ndim(pos) else (self.n,)
        pos = np.broadcast_to(pos, shape)
        vals = np.broadcast_to(np.asarray(value, dtype=view.t), shape)
        m = self.mask
        if isinstance(mem, SparseMemory):
            keys = (self.lin if len(shape) == 1 else self.lin[:, None]) * mem.count + pos
            mem.scatter(keys[m].reshape(-1), vals[m].reshape(-1))
            return
        base = mem.lane_base(view.itemsize)
        flat = ((base if np.ndim(base) == 0 or len(shape) == 1 else base[:, None]) + pos)[m].reshape(-1)
        new = vals[m].reshape(-1)
        typed = mem.typed(view.t)
        if self.opts.check_races and mem.scope != "local":
            self._ctx(view, s)
            check_store(mem, self.sync, flat * view.itemsize, self.threads[self._lanes_of(shape)],
                        typed[flat], new, self)
        typed[flat] = new

    # -- barriers and warps ------------------------------------------------------------------
    def barrier(self, scope: str, node) -> None:
        m, alive = self.mask, ~self.dead
        if scope in ("shared", "shared.dyn", "global"):
            act = m.reshape(self.nblk, self.T).sum(axis=1)
            live = alive.reshape(self.nblk, self.T).sum(axis=1)
            self._divergence(act, live, self.T, "block", "T.tvm_storage_sync(\"shared\")", node)
            reached = np.flatnonzero(act > 0)
            self.sync.bar[self.first + reached] += 1
            W = self.sync.W
            warps = (reached[:, None] * W + np.arange(W)[None, :]).reshape(-1)
            self.sync.wbar[self.first * W + warps] += 1
        elif scope == "warp":
            act = np.add.reduceat(m.astype(np.int64), self.warp_starts)
            live = np.add.reduceat(alive.astype(np.int64), self.warp_starts)
            if self.opts.strict_warp_sync:
                self._divergence(act, live, None, "warp", "T.tvm_storage_sync(\"warp\")", node)
            self.sync.wbar[self.first * self.sync.W + np.flatnonzero(act > 0)] += 1
        else:
            raise Unsupported(f"T.tvm_storage_sync(\"{scope}\")")

    def _divergence(self, act, live, size, unit: str, what: str, node) -> None:
        bad = np.flatnonzero((act > 0) & (act != live))
        if not len(bad):
            return
        g = int(bad[0])
        members = np.flatnonzero(self.block_local == g) if unit == "block" else \
            np.flatnonzero(self.warp_local == g)
        at = members[self.mask[members]][0]
        missing = members[~self.mask[members] & ~self.dead[members]][0]
        raise DivergentBarrier(f"{self.name}: {what}{_where(node)} is reached by only some threads "
                               f"of a {unit}: {self.who(int(self.gtid[at]))} reaches it, "
                               f"{self.who(int(self.gtid[missing]))} does not")

    def activemask(self) -> np.ndarray:
        bits = np.where(self.mask, np.left_shift(np.uint32(1), self.lane.astype(np.uint32)),
                        np.uint32(0)).astype(np.uint32)
        return np.bitwise_or.reduceat(bits, self.warp_starts)[self.warp_local]

    def shuffle(self, e: Call, mode: str, clamp: int):
        mask_v, value, b, width, wsize = (self.expr(a) for a in e.args)
        if e.dtype.lanes != 1:
            raise Unsupported(f"T.{e.op} of a vector")
        m = self.mask
        lane = self.lane
        mask32 = np.broadcast_to(np.asarray(mask_v).astype(np.int64) & 0xFFFFFFFF, (self.n,))
        named = ((mask32 >> lane) & 1) == 1
        if (m & ~named).any():
            t = int(np.flatnonzero(m & ~named)[0])
            raise ShuffleFault(f"{self.name}: T.{e.op}{_where(e)}: the mask {int(mask32[t]):#010x} "
                               f"does not name the lane of {self.who(int(self.gtid[t]))}, which executes it")
        executing = self.activemask().astype(np.int64)
        live_bits = np.bitwise_or.reduceat(
            np.where(~self.dead, np.left_shift(np.int64(1), lane), 0), self.warp_starts)[self.warp_local]
        absent = m & ((mask32 & live_bits & ~executing) != 0)
        if absent.any():
            t = int(np.flatnonzero(absent)[0])
            x = int(mask32[t] & live_bits[t] & ~executing[t])
            gone = x & -x
            raise ShuffleFault(f"{self.name}: T.{e.op}{_where(e)}: the mask {int(mask32[t]):#010x} of "
                               f"{self.who(int(self.gtid[t]))} names lane {gone.bit_length() - 1}, "
                               "which does not execute the shuffle")
        seg = (np.asarray(wsize).astype(np.int64) - np.asarray(width).astype(np.int64)) & 0x1F
        max_lane = (lane & seg) | (clamp & ~seg & 0x1F)
        bval = np.asarray(b).astype(np.int64) & 0x1F
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = (lane & seg) | (bval & ~seg & 0x1F)
            ok = j <= max_lane
        j = np.where(ok, j, lane)
        src = self.lin - lane + j
        exists = j < self.warp_size
        src = np.where(exists, src, self.lin)
        defined = exists & m[src]
        v = np.broadcast_to(np.asarray(value), (self.n,))
        return np.where(defined, v[src], lanes.garbage(e.dtype)).astype(lanes.np_type(e.dtype))

    # -- expressions ------------------------------------------------------------------------
    def expr(self, e: PrimExpr):
        f = self.compiled.get(id(e))
        if f is None:
            f = self.compile(e)
        try:
            return f()
        except KeyError as err:
            raise Unsupported(f"unbound variable (node {err})") from None

    def compile(self, e: PrimExpr):
        """``e`` as a function of no arguments (reading the current threads' variables),
        once per node: constants are computed once, arithmetic calls NumPy directly."""
        if isinstance(e, (IntImm, FloatImm)):
            c = wrap(e.value, e.dtype) if isinstance(e, IntImm) else lanes.np_type(e.dtype)(e.value)
            f = lambda: c  # noqa: E731
        elif isinstance(e, Var):
            key = id(e)
            f = lambda: self.env[key]  # noqa: E731
        elif isinstance(e, BinOp):
            fa, fb = self._compiled(e.a), self._compiled(e.b)
            op = lanes.binop_fn(e.op, e.a.dtype, e.dtype)
            f = lambda: op(fa(), fb())  # noqa: E731
        elif isinstance(e, Cast):
            fv, src, dst = self._compiled(e.value), e.value.dtype, e.dtype
            f = lambda: lanes.convert(fv(), src, dst)  # noqa: E731
        else:
            method = self.expr_fn.get(type(e))
            if method is None:
                raise Unsupported(type(e).__name__)
            f = lambda: method(e)  # noqa: E731
        self.compiled[id(e)] = f
        return f

    def _compiled(self, e: PrimExpr):
        return self.compiled.get(id(e)) or self.compile(e)

    def e_not(self, e: Not):
        return lanes.as_value(np.logical_not(self.expr(e.a)), np.bool_)

    def e_select(self, e: Select):
        c, a, b = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        if np.ndim(c) == 0:
            return a if c else b
        return np.where(c, a, b).astype(lanes.np_type(e.dtype))

    def e_let(self, e: Let):
        self.env[id(e.var)] = self.expr(e.value)
        return self.expr(e.body)

    def e_ramp(self, e: Ramp):
        t = lanes.np_type(e.dtype)
        base = np.asarray(self.expr(e.base), t).reshape(-1, 1)
        steps = np.multiply(self.expr(e.stride), np.arange(e.lanes), dtype=t)
        return np.add(base, steps, dtype=t)

    def e_broadcast(self, e: Broadcast):
        v = np.asarray(self.expr(e.value)).reshape(-1, 1)
        return np.broadcast_to(v, (v.shape[0], e.lanes))

    def e_shuffle(self, e: Shuffle):
        vs = [np.asarray(self.expr(v)) for v in e.vectors]
        vs = [v.reshape(-1, 1) if v.ndim < 2 else v for v in vs]
        rows = max(v.shape[0] for v in vs)
        cat = np.concatenate([np.broadcast_to(v, (rows, v.shape[1])) for v in vs], axis=1)
        idx = [self.uniform(i, "a shuffle index") for i in e.indices]
        out = cat[:, idx]
        return out[:, 0] if e.dtype.lanes == 1 and rows == self.n else (out[0, 0] if e.dtype.lanes == 1 else out)

    def e_call(self, e: Call):
        if isinstance(e.op, GlobalVar):
            return self.call_device(e)
        name, d = e.op, e.dtype
        if name == "if_then_else":
            c = self.expr(e.args[0])
            if np.ndim(c) == 0:
                return self.expr(e.args[1] if c else e.args[2])
            m = self.mask
            out = []
            for sel, arg in ((m & c, e.args[1]), (m & ~c, e.args[2])):
                if sel.any():
                    self.mask = sel
                    out.append(self.expr(arg))
                else:
                    out.append(lanes.garbage(d))
            self.mask = m
            cc = c if d.lanes == 1 else np.asarray(c)[..., None]
            return np.where(cc, out[0], out[1]).astype(lanes.np_type(d))
        if name in ("likely", "tvm_thread_invariant"):
            return self.expr(e.args[0])
        if name == "tvm_storage_sync":
            self.barrier(self.expr(e.args[0]), e)
            return np.int32(0)
        if name == "tvm_warp_activemask":
            return self.activemask()
        if name in _SHUFFLES:
            return self.shuffle(e, *_SHUFFLES[name])
        if name == "address_of" and isinstance(e.args[0], BufferLoad):
            return self.address_of(e.args[0])
        if name in wmma_ops.SIGNATURES:
            from tirc.testing import simt_wmma
            simt_wmma.run(self, e, self.fragment_shapes)
            return np.int32(0)
        if name == "ptx_legacy.mma":
            from tirc.testing.simt_mma import mma
            mma(self, e)
            return np.int32(0)
        if name in (ptx_ops.LDMATRIX, ptx_ops.CP_ASYNC, ptx_ops.CP, ptx_ops.LDG32):
            from tirc.testing import simt_copy
            simt_copy.run(self, e)
            return np.int32(0)
        if name in ptx_ops.FLOAT_OPS:
            self.ptx_float_op(e)
            return np.int32(0)
        args = [self.expr(a) for a in e.args]
        t = lanes.np_type(d)
        if name == "reinterpret":
            return lanes.as_value(np.asarray(args[-1]).view(t), t)
        if name == "abs":
            return lanes.as_value(np.fabs(args[0]) if d.is_float else np.abs(args[0]), t)
        if name in ("isnan", "isinf", "isfinite"):
            if not e.args[0].dtype.is_float:
                return lanes.as_value(np.full(np.shape(args[0]), name == "isfinite"), np.bool_)
            return lanes.as_value(getattr(np, name)(args[0]), np.bool_)
        if name == "bitwise_not":
            return lanes.as_value(np.invert(args[0]), t)
        if name == "popcount":
            if hasattr(np, "bitwise_count"):  # NumPy 2
                return lanes.as_value(np.bitwise_count(args[0]), t)
            return lanes.per_element(lambda x: wrap(bin(int(x) & ((1 << d.bits) - 1)).count("1"), d),
                                     args, d)
        if name == "clz":
            return lanes.per_element(lambda x: wrap(d.bits - (int(x) & ((1 << d.bits) - 1)).bit_length(), d),
                                     args, d)
        if d.is_float:
            return lanes.math(name, args, d)
        raise Unsupported(f"T.{name}")

    def address_of(self, ld: BufferLoad) -> _Pointer:
        """``T.address_of(buf[i])``: a pointer to the element (what the PTX and WMMA
        calls take, after MergeSharedMemoryAllocations put their buffers in one)."""
        view = self.views.get(id(ld.buffer))
        if view is None or view.sub is not None or isinstance(view.mem, SparseMemory):
            raise Unsupported(f"T.address_of of buffer {ld.buffer.name}")
        pos = np.asarray(self.address(view, ld.indices, ld, "load"), np.int64)
        if pos.ndim > 1:
            raise Unsupported("T.address_of of a vector element")
        return _Pointer(view.mem, pos * view.itemsize)

    def ptx_float_op(self, e: Call) -> None:
        """``T.ptx.add/sub/mul/max/min`` of .f32/.f64, rounded to nearest (the default and
        ``.rn``): NumPy's IEEE operations; ``max``/``min`` return the other operand of a
        NaN as PTX's do without ``.NaN``."""
        d = ptx_ops.decode(e)
        name, *mods = d.opcode.split(".")
        if any(m not in ("rn", d.dtype) for m in mods):
            raise Unsupported(f"{d.opcode} in the SIMT interpreter")
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.fmax, "min": np.fmin}[name]
        t = lanes.np_type(d.dest.dtype)
        self.store(d.dest.buffer, d.dest.indices, e,
                   lambda: fn(np.asarray(self.expr(d.a), t), np.asarray(self.expr(d.b), t)))

    def call_device(self, e: Call):
        callee = self.mod[e.op.name]
        env, views = {}, {}
        for p, a in zip(callee.params, e.args):
            buf = callee.buffer_of(p)
            if isinstance(a, Buffer):
                v = self.views[id(a)]
                ptr = _Pointer(v.mem, v.base * v.itemsize)
            else:
                ptr = self.expr(a)
            env[id(p)] = ptr
            if buf is not None:
                env[id(buf.data)] = ptr
        saved = (self.env, self.views, self.left, self.ret, self.loops, self.mask)
        self.env, self.views, self.loops = env, views, []
        for p in callee.params:
            buf = callee.buffer_of(p)
            if buf is not None:
                self.views[id(buf)] = self.view(buf, env[id(p)])
        self.left = np.zeros(self.n, bool)
        self.ret = np.broadcast_to(lanes.garbage(e.dtype), (self.n,)).copy()
        try:
            self.stmt(callee.body)
            return self.ret
        finally:
            self.env, self.views, self.left, self.ret, self.loops, self.mask = saved
