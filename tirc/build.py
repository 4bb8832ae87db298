"""``build()``: TIR text or module -> pipeline -> backends -> files (DESIGN §5).

The host module (every function whose target is a CPU target or carries a host) goes
to the backend of its host target and becomes ``OUT/NAME.o``; ``shared=True`` also
links ``OUT/NAME.so`` with the system C compiler (``-lm``, and ``-lgomp`` when the code
has ``T.parallel`` loops). ``emit`` (``--emit tir,llvm,ptx``) also writes
intermediates: ``tir`` the module after the pipeline, ``OUT/NAME.lowered.tir``;
``llvm`` the optimised LLVM IR of the host object, ``OUT/NAME.ll``, and of each device
image, ``OUT/<image stem>.device.ll`` (``NAME.device.ll``, ``NAME.sm_90.device.ll``);
``ptx`` the PTX of each device image even with ``device_format="cubin"``
(``OUT/<image stem>.ptx``). They are written atomically with the other outputs and
listed in the depfile.

Device modules (kernels and device subroutines, grouped by device target) become
device images (:mod:`tirc.device_images`: ``OUT/NAME.ptx``, ``.cubin`` per arch, or a
``.fatbin`` per target), with what the device stage learnt (cubins' resource usage,
fatbin entries) passed on to the manifest as plain data; a kernel whose block cannot get
its registers on one SM is a warning (:mod:`tirc.resource_usage`). ``OUT/NAME.h`` declares the host object's exported functions
(``tirc.header``; ``abi="c"``: plain C functions, MakeCAPI) and ``OUT/NAME.json`` is the
manifest of public functions and kernels (``tirc.manifest``; also for device-only
builds). Device modules are compiled first: the host object embeds their images and
launches its kernels through the CUDA driver (``backends.cuda_launch``; ``--shared``
then also links ``-ldl -lpthread``); ``device_only=True`` writes the device images
alone (no host object). Every output is written to a
temporary file and renamed into place only when all of them are ready, so a failed
build leaves nothing behind.
"""
from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tirc.device_images import arch_target, device_images, new_device_code
from tirc.diagnostics import Diagnostic, InternalError
from tirc.ir.attrs import TARGET
from tirc.ir.function import IRModule, PrimFunc
from tirc.target import Target, TargetError, host_triple, parse_target

EMIT_KINDS = ("tir", "llvm", "ptx")
DEVICE_FORMATS = ("ptx", "cubin", "fatbin")


def parse_emit(values) -> tuple[str, ...]:
    """``--emit`` values, comma-separated and/or repeated, as a tuple in EMIT_KINDS order
    (each once); ValueError naming an unknown kind."""
    if isinstance(values, str):
        values = (values,)
    kinds = {k.strip() for v in values for k in str(v).split(",") if k.strip()}
    for kind in sorted(kinds):
        if kind not in EMIT_KINDS:
            raise ValueError(f"unknown --emit kind '{kind}'; valid: {', '.join(EMIT_KINDS)}")
    return tuple(k for k in EMIT_KINDS if k in kinds)


def bind_target_from(target: Target | str | None, host: Target | str | None) -> Target:
    """The bind target of ``--target``/``--host``: ``llvm`` when none is given (the CPU
    ``host`` when only that is: ``--host "llvm -mtriple=aarch64-linux-gnu"`` alone
    cross-compiles a CPU module); a device target gets ``host`` (default ``llvm``) as
    its host. A device host is a TargetError."""
    target = parse_target(target) if isinstance(target, str) else target
    host = parse_target(host) if isinstance(host, str) else host
    if target is None:
        target = host if host is not None and not host.is_device else parse_target("llvm")
    if host is not None:
        if host.is_device:
            raise TargetError(f"the host must be a CPU target, not '{host.kind}'")
        target = target.with_host(host) if target.is_device else target
    elif target.is_device and target.host is None:
        target = target.with_host(parse_target("llvm"))
    return target


@dataclass
class BuildResult:
    files: list[Path]  # written, in order
    host: IRModule
    host_target: Target
    devices: dict[str, IRModule] = field(default_factory=dict)  # by device target (canonical)
    # device file by target (canonical); a multi-arch cuda target's files are under its
    # single-arch targets (tirc.target.for_arch), one per arch (its fatbin: under it)
    images: dict[str, Path] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)  # NAME.json's data
    warnings: list[Diagnostic] = field(default_factory=list)  # severity "warning"


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


