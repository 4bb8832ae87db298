"""The pass manager: one ordered list of named passes (docs/pipeline.md), instruments that run
before and after each pass (print-after, verify-each, timing), and early stops.

Each pass declares the passes it requires to have run before it; a test checks the
order of the list against those declarations.
"""
from __future__ import annotations

import time
from dataclasses import field, replace
from typing import Callable, ClassVar

from tirc.diagnostics import Diagnostic, internal_errors
from tirc.ir.function import IRModule
from tirc.passes.pass_context import PassContext
from tirc.records import record


@record(frozen=True)
class Pass:
    name: str
    run: Callable[[IRModule, PassContext], IRModule]
    doc: str
    requires: tuple[str, ...] = ()
    # a block-lowering pass: the identity on a module without schedulable (block-level)
    # functions, so the pipeline does not run (or even import) it there
    blocks_only: bool = False
    phase: str = "prepare"  # its folder under tirc/passes/ (PHASES)
    # the features (tirc.passes.analysis.features) it acts on: on a module with none of
    # them the pass is the identity, so the pipeline does not run (or import) it; ()
    # for a pass that always runs
    needs: tuple[str, ...] = ()
    # what turns on a pass the pipeline runs only when asked: a PassContext flag
    # (``default_gpu_schedule``, an opt-in pass of tirc's) or one of TVM's pass options
    # (``--pass-config tirx.use_async_copy=1``, as TVM's pipeline adds the pass only when
    # it is set); None: always run
    option: str | None = None

    def skip_reason(self) -> str:
        """Why the pipeline did not run this pass (for ``--print-after``)."""
        if self.option is not None and "." not in self.option:  # a PassContext flag
            return f"opt-in, not asked for ({self.option})"
        if self.blocks_only:
            return "no block-level functions"
        reasons = [f"pass option {self.option} not set"] if self.option is not None else []
        if self.needs:
            reasons.append(f"nothing it acts on (no {', '.join(self.needs)})")
        return ", or ".join(reasons)


# The phases of the pipeline, in order: each is a folder of tirc/passes/ holding its passes
# (tirc/passes/analysis/ holds the analyses they share).
PHASES: tuple[tuple[str, str], ...] = (
    ("prepare", "check the module and bind targets"),
    ("blocks", "block-level TIR to loops and allocations"),
    ("lower", "lowering within each function"),
    ("split", "host/device split and kernel launches"),
    ("abi", "the host ABI of public functions"),
    ("legalize", "storage of narrow float types"),
    ("device", "device code as its code generator takes it"),
)


def has_blocks(mod: IRModule) -> bool:
    """Whether some function of ``mod`` is schedulable TIR (``s_tir`` or with blocks)."""
    from tirc.ir.visitor import contains_blocks
    return any(f.s_tir or contains_blocks(f.body) for f in mod.functions.values())


class Instrument:
    """Hooks around every pass; the stock instruments below are built on them."""

    def before(self, p: Pass, mod: IRModule) -> None:
        pass

    def after(self, p: Pass, mod: IRModule) -> None:
        pass

    def skipped(self, p: Pass, mod: IRModule) -> None:
        """``p`` did not run: the module has nothing it acts on (``p.skip_reason()``)."""


@record
class PrintAfter(Instrument):
    names: set[str]
    emit: Callable[[str], None]

    def after(self, p: Pass, mod: IRModule) -> None:
        if p.name in self.names:
            from tirc.ir.printer import print_module
            self.emit(f"# after {p.name}\n{print_module(mod)}")

    def skipped(self, p: Pass, mod: IRModule) -> None:
        if p.name in self.names:
            self.emit(f"# skipped {p.name}: {p.skip_reason()}\n")


class VerifyEach(Instrument):
    def after(self, p: Pass, mod: IRModule) -> None:
        from tirc.passes.prepare.verify import verify
        try:
            verify(mod)
        except Diagnostic as d:
            raise Diagnostic(f"the module is malformed after {p.name}: {d.message}", d.span) from d


