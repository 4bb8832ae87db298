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
from tirc.backends.cpu.chunks import join_chunks, lower_chunks


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
        shares = cpu_chunks.plan(mod, jobs)
        if sum(len(s) for s in shares) > 1:
            return Chunked(shares, mod, target, name, device_code).finish()
    text, ctx = lower_to_llvm(mod, target, name, device_code, debug)
    parsed = llvm.parse_assembly(text)
    parsed.verify()
    machine = optimize(parsed, ctx, int(target.get("opt-level", 3)))
    return HostObject(machine.emit_object(parsed), str(parsed) if keep_ir else "", ctx.triple,
                      ctx.uses_openmp, ctx.launcher is not None)


def start_chunks(mod: IRModule, target: Target, name: str, device_code, jobs: int,
                 device_functions: int) -> Chunked | None:
    """The host object of ``mod`` started in chunks before the device code is compiled
    (``device_code``: its kernels known, its images not yet), so that the chunks other
    than the first are made side by side with it: this process compiles the device
    code, then the first chunk (which embeds the images), with a share smaller by the
    device code's ``device_functions`` (``cpu_chunks.plan``). None when ``mod`` is not
    made in chunks."""
    if jobs <= 1 or not cpu_chunks.wanted(mod, target, jobs, False):
        return None
    shares = cpu_chunks.plan(mod, jobs, cpu_chunks.DEVICE_FUNCTION_COST * device_functions)
    if len(shares) <= 1:
        return None
    return Chunked(shares, mod, target, name, device_code)


class Chunked:
    """A host object made in chunks (:mod:`tirc.backends.cpu.chunks`): the shares after the first run in
    forked processes from the start; :meth:`finish` makes the first share here and joins
    all the chunks' objects; :meth:`kill` ends the other processes."""

    def __init__(self, shares: list[list[IRModule]], mod: IRModule, target: Target,
                 name: str, device_code):
        from functools import partial

        from tirc.backends.forked import Started
        self.triple = target_machine(target).triple  # before forking: LLVM set up once
        starts = [sum(len(s) for s in shares[:i]) for i in range(len(shares))]
        self.tasks = [partial(lower_chunks, share, mod, target, name, device_code, start)
                      for share, start in zip(shares, starts)]
        self.others = Started(self.tasks[1:], "host codegen process")

    def kill(self) -> None:
        self.others.kill()

    def finish(self) -> HostObject:
        try:
            first = self.tasks[0]()
        except BaseException:
            self.kill()
            raise
        objects = [obj for share in self.others.results(first) for obj in share]
        return HostObject(join_chunks(objects), "", self.triple,
                          any(o.uses_openmp for o in objects), any(o.uses_cuda for o in objects))
