"""The host CPU backend: a host module -> one object file, lowered whole or in chunks
made side by side (:mod:`tirc.backends.cpu.chunks`), through the CPU target context
(:mod:`tirc.backends.cpu.context`).
"""
from __future__ import annotations

from llvmlite import binding as llvm

from tirc.backends.cpu import chunks as cpu_chunks
from tirc.backends.cpu.context import CPUContext, optimize, target_machine
from tirc.backends.llvm.lower import ModuleLowering
from tirc.backends.llvm.text import module_text
from tirc.ir.function import IRModule
from tirc.records import record
from tirc.target.kinds import Target
from tirc.backends.cpu.chunks import join_chunks, lower_collected


@record(frozen=True)
class HostObject:
    """What the CPU backend makes of a host module."""

    object: bytes | bytearray  # bytearray: joined from chunks (elf_join)
    llvm_ir: str  # the optimised module, as in the object ("" unless asked for)
    triple: str
    uses_openmp: bool  # link with libgomp
    uses_cuda: bool = False  # launches kernels: link with -ldl -lpthread
    suffix: str = ".o"  # the file it is written to: OUT/NAME.o


def lower_to_llvm(mod: IRModule, target: Target, name: str = "module",
                  device_code=None, debug: bool = False) -> tuple[str, CPUContext]:
    """The module as LLVM IR text, before optimisation; ``device_code`` (a
    ``cuda_launch.DeviceCode``) holds the device images its kernel launches embed;
    ``debug``: DWARF line tables mapping the code to the ``.tir`` lines (``-g``)."""
    ctx = CPUContext(target, device_code)
    lowering = ModuleLowering(mod, ctx, name, "lines" if debug else None)
    text = module_text(lowering.lower())
    ctx.loop_functions = lowering.loop_functions
    return text, ctx


def generate(mod: IRModule, target: Target, name: str = "module", device_code=None,
             keep_ir: bool = True, debug: bool = False, jobs: int = 1) -> HostObject:
    """The host object of ``mod``; ``keep_ir``: also its optimised LLVM IR as text;
    ``debug``: with DWARF line tables (``-g``); ``jobs``: processes that make it in
    chunks side by side (:mod:`tirc.backends.cpu.chunks`: not with ``keep_ir`` or ``debug``, which
    describe one LLVM module, nor for a triple whose objects :mod:`tirc.backends.cpu.elf_join` does not
    read)."""
    if cpu_chunks.wanted(mod, target, jobs, keep_ir or debug):
        parts = cpu_chunks.plan(mod, jobs)
        if len(parts) > 1:
            return Chunked(parts, mod, target, name, device_code, jobs).finish()
    text, ctx = lower_to_llvm(mod, target, name, device_code, debug)
    parsed = llvm.parse_assembly(text)
    parsed.verify()
    machine = optimize(parsed, ctx, int(target.get("opt-level", 3)))
    return HostObject(machine.emit_object(parsed), str(parsed) if keep_ir else "", ctx.triple,
                      ctx.uses_openmp, ctx.launcher is not None)


def start_chunks(mod: IRModule, target: Target, name: str, device_code,
                 jobs: int) -> Chunked | None:
    """The host object of ``mod`` started in chunks before the device code is compiled
    (``device_code``: its kernels known, its images not yet), so that the other
    processes make chunks side by side with it: this process compiles the device code,
    then the first chunk (which embeds the images), then takes what is left. None when
    ``mod`` is not made in chunks."""
    if jobs <= 1 or not cpu_chunks.wanted(mod, target, jobs, False):
        return None
    parts = cpu_chunks.plan(mod, jobs)
    if len(parts) <= 1:
        return None
    return Chunked(parts, mod, target, name, device_code, jobs)


class Chunked:
    """A host object made in chunks (:mod:`tirc.backends.cpu.chunks`): the chunks after
    the first are taken one at a time, the costliest first, by forked processes from the
    start and by this one from :meth:`finish` on, which makes the first chunk here
    (the module-wide state, the device images) and joins all the chunks' objects in
    order; :meth:`kill` ends the other processes."""

    def __init__(self, parts: list[IRModule], mod: IRModule, target: Target,
                 name: str, device_code, jobs: int):
        from functools import partial

        from tirc.backends.forked import Pulled
        self.triple = target_machine(target).triple  # before forking: LLVM set up once
        self.first = partial(lower_collected, parts[0], mod, target, name, device_code, True)
        # the others, costliest first (stable: module order among equals)
        self.order = sorted(range(1, len(parts)), key=lambda i: -cpu_chunks.cost(parts[i]))
        self.others = Pulled([partial(lower_collected, parts[i], mod, target, name,
                                      device_code, False) for i in self.order],
                             min(jobs, len(parts)) - 1, "host codegen process")

    def kill(self) -> None:
        self.others.kill()

    def finish(self) -> HostObject:
        try:
            first = self.first()
        except BaseException:
            self.kill()
            raise
        objects = [first] + [None] * len(self.order)
        for i, obj in zip(self.order, self.others.results()):
            objects[i] = obj
        return HostObject(join_chunks(objects), "", self.triple,
                          any(o.uses_openmp for o in objects), any(o.uses_cuda for o in objects))
