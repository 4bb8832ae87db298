"""The ``tirc`` command line. Thin: it parses flags, calls library functions, and turns
diagnostics into ``FILE:LINE:COL: error: ...`` on stderr with exit status 1 (2 for
command-line misuse)."""
from __future__ import annotations

import os
import sys

import click

from tirc import __version__
from tirc.diagnostics import (CompileError, Diagnostic, InternalError, SourceFile, Span, read_source,
                              render)

EXIT_ERROR = 1


def _read(path: str) -> SourceFile:
    """The text of ``path``; a file that cannot be read is a usage error."""
    try:
        return read_source(path)
    except OSError as e:
        raise click.UsageError(f"cannot read '{path}': {e.strerror}") from None
    except Diagnostic as d:  # not UTF-8
        _fail(d, None)


def _fail(diag: Diagnostic, source: SourceFile | None) -> None:
    click.echo(render(diag, source), err=True)
    sys.exit(EXIT_ERROR)


def load_checked(path: str):
    """Parse and verify a file, or exit 1 with a diagnostic."""
    source = _read(path)
    try:
        return _parse_checked(source, path)
    except Diagnostic as d:
        _fail(d, source)


def _parse_checked(source: SourceFile, path: str):
    """Parse and verify ``source``; Diagnostic for an error."""
    from tirc.frontend.parse import parse
    from tirc.passes.prepare.infer_block_regions import infer_block_regions
    from tirc.passes.prepare.verify import verify

    try:
        mod = parse(source.text, source.name)
        mod = verify(mod, buildable_scopes=False)  # a scope tirc cannot build fails the build only
        mod = infer_block_regions(mod)  # the T.reads/T.writes TVM's parser would infer
    except RecursionError:
        raise Diagnostic("input nested too deeply", Span(path, 1, 1)) from None
    return mod


def _print_cmake_dir(ctx, param, value) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmake"))
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tirc")
@click.option("--cmake-dir", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_cmake_dir,
              help="print the directory of tirc's CMake package (tirc-config.cmake) and exit")
def cli() -> None:
    """tirc: a compiler driver for TIR (TVMScript) modules."""


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def check(files: tuple[str, ...]) -> None:
    """Parse and verify FILES; silent on success but for warnings. Every file is
    checked; exit 1 when any has an error."""
    failed = False
    for path in files:
        source = _read(path)
        try:
            mod = _parse_checked(source, path)
        except Diagnostic as d:
            click.echo(render(d, source), err=True)
            failed = True
            continue
        for w in mod.facts.warnings:
            click.echo(render(Diagnostic(w.message, w.span, severity="warning"), source),
                       err=True)
    if failed:
        sys.exit(EXIT_ERROR)


@cli.command("print")
@click.argument("file", type=click.Path(dir_okay=False))
def print_cmd(file: str) -> None:
    """Print FILE as canonical TVMScript."""
    from tirc.ir.printer import print_module

    mod = load_checked(file)
    click.echo(print_module(mod), nl=False)


EXIT_INTERNAL = 3


def _target_option(ctx, param, value):
    """--target / --host: parsed here so a bad one is a usage error listing valid values."""
    if value is None:
        return None
    from tirc.target.kinds import TargetError, parse_target
    try:
        return parse_target(value)
    except TargetError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None


def bind_target_from(target, host):
    """The bind target of ``--target``/``--host`` (tirc.build.options.bind_target_from); a
    device ``--host`` is a usage error."""
    from tirc.build.options import bind_target_from as bind
    from tirc.target.kinds import TargetError
    try:
        return bind(target, host)
    except TargetError as e:
        raise click.BadParameter(str(e), param_hint="'--host'") from None


def usage_error(e) -> click.UsageError:
    """A bad build option (:class:`tirc.build.options.OptionError`) as a usage error."""
    text = str(e)
    return click.UsageError(text if text.startswith(e.flag) else f"{e.flag}: {text}")


def target_options(command):
    """``--target`` and ``--host``, shared by the commands that compile."""
    command = click.option("--host", "host", callback=_target_option, metavar="TARGET",
                           help="host target of a device target (default llvm)")(command)
    return click.option("--target", "target", callback=_target_option, metavar="TARGET",
                        help="target for functions that have none (default llvm), "
                             "e.g. 'cuda -arch=sm_90'")(command)


