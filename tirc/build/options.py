"""The options of a build, in one frozen record made once — from the command line
(``tirc build``), the Python API (``tirc.compile``) or a keyword call of
:func:`tirc.build.stages.build` — and read by every stage. :func:`build_options` is the
one place each option is checked and put in its normal form: a bad value is an
:class:`OptionError` naming the flag, which the command line reports as a usage error
and the API raises as the ``ValueError`` it is.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from tirc.records import record
from tirc.target.kinds import Target, TargetError, parse_target

EMIT_KINDS = ("tir", "llvm", "ptx")
# The stages of a build, in order (tirc.build.stages.STAGES): what --print-after and
# --stop-after name besides the passes
STAGE_NAMES = ("parse", "passes", "split", "device-codegen", "host-codegen", "manifest", "write")
DEVICE_FORMATS = ("ptx", "cubin", "fatbin")
ABIS = ("packed", "c")


class OptionError(ValueError):
    """An option that cannot be; ``flag`` names it as the command line spells it."""

    def __init__(self, flag: str, message: str):
        super().__init__(message)
        self.flag = flag


@record(frozen=True)
class BuildOptions:
    """Every option of one build (picklable: ``tirc build -j N`` sends it to its workers)."""

    target: Target  # the bind target, with its host (bind_target_from)
    out_dir: str = "."
    shared: bool = False  # --shared: also OUT/NAME.so
    emit: tuple[str, ...] = ()  # --emit: intermediates, in EMIT_KINDS order
    device_format: str = "ptx"  # --device-format: ptx, cubin or fatbin
    also_ptx: bool = False  # --device-format ptx,cubin: PTX files beside the cubins
    device_only: bool = False  # --device-only: the device images alone
    abi: str = "packed"  # --abi: packed (tvm-ffi) or c
    cc: str = "cc"  # the C compiler that links NAME.so
    depfile: bool = False  # -MD: a Make rule of the outputs, OUT/NAME.d
    depfile_path: str | None = None  # -MF FILE: the rule there instead
    depfile_targets: tuple[str, ...] = ()  # -MT TARGET: the rule's targets
    symbol_prefix: str = ""  # --symbol-prefix P: before every exported symbol
    pass_config: tuple = ()  # --pass-config KEY=VALUE: TVM's pass options (parse_pass_config)
    line_info: bool = False  # -lineinfo: .tir lines in device code
    debug: bool = False  # -g: DWARF line tables in the host object
    dump_ir: str | None = None  # --dump-ir DIR: the module after every pass
    print_after: frozenset[str] = frozenset()  # --print-after: stage and pass names
    stop_after: str | None = None  # --stop-after: a stage or pass; nothing written
    jobs: int = 1  # -j N with one input: the host object in N chunks at once
    resource_usage: bool = False  # --resource-usage: the cubins' (code objects') figures
    time_passes: bool = False  # --time-passes: the time of every pass and stage
    instrument_bound_checkers: bool = False  # --instrument-bound-checkers
    default_gpu_schedule: bool = False  # --default-gpu-schedule
    verbose: bool = False  # -v: what was built and written

    def depfile_for(self, name: str) -> Path | None:
        """Where the Make rule of the build named ``name`` goes (None: no rule)."""
        if self.depfile_path is not None:
            return Path(self.depfile_path)
        if self.depfile or self.depfile_targets:
            return Path(self.out_dir) / f"{name}.d"
        return None


def build_options(target: Target | str | None = None, host: Target | str | None = None, *,
                  out_dir: str | os.PathLike = ".", device_format="ptx", emit=(),
                  print_after=(), stop_after: str | None = None, abi: str = "packed",
                  symbol_prefix: str = "", depfile: str | os.PathLike | bool | None = None,
                  depfile_targets=(), jobs: int = 1, also_ptx: bool = False,
                  pass_config=(), **flags) -> BuildOptions:
    """The options of a build, checked. ``device_format``: a format, or several as
    ``--device-format`` takes them (``"ptx,cubin"``, or a list). ``depfile``: True for
    ``-MD`` (``OUT/NAME.d``), or the rule's path (``-MF``). The other ``flags`` are
    :class:`BuildOptions` fields as they are."""
    bind = bind_target_from(target, host)
    fmt, both = _device_format(device_format)
    if abi not in ABIS:
        raise OptionError("--abi", f"unknown ABI '{abi}'; valid: {', '.join(ABIS)}")
    check_symbol_prefix(symbol_prefix)
    emit = parse_emit(emit)
    if flags.get("device_only") and (flags.get("shared") or emit):
        raise OptionError("--device-only", "--device-only writes no host object: it cannot go "
                          "with --shared or --emit")
    if flags.get("resource_usage") and fmt == "ptx" and bind.kind != "rocm":
        raise OptionError("--resource-usage", "--resource-usage reports what the cubins use: "
                          "build them with --device-format cubin or fatbin (a rocm target's "
                          "code objects always have the figures)")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise OptionError("-j", f"-j takes a number of processes of at least 1, not {jobs!r}")
    names = check_stop_names(print_after, stop_after, abi)
    path = None if isinstance(depfile, bool) or depfile is None else os.fspath(depfile)
    return BuildOptions(bind, os.fspath(out_dir), emit=emit, device_format=fmt,
                        also_ptx=both or bool(also_ptx), abi=abi, symbol_prefix=symbol_prefix,
                        depfile=depfile is True, depfile_path=path,
                        depfile_targets=tuple(depfile_targets), print_after=names,
                        stop_after=stop_after, jobs=jobs,
                        pass_config=parse_pass_config(pass_config), **flags)


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


def _device_format(value) -> tuple[str, bool]:
    """``--device-format``'s values as (the format the images are in, PTX files too)."""
    values = (value,) if isinstance(value, str) else tuple(value)
    formats = {f.strip() for v in values for f in str(v).split(",") if f.strip()} or {"ptx"}
    unknown = sorted(formats - set(DEVICE_FORMATS))
    if unknown:
        raise OptionError("--device-format", f"unknown device format '{unknown[0]}'; valid: "
                          f"{', '.join(DEVICE_FORMATS)}")
    if "fatbin" in formats and len(formats) > 1:
        raise OptionError("--device-format", "--device-format fatbin holds the cubins and the "
                          "PTX itself: it goes alone (--emit ptx also writes the PTX files)")
    fmt = "fatbin" if "fatbin" in formats else "cubin" if "cubin" in formats else "ptx"
    return fmt, formats == {"ptx", "cubin"}


