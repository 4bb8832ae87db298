"""``tirc build FILE...``: several inputs, each built on its own.

Every input is an independent job: one failure does not stop the others. ``jobs=1``
builds them one after the other in this process; ``jobs>1`` in worker processes
(spawned, so a worker never inherits a parent's threads or CUDA state), each building
one input at a time: a worker that dies fails only the input it was building, and a new
one takes over the rest. Results are reported in input order whatever order
the workers finish in, so the output of a build is the same from run to run: for each
input its progress line ``[i/N] FILE`` (several inputs, not ``quiet``), its ``-v``
lines, then its diagnostics. All of it goes to stderr.

A job's status is 0 (built), 1 (a diagnostic: the input's error) or 3 (an internal
compiler error); the build's exit status is the largest.
"""
from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from dataclasses import field, replace
from pathlib import Path

from tirc.diagnostics import Diagnostic, InternalError, Span, load_source, render
from tirc.records import record
from tirc.build.options import BuildOptions

OK, FAILED, INTERNAL = 0, 1, 3


@record
class Outcome:
    """What building one input gave: its status, rendered diagnostics and -v lines."""

    path: str
    status: int = OK
    messages: list[str] = field(default_factory=list)  # diagnostics, rendered
    info: list[str] = field(default_factory=list)  # -v lines
    report: list[str] = field(default_factory=list)  # --resource-usage lines (even with -q)
    printed: list[str] = field(default_factory=list)  # --print-after texts, for stdout
    summary: str = ""  # -v: the last line, after the diagnostics
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0


def build_one(path: str, opts: BuildOptions) -> Outcome:
    """Build one input; never raises for an error in the input (nor for a bug in tirc,
    which becomes status 3)."""
    from tirc.build.stages import build

    start = time.perf_counter()
    outcome = Outcome(path)
    # A build makes many small objects that stay alive until it ends (IR nodes,
    # llvmlite values); the cyclic collector would rescan them again and again (a third
    # of the time of a 500-kernel module) to find little garbage. Off while building.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _build_into(outcome, path, opts, build)
    finally:
        if collecting:
            gc.enable()
    outcome.seconds = time.perf_counter() - start
    if opts.verbose:
        state = "built" if outcome.status == OK else "failed"
        outcome.summary = f"tirc: {path}: {state} in {outcome.seconds:.2f} s"
    return outcome


def _build_into(outcome: Outcome, path: str, opts: BuildOptions, build) -> None:
    """Build ``path`` and record the files or the diagnostics in ``outcome``."""
    source = None
    try:
        source = load_source(path)
        text = source.text
        try:
            result = build(text, options=opts, name=Path(path).stem, filename=path,
                           show=outcome.printed.append)
        except RecursionError:
            raise Diagnostic("input nested too deeply", Span(path, 1, 1)) from None
        outcome.files = [str(p) for p in result.files]
        outcome.messages += [render(w, source) for w in result.warnings]
        if opts.resource_usage:
            from tirc.backends.cuda.resource_usage import nvcc_report
            from tirc.backends.rocm.resource_usage import amdgpu_report, is_amdgpu
            kernels = result.manifest.get("kernels", [])
            outcome.report = (nvcc_report([k for k in kernels if not is_amdgpu(k)])
                              + amdgpu_report([k for k in kernels if is_amdgpu(k)]))
        if opts.time_passes:
            from tirc.passes.pipeline import timing_report
            outcome.report += timing_report("pass timings", result.pass_times).splitlines()
            outcome.report += timing_report("stage timings", result.stage_times).splitlines()
            within = [(k, t) for k, t in result.device_times if k != "with-passes"]
            if within:
                outcome.report += timing_report("device code timings (within device-codegen)",
                                                within).splitlines()
            beside = [(k, t) for k, t in result.device_times if k == "with-passes"]
            if beside:  # -j N: kernels compiled in the processes that ran their passes
                outcome.report += timing_report(
                    "device code compiled with the passes (within passes, all processes)",
                    beside).splitlines()
        if opts.verbose:
            outcome.info.append(f"tirc: {path}: host code for {result.host_target.describe()}"
                                + (f", device code for {len(result.devices)} target(s)"
                                   if result.devices else ""))
            for p in result.files:
                try:
                    size = f" ({os.path.getsize(p)} bytes)"
                except OSError:
                    size = ""
                outcome.info.append(f"tirc: wrote {p}{size}")
    except Diagnostic as d:
        outcome.status = FAILED
        text = render(d, source)
        outcome.messages.append(text if d.span is not None else f"{path}: {text}")
    except Exception as e:  # noqa: BLE001  a bug in tirc: reported, the others go on
        outcome.status = INTERNAL
        outcome.messages.append(internal_error_report(e, path))


def internal_error_report(e: Exception, path: str | None) -> str:
    """What the driver prints for a bug in tirc: where it happened (the pass or stage,
    when known), the input, and what a bug report needs."""
    where = e.where if isinstance(e, InternalError) else "tirc"
    cause = e.cause if isinstance(e, InternalError) else e
    what = f"tirc: internal error in {where}"
    if path is not None:
        what += f" while compiling {path}"
    rerun = (f"tirc build {path} <same options> --dump-ir DIR" if path is not None
             else "the same command with --dump-ir DIR")
    return (f"{what}: {type(cause).__name__}: {cause}\n"
            f"this is a bug in tirc, not in the input; please report it with the input file "
            f"and the modules that {rerun} writes")