def pass_options(command):
    """The opt-in passes (``Pass.option``), shared by the commands that compile."""
    command = click.option(
        "--default-gpu-schedule", is_flag=True,
        help="bind the loops of a GPU function that has no thread bindings to blocks and "
             "threads (TVM's DefaultGPUSchedule); without it such a function is an error")(command)
    return click.option(
        "--instrument-bound-checkers", is_flag=True,
        help="check every buffer access of host code when it runs: an out-of-bounds one "
             "raises RuntimeError naming the buffer (TVM's tir.instrument_bound_checkers)")(command)


def _pass_list(ctx, param, value):
    from tirc.passes.pipeline import pass_names
    names = pass_names(None)  # MakePackedAPI and MakeCAPI (--abi c) both
    values = value if isinstance(value, tuple) else ((value,) if value else ())
    for v in values:
        if v not in names and not (v == "all" and param.name == "print_after"):
            raise click.BadParameter(f"unknown pass '{v}'; valid passes: {', '.join(names)}",
                                     ctx=ctx, param=param)
    return value


def _comma_pass_list(ctx, param, value):
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise click.BadParameter("name at least one pass", ctx=ctx, param=param)
    for n in names:
        _pass_list(ctx, param, n)
    return names


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@target_options
@click.option("--stop-after", callback=_pass_list, metavar="PASS", help="stop after this pass")
@click.option("--print-after", multiple=True, callback=_pass_list, metavar="PASS",
              help="also print the module after this pass (repeatable; 'all' for every pass)")
@click.option("--passes", callback=_comma_pass_list, metavar="P1,P2,...",
              help="run exactly these passes, in this order, on the module as written "
                   "(nothing before them: name Verify and BindTarget if they should run)")
@click.option("--verify-each", is_flag=True, help="verify the module after every pass")
@click.option("--time-passes", is_flag=True, help="report the time of each pass on stderr")
@click.option("--abi", type=click.Choice(["packed", "c"]), default="packed", show_default=True,
              help="host ABI of public functions: MakePackedAPI or MakeCAPI")
@click.option("--symbol-prefix", default="", metavar="P",
              help="put P before every exported symbol, as tirc build --symbol-prefix")
@click.option("--pass-config", "pass_config", multiple=True, metavar="KEY=VALUE",
              help="set one of TVM's pass options (repeatable): tirx.use_async_copy=1 "
              "(cp.async for asynchronous copies), tirx.s_tir.ldg32=1, "
              "s_tir.InjectDoubleBuffer.split_loop=N")
@click.option("--dump-ir", "dump_ir", type=click.Path(file_okay=False), metavar="DIR",
              help="write the module as read and after every pass to DIR/NAME.NN-PASS.tir "
              "(for bug reports: after an internal error, the last file is the failing "
              "pass's input)")
@pass_options
def lower(file, target, host, stop_after, print_after, passes, verify_each, time_passes,
          abi, symbol_prefix, pass_config, dump_ir, instrument_bound_checkers,
          default_gpu_schedule) -> None:
    """Run the pass pipeline on FILE and print the module (TVMScript) at the end."""
    from tirc.api import lower_source
    from tirc.build.jobs import internal_error_report
    from tirc.passes.pipeline import DumpIR, PrintAfter, TimePasses, pass_names

    if passes and stop_after is not None:
        raise click.BadParameter("--passes runs exactly the passes named; it does not take "
                                 "--stop-after", param_hint="'--passes'")
    bind = bind_target_from(target, host)
    from tirc.build.options import OptionError, check_symbol_prefix, parse_pass_config
    try:
        check_symbol_prefix(symbol_prefix)
        config = parse_pass_config(pass_config)
    except OptionError as e:
        raise usage_error(e) from None
    if stop_after is not None and stop_after not in pass_names(abi):
        raise click.BadParameter(f"pass '{stop_after}' does not run with --abi {abi}",
                                 param_hint="'--stop-after'")
    source = _read(file)
    instruments = []
    if print_after:
        names = (set(passes or pass_names(abi)) if "all" in print_after
                 else set(print_after))
        instruments.append(PrintAfter(names, lambda text: click.echo(text, nl=False)))
    timer = TimePasses()
    if time_passes:
        instruments.append(timer)
    if dump_ir is not None:
        instruments.append(DumpIR(dump_ir, os.path.splitext(os.path.basename(file))[0]))
    try:
        text = lower_source(source, bind, None, abi, stop_after=stop_after, passes=passes,
                            verify_each=verify_each, instruments=tuple(instruments),
                            symbol_prefix=symbol_prefix, pass_config=config,
                            instrument_bound_checkers=instrument_bound_checkers,
                            default_gpu_schedule=default_gpu_schedule)
    except CompileError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_ERROR)
    except InternalError as e:
        click.echo(internal_error_report(e, file), err=True)
        sys.exit(EXIT_INTERNAL)
    if time_passes:
        click.echo(timer.report(), err=True)
    click.echo(text, nl=False)