def parse_emit(values) -> tuple[str, ...]:
    """``--emit`` values, comma-separated and/or repeated, as a tuple in EMIT_KINDS order
    (each once); an OptionError naming an unknown kind."""
    if isinstance(values, str):
        values = (values,)
    kinds = {k.strip() for v in values for k in str(v).split(",") if k.strip()}
    for kind in sorted(kinds):
        if kind not in EMIT_KINDS:
            raise OptionError("--emit", f"unknown --emit kind '{kind}'; valid: "
                              f"{', '.join(EMIT_KINDS)}")
    return tuple(k for k in EMIT_KINDS if k in kinds)


# TVM 0.27's pass configuration options tirc reads: name -> the type of its value, or
# for an option with fields (a config node), its fields and their types
PASS_CONFIG = {
    "tirx.use_async_copy": bool,      # InjectPTXAsyncCopy (and LowerAsyncDMA) run
    "tirx.s_tir.ldg32": bool,         # InjectPTXLDG32 runs
    "s_tir.InjectDoubleBuffer": {"split_loop": int},
}


def parse_pass_config(values) -> tuple:
    """``--pass-config`` values (``KEY=VALUE`` strings, ``KEY.FIELD=VALUE`` for an option
    with fields, e.g. ``s_tir.InjectDoubleBuffer.split_loop=2``), or a dict as TVM's
    ``PassContext(config=...)`` takes it, as sorted ``(key, value)`` pairs; an
    OptionError naming an unknown option or a bad value."""
    if not isinstance(values, (dict, str)) and all(isinstance(v, tuple) for v in values):
        values = dict(values)  # already parsed
    items = list(values.items()) if isinstance(values, dict) else []
    if not isinstance(values, dict):
        for v in ((values,) if isinstance(values, str) else values):
            key, eq, text = str(v).partition("=")
            if not eq:
                raise OptionError("--pass-config", f"--pass-config takes KEY=VALUE, not '{v}'")
            items.append((key.strip(), text.strip()))
    out: dict = {}
    for key, value in items:
        base, field = key, None
        if key not in PASS_CONFIG and key.rpartition(".")[0] in PASS_CONFIG:
            base, _, field = key.rpartition(".")
        kind = PASS_CONFIG.get(base)
        if kind is None:
            raise OptionError("--pass-config", f"unknown pass option '{key}'; valid: "
                              + ", ".join(k if not isinstance(t, dict) else
                                          ", ".join(f"{k}.{f}" for f in t)
                                          for k, t in PASS_CONFIG.items()))
        if isinstance(kind, dict):
            fields = value if field is None and isinstance(value, dict) else {field: value}
            node = dict(out.get(base, {}))
            for f, v in fields.items():
                if f not in kind:
                    raise OptionError("--pass-config", f"'{base}' has no field '{f}'; fields: "
                                      f"{', '.join(kind)}")
                node[f] = _config_value(f"{base}.{f}", kind[f], v)
            out[base] = node
        else:
            out[base] = _config_value(key, kind, value)
    return tuple(sorted(out.items()))