def _worker(conn, opts: BuildOptions) -> None:
    """A worker process: build each ``(index, path)`` received, send back its Outcome;
    None ends it. SIGTERM ends it as SIGINT does, by an exception, so that a build cut
    short removes its temporary files."""
    import signal
    signal.signal(signal.SIGTERM, _exit_on_signal)
    gc.disable()
    try:
        while True:
            job = conn.recv()
            if job is None:
                return
            i, path = job
            conn.send((i, build_one(path, opts)))
            gc.collect()
    except (EOFError, OSError, KeyboardInterrupt):
        return  # the parent is gone or stopped us
    except SystemExit as e:  # SIGTERM, after the build's cleanup: die of it, as it meant
        if isinstance(e.code, int) and e.code > 128:
            signal.signal(e.code - 128, signal.SIG_DFL)
            os.kill(os.getpid(), e.code - 128)
        raise


def _exit_on_signal(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _build_in_workers(paths: list[str], opts: BuildOptions, jobs: int):
    """Outcomes of building ``paths`` in ``jobs`` worker processes (spawned), yielded in
    input order. A worker that dies (killed, out of memory) fails the input it was
    building, with a message naming it and the signal; a new worker takes over the
    inputs left. Interrupted (SIGINT, or SIGTERM made an exception by the driver), the
    workers are stopped with SIGTERM, so they remove their temporary files."""
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("spawn")
    pending = list(enumerate(paths))[::-1]  # popped from the end: input order
    done: dict[int, Outcome] = {}
    workers: dict = {}  # Process -> (connection, index being built or None)
    next_report = 0

    def start() -> None:
        parent, child = context.Pipe()
        p = context.Process(target=_worker, args=(child, opts), daemon=True)
        p.start()
        child.close()
        workers[p] = (parent, None)

    def give(p) -> None:
        conn, _ = workers[p]
        if pending:
            i, path = pending.pop()
            conn.send((i, path))
            workers[p] = (conn, i)
        else:
            conn.send(None)
            workers[p] = (conn, None)

    try:
        for _ in range(min(jobs, len(paths))):
            start()
        for p in list(workers):
            give(p)
        while next_report < len(paths):
            busy = {conn: p for p, (conn, i) in workers.items() if i is not None}
            ready = wait(list(busy) + [p.sentinel for p in busy.values()])
            for p in list(busy.values()):
                conn, i = workers[p]
                if conn in ready or conn.poll():
                    try:
                        j, outcome = conn.recv()
                    except (EOFError, OSError):
                        pass  # it died while sending: below
                    else:
                        done[j] = outcome
                        give(p)
                        continue
                if p.sentinel in ready or not p.is_alive():
                    p.join()
                    done[i] = _died(paths[i], p.exitcode)
                    conn.close()
                    del workers[p]
                    if pending:
                        start()
                        give(list(workers)[-1])
            while next_report in done:
                yield done.pop(next_report)
                next_report += 1
    finally:
        for p, (conn, _) in workers.items():
            if p.is_alive():
                p.terminate()  # SIGTERM: the build in progress removes its temporaries
        for p in workers:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()


def _died(path: str, exitcode: int | None) -> Outcome:
    import signal
    if exitcode is not None and exitcode < 0:
        try:
            how = f"killed by signal {-exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            how = f"killed by signal {-exitcode}"
        if -exitcode == signal.SIGKILL:
            how += "; out of memory?"
    else:
        how = f"exit status {exitcode}"
    return Outcome(path, FAILED, [f"{path}: error: the worker process building this input "
                                  f"died ({how})"])


def build_many(paths: list[str], opts: BuildOptions, jobs: int = 1, quiet: bool = False,
               echo: Callable[[str], None] = print,
               out: Callable[[str], None] | None = None) -> int:
    """Build every input (``jobs`` at a time); report each in input order through
    ``echo`` (lines for stderr) and ``out`` (the ``--print-after`` texts, for stdout;
    default: ``echo``); return the exit status (0, 1 when any input failed, 3 for an
    internal error)."""
    out = out or echo
    start = time.perf_counter()
    n = len(paths)
    status = OK
    failed = 0

    def report(i: int, outcome: Outcome) -> None:
        nonlocal status, failed
        if n > 1 and not quiet:
            echo(f"[{i}/{n}] {outcome.path}")
        if not quiet:
            for line in outcome.info:
                echo(line)
        for text in outcome.printed:
            out(text)
        for line in outcome.report:
            echo(line)
        for message in outcome.messages:
            echo(message)
        if outcome.summary and not quiet:
            echo(outcome.summary)
        status = max(status, outcome.status)
        failed += outcome.status != OK

    if jobs <= 1 or n <= 1:
        if n == 1 and jobs > 1:  # one input: its functions side by side
            opts = replace(opts, jobs=jobs)
        for i, path in enumerate(paths, 1):
            report(i, build_one(path, opts))
            if i < n and not gc.isenabled():  # the caller turned the collector off
                gc.collect()
    else:
        for i, outcome in enumerate(_build_in_workers(paths, opts, min(jobs, n)), 1):
            report(i, outcome)
    if opts.verbose and not quiet and n > 1:
        echo(f"tirc: {n - failed} of {n} inputs built in "
             f"{time.perf_counter() - start:.2f} s (-j {jobs})")
    elif failed and n > 1 and not quiet:
        echo(f"tirc: {failed} of {n} inputs failed")
    return status