def host_target_of(host: IRModule, bind: Target) -> Target:
    """The one CPU target the host functions are compiled for."""
    found: dict[str, Target] = {}
    for f in host.functions.values():
        t = f.attrs.get(TARGET)
        cpu = t if isinstance(t, Target) and not t.is_device else (t.host if isinstance(t, Target) else None)
        if cpu is not None:
            found.setdefault(cpu.canonical, cpu)
    if len(found) > 1:
        raise Diagnostic("the host functions of one module need one host target; found "
                         + " and ".join(t.describe() for t in found.values()), host.span)
    if found:
        return next(iter(found.values()))
    return bind if not bind.is_device else (bind.host or parse_target("llvm"))


def check_symbol_prefix(prefix: str) -> None:
    """ValueError unless ``prefix`` ("" for none) can start a C identifier: a letter or
    ``_``, then letters, digits and ``_``."""
    if not isinstance(prefix, str):
        raise ValueError(f"the symbol prefix must be a string, not {type(prefix).__name__}")
    if prefix and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise ValueError(f"invalid symbol prefix '{prefix}': it must start a C identifier "
                         "(a letter or '_', then letters, digits and '_')")


def build(source: str | IRModule, target: Target | str | None = None,
          host: Target | str | None = None, out_dir: str | os.PathLike = ".",
          name: str | None = None, shared: bool = False, emit: tuple[str, ...] = (),
          filename: str = "<input>", cc: str = "cc", device_format: str = "ptx",
          device_only: bool = False, abi: str = "packed",
          depfile: str | os.PathLike | None = None, also_ptx: bool = False,
          depfile_targets: tuple[str, ...] = (), symbol_prefix: str = "",
          line_info: bool = False, debug: bool = False,
          dump_ir: str | os.PathLike | None = None) -> BuildResult:
    """Compile ``source`` and write ``OUT/NAME.o`` (+ ``.so``, ``.ll``) and the device
    images (``device_only``: those alone). ``depfile``: also write there a Make rule
    with every output as a target (``depfile_targets``: those instead, as ``cc -MT``)
    and ``filename`` as its prerequisite (atomically, with the other outputs).
    ``symbol_prefix``: put before every symbol the object exports (``--symbol-prefix``;
    ValueError unless it starts a C identifier). ``line_info`` (``-lineinfo``): device
    code carries the ``.tir`` line of each statement (PTX ``.loc``, kept in cubins);
    ``debug`` (``-g``): the host object has DWARF line tables for them. ``dump_ir``: a
    directory for the module after each pass (``--dump-ir``, :class:`DumpIR`).
    Diagnostics for every user error; TargetError for a bad target; an InternalError
    naming the pass or stage for a bug in tirc."""
    from tirc.backends.registry import get_backend
    from tirc.passes.pipeline import PassContext, run_pipeline

    emit = parse_emit(emit)
    check_symbol_prefix(symbol_prefix)
    if device_format not in DEVICE_FORMATS:
        raise ValueError(f"unknown device format '{device_format}'; valid: {', '.join(DEVICE_FORMATS)}")
    if device_only and (shared or emit):
        raise ValueError("a device-only build writes no host object to link or emit")
    bind = bind_target_from(target, host)
    if isinstance(source, str):
        from tirc.parser import parse
        with InternalError.guard("stage parse"):
            source = parse(source, filename)
    name = name or (Path(filename).stem if filename != "<input>" else (source.name or "module"))
    original = source
    from tirc.passes.pipeline import DumpIR
    instruments = (DumpIR(str(dump_ir), name),) if dump_ir is not None else ()
    mod = run_pipeline(source, PassContext(bind, abi, symbol_prefix), None, instruments)
    host_mod, devices = split_module(mod)
    host_target = host_target_of(host_mod, bind)
    if device_only and not devices:
        raise Diagnostic("--device-only: the module has no device functions", mod.span)
    out = Path(out_dir)
    device_code = new_device_code() if devices and not device_only else None
    # ``also_ptx``: both formats asked for (--device-format ptx,cubin): PTX next to cubins.
    device_emit = emit + ("ptx",) if also_ptx and "ptx" not in emit else emit
    with InternalError.guard("stage device codegen"):
        dev = device_images(devices, out, name, device_format, device_code, device_emit, line_info)
    images = dev.images
    outputs: list[tuple[Path, bytes]] = []
    if "tir" in emit:
        from tirc.ir.printer import print_module
        outputs.append((out / f"{name}.lowered.tir", print_module(mod).encode()))
    obj = None
    if not device_only:
        launches = {"device_code": device_code} if device_code is not None else {}
        with InternalError.guard(f"stage host codegen ({host_target.kind})"):
            obj = get_backend(host_target.kind).load()(host_mod, host_target, name,
                                                       keep_ir="llvm" in emit, debug=debug,
                                                       **launches)
        outputs.append((out / f"{name}.o", obj.object))
        if "llvm" in emit:
            outputs.append((out / f"{name}.ll", obj.llvm_ir.encode()))
    outputs += [(path, data) for files in images.values() for _, path, data in files]
    outputs += dev.extras
    with InternalError.guard("stage manifest and header"):
        data = _manifest(mod, original, name, abi, host_target, images, dev.facts)
        if symbol_prefix:
            data["symbol_prefix"] = symbol_prefix
        warnings = dev.warnings + _register_warnings(mod, data)
        outputs += _header_and_manifest(host_mod, original, name, abi, out, data,
                                        header=not device_only, symbol_prefix=symbol_prefix)
    files = [p for p, _ in outputs] + ([out / f"{name}.so"] if shared else [])
    if depfile is not None:
        from tirc.jobs import depfile_text
        depfile = Path(depfile)
        targets = list(depfile_targets) or [str(p) for p in files]
        outputs.append((depfile, depfile_text(targets, [filename]).encode()))
        files.append(depfile)
        _make_directory(depfile.parent)
    _make_directory(out)
    _write_all(outputs, shared and (out / f"{name}.so"), obj, cc)
    return BuildResult(files, host_mod, host_target, {t.canonical: m for t, m in devices.items()},
                       {arch_target(t, arch, len(files)).canonical: path
                        for t, files in images.items() for arch, path, _ in files},
                       data, warnings)