@record
class DumpIR(Instrument):
    """``--dump-ir DIR``: the module as written and after every pass, one file each
    (``DIR/NAME.00-input.tir``, ``DIR/NAME.01-Verify.tir``, ...), what a bug report
    needs: after an internal error in a pass, the last file is its input."""

    directory: str
    name: str
    count: int = 0

    def before(self, p: Pass, mod: IRModule) -> None:
        if self.count == 0:
            self._write("input", mod)

    def after(self, p: Pass, mod: IRModule) -> None:
        self._write(p.name, mod)

    def _write(self, label: str, mod: IRModule) -> None:
        import os

        from tirc.ir.printer import print_module
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"{self.name}.{self.count:02d}-{label}.tir")
        with open(path, "w", encoding="utf-8") as f:
            f.write(print_module(mod))
        self.count += 1


@record
class TimePasses(Instrument):
    times: list[tuple[str, float]] = field(default_factory=list)
    _start: float = 0.0
    # wall time; a benchmark on a shared machine may take the process's CPU time instead
    clock: ClassVar[Callable[[], float]] = time.perf_counter

    def before(self, p: Pass, mod: IRModule) -> None:
        self._start = TimePasses.clock()

    def after(self, p: Pass, mod: IRModule) -> None:
        self.times.append((p.name, TimePasses.clock() - self._start))

    def report(self) -> str:
        return timing_report("pass timings", self.times)


def timing_report(title: str, times: list[tuple[str, float]]) -> str:
    """``times`` (name, seconds) as ``--time-passes`` prints them, with their total."""
    total = sum(t for _, t in times)
    rows = [f"  {t * 1000:9.3f} ms  {name}" for name, t in times]
    return f"{title}:\n" + "\n".join(rows) + f"\n  {total * 1000:9.3f} ms  total"


def _verify(mod: IRModule, ctx: PassContext) -> IRModule:
    from tirc.passes.prepare.verify import verify
    return verify(mod)


def _bind_target(mod: IRModule, ctx: PassContext) -> IRModule:
    from tirc.passes.prepare.bind_target import bind_target
    return bind_target(mod, ctx.target)


def _lazy(module: str, function: str) -> Callable[[IRModule, PassContext], IRModule]:
    """The pass function ``tirc.passes.<phase>.<module>.<function>`` (``module``:
    ``phase.module``), imported when first run."""
    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        import importlib
        return getattr(importlib.import_module(f"tirc.passes.{module}"), function)(mod, ctx)
    return run


def _pass(name: str, module: str, doc: str, requires: tuple[str, ...] = (),
          blocks_only: bool = False, needs: tuple[str, ...] = (),
          option: str | None = None) -> Pass:
    """The pass ``name`` run by the function of the same name as its module
    (``"lower.flatten_buffer"``: ``tirc.passes.lower.flatten_buffer.flatten_buffer``)."""
    phase, _, function = module.partition(".")
    return Pass(name, _lazy(module, function), doc, requires, blocks_only, phase, needs, option)


def _block_pass(name: str, module: str, doc: str, requires: tuple[str, ...] = ()) -> Pass:
    return _pass(name, module, doc, requires, blocks_only=True)