def _config_value(key: str, kind: type, value):
    if isinstance(value, str):
        text = value.lower()
        if kind is bool and text in ("1", "true", "0", "false"):
            return text in ("1", "true")
        if kind is int and re.fullmatch(r"-?[0-9]+", text):
            return int(text)
    elif isinstance(value, kind) or (kind is bool and value in (0, 1)):
        return kind(value)
    raise OptionError("--pass-config", f"'{key}' takes {'true or false' if kind is bool else 'an integer'}, "
                      f"not '{value}'")


def check_symbol_prefix(prefix: str) -> None:
    """An OptionError unless ``prefix`` ("" for none) can start a C identifier: a letter
    or ``_``, then letters, digits and ``_``."""
    if not isinstance(prefix, str):
        raise OptionError("--symbol-prefix", "the symbol prefix must be a string, not "
                          f"{type(prefix).__name__}")
    if prefix and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise OptionError("--symbol-prefix", f"invalid symbol prefix '{prefix}': it must start "
                          "a C identifier (a letter or '_', then letters, digits and '_')")


def check_stop_names(print_after, stop_after: str | None, abi: str = "packed") -> frozenset[str]:
    """The stage and pass names of ``--print-after`` (``"all"``: every stage and every
    pass of ``abi``'s pipeline) after checking them and ``stop_after``; an OptionError
    naming an unknown one, or a pass that does not run with ``abi``."""
    from tirc.passes.pipeline import pass_names
    if isinstance(print_after, str):
        print_after = (print_after,)
    names = [*STAGE_NAMES, *pass_names(abi)]
    for flag, values in (("--print-after", print_after), ("--stop-after", (stop_after,))):
        for v in values:
            if v is None or (v == "all" and flag == "--print-after"):
                continue
            if v not in names:
                other = (f"; it does not run with --abi {abi}" if v in pass_names(None)
                         else f"; stages: {', '.join(STAGE_NAMES)}; or a pass (tirc passes)")
                raise OptionError(flag, f"{flag}: unknown stage or pass '{v}'{other}")
    return frozenset(names if "all" in print_after else print_after)
