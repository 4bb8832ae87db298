"""``build()``: TIR text or module -> pipeline -> backends -> files, as a table of named
stages (:data:`STAGES`: parse, passes, split, device-codegen, host-codegen, manifest,
write) run over one ``_Build`` record; each target kind's code generation is its
registered backend's (:mod:`tirc.backends.registry`), so this module names none.

The host module (every function whose target is a CPU target or carries a host) goes
to the backend of its host target and becomes ``OUT/NAME.o``; ``shared=True`` also
links ``OUT/NAME.so`` with the system C compiler (``-lm``, and ``-ldl`` when the code
has ``T.parallel`` loops: libgomp is loaded at the first, tirc.backends.cpu.parallel;
``-lgomp`` as needed, for code that calls it itself).
``emit`` (``--emit tir,llvm,ptx``) also writes intermediates: ``tir`` the module after
the pipeline, ``OUT/NAME.lowered.tir``; ``llvm`` the optimised LLVM IR of the host
object, ``OUT/NAME.ll``, and of each device image, ``OUT/<image stem>.device.ll`` (``NAME.device.ll``, ``NAME.sm_90.device.ll``);
``ptx`` the PTX of each device image even with ``device_format="cubin"``
(``OUT/<image stem>.ptx``). They are written atomically with the other outputs and
listed in the depfile.

Device modules (kernels and device subroutines, grouped by device target) become
device images (for cuda, :mod:`tirc.backends.cuda.device_stage`: ``OUT/NAME.ptx``, ``.cubin`` per arch, or a
``.fatbin`` per target), with what the device stage learnt (cubins' resource usage,
fatbin entries) passed on to the manifest as plain data; a kernel whose block cannot get
its registers on one SM is a warning (:mod:`tirc.backends.cuda.resource_usage`). ``OUT/NAME.h`` declares the host object's exported functions
(``tirc.build.header``; ``abi="c"``: plain C functions, MakeCAPI) and ``OUT/NAME.json`` is the
manifest of public functions and kernels (``tirc.build.manifest``; also for device-only
builds). Device modules are compiled first: the host object embeds their images and
launches its kernels (for cuda through the CUDA driver, :mod:`tirc.backends.cuda.launch`;
``--shared`` then also links ``-ldl -lpthread``); ``device_only=True`` writes the device images
alone (no host object). Every output is written to a
temporary file and renamed into place only when all of them are ready, so a failed
build leaves nothing behind.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from contextlib import contextmanager
from dataclasses import field, replace
from pathlib import Path

from tirc.backends.outputs import DeviceOutputs
from tirc.build.depfile import depfile_text
from tirc.build.options import STAGE_NAMES, BuildOptions, build_options
from tirc.diagnostics import Diagnostic, internal_errors
from tirc.ir.attrs import GLOBAL_SYMBOL, TARGET
from tirc.ir.expr import Call, GlobalVar, StringImm
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.visitor import walk
from tirc.records import record
from tirc.target.kinds import Target, arch_target, host_triple, parse_target

@record
class BuildResult:
    files: list[Path]  # written, in order
    host: IRModule
    host_target: Target
    devices: dict[str, IRModule] = field(default_factory=dict)  # by device target (canonical)
    # device file by target (canonical); a multi-arch cuda target's files are under its
    # single-arch targets (tirc.target.kinds.for_arch), one per arch (its fatbin: under it)
    images: dict[str, Path] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)  # NAME.json's data
    warnings: list[Diagnostic] = field(default_factory=list)  # severity "warning"
    stage_times: list[tuple[str, float]] = field(default_factory=list)  # seconds, in order
    pass_times: list[tuple[str, float]] = field(default_factory=list)  # within "passes"
    name: str = ""  # the outputs' NAME
    outputs: dict[Path, bytes] = field(default_factory=dict)  # every output the build made
    # the device images (and PTX files) by format and label (DeviceOutputs.labelled)
    labelled: dict[str, dict[str, bytes]] = field(default_factory=dict)
    device_times: list[tuple[str, float]] = field(default_factory=list)  # by backend sub-stage


def split_module(mod: IRModule) -> tuple[IRModule, dict[Target, IRModule]]:
    """Host functions (CPU target, or a target with a host) and device functions by target."""
    host: dict[str, PrimFunc] = {}
    devices: dict[Target, dict[str, PrimFunc]] = {}
    for name, f in mod.functions.items():
        t = f.attrs.get(TARGET)
        if not isinstance(t, Target) or not t.is_device or t.host is not None:
            host[name] = f
        else:
            devices.setdefault(t, {})[name] = f
    return (IRModule(host, mod.name, mod.span),
            {t: IRModule(fs, mod.name, mod.span) for t, fs in devices.items()})


def _cpu_target(f: PrimFunc) -> Target | None:
    """The CPU target a host function's code is made for."""
    t = f.attrs.get(TARGET)
    if not isinstance(t, Target):
        return None
    return t.without_host() if not t.is_device else t.host