def _manifest(mod: IRModule, original: IRModule, name: str, abi: str, host_target: Target,
              images: dict, facts: dict) -> dict:
    """``NAME.json``'s data: the module's functions and kernels with their device files
    and what the device stage recorded (``facts``)."""
    from tirc.manifest import manifest

    files = {t.canonical: fs[0][1].name if len(fs) == 1 else [p.name for _, p, _ in fs]
             for t, fs in images.items()}
    return manifest(mod, name, abi, original, host_target, files, facts)


def _register_warnings(mod: IRModule, data: dict) -> list[Diagnostic]:
    """A warning at each kernel whose block cannot get its registers on one SM."""
    from tirc.resource_usage import register_overflows

    found = register_overflows(data.get("kernels", []))
    return [Diagnostic(message, getattr(mod.functions.get(kernel), "span", None),
                       severity="warning") for kernel, message in found]


def _header_and_manifest(host_mod: IRModule, original: IRModule, name: str, abi: str,
                         out: Path, data: dict, header: bool,
                         symbol_prefix: str = "") -> list[tuple[Path, bytes]]:
    """``OUT/NAME.h`` (with a host object) and ``OUT/NAME.json``."""
    from tirc.header import make_header
    from tirc.manifest import manifest_json

    result = [(out / f"{name}.json", manifest_json(data).encode())]
    if header:
        result.insert(0, (out / f"{name}.h", make_header(name, host_mod, original, abi,
                                                               symbol_prefix).encode()))
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
            _link(cc, next(t for t, p in temps if p == shared_path.with_suffix(".o")), tmp, obj)
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
    if obj.uses_openmp:
        cmd.append("-lgomp")
    if getattr(obj, "uses_cuda", False):  # dlopen of libcuda.so.1, pthread mutexes
        cmd += ["-ldl", "-lpthread"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise Diagnostic(f"cannot run the C compiler '{cc}': {e.strerror}") from None
    if proc.returncode != 0:
        raise Diagnostic(f"linking the shared library failed ({' '.join(cmd)}):\n"
                         f"{proc.stderr.strip()}")
