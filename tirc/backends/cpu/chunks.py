"""The host object of one module made in chunks, side by side (``tirc build -j N`` on one
input): functions are independent after the split, so their LLVM IR can be made,
optimised and emitted in several processes.

* **Chunks.** The host module's functions are cut into chunks of whole call-graph
  components (a private function goes with every function that calls it;
  exported functions call each other through their symbols), contiguous in module
  order and of about equal numbers of functions: N chunks, or more of at most
  CHUNK_FUNCTIONS functions each for a large module (``plan``), so that the work grows
  linearly with the module; each process lowers a run of consecutive chunks. Same
  module, same N: same chunks.
* **Module-wide state** — the CUDA launch tables, the embedded device images and the
  helpers that load them, the C API's error buffer and ``NAME_last_error`` accessor —
  is defined in chunk 0 (its names global, for the others to use) and declared in the
  others (``CPUContext.share``). Each chunk's own internal symbols (string constants,
  packed function caches, outlined parallel bodies) stay its own.
* **Work.** Each chunk is lowered to LLVM IR, parsed, verified, optimised as a module
  of its own (``cpu.optimize``: the full pipeline and code generation level for a chunk
  with loops) and emitted as a relocatable object, chunk 0 in this process and the
  others in forked ones (``tirc.backends.forked``). The objects are joined in order into the
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


# What compiling one device function costs next to lowering one host function to an
# object (500 CUDA kernels: 0.44 s of device code, 1.8 s of host code): the share of
# the process that does the device code first is that much smaller (``plan``).
DEVICE_FUNCTION_COST = 0.25


def plan(mod: IRModule, jobs: int, head_start: float = 0.0) -> list[list[IRModule]]:
    """The chunks of ``mod`` for ``jobs`` processes: one list of consecutive chunks per
    process. A module with more than CHUNK_FUNCTIONS functions is cut even for one
    process: the lowering's time and memory grow faster than the module beyond that.
    ``head_start``: work the first process does before its chunks (the device code, in
    host functions' worth): its share is smaller by that much."""
    count = max(jobs, -(-len(mod.functions) // CHUNK_FUNCTIONS))
    if head_start <= 0 or jobs <= 1:
        parts = chunks(mod, count)
        per = -(-len(parts) // max(1, min(jobs, len(parts))))
        return [parts[i:i + per] for i in range(0, len(parts), per)]
    n = len(mod.functions)
    first = min(n, max(1.0, (n + head_start) / jobs - head_start))
    sizes: list[float] = []
    owner: list[int] = []  # the process of each chunk
    for p, size in enumerate([first] + [(n - first) / (jobs - 1)] * (jobs - 1)):
        k = max(1, -(-int(size) // CHUNK_FUNCTIONS))
        sizes += [size / k] * k
        owner += [p] * k
    shares: list[list[IRModule]] = [[] for _ in range(jobs)]
    for p, names in zip(owner, _cut(mod, sizes)):
        if names:
            shares[p].append(replace(mod, functions={f: mod.functions[f] for f in names}))
    return [s for s in shares if s]


def chunks(mod: IRModule, count: int) -> list[IRModule]:
    """``mod`` cut into at most ``count`` modules of whole call-graph components;
    ``[mod]`` when it cannot be cut."""
    if count <= 1 or len(_components(mod)) <= 1:
        return [mod]
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


def lower_chunks(parts: list[IRModule], whole: IRModule, target: Target, name: str,
                 device_code, first: int) -> list[ChunkObject]:
    """Chunks one after the other (one process's share); ``first``: the index of
    ``parts[0]`` among all chunks (chunk 0 is the owner). Each chunk's llvmlite objects,
    which hold reference cycles, are collected before the next: the build runs with the
    cycle collector off."""
    import gc
    objects = []
    gc.freeze()  # what exists now is not garbage: collections below skip it
    try:
        for i, part in enumerate(parts, first):
            objects.append(lower_chunk(part, whole, target, name, device_code, i == 0))
            if len(parts) > 1:
                gc.collect()
    finally:
        gc.unfreeze()
    return objects


def lower_chunk(sub: IRModule, whole: IRModule, target: Target, name: str, device_code,
                owner: bool) -> ChunkObject:
    """One chunk lowered, optimised and emitted as an object; ``owner``: it defines the
    module-wide state ``whole`` needs."""
    from tirc.backends.cpu.context import CPUContext, optimize
    from tirc.backends.llvm.lower import ModuleLowering
    from tirc.backends.llvm.text import module_text
    ctx = CPUContext(target, device_code, "define" if owner else "declare")
    lowering = ModuleLowering(sub, ctx, name)
    if owner:
        if device_code is not None and device_code.kernels:
            ctx.launcher = device_code.launcher(lowering)
        c_api = [f for f in whole.functions.values() if f.attrs.get(C_API)]
        if c_api:
            from tirc.backends.cpu.c_api_errors import error_buffer
            error_buffer(lowering.ir, ctx, str(c_api[0].attrs.get(SYMBOL_PREFIX, "")))
    text = module_text(lowering.lower())
    ctx.loop_functions = lowering.loop_functions
    signatures = tuple((f.name, str(f.function_type), lowering.declared_at.get(f.name))
                       for f in lowering.ir.functions if f.linkage not in ("internal", "private"))
    dismantle(lowering.ir)  # freed now, not by a collection (lower_chunks)
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