def host_groups(host: IRModule, bind: Target) -> list[tuple[Target, IRModule]]:
    """The host functions by the CPU target their code is made for, each group one host
    object, in the module's order. Functions of two groups do not call each other (a
    located error: their code is for two machines), and two groups are for two triples
    (each object is named by its triple)."""
    default = bind if not bind.is_device else (bind.host or parse_target("llvm"))
    groups: dict[str, tuple[Target, dict[str, PrimFunc]]] = {}
    where: dict[str, tuple[str, str]] = {}  # function or exported symbol -> (group, function)
    for name, f in host.functions.items():
        cpu = _cpu_target(f) or default
        groups.setdefault(cpu.canonical, (cpu, {}))[1][name] = f
        where[name] = (cpu.canonical, name)
        symbol = f.attrs.get(GLOBAL_SYMBOL)
        if isinstance(symbol, str):
            where[symbol] = (cpu.canonical, name)
    if len(groups) <= 1:
        return [(next(iter(groups.values()))[0] if groups else default, host)]
    _check_apart(host, groups, where)
    return [(t, replace(host, functions=fs)) for t, fs in groups.values()]


def _check_apart(host: IRModule, groups, where: dict[str, tuple[str, str]]) -> None:
    triples: dict[str, Target] = {}
    for t, _ in groups.values():
        other = triples.setdefault(t.get("mtriple"), t)
        if other is not t:
            raise Diagnostic(f"host functions of one module are for '{other.describe()}' and "
                             f"'{t.describe()}': one object is made per triple, so functions "
                             "for the same triple need the same target", host.span)
    for name, f in host.functions.items():
        mine = where[name][0]
        for node in walk(f.body):
            if not isinstance(node, Call):
                continue
            if isinstance(node.op, GlobalVar):
                callee = node.op.name
            elif node.args and isinstance(node.args[0], StringImm):
                callee = node.args[0].value  # T.call_cpacked / T.call_extern of a symbol
            else:
                continue
            if callee in where and where[callee][0] != mine:
                them, callee = groups[where[callee][0]][0], where[callee][1]
                raise Diagnostic(f"'{name}' (host code for '{groups[mine][0].describe()}') "
                                 f"calls '{callee}', whose code is for '{them.describe()}': "
                                 "functions for two host triples are two objects and cannot "
                                 "call each other", node.span or f.span)


def host_target_of(host: IRModule, bind: Target) -> Target:
    """The CPU target of the host functions (of the first group, when there are several)."""
    return host_groups(host, bind)[0][0]