@cli.command(context_settings={"max_content_width": 100})
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False),
                metavar="FILE...")
@target_options
@click.option("-o", "--output", "out_dir", default=".", show_default=True, metavar="OUTDIR",
              type=click.Path(file_okay=False), help="directory for the outputs of every FILE")
@click.option("--shared", is_flag=True, help="also link NAME.so with the system C compiler")
@click.option("--emit", multiple=True, metavar="KINDS",
              help="also write intermediates (comma-separated or repeated): tir "
              "(NAME.lowered.tir, after the pipeline), llvm (NAME.ll, and NAME[.arch].device.ll "
              "per device image), ptx (the PTX files, also with --device-format cubin)")
@click.option("--device-format", multiple=True, metavar="ptx|cubin|fatbin", help="device "
              "image format: ptx (default), cubin (through nvJitLink; one file per arch), both "
              "(ptx,cubin or the flag twice), or fatbin (through nvFatbin: one NAME.fatbin per "
              "target with a cubin per arch and PTX for the newest; the driver picks)")
@click.option("--resource-usage", is_flag=True, help="print each kernel's registers, spills, "
              "stack frame, shared and constant memory per arch, as nvcc --resource-usage "
              "does (needs --device-format cubin or fatbin)")
@click.option("--device-only", is_flag=True,
              help="write only the device images (NAME.ptx or NAME.<arch>.ptx), no host object")
@click.option("--abi", type=click.Choice(["packed", "c"]), default="packed", show_default=True,
              help="host ABI: tvm-ffi packed functions, or plain C functions declared in NAME.h")
@click.option("--symbol-prefix", default="", metavar="P",
              help="put P before every symbol the object exports: C functions Pf and "
              "PNAME_last_error (--abi c), __tvm_ffi_Pf (packed; tvm-ffi calls it Pf), so "
              "that modules with the same function names (te.create_prim_func's main) "
              "link into one program")
@click.option("--pass-config", "pass_config", multiple=True, metavar="KEY=VALUE",
              help="set one of TVM's pass options (repeatable): tirx.use_async_copy=1 "
              "(cp.async for asynchronous copies), tirx.s_tir.ldg32=1, "
              "s_tir.InjectDoubleBuffer.split_loop=N")
@click.option("-lineinfo", "--lineinfo", "line_info", is_flag=True,
              help="device code carries the .tir line of each statement: .file/.loc in the "
              "PTX, kept in cubins and fatbins (Nsight Compute, nvdisasm -g), as nvcc -lineinfo")
@click.option("-g", "--debug", "debug", is_flag=True,
              help="DWARF line tables in the host object (gdb, perf annotate, addr2line show "
              ".tir lines)")
@click.option("--dump-ir", "dump_ir", type=click.Path(file_okay=False), metavar="DIR",
              help="write the module as read and after every pass to DIR/NAME.NN-PASS.tir "
              "(for bug reports: after an internal error, the last file is the failing "
              "pass's input)")
@click.option("--time-passes", is_flag=True,
              help="report the time of each pass and of each build stage (parse, passes, "
              "split, device-codegen, host-codegen, manifest, write) on stderr")
@click.option("--print-after", multiple=True, metavar="STAGE|PASS",
              help="print on stdout what a stage made (parse, passes, split: TIR; "
              "device-codegen: the device images; host-codegen: the host LLVM IR; manifest: "
              "NAME.h and NAME.json; write: the files) or the module after a pass "
              "(repeatable; 'all' for every stage and pass)")
@click.option("--stop-after", metavar="STAGE|PASS",
              help="end the build after this stage or pass, writing no file")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              metavar="N", help="build N inputs at a time, in worker processes; one "
              "input: its host object in N chunks at once")
@click.option("-MD", "depfile", is_flag=True,
              help="also write OUTDIR/NAME.d, a Make rule: every output depends on FILE")
@click.option("-MF", "depfile_path", type=click.Path(dir_okay=False), metavar="DEPFILE",
              help="write the Make rule to DEPFILE instead (one FILE only; implies -MD)")
@click.option("-MT", "depfile_targets", multiple=True, metavar="TARGET",
              help="the target of the Make rule instead of every output (repeatable; one "
                   "FILE only; implies -MD), as cc -MT: what Ninja needs when the other "
                   "outputs are not declared")
@click.option("-v", "--verbose", is_flag=True,
              help="say what is built and where: targets, files written, timings")
