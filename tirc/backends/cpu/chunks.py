"""The host object of one module made in chunks, side by side (``tirc build -j N`` on one
input): functions are independent after the split, so their LLVM IR can be made,
optimised and emitted in several processes.

* **Chunks.** The host module's functions are cut into chunks of whole call-graph
  components (a private function goes with every function that calls it;
  exported functions call each other through their symbols), contiguous in module
  order and of about equal numbers of functions: a few per process, or more of at most
  CHUNK_FUNCTIONS functions each for a large module (``plan``), so that the work grows
  linearly with the module. The processes take the chunks one at a time, the costliest
  first (``forked.Pulled``), so that they finish together whatever each function costs;
  which process made a chunk does not change the object. Same module, same N: same
  chunks.
* **Module-wide state** — the CUDA launch tables, the embedded device images and the
  helpers that load them, the C API's error buffer and ``NAME_last_error`` accessor —
  is defined in chunk 0 (its names global, for the others to use) and declared in the
  others (``CPUContext.share``). Each chunk's own internal symbols (string constants,
  packed function caches, outlined parallel bodies) stay its own.
* **Work.** Each chunk is lowered to LLVM IR, parsed, verified, optimised as a module
  of its own (``cpu.optimize``: the full pipeline and code generation level for a chunk
  with loops) and emitted as a relocatable object, chunk 0 in this process (after the
  device code, whose images it embeds) and the others by whichever process takes them
  (``tirc.backends.forked``). The objects are joined in order into the
  one host object (:mod:`tirc.backends.cpu.elf_join`, as ``ld -r`` would), the module-wide state made local
  again. No process ever holds the LLVM module of the whole: a 5,000-function module
  is never more than one chunk's IR and machine code at a time in each process.

Not chunked (one LLVM module): a module of one component, a module of at most
CHUNK_FUNCTIONS functions built with ``-j 1``, ``-g`` builds (one DWARF compile unit
per object), builds that keep the LLVM IR (``--emit llvm``: NAME.ll is the module
NAME.o was made from), and triples whose objects are not ELF64 with addends
(``elf_join.joinable_triple``: Mach-O, COFF, 32-bit).
"""
from __future__ import annotations

from dataclasses import replace

from llvmlite import binding as llvm

from tirc.diagnostics import Diagnostic, Span
from tirc.backends.llvm.context import exported
from tirc.ir.attrs import C_API, SYMBOL_PREFIX
from tirc.ir.call_graph import components
from tirc.ir.function import IRModule
from tirc.records import record
from tirc.target.kinds import Target, host_triple
from tirc.backends.llvm.llvmlite_compat import dismantle


@record(frozen=True)
class ChunkObject:
    """What one chunk sends back."""

    object: bytes  # relocatable ELF
    shared: tuple[str, ...]  # module-wide symbols it defines (chunk 0)
    # its external functions, defined or declared: (symbol, LLVM type, where first used)
    signatures: tuple[tuple[str, str, Span | None], ...]
    uses_openmp: bool
    uses_cuda: bool


CHUNK_FUNCTIONS = 500  # at most this many functions per chunk, when components allow


def wanted(mod: IRModule, target: Target, jobs: int, whole: bool) -> bool:
    """Whether ``mod`` is made in chunks; ``whole``: the build needs one LLVM module
    (kept IR, debug info)."""
    if whole or (jobs <= 1 and len(mod.functions) <= CHUNK_FUNCTIONS):
        return False
    from tirc.backends.cpu.elf_join import joinable_triple
    return joinable_triple(target.get("mtriple") or host_triple())


CHUNKS_PER_PROCESS = 4  # chunks a process takes one at a time, about, for a module of few functions