def build(source: str | IRModule, target: Target | str | None = None,
          host: Target | str | None = None, out_dir: str | os.PathLike = ".",
          name: str | None = None, *, options: BuildOptions | None = None,
          filename: str = "<input>", show=None, write: bool = True, **flags) -> BuildResult:
    """Compile ``source`` and write ``OUT/NAME.o`` (+ ``.so``, ``.ll``) and the device
    images (``device_only``: those alone), every output at once or none.

    ``options``: the build's :class:`~tirc.build.options.BuildOptions`; without them,
    ``target``, ``host``, ``out_dir`` and the keyword ``flags`` make them
    (:func:`~tirc.build.options.build_options`, which checks each: an OptionError, a
    ValueError, for a bad one). ``name``: the outputs' NAME (default: the file's stem,
    else the module's name). ``filename``: what diagnostics and the depfile call the
    input. ``show``: where ``--print-after``'s text goes (default: standard output).
    ``write=False``: the outputs are made (``BuildResult.outputs``) but not written,
    and no shared library is linked. Diagnostics for every user error; TargetError for a
    bad target; an InternalError naming the pass or stage for a bug in tirc."""
    opts = options if options is not None else build_options(target, host, out_dir=out_dir,
                                                             **flags)
    if show is None:
        import sys
        show = sys.stdout.write
    b = _Build(opts, Path(opts.out_dir), source, filename, name, show, write)
    try:
        for stage_name, stage, text in STAGES:
            start = time.perf_counter()
            with internal_errors(f"stage {stage_name}"):
                stage(b)
            b.stage_times.append((stage_name, time.perf_counter() - start))
            if stage_name in opts.print_after:
                with internal_errors(f"stage {stage_name}"):
                    show(f"# after stage {stage_name}\n{text(b)}")
            if b.stopped or stage_name == opts.stop_after:
                break
    finally:
        _abandon_host(b)  # chunks started beside the device code and never collected
        if b.preparing is not None:  # collected by the device code, or not needed
            b.preparing.kill()
    return BuildResult(b.files, b.host_mod, b.host_target,
                       {t.canonical: m for t, m in b.devices.items()},
                       {arch_target(t, arch, len(files)).canonical: path
                        for t, files in b.dev.images.items() for arch, path, _ in files},
                       b.data, b.warnings, b.stage_times, b.pass_times, b.name,
                       dict(b.outputs), b.dev.labelled, list(b.dev.times.items()))


@record
class _Build:
    """What the stages of one build share: the options, the input, then what each stage
    made."""

    opts: BuildOptions
    out: Path
    source: str | IRModule  # the input as given
    filename: str
    name: str | None
    show: object  # where print_after's text goes
    write: bool  # False: the outputs are made, not written
    stopped: bool = False  # stop_after names a pass: no stage after "passes" runs
    read: IRModule | None = None  # the module as read (parse)
    mod: IRModule | None = None  # after the pipeline
    host_mod: IRModule | None = None
    host_target: Target | None = None
    host_parts: list[tuple[Target, IRModule]] = field(default_factory=list)  # one object each
    devices: dict[Target, IRModule] = field(default_factory=dict)
    launch_table: object = None  # the images the host object embeds and launches
    host_started: object = None  # the host object's chunks started beside the device code
    preparing: object = None  # the bind target's device backend's work started beside the parse
    made: dict = field(default_factory=dict)  # device code compiled with the passes, by kind
    made_seconds: dict = field(default_factory=dict)  # and the time it took, by kind
    dev: DeviceOutputs = field(default_factory=DeviceOutputs)
    obj: object = None  # the host backend's object (None with device_only)
    outputs: list[tuple[Path, bytes]] = field(default_factory=list)
    objects: list = field(default_factory=list)  # (file, target, module): several host objects
    files: list[Path] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    warnings: list[Diagnostic] = field(default_factory=list)
    stage_times: list[tuple[str, float]] = field(default_factory=list)
    pass_times: list[tuple[str, float]] = field(default_factory=list)


def _parse(b: _Build) -> None:
    b.preparing = _start_preparing(b)
    if isinstance(b.source, str):
        from tirc.frontend.parse import parse
        b.read = parse(b.source, b.filename)
    else:
        b.read = b.source
    b.name = b.name or (Path(b.filename).stem if b.filename != "<input>"
                        else (b.read.name or "module"))