PIPELINE: list[Pass] = [
    Pass("Verify", _verify, "well-formedness: definitions before use, dtypes, calls"),
    _pass("InferBlockRegions", "prepare.infer_block_regions",
          "the T.reads/T.writes a block's text leaves out, inferred as TVM's parser does",
          ("Verify",), needs=("block",)),
    Pass("BindTarget", _bind_target, "give every function a target; duplicate host-and-device helpers",
         requires=("InferBlockRegions",)),
    # Opt-in (TVM runs it before its TIR pipeline, in Relax's default GPU build).
    _pass("DefaultGPUSchedule", "blocks.default_gpu_schedule",
          "opt-in: the loops of an unscheduled GPU function bound to blocks and threads",
          ("BindTarget",), blocks_only=True, option="default_gpu_schedule"),
    # Block lowering (TVM 0.27's S-TIR order); a module without blocks passes unchanged.
    _pass("CanonicalizeLoop", "blocks.canonicalize_loop",
          "loops start at 0 with step 1", ("BindTarget",)),
    _block_pass("LowerCrossThreadReduction", "blocks.lower_cross_thread_reduction",
          "reductions across threads become T.tvm_thread_allreduce between per-thread "
          "partial results and a write-back",
          ("BindTarget",)),
    _block_pass("LowerInitBlock", "blocks.lower_init_block",
          "a block's T.init() runs at the first step of its reduction",
          ("LowerCrossThreadReduction",)),
    _block_pass("PlanAndUpdateBufferAllocationLocation", "blocks.plan_and_update_buffer_allocation_location",
                "block allocations move to the lowest common ancestor of their accesses",
                ("LowerInitBlock",)),
    _block_pass("ConvertBlocksToOpaque", "blocks.convert_blocks_to_opaque",
          "block iterators replaced by their bindings", ("LowerInitBlock",)),
    _block_pass("LiftThreadBinding", "blocks.lift_thread_binding",
          "in a kernel, the loops of one thread tag become one loop at their common ancestor",
          ("ConvertBlocksToOpaque",)),
    _pass("ManifestSharedMemoryLocalStage", "blocks.manifest_shared_memory_local_stage",
          "copies into shared memory annotated for it go through a local (register) stage",
          ("LiftThreadBinding",), needs=("block.tirx.manifest_shared_memory_local_stage",)),
    _block_pass("CompactBufferAllocation", "blocks.compact_buffer_allocation",
          "allocated buffers shrink to the region their code touches",
          ("ConvertBlocksToOpaque", "ManifestSharedMemoryLocalStage")),
    _pass("LowerAutoCopy", "blocks.lower_auto_copy",
          "blocks annotated auto_copy become coalesced, vectorized, thread-bound copies (WMMA "
          "and mma fragments through tile loads and stores), shared buffers padded", ("CompactBufferAllocation",),
          needs=("block.auto_copy",)),
    _block_pass("UnifyThreadBinding", "blocks.unify_thread_binding",
          "each kernel binds every thread tag once, in a loop at its top",
          ("LiftThreadBinding",)),
    _block_pass("LowerMatchBuffer", "blocks.lower_match_buffer",
          "accesses of a block's matched buffers become accesses of their sources",
          ("CompactBufferAllocation",)),
    _pass("InjectPermutedLayout", "blocks.inject_permuted_layout",
          "in blocks annotated permuted_layout, shared-memory accesses (and ldmatrix) use a "
          "bank-conflict-free permutation of 8-element chunks",
          ("LowerMatchBuffer",), needs=("block.permuted_layout",)),
    _pass("AnnotateIrregularLoop", "blocks.annotate_irregular_loop",
          "loops that break or continue are marked irregular, so no pass drops or reshapes "
          "them", ("LowerMatchBuffer",), needs=("loop.jump",)),
    _pass("InjectSoftwarePipeline", "blocks.inject_software_pipeline",
          "loops annotated software_pipeline_stage/order become prologue, body and epilogue "
          "with multi-versioned buffers (async stages in commit and wait queues)",
          ("LowerMatchBuffer",), needs=("loop.software_pipeline",)),
    _pass("TransformMmaBufferLayout", "blocks.transform_mma_buffer_layout",
          "m16n8k8.matrixA/B/C buffers become each thread's local part of the matrix",
          ("LowerMatchBuffer", "InjectSoftwarePipeline"),
          needs=tuple(f"block.alloc.m16n8k8.matrix{m}" for m in "ABC")),
    _pass("LowerOpaqueBlock", "blocks.lower_opaque_block",
          "blocks become allocations and ifs; loop pragmas become attributes",
          ("ConvertBlocksToOpaque",),
          needs=("block", "loop.annotated", "loop.unit")),
    _pass("LowerThreadBindings", "lower.lower_thread_bindings",
          "thread-bound loops become T.launch_thread scopes", ("BindTarget", "LowerOpaqueBlock")),
    _pass("FlattenBuffer", "lower.flatten_buffer",
          "multi-dimensional and strided buffers become flat ones", ("LowerThreadBindings",)),
    _pass("NarrowDataType", "lower.narrow_data_type",
          "64-bit loop variables, thread axes and index constants that fit in 32 bits "
          "become 32-bit (TVM's NarrowDataType(32))", ("FlattenBuffer",), needs=("int64",)),
    _pass("LoopPartition", "lower.loop_partition",
          "loops whose body tests T.likely conditions on their variable (or that carry a "
          "partition hint) split so the steady state runs without the tests",
          ("FlattenBuffer",),
          needs=("call.likely", "call.ignore_loop_partition", "attr.pragma_loop_partition_hint")),
    _pass("InjectVirtualThread", "lower.inject_virtual_thread",
          "virtual thread axes (vthread) become unrolled loops inside each thread",
          ("FlattenBuffer",),
          needs=("thread.virtual",)),
    _pass("UnrollFragmentVersions", "lower.unroll_fragment_versions",
          "a loop whose WMMA fragment indices cycle with its variable (pipeline versions) "
          "is unrolled by the period, so the fragments stay in registers",
          ("FlattenBuffer",), needs=("wmma",)),
    _pass("Simplify", "lower.simplify",
          "fold constants and pure private calls, drop always-true checks", ("BindTarget",)),
    _pass("InlinePrivateFunctions", "lower.inline_private_functions",
          "inline private callees where the target's code generator has no calls", ("BindTarget",),
          needs=("private",)),
    _pass("VectorizeLoop", "lower.vectorize_loop", "T.vectorized loops become vector code",
          ("FlattenBuffer",),
          needs=("loop.vectorized",)),
    _pass("InjectDoubleBuffer", "lower.inject_double_buffer",
          "a buffer written under double_buffer_scope in a loop gets two halves: the next "
          "iteration's data is written while this one's is read",
          ("VectorizeLoop", "InjectVirtualThread"), needs=("attr.double_buffer_scope",)),
    _pass("StorageRewrite", "lower.storage_rewrite",
          "allocations move to the start of their kernel, parallel loop or function and "
          "share memory when their lifetimes do not overlap",
          ("VectorizeLoop", "InjectVirtualThread", "InjectDoubleBuffer"),
          needs=("alloc",)),
    _pass("LowerAsyncDMA", "lower.lower_async_dma",
          "with tirx.use_async_copy: contiguous copy loops in async commit queues would be "
          "DMA-engine copies (no tirc target has them: a located error); otherwise nothing",
          ("StorageRewrite",), needs=("attr.async_commit_queue_scope",),
          option="tirx.use_async_copy"),
    _pass("HoistIfThenElse", "lower.hoist_if_then_else",
          "an if whose condition a loop does not change moves above the loop",
          ("LowerThreadBindings", "VectorizeLoop")),
    _pass("UnrollLoop", "lower.unroll_loop", "T.unroll loops become copies of their body",
          ("FlattenBuffer",)),
    # TVM follows it with its StmtSimplify, whose rules turn its comparison forms
    # (x // c < 1) back; tirc's Simplify keeps comparisons as written, so it is opt-in here.
    _pass("RenormalizeSplitPattern", "lower.renormalize_split_pattern",
          "opt-in: split-loop index patterns renormalized ((x % (c1*c2)) // c2 as "
          "(x // c2) % c1, common factors divided out)", ("UnrollLoop",),
          option="renormalize_split_pattern"),
    _pass("RemoveNoOp", "lower.remove_no_op",
          "drop statements that do nothing (empty loops and branches, stores of the value "
          "already there)", ("HoistIfThenElse", "UnrollLoop")),
    _pass("RewriteUnsafeSelect", "lower.rewrite_unsafe_select",
          "a select whose branches load or call something impure becomes T.if_then_else, "
          "which evaluates only the branch taken", ("RemoveNoOp",), needs=("select",)),
    _pass("InstrumentBoundCheckers", "lower.instrument_bound_checkers",
          "opt-in: every buffer access of host code checked at run time, an error naming "
          "the buffer", ("FlattenBuffer", "RewriteUnsafeSelect"), option="instrument_bound_checkers"),
    _pass("VerifyConstants", "lower.verify_constants",
          "no integer division by a constant 0, no constant index outside its buffer or the "
          "memory under it, once unrolling, inlining and folding made them constant",
          ("Simplify", "InlinePrivateFunctions", "UnrollLoop")),
    _pass("InjectPTXLDG32", "lower.inject_ptx_ldg32",
          "with tirx.s_tir.ldg32, in CUDA functions: a float32 load guarded by "
          "T.if_then_else(c, A[i], 0) becomes one predicated ld.global.nc.f32",
          ("RemoveNoOp",), needs=("call.if_then_else",), option="tirx.s_tir.ldg32"),
    _pass("CommonSubexprElim", "lower.common_subexpr_elim",
          "an expression computed more than once is bound to a variable once, before its "
          "first use in the innermost scope holding all its uses", ("Simplify", "UnrollLoop")),
    _pass("ThreadSync", "lower.thread_sync",
          "insert the barriers shared-memory accesses across threads need", ("UnrollLoop",),
          needs=("shared",)),
    _pass("InferFragment", "lower.infer_fragment",
          "each WMMA fragment gets the shape and layout its calls give it (fragment_shape, "
          "fragment_layout attributes); calls that disagree are errors",
          ("ThreadSync",),
          needs=("wmma",) + tuple(f"call.{n}" for n in ("tvm_fill_fragment", "tvm_load_matrix_sync",
                                                      "tvm_store_matrix_sync", "tvm_mma_sync",
                                                      "tvm_bmma_sync"))),
    _pass("LowerThreadAllreduce", "lower.lower_thread_allreduce",
          "T.tvm_thread_allreduce becomes warp shuffles, or a shared-memory tree",
          ("ThreadSync",),
          needs=("call.tvm_thread_allreduce", "attr.reduce_scope")),
    _pass("InjectPTXAsyncCopy", "lower.inject_ptx_async_copy",
          "with tirx.use_async_copy: global-to-shared copies of 4, 8 or 16 bytes in async "
          "scopes become cp.async", ("ThreadSync", "LowerThreadAllreduce"),
          needs=("attr.async_scope",), option="tirx.use_async_copy"),
    _pass("MergeSharedMemoryAllocations", "lower.merge_shared_memory_allocations",
          "a kernel's dynamic shared memory in one buffer, reused by liveness as TVM plans it "
          "(static memory stays static); shared-memory limits checked",
          ("ThreadSync",),
          needs=("shared",)),
    _pass("AnnotateDeviceRegions", "split.annotate_device_regions",
          "wrap each kernel region of host code in T.attr(<device target>, \"target\", 0)",
          ("MergeSharedMemoryAllocations",)),
    _pass("SplitHostDevice", "split.split_host_device",
          "device regions become kernel functions; host code calls them", ("AnnotateDeviceRegions",)),
    _pass("LowerDeviceKernelLaunch", "split.lower_device_kernel_launch",
          "host calls of kernels become launches with grid, block and shared-memory sizes",
          ("SplitHostDevice",)),
    _pass("VerifyMemory", "split.verify_memory",
          "host code never loads or stores device memory", ("LowerDeviceKernelLaunch",)),
    _pass("MakePackedAPI", "abi.make_packed_api",
          "public host functions take tvm-ffi packed arguments, checked", ("VerifyMemory",)),
    _pass("BF16StorageLegalize", "legalize.bf16_storage_legalize",
          "bfloat16 stored as uint16 and computed in float32 where the target lacks it",
          ("MakePackedAPI",), needs=("bfloat16",)),
    _pass("FP8StorageLegalize", "legalize.fp8_storage_legalize",
          "float8 stored as uint8 and computed in float32", ("MakePackedAPI",),
          needs=("float8",)),
    # TVM's finalize-device passes: on kernels, once the host/device split is done.
    _pass("LowerWarpMemory", "device.lower_warp_memory",
          "warp-scope buffers become registers of each lane; loads from other lanes "
          "become warp shuffles", ("SplitHostDevice", "BF16StorageLegalize"),
          needs=("warp",)),
]