@click.option("-q", "--quiet", is_flag=True, help="print nothing but diagnostics")
@pass_options
def build(files, target, host, out_dir, shared, emit, device_format, resource_usage,
          device_only, abi, symbol_prefix, pass_config, line_info, debug, dump_ir, time_passes,
          print_after, stop_after, jobs, depfile, depfile_path, depfile_targets, verbose,
          quiet, instrument_bound_checkers, default_gpu_schedule) -> None:
    """Compile each FILE (NAME.tir): write OUTDIR/NAME.o, the host object with the
    device images embedded, NAME.h (its declarations), NAME.json (a manifest of
    functions and kernels), one device image per device target (NAME.ptx, or
    NAME.<arch>.ptx when there are several) and, with --shared, NAME.so.

    \b
    Functions that carry no target get --target; without --target, they get llvm
    (the host CPU), or the --host CPU target when only --host is given (--host 'llvm
    -mtriple=aarch64-linux-gnu' cross-compiles). A device --target gets --host
    (default llvm) as its host.

    Every input is built on its own: a failing one does not stop the others; with
    several inputs a progress line [i/N] FILE goes to stderr for each, in input
    order. Outputs are written atomically and are byte-identical for the same input
    and flags. Exit status: 0 when every input built, 1 when any failed (each failure
    reported as its diagnostic), 2 for command-line misuse."""
    from tirc.build.jobs import build_many
    from tirc.build.options import OptionError, build_options

    bind_target_from(target, host)  # usage errors first
    try:
        opts = build_options(target, host, out_dir=out_dir, shared=shared, emit=emit,
                             device_format=device_format, device_only=device_only, abi=abi,
                             resource_usage=resource_usage, symbol_prefix=symbol_prefix,
                             pass_config=pass_config,
                             line_info=line_info, debug=debug, dump_ir=dump_ir,
                             time_passes=time_passes, print_after=print_after,
                             stop_after=stop_after, depfile=depfile_path or depfile,
                             depfile_targets=depfile_targets, verbose=verbose,
                             instrument_bound_checkers=instrument_bound_checkers,
                             default_gpu_schedule=default_gpu_schedule)
    except OptionError as e:
        raise usage_error(e) from None
    if verbose and quiet:
        raise click.UsageError("-v/--verbose and -q/--quiet cannot go together")
    if depfile_path is not None and len(files) > 1:
        raise click.UsageError("-MF names the dependency file of one input; with several "
                               "inputs use -MD (OUTDIR/NAME.d for each)")
    if depfile_targets and len(files) > 1:
        raise click.UsageError("-MT names the target of one input's Make rule; with several "
                               "inputs the rules list every output")
    stems: dict[str, str] = {}
    for path in files:
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            _read(path)  # the usage error that says why
            raise click.UsageError(f"cannot read '{path}'")
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem in stems and stems[stem] != path:
            raise click.UsageError(f"'{stems[stem]}' and '{path}' would both write "
                                   f"{os.path.join(out_dir, stem)}.*; build them into "
                                   "different directories")
        stems[stem] = path
    files = list(dict.fromkeys(files))  # one build per input, even if named twice
    status = build_many(files, opts, jobs, quiet, lambda line: click.echo(line, err=True),
                        lambda text: click.echo(text, nl=False))
    if status:
        sys.exit(status)


@cli.command("run", context_settings={"max_content_width": 100})
@click.argument("file", type=click.Path(dir_okay=False))
@target_options
@click.option("--func", metavar="NAME", help="the function to run (default: the only public one)")
@click.option("--inputs", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="input arrays by parameter name")
@click.option("--random", "random_", is_flag=True,
              help="random inputs (seeded) for every buffer not in --inputs and every "
                   "scalar not given by --arg or --dim")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="seed of --random (a non-negative integer)")
@click.option("--dim", multiple=True, metavar="NAME=N", help="a symbolic dimension (repeatable)")
@click.option("--arg", multiple=True, metavar="NAME=VALUE", help="a scalar parameter (repeatable)")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              metavar="N", help="timed runs after one warm-up")
@click.option("--check-against", type=click.Choice(["llvm"]),
              help="also build for the CPU and compare the outputs (exit 1 on mismatch)")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), metavar="OUTDIR",
              help="keep the build here (default: a temporary directory)")