def _passes(b: _Build) -> None:
    """The pass pipeline; a bug in a pass is an InternalError naming the pass."""
    from tirc.passes.pipeline import (DumpIR, PassContext, PrintAfter, TimePasses, pass_names,
                                      run_pipeline)
    timer = TimePasses()
    instruments = (timer,) + ((DumpIR(str(b.opts.dump_ir), b.name),) if b.opts.dump_ir is not None else ())
    if b.opts.print_after & set(pass_names(None)):
        instruments += (PrintAfter(set(b.opts.print_after), b.show),)
    names = pass_names(b.opts.abi)
    stop = b.opts.stop_after if b.opts.stop_after in names else None
    spread = part_work = None
    if b.opts.jobs > 1 and not b.opts.debug:
        from tirc.backends.forked import run_pulled
        spread = lambda tasks: run_pulled(tasks, b.opts.jobs, "pass group")  # noqa: E731
        if b.opts.stop_after is None and not b.opts.line_info and "llvm" not in b.opts.emit:
            part_work = _DevicePart(b)
            if b.preparing is not None:  # what the processes will use, ready before they fork
                b.preparing.finish()
    b.mod = run_pipeline(b.read, PassContext(b.opts.target, b.opts.abi, b.opts.symbol_prefix,
                                             instrument_bound_checkers=b.opts.instrument_bound_checkers,
                                             default_gpu_schedule=b.opts.default_gpu_schedule,
                                             config=b.opts.pass_config), stop,
                         instruments, jobs=b.opts.jobs, spread=spread, part_work=part_work)
    b.pass_times = timer.times
    b.stopped = stop is not None


class _DevicePart:
    """``-j N``: each call-graph component's device code compiled in the process that ran
    its passes, by its backend (``Backend.compile_part``), for the device stage to use
    (``b.made``, by target kind): a kernel goes from its passes to its code in one
    process, and the device stage compiles only what is left."""

    def __init__(self, b: _Build):
        self.b = b

    def run(self, mod: IRModule) -> tuple[dict, dict]:
        """What each device backend compiled of ``mod``, and its time, by kind."""
        from tirc.backends.registry import BACKENDS
        made: dict[str, list] = {}
        seconds: dict[str, float] = {}
        for target, part in split_module(mod)[1].items():
            backend = BACKENDS.get(target.kind)
            if backend is None or backend.role != "device":
                continue
            start = time.perf_counter()
            try:
                result = backend.compile_part(part, target, self.b.name)
            except Exception:  # noqa: BLE001 - compiled again, and reported, in the device stage
                continue
            if result is not None:
                made.setdefault(target.kind, []).append(result)
                seconds[target.kind] = seconds.get(target.kind, 0.0) + time.perf_counter() - start
        return made, seconds

    def take(self, results: list) -> None:
        for made, seconds in results:
            for kind, parts in made.items():
                self.b.made.setdefault(kind, []).extend(parts)
            for kind, t in seconds.items():
                self.b.made_seconds[kind] = self.b.made_seconds.get(kind, 0.0) + t


def _split(b: _Build) -> None:
    """The host module and the device modules by target; the host's CPU target."""
    b.host_mod, b.devices = split_module(b.mod)
    b.host_parts = host_groups(b.host_mod, b.opts.target)
    b.host_target = b.host_parts[0][0]
    if len(b.host_parts) > 1 and b.opts.shared:
        raise Diagnostic("host functions for " + " and ".join(
            t.get("mtriple") for t, _ in b.host_parts) + " make one object per triple; a "
            "shared library is for one triple: build without --shared", b.mod.span)
    if b.opts.device_only and not b.devices:
        raise Diagnostic("--device-only: the module has no device functions", b.mod.span)


