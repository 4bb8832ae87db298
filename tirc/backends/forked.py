"""Tasks of one build run side by side in forked processes (``tirc build -j N`` on one
input: the host object's chunks, :mod:`tirc.backends.cpu.chunks`; the device code's,
:mod:`tirc.backends.cuda.ptx_chunks`; groups of the passes).

The parent prepares every task before forking, so a child inherits what it works on
and nothing is pickled to it; each child runs one task and sends its result back
pickled through a pipe, and the parent runs the first task itself meanwhile (or,
with :class:`Started`, other work of the build first: the device code). Results
come back in task order, whatever order the children finish in. A task's exception is
raised in the parent as the task raised it (a Diagnostic keeps its location); a child
that dies without sending a result is an InternalError naming its task. If the
parent's own task fails, the children are killed and reaped before the error goes on.

Fork, not spawn: a spawned child would import tirc and LLVM again and need its task
pickled, which costs more than the work saved for a module of a few hundred functions.
Only the command line forks (it is single-threaded); the Python API runs tasks in its
own process unless asked for more.
"""
from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable
from typing import TypeVar

from tirc.diagnostics import InternalError

R = TypeVar("R")


class ChildDied(RuntimeError):
    """A forked task's process ended without sending its result."""


def run_forked(tasks: list[Callable[[], R]], what: str = "task") -> list[R]:
    """``[t() for t in tasks]``, the tasks after the first in forked children."""
    if len(tasks) <= 1:
        return [t() for t in tasks]
    started = Started(tasks[1:], what)  # without fork, it runs them here afterwards
    try:
        first = tasks[0]()
    except BaseException:
        started.kill()
        raise
    return started.results(first)


class Started:
    """Tasks running in forked children while this process does other work (the device
    code of a build, then the first task itself): :meth:`results` collects them after
    this process's own result, :meth:`kill` ends them if this process fails first."""

    def __init__(self, tasks: list[Callable[[], R]], what: str = "task"):
        self.what = what
        self.children: list[tuple[int, int]] = []
        if not hasattr(os, "fork"):
            self.pending = list(tasks)  # run here, in order, when the results are asked
            return
        self.pending = []
        try:
            for task in tasks:
                self.children.append(_fork(task))
        except BaseException:
            self.kill()
            raise

    def kill(self) -> None:
        for pid, fd in self.children:
            _kill(pid, fd)
        self.children = []

    def results(self, first: R) -> list[R]:
        """``first`` (this process's own result), then the children's, in task order; a
        task's exception is raised here as it was raised there."""
        results: list[R] = [first] + [t() for t in self.pending]
        error: BaseException | None = None
        children, self.children = self.children, []
        for i, (pid, fd) in enumerate(children, 1):
            with os.fdopen(fd, "rb") as f:
                data = f.read()
            os.waitpid(pid, 0)
            if error is not None:
                continue
            if not data:
                error = InternalError(f"{self.what} {i}",
                                      ChildDied("its process died without a result"))
                continue
            ok, value = pickle.loads(data)
            if ok:
                results.append(value)
            else:
                error = value
        if error is not None:
            raise error
        return results


def _fork(task: Callable[[], R]) -> tuple[int, int]:
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    # the child: never returns into the parent's code, never runs its exit handlers
    os.close(read)
    status = 0
    try:
        try:
            payload = pickle.dumps((True, task()), pickle.HIGHEST_PROTOCOL)
        except BaseException as e:  # noqa: BLE001 (sent to the parent, raised there)
            try:
                payload = pickle.dumps((False, e), pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle: its text
                payload = pickle.dumps((False, RuntimeError(f"{type(e).__name__}: {e}")))
        with os.fdopen(write, "wb") as f:
            f.write(payload)
    except BaseException:  # noqa: BLE001
        status = 1
    os._exit(status)


def _kill(pid: int, fd: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.close(fd)
    os.waitpid(pid, 0)