@click.option("--save-outputs", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="write the output arrays to an .npz")
@pass_options
def run_cmd(file, target, host, func, inputs, random_, seed, dim, arg, repeat, check_against,
            out_dir, save_outputs, instrument_bound_checkers, default_gpu_schedule) -> None:
    """Build FILE, run one function on inputs made from its signature, print a summary of
    each output and the median time; --check-against llvm compares with a CPU build.

    \b
    Exit status: 0 ok, 1 a compile error, a bad input or a mismatch, 2 misuse
    (a bad flag, a missing --dim, an unknown --func), 4 no CUDA (or, for an opencl
    target, no OpenCL) device is present."""
    from tirc import run as tr
    from tirc.runtime import NoCudaDevice, NoOpenCLDevice, RuntimeAPIError

    bind_target_from(target, host)
    try:
        opts = tr.RunOptions(target=target, host=host, func=func, inputs=inputs,
                             random=random_, seed=seed, dims=tr.parse_dims(dim),
                             args=tr.parse_assignments(arg, "--arg"), repeat=repeat,
                             check_against=check_against, out_dir=out_dir,
                             save_outputs=save_outputs,
                             instrument_bound_checkers=instrument_bound_checkers,
                             default_gpu_schedule=default_gpu_schedule)
        mod = load_checked(file)
        try:
            tr.run_module(mod, file, opts, click.echo)
        except Diagnostic as d:
            _fail(d, _read(file))
    except tr.RunError as e:
        if e.status == 2:
            raise click.UsageError(str(e)) from None
        click.echo(f"tirc: error: {e}", err=True)
        sys.exit(EXIT_ERROR)
    except NoCudaDevice as e:
        msg = str(e) if "no CUDA device is present" in str(e) else \
            f"no CUDA device is present ({e})"
        click.echo(f"tirc: {msg}", err=True)
        sys.exit(tr.EXIT_NO_CUDA)
    except NoOpenCLDevice as e:
        click.echo(f"tirc: {e}", err=True)
        sys.exit(tr.EXIT_NO_CUDA)
    except (RuntimeAPIError, TypeError, ValueError, RuntimeError, FileNotFoundError) as e:
        click.echo(f"tirc: error: {type(e).__name__}: {e}", err=True)
        sys.exit(EXIT_ERROR)


@cli.command()
def passes() -> None:
    """List the passes of the pipeline, in order, under their phases."""
    from tirc.passes.pipeline import MAKE_C_API, PHASES, PIPELINE
    titles = dict(PHASES)
    phase = None
    for i, p in enumerate(PIPELINE, 1):
        if p.phase != phase:
            phase = p.phase
            click.echo(f"{phase}: {titles[phase]}")
        click.echo(f"{i:2d}. {p.name:<29} {p.doc}")
        if p.name == "MakePackedAPI":  # --abi c runs MakeCAPI in its place
            click.echo(f"    {MAKE_C_API.name + ' (--abi c)':<29} {MAKE_C_API.doc}")


@cli.command()
def targets() -> None:
    """List target kinds with their options, types and defaults."""
    from tirc.target.kinds import describe_kinds
    click.echo(describe_kinds())


def main() -> None:
    """The ``tirc`` program. It owns its process, which it spends the way a compiler
    does: the cycle collector stays off (a build keeps its objects until it ends;
    between inputs of one ``tirc build`` they are collected explicitly) and the process
    ends with ``os._exit`` once the streams are flushed, skipping the teardown of
    every object, which took a tenth of a 200-kernel build. Every file is written and
    renamed, every temporary directory removed, before a command returns."""
    import gc
    import signal
    gc.disable()
    # SIGTERM and SIGINT end tirc by an exception (SystemExit, which click does not
    # turn into "Aborted!", exit 1), so that a build cut short removes its temporary
    # files and stops its workers on the way out: exit 143 or 130. A SIGINT ignored
    # from the start (a background job of a shell) stays ignored.
    signal.signal(signal.SIGTERM, _terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _terminated)
    try:
        cli.main(prog_name="tirc", standalone_mode=True)
        status: int | str | None = 0
    except SystemExit as e:
        status = e.code
    except KeyboardInterrupt:
        click.echo("tirc: interrupted", err=True)
        status = 130
    except Exception as e:  # a bug in tirc, not in the input: say so, without a traceback
        from tirc.build.jobs import internal_error_report
        click.echo(internal_error_report(e, None), err=True)
        status = EXIT_INTERNAL
    _exit_now(status)


def _terminated(signum, frame) -> None:
    import signal
    if signum == signal.SIGINT:
        click.echo("tirc: interrupted", err=True)
    raise SystemExit(128 + signum)


def _exit_now(status: int | str | None) -> None:
    """``sys.exit(status)``'s meaning, without the interpreter's teardown."""
    if status is None:
        status = 0
    elif not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: nothing more can be said
        pass
    os._exit(status)


if __name__ == "__main__":
    main()