def _device_codegen(b: _Build) -> None:
    """Each device kind's backend compiles its targets' modules into device images and,
    unless the build is device-only, fills the launch table the host object embeds (one
    table per kind, joined by :class:`~tirc.backends.registry.LaunchTables` when a module
    launches kernels of several kinds)."""
    from tirc.backends.registry import LaunchTables, get_backend
    by_kind: dict[str, dict[Target, IRModule]] = {}
    for t, m in b.devices.items():
        by_kind.setdefault(t.kind, {})[t] = m
    # ``also_ptx``: both formats asked for (--device-format ptx,cubin): PTX next to cubins.
    emit = b.opts.emit + ("ptx",) if b.opts.also_ptx and "ptx" not in b.opts.emit else b.opts.emit
    backends = {kind: get_backend(kind, next(iter(modules.values())).span, role="device")
                for kind, modules in by_kind.items()}
    tables = {}
    if not b.opts.device_only and by_kind:
        tables = {kind: backends[kind].launch_table(modules) for kind, modules in by_kind.items()}
        b.launch_table = next(iter(tables.values())) if len(tables) == 1 else LaunchTables(tables)
        b.host_started = _start_host(b)
    for kind, modules in by_kind.items():
        made = {"made": b.made[kind]} if b.made.get(kind) else {}
        try:
            dev = backends[kind].device_images(modules, b.out, b.name,
                                               device_format=_format_for(
                                                   b, backends[kind], modules, len(by_kind) > 1),
                                               emit=emit,
                                               line_info=b.opts.line_info,
                                               jobs=b.opts.jobs, **made)
        except BaseException:
            _abandon_host(b)
            raise
        if kind in tables:
            for mod, kernels, variants in dev.launches:
                tables[kind].add_variants(mod, kernels, variants)
        if kind in b.made_seconds:  # time summed over the processes, within "passes"
            dev.times["with-passes"] = b.made_seconds[kind]
        b.dev = dev if len(by_kind) == 1 else b.dev.merged(dev)


def _format_for(b: _Build, backend, modules: dict[Target, IRModule], several: bool) -> str:
    """The device format asked of a kind's backend: the build's when the backend writes
    it (a backend lists its formats, its default first); the backend's default when the
    build's is the default one, or is for another kind of the same module; else a
    located error."""
    fmt = b.opts.device_format
    formats = backend.device_formats
    if not formats or fmt in formats:
        return fmt
    if fmt == "ptx" or several:
        return formats[0]
    kind = next(iter(modules)).kind
    raise Diagnostic(f"--device-format {fmt}: the module's device targets are {kind}, which "
                     f"writes {' or '.join(formats)}", next(iter(modules.values())).span)


def _start_preparing(b: _Build):
    """With ``-j N``, what the bind target's device backend starts before the input is
    read (``Backend.start_preparing``), to run on a core the parse leaves idle."""
    if b.opts.jobs <= 1 or b.opts.debug:
        return None
    from tirc.backends.registry import BACKENDS
    backend = BACKENDS.get(b.opts.target.kind)
    if backend is None or backend.role != "device":
        return None
    return backend.start_preparing(b.opts.target, b.opts.jobs,
                                   b.source if isinstance(b.source, str) else None)


def _start_host(b: _Build):
    """With ``-j N``, the host object's chunks other than the first, started before the
    device code is compiled so that they run beside it (``cpu.start_chunks``); None
    when the host object is not made in chunks."""
    if b.opts.jobs <= 1 or len(b.host_parts) != 1 or b.opts.debug or _keep_host_ir(b):
        return None
    from tirc.backends.registry import get_backend
    target, mod = b.host_parts[0]
    backend = get_backend(target.kind, mod.span, role="host")
    return backend.start_host_object(mod, target, b.name, device_code=b.launch_table,
                                     jobs=b.opts.jobs)


def _abandon_host(b: _Build) -> None:
    """End the host chunks started beside the device code (a stage failed, or the build
    stopped before the host object)."""
    if b.host_started is not None:
        b.host_started.kill()
        b.host_started = None