# ``--abi c``: MakeCAPI runs in place of MakePackedAPI (PIPELINE is the packed ABI's list).
MAKE_C_API = _pass("MakeCAPI", "abi.make_c_api",
                   "public host functions become plain C functions (pointers, scalars, "
                   "0 or an error code)", ("VerifyMemory",))
ABIS = ("packed", "c")


def pipeline(abi: str = "packed") -> list[Pass]:
    """The passes run for host ABI ``abi``."""
    if abi not in ABIS:
        raise ValueError(f"unknown ABI '{abi}'; valid: {', '.join(ABIS)}")
    if abi == "packed":
        return list(PIPELINE)
    swap = {"MakePackedAPI": MAKE_C_API.name}
    return [MAKE_C_API if p.name == "MakePackedAPI" else
            replace(p, requires=tuple(swap.get(r, r) for r in p.requires)) for p in PIPELINE]


def pass_names(abi: str | None = "packed") -> list[str]:
    """The pass names of ``abi``'s pipeline; None: of every ABI (for validating names)."""
    if abi is None:
        return [n for p in PIPELINE for n in ((p.name, MAKE_C_API.name)
                                              if p.name == "MakePackedAPI" else (p.name,))]
    return [p.name for p in pipeline(abi)]


# The phases whose passes change each function by itself and the private functions it
# calls, or add functions made from one (SplitHostDevice's kernels): none of them reads a
# function of another call-graph component, so the components of a module can go
# through them apart, side by side (``-j N``), and the results be put together as the
# serial run leaves them (:func:`_run_apart`).
APART_PHASES = ("blocks", "lower", "split", "abi", "legalize", "device")