def plan(mod: IRModule, jobs: int) -> list[IRModule]:
    """The chunks of ``mod`` for ``jobs`` processes that take them one at a time
    (``forked.Pulled``): CHUNKS_PER_PROCESS per process, so that one that drew costly
    functions takes fewer, and more of at most CHUNK_FUNCTIONS functions each for a large
    module. A module with more than CHUNK_FUNCTIONS functions is cut even for one
    process: the lowering's time and memory grow faster than the module beyond that.
    Same module, same ``jobs``: same chunks."""
    count = -(-len(mod.functions) // CHUNK_FUNCTIONS)
    if jobs > 1:
        count = max(count, CHUNKS_PER_PROCESS * jobs)
    return chunks(mod, count)


def cost(chunk: IRModule) -> int:
    """What making ``chunk``'s object costs, about: its functions' source lines."""
    return sum(f.source_lines() for f in chunk.functions.values())


def chunks(mod: IRModule, count: int) -> list[IRModule]:
    """``mod`` cut into at most ``count`` modules of whole call-graph components (one
    each when there are no more than ``count``); ``[mod]`` when it cannot be cut."""
    comps = _components(mod)
    if count <= 1 or len(comps) <= 1:
        return [mod]
    if len(comps) <= count:
        groups = comps
    else:
        groups = [g for g in _cut(mod, [1.0] * count) if g]
    return [replace(mod, functions={n: mod.functions[n] for n in names}) for names in groups]


def _cut(mod: IRModule, sizes: list[float]) -> list[list[str]]:
    """The functions of ``mod`` in consecutive groups of whole call-graph components,
    one group per entry of ``sizes``, of sizes in those proportions as far as the
    components allow (the last groups may be empty)."""
    components = _components(mod)
    total = sum(len(c) for c in components)
    scale = total / sum(sizes)
    bounds, at = [], 0.0
    for size in sizes:
        bounds.append(at)
        at += size * scale
    groups: list[list[str]] = [[] for _ in sizes]
    g, done = 0, 0
    for comp in components:
        if groups[g] and g + 1 < len(sizes) and done >= bounds[g + 1] - 1e-9:
            g += 1  # one group on at a time: a large component delays the cuts after it
        groups[g].extend(comp)
        done += len(comp)
    return groups


def _components(mod: IRModule) -> list[list[str]]:
    """The module's call-graph components (:func:`tirc.ir.call_graph.components`)."""
    if all(exported(f) for f in mod.functions.values()):
        return [[n] for n in mod.functions]  # only private functions are called by GlobalVar
    return components(mod)


def lower_collected(part: IRModule, whole: IRModule, target: Target, name: str, device_code,
                    owner: bool) -> ChunkObject:
    """:func:`lower_chunk`, then its llvmlite objects, which hold reference cycles,
    collected (the build runs with the cycle collector off, and a process may lower
    several chunks one after the other)."""
    import gc
    gc.freeze()  # what exists now is not garbage: the collection below skips it
    try:
        obj = lower_chunk(part, whole, target, name, device_code, owner)
        gc.collect()
    finally:
        gc.unfreeze()
    return obj


def lower_chunk(sub: IRModule, whole: IRModule, target: Target, name: str, device_code,
                owner: bool) -> ChunkObject:
    """One chunk lowered, optimised and emitted as an object; ``owner``: it defines the
    module-wide state ``whole`` needs."""
    from tirc.backends.cpu.context import CPUContext, optimize
    from tirc.backends.llvm.launch_support import allocates_device_memory
    from tirc.backends.llvm.lower import ModuleLowering
    from tirc.backends.llvm.text import module_text
    ctx = CPUContext(target, device_code, "define" if owner else "declare")
    lowering = ModuleLowering(sub, ctx, name)
    if owner:
        if device_code is not None and device_code.kernels:
            ctx.launcher = device_code.launcher(lowering)
            if allocates_device_memory(whole):  # defined here for every chunk
                ctx.launcher.memory_helpers()
        c_api = [f for f in whole.functions.values() if f.attrs.get(C_API)]
        if c_api:
            from tirc.backends.cpu.c_api_errors import error_buffer
            error_buffer(lowering.ir, ctx, str(c_api[0].attrs.get(SYMBOL_PREFIX, "")))
    text = module_text(lowering.lower())
    ctx.loop_functions = lowering.loop_functions
    signatures = tuple((f.name, str(f.function_type), lowering.declared_at.get(f.name))
                       for f in lowering.ir.functions if f.linkage not in ("internal", "private"))
    dismantle(lowering.ir)  # freed now, not by a collection (lower_collected)
    parsed = llvm.parse_assembly(text)
    del text
    parsed.verify()
    machine = optimize(parsed, ctx, int(target.get("opt-level", 3)))
    return ChunkObject(machine.emit_object(parsed), tuple(ctx.shared), signatures,
                       ctx.uses_openmp, ctx.launcher is not None)


def join_chunks(objects: list[ChunkObject]) -> bytearray:
    """The chunks' objects joined in order into one, module-wide state local again; a
    Diagnostic if two chunks use one external symbol with two signatures, as lowering
    the module whole says (``ModuleLowering.declare``)."""
    from tirc.backends.cpu.elf_join import join
    seen: dict[str, tuple[str, Span | None]] = {}
    for obj in objects:
        for symbol, fnty, span in obj.signatures:
            first = seen.setdefault(symbol, (fnty, span))
            if first[0] != fnty:
                raise Diagnostic(f"'{symbol}' is used with two different signatures",
                                 span or first[1])
    return join([o.object for o in objects], frozenset(objects[0].shared))