def _keep_host_ir(b: _Build) -> bool:
    return "llvm" in b.opts.emit or "host-codegen" in b.opts.print_after


def _host_codegen(b: _Build) -> None:
    """The host object (with the device images embedded), unless device-only."""
    from tirc.backends.registry import get_backend
    if "tir" in b.opts.emit:
        from tirc.ir.printer import print_module
        b.outputs.append((b.out / f"{b.name}.lowered.tir", print_module(b.mod).encode()))
    if b.opts.device_only:
        return
    keep_ir = _keep_host_ir(b)
    several = len(b.host_parts) > 1
    objects = []
    for target, mod in b.host_parts:
        if b.host_started is not None:  # started beside the device code (_start_host)
            started, b.host_started = b.host_started, None
            obj = started.finish()
        else:
            backend = get_backend(target.kind, mod.span, role="host")
            obj = backend.host_object(mod, target, b.name, keep_ir=keep_ir, debug=b.opts.debug,
                                      device_code=b.launch_table, jobs=b.opts.jobs)
        stem = f"{b.name}.{target.get('mtriple')}" if several else b.name
        b.outputs.append((b.out / f"{stem}{obj.suffix}", obj.object))
        if "llvm" in b.opts.emit:
            if not obj.llvm_ir and obj.suffix != ".o":
                raise Diagnostic(f"--emit llvm: the host target '{target.kind}' writes "
                                 f"{stem}{obj.suffix}, not LLVM IR", mod.span)
            b.outputs.append((b.out / f"{stem}.ll", obj.llvm_ir.encode()))
        objects.append((f"{stem}{obj.suffix}", target, mod))
        b.obj = b.obj or obj
    if several:
        b.objects = objects


def _manifest_and_header(b: _Build) -> None:
    images = b.dev.images
    b.outputs += [(path, data) for files in images.values() for _, path, data in files]
    b.outputs += b.dev.extras
    facts = b.mod.facts  # what the passes decided; the outputs read nothing else
    b.data = _manifest(facts, b.name, b.opts.abi, b.host_target, images, b.dev.facts)
    if b.objects:  # one host object per triple: which functions each holds
        exported = {f.name for f in facts.functions}
        b.data["host_objects"] = [
            {"file": file, "target": t.canonical, "target_summary": t.describe(),
             "functions": [n for n in mod.functions if n in exported]}
            for file, t, mod in b.objects]
    if b.opts.symbol_prefix:
        b.data["symbol_prefix"] = b.opts.symbol_prefix
    b.warnings = (_verify_warnings(facts) + b.dev.warnings
                  + _register_warnings(facts, b.data))
    b.outputs += _header_and_manifest(facts, b.name, b.opts.abi, b.out, b.data,
                                      header=not b.opts.device_only, symbol_prefix=b.opts.symbol_prefix)


def _write(b: _Build) -> None:
    """Every output at once (and NAME.so, and the depfile), or none of them; with
    ``write=False`` they are only listed."""
    so = b.out / f"{b.name}.so"
    b.files = [p for p, _ in b.outputs] + ([so] if b.opts.shared else [])
    depfile = b.opts.depfile_for(b.name)
    if depfile is not None:
        targets = list(b.opts.depfile_targets) or [str(p) for p in b.files]
        b.outputs.append((depfile, depfile_text(targets, [b.filename]).encode()))
        b.files.append(depfile)
    if not b.write:
        return
    if depfile is not None:
        _make_directory(depfile.parent)
    _make_directory(b.out)
    _write_all(b.outputs, b.opts.shared and so, b.obj, b.opts.cc)


def _module_text(mod: IRModule) -> str:
    from tirc.ir.printer import print_module
    return print_module(mod)


def _split_text(b: _Build) -> str:
    """The host module, then each device module, each under a line naming its target."""
    parts = [f"# host module ({t.describe()})\n{_module_text(m)}" for t, m in b.host_parts]
    parts += [f"# device module ({t.describe()})\n{_module_text(m)}" for t, m in b.devices.items()]
    return "".join(parts)