# runs tasks side by side and returns their results in order (the build's fork helper,
# ``tirc.backends.forked.run_pulled``: its processes take the tasks one at a time)
Spread = Callable[[list[Callable[[], object]]], list]


class PartWork:
    """What a caller of :func:`run_pipeline` does with each component's module once its
    passes are done, in the process that ran them (the build compiles the component's
    kernels there): :meth:`run` in that process, and :meth:`take` here with what each
    run returned, in the order the components were given out (the largest first).
    Nothing is taken when the module went through the passes whole."""

    def run(self, mod: IRModule) -> object:
        raise NotImplementedError

    def take(self, results: list) -> None:
        raise NotImplementedError


def run_pipeline(mod: IRModule, ctx: PassContext, stop_after: str | None = None,
                 instruments: tuple[Instrument, ...] = (), jobs: int = 1,
                 spread: Spread | None = None, part_work: PartWork | None = None) -> IRModule:
    """Run the pipeline of ``ctx.abi`` in order, up to and including ``stop_after``.

    With ``jobs`` > 1 and ``spread``, the passes of :data:`APART_PHASES` run on each
    call-graph component apart, the components shared out by ``spread``; the result is
    the module the serial run gives, its functions and facts in the same order, and an
    error is the one the serial run raises. Only for a whole run timed by
    :class:`TimePasses` at most (``--print-after`` and the like see one module); the
    components' pass times are added up. ``part_work``: run on each component's module
    in its process (:class:`PartWork`)."""
    passes = pipeline(ctx.abi)
    if stop_after is not None and stop_after not in [p.name for p in passes]:
        raise ValueError(f"unknown pass '{stop_after}'")
    if (jobs <= 1 or spread is None or stop_after is not None
            or not all(type(i) is TimePasses for i in instruments)):
        return _run_sequence(mod, ctx, passes, stop_after, instruments)
    head = [p for p in passes if PHASE_ORDER[p.phase] < PHASE_ORDER[APART_PHASES[0]]]
    apart = [p for p in passes if p.phase in APART_PHASES]
    tail = passes[len(head) + len(apart):]
    mod = _run_sequence(mod, ctx, head, None, instruments)
    mod = _run_apart(mod, ctx, apart, instruments, spread, part_work)
    return _run_sequence(mod, ctx, tail, None, instruments)