def _file_text(path: Path, data: bytes) -> str:
    """A text output as it is, under a line naming it; a binary one as that line alone."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\0" in text:
        return f"# {path.name}: {len(data)} bytes (binary)\n"
    return f"# {path.name}\n{text}" + ("" if text.endswith("\n") else "\n")


def _device_text(b: _Build) -> str:
    files = [(path, data) for fs in b.dev.images.values() for _, path, data in fs] + b.dev.extras
    return "".join(_file_text(p, d) for p, d in files) or "# no device code\n"


def _host_text(b: _Build) -> str:
    return b.obj.llvm_ir if b.obj is not None else "# no host object (device-only build)\n"


def _outputs_text(b: _Build) -> str:
    made = (b.out / f"{b.name}.h", b.out / f"{b.name}.json")
    return "".join(_file_text(p, d) for p, d in b.outputs if p in made)


def _written_text(b: _Build) -> str:
    return "".join(f"{p}\n" for p in b.files)


# The build, in order: each stage reads what the earlier ones left in the _Build, and
# names the text --print-after shows of what it made. Device code generation goes
# through the backend of each device target's kind, host code generation through the
# host target's (tirc.backends.registry); this table names none.
STAGES = (
    ("parse", _parse, lambda b: _module_text(b.read)),  # the module as read
    ("passes", _passes, lambda b: _module_text(b.mod)),  # after the whole pipeline
    ("split", _split, _split_text),  # host and device modules
    ("device-codegen", _device_codegen, _device_text),  # device images (text ones whole)
    ("host-codegen", _host_codegen, _host_text),  # the host object's LLVM IR
    ("manifest", _manifest_and_header, _outputs_text),  # NAME.h and NAME.json
    ("write", _write, _written_text),  # the files written
)
assert tuple(name for name, _, _ in STAGES) == STAGE_NAMES


def _manifest(facts, name: str, abi: str, host_target: Target, images: dict,
              device_facts: dict) -> dict:
    """``NAME.json``'s data: the build's facts with the device files and what the
    device stage recorded (``device_facts``)."""
    from tirc.build.manifest import manifest

    files = {t.canonical: fs[0][1].name if len(fs) == 1 else [p.name for _, p, _ in fs]
             for t, fs in images.items()}
    return manifest(facts, name, abi, host_target.canonical, files, device_facts)


def _verify_warnings(facts) -> list[Diagnostic]:
    """What Verify found in the text as written and let build."""
    return [Diagnostic(w.message, w.span, severity="warning") for w in facts.warnings]


def _register_warnings(facts, data: dict) -> list[Diagnostic]:
    """A warning at each kernel whose block cannot get its registers on one SM."""
    from tirc.backends.cuda.resource_usage import register_overflows

    spans = {k.name: k.span for k in facts.kernels}
    return [Diagnostic(message, spans.get(kernel), severity="warning")
            for kernel, message in register_overflows(data.get("kernels", []))]


def _header_and_manifest(facts, name: str, abi: str, out: Path, data: dict, header: bool,
                         symbol_prefix: str = "") -> list[tuple[Path, bytes]]:
    """``OUT/NAME.h`` (with a host object) and ``OUT/NAME.json``."""
    from tirc.build.header import make_header
    from tirc.build.manifest import manifest_json

    result = [(out / f"{name}.json", manifest_json(data).encode())]
    if header:
        result.insert(0, (out / f"{name}.h",
                          make_header(name, facts, abi, symbol_prefix).encode()))
    return result


def _make_directory(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Diagnostic(f"cannot create the output directory '{path}': "
                         f"{e.strerror or e}") from None


def _cannot_write(path: Path, e: OSError) -> Diagnostic:
    return Diagnostic(f"cannot write '{path}': {e.strerror or e}")


_TEMP_SUFFIX = re.compile(r"[a-z0-9_]{8}")  # tempfile.mkstemp's random part


def _remove_stale_temporaries(paths: list[Path]) -> None:
    """Remove ``.NAME.xxxxxxxx`` files a build of these outputs killed during its write
    (SIGKILL; SIGTERM and SIGINT remove their own) left next to them."""
    for path in paths:
        prefix = f".{path.name}."
        try:
            names = os.listdir(path.parent)
        except OSError:
            continue
        for entry in names:
            if entry.startswith(prefix) and _TEMP_SUFFIX.fullmatch(entry[len(prefix):]):
                stale = path.parent / entry
                if stale.is_file() and not stale.is_symlink():
                    try:
                        stale.unlink()
                    except OSError:
                        pass


def _write_all(outputs: list[tuple[Path, bytes]], shared_path, obj, cc: str) -> None:
    """Write every output, all or nothing: each destination is checked first (a
    directory in the way fails the build before anything changes), every file is written
    to a temporary ``.NAME.xxxxxxxx`` next to it, and only when all are written (and the
    library linked) are they renamed over the old outputs, with SIGINT and SIGTERM held
    back meanwhile. On any failure or interruption the temporaries are removed and the
    previous outputs stay as they were. An OSError is a Diagnostic naming the path."""
    dests = [p for p, _ in outputs] + ([shared_path] if shared_path else [])
    for path in dests:
        if path.is_dir() and not path.is_symlink():
            raise Diagnostic(f"cannot write '{path}': it is a directory")
    _remove_stale_temporaries(dests)
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in outputs:
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
                temps.append((tmp, path))
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.chmod(tmp, 0o644)
            except OSError as e:
                raise _cannot_write(path, e) from None
        if shared_path:
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{shared_path.name}.", dir=shared_path.parent)
                os.close(fd)
            except OSError as e:
                raise _cannot_write(shared_path, e) from None
            temps.append((tmp, shared_path))
            _link(cc, next(t for t, p in temps if p == shared_path.with_suffix(obj.suffix)),
                  tmp, obj)
            os.chmod(tmp, 0o755)
        with _signals_held():
            for k, (tmp, path) in enumerate(temps):
                try:
                    os.replace(tmp, path)
                except OSError as e:
                    temps = temps[k:]
                    raise _cannot_write(path, e) from None
            temps = []
    finally:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass


@contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait until the block ends (the renames of one build)."""
    import signal
    held = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _link(cc: str, obj_path: str, so_path: str, obj) -> None:
    import subprocess  # only --shared links

    if obj.triple.split("-")[0] != host_triple().split("-")[0]:
        raise Diagnostic(f"cannot link a shared library for '{obj.triple}' on this machine "
                         f"({host_triple()}); build the object only")
    cmd = [cc, "-shared", "-o", so_path, obj_path, "-lm"]
    if obj.suffix == ".c":  # C source (the c target): compiled here too
        cmd = [cc, "-shared", "-fPIC", "-O2", "-fwrapv", "-fno-strict-aliasing", "-x", "c",
               "-o", so_path, obj_path, "-x", "none", "-lm"]
        cmd += ["-fopenmp"] if obj.uses_openmp else []
    elif obj.uses_openmp:
        # libgomp is dlopen-ed at the first parallel loop; linked only when the code
        # calls it itself (T.call_extern("int32", "omp_get_thread_num"))
        cmd += ["-ldl", "-Wl,--as-needed", "-lgomp", "-Wl,--no-as-needed"]
    if getattr(obj, "uses_cuda", False):  # dlopen of libcuda.so.1, pthread mutexes
        cmd += ["-ldl", "-lpthread"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise Diagnostic(f"cannot run the C compiler '{cc}': {e.strerror}") from None
    if proc.returncode != 0:
        raise Diagnostic(f"linking the shared library failed ({' '.join(cmd)}):\n"
                         f"{proc.stderr.strip()}")