PHASE_ORDER = {name: i for i, (name, _) in enumerate(PHASES)}


def _run_apart(mod: IRModule, ctx: PassContext, passes: list[Pass],
               instruments: tuple[Instrument, ...], spread: Spread,
               part_work: PartWork | None = None) -> IRModule:
    from tirc.ir.call_graph import components
    comps = components(mod)
    if len(comps) <= 1:
        return _run_sequence(mod, ctx, passes, None, instruments)
    timed = bool(instruments)
    # new functions must not take the name of a function of another component
    part_ctx = replace(ctx, module_names=ctx.module_names | frozenset(mod.functions))

    def task(names: list[str]):
        def run():
            timer = TimePasses()
            sub = replace(mod, functions={n: mod.functions[n] for n in names})
            sub = _run_sequence(sub, part_ctx, passes, None, (timer,) if timed else ())
            return sub, timer.times, part_work.run(sub) if part_work is not None else None
        return run
    try:
        results = spread([task(names) for names in _costliest_first(mod, comps)])
    except Exception:  # noqa: BLE001 - the serial run: it raises the error it meets first
        # (another component's may come first in pass order), or runs a component that
        # could not be sent back (too deep to pickle)
        return _run_sequence(mod, ctx, passes, None, instruments)
    joined = _join_parts(mod, [sub for sub, _, _ in results])
    if joined is None:
        return _run_sequence(mod, ctx, passes, None, instruments)
    if part_work is not None:
        part_work.take([work for _, _, work in results])
    totals: dict[str, float] = {}
    for _, times, _ in results:
        for name, t in times:
            totals[name] = totals.get(name, 0.0) + t
    for inst in instruments:
        inst.times.extend((p.name, totals[p.name]) for p in passes if p.name in totals)
    return joined


def _join_parts(mod: IRModule, parts: list[IRModule]) -> IRModule | None:
    """The module the serial run gives from the components' results ``parts``: ``mod``'s
    functions in its order, then the functions the components added (kernels) in the
    order of the functions they were made from (their callers, by the build's facts) and
    in the order each component made them; the facts in the order of the functions they
    describe. None when an added function's origin is not known or two components added
    one name."""
    base = mod.facts
    order = {n: i for i, n in enumerate(mod.functions)}
    functions = {}
    added: list[tuple[int, int, str, object]] = []
    exported, kernels, warnings = [], [], list(base.warnings)
    for part in parts:
        callers = {k.name: k.launches[0].caller for k in part.facts.kernels if k.launches}
        for n, f in part.functions.items():
            if n in order:
                functions[n] = f
            elif callers.get(n) in order and n not in functions:
                functions[n] = f
                added.append((order[callers[n]], len(added), n, f))
            else:
                return None
        exported += part.facts.functions[len(base.functions):]
        kernels += part.facts.kernels[len(base.kernels):]
        warnings += part.facts.warnings[len(base.warnings):]
    functions = {n: functions[n] for n in mod.functions if n in functions}  # a pass may drop one
    functions.update((n, f) for _, _, n, f in sorted(added, key=lambda a: a[:2]))
    place = {n: i for i, n in enumerate(functions)}
    facts = replace(base, functions=tuple(base.functions) + tuple(
                        sorted(exported, key=lambda e: place[e.name])),
                    kernels=tuple(base.kernels) + tuple(
                        sorted(kernels, key=lambda k: place[k.name])),
                    warnings=tuple(warnings))
    return replace(mod, functions=functions, facts=facts)


def _costliest_first(mod: IRModule, comps: list[list[str]]) -> list[list[str]]:
    """The components, the largest (in source lines) first: the processes that share
    them take the next one when free, so the large ones go out first and the small ones
    fill the gaps at the end."""
    return sorted(comps, key=lambda names: sum(mod.functions[n].source_lines() for n in names),
                  reverse=True)  # stable: module order among equals


def _run_sequence(mod: IRModule, ctx: PassContext, passes: list[Pass], stop_after: str | None,
                  instruments: tuple[Instrument, ...]) -> IRModule:
    blocks = None  # decided at the first block pass (no later pass makes blocks)
    features = None  # the module's features, taken again once a pass changed it
    known: dict = {}  # each function's features, by identity (module_features)
    for p in passes:
        if p.option is not None and not ctx.enabled(p.option):
            skip = True
        elif p.blocks_only:
            blocks = has_blocks(mod) if blocks is None else blocks
            skip = not blocks
        elif p.needs:
            if features is None:
                from tirc.passes.analysis.features import module_features
                features = module_features(mod, known)
            skip = features.isdisjoint(p.needs)
        else:
            skip = False
        if skip:
            for inst in instruments:
                inst.skipped(p, mod)
        else:
            before, mod = mod, _run(p, mod, ctx, instruments)
            if mod is not before:
                features = None
        if p.name == stop_after:
            break
    return mod


def _run(p: Pass, mod: IRModule, ctx: PassContext, instruments: tuple[Instrument, ...]) -> IRModule:
    """One pass with its instruments; a bug in it is an InternalError naming it."""
    for inst in instruments:
        inst.before(p, mod)
    with internal_errors(f"pass {p.name}"):
        mod = p.run(mod, ctx)
    for inst in instruments:
        inst.after(p, mod)
    return mod


def passes_named(names: list[str]) -> list[Pass]:
    """The passes called ``names``, in that order (any ABI's), for running a chosen
    sequence (``tirc lower --passes``)."""
    table = {p.name: p for p in PIPELINE}
    table[MAKE_C_API.name] = MAKE_C_API
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ValueError(f"unknown pass '{unknown[0]}'")
    return [table[n] for n in names]


def run_passes(mod: IRModule, ctx: PassContext, names: list[str],
               instruments: tuple[Instrument, ...] = ()) -> IRModule:
    """Run exactly the passes ``names`` in the order given, nothing before them (as
    ``opt -passes=``): a pass's requirements are the caller's business."""
    for p in passes_named(names):
        mod = _run(p, mod, ctx, instruments)
    return mod
