"""Tasks of one build run side by side in forked processes (``tirc build -j N`` on one
input: the host object's chunks, :mod:`tirc.backends.cpu.chunks`; the device code's,
:mod:`tirc.backends.cuda.ptx_chunks`; the call-graph components through the passes).

Two ways to share the work:

* :class:`Started`: one task per process, fixed in advance (the processes :class:`Pulled`
  forks);
* :func:`run_pulled`: more tasks than processes, each process taking the next task not yet
  taken when it is done with one, so that how long each task takes need not be known
  (a dlight matmul costs ten times an elementwise kernel of the same length). The task
  numbers wait in a pipe; reading one is taking it (a pipe read of a few bytes is atomic).
  Which process ran which task does not change the results, which come back in task
  order.

The parent prepares every task before forking, so a child inherits what it works on
and nothing is pickled to it; each child sends its results back pickled through a
pipe, and the parent takes tasks itself meanwhile (after other work of the build
first, for the host chunks: the device code). Results come back in task order,
whatever order the children finish in. A task's exception is
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
import struct
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from tirc.diagnostics import InternalError

R = TypeVar("R")


class ChildDied(RuntimeError):
    """A forked task's process ended without sending its result."""


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


def run_pulled(tasks: list[Callable[[], R]], jobs: int, what: str = "task") -> list[R]:
    """``[t() for t in tasks]`` by up to ``jobs`` processes (this one and forked children),
    each taking the next task in list order when it is free: put the costliest first.
    Errors as :meth:`Pulled.results` raises them."""
    if jobs <= 1 or len(tasks) <= 1 or not hasattr(os, "fork"):
        return [t() for t in tasks]
    return Pulled(tasks, min(jobs, len(tasks)) - 1, what).results()


class Pulled:
    """Tasks taken one at a time, in list order, by ``children`` forked processes from
    now on, and by this process too once it asks for the :meth:`results` (after other
    work of its own: the device code of a build)."""

    def __init__(self, tasks: list[Callable[[], R]], children: int, what: str = "task"):
        self.batched = False
        if len(tasks) > _MAX_PULLED:  # the numbers must fit the pipe: runs of tasks instead
            per = -(-len(tasks) // _MAX_PULLED)
            self.batched = True
            tasks = [partial(_run_all, tasks[i:i + per]) for i in range(0, len(tasks), per)]
        self.tasks = tasks
        self.queue, write = os.pipe()
        try:
            os.write(write, b"".join(_NUMBER.pack(i) for i in range(len(tasks))))
        finally:
            os.close(write)
        try:
            self.started = Started([partial(_pull, tasks, self.queue)] * children, what)
        except BaseException:
            os.close(self.queue)
            raise

    def kill(self) -> None:
        self.started.kill()
        self._close()

    def results(self) -> list[R]:
        """Every task's result, in task order, once this process has taken the tasks left.

        A task that fails stops the sharing: the process that ran it takes the remaining
        numbers out of the pipe, so the others stop after their current task. The error
        raised is that of the first failing task in list order (every task before it
        was taken, so it ran, whoever took it): the same error for the same input."""
        try:
            try:
                mine = _pull(self.tasks, self.queue)
            except BaseException:
                self.started.kill()
                raise
            done: dict[int, tuple[bool, object]] = {}
            for part in self.started.results(mine):
                done.update(part)
        finally:
            self._close()
        failed = [i for i, (ok, _) in done.items() if not ok]
        if failed:
            raise done[min(failed)][1]
        results = [done[i][1] for i in range(len(self.tasks))]
        return [r for run in results for r in run] if self.batched else results

    def _close(self) -> None:
        if self.queue is not None:
            os.close(self.queue)
            self.queue = None


_NUMBER = struct.Struct("<I")
_MAX_PULLED = 4096  # task numbers written to the pipe at once: 16 kB, within any pipe's buffer


def _run_all(tasks: list[Callable[[], R]]) -> list[R]:
    return [t() for t in tasks]


def _pull(tasks: list[Callable[[], R]], queue: int) -> dict[int, tuple[bool, object]]:
    """Run the tasks whose numbers this process takes from ``queue`` until it is empty:
    {number: (True, result) or (False, the exception)}."""
    done: dict[int, tuple[bool, object]] = {}
    while True:
        data = os.read(queue, _NUMBER.size)
        if len(data) < _NUMBER.size:
            return done
        i = _NUMBER.unpack(data)[0]
        try:
            done[i] = (True, tasks[i]())
        except Exception as e:  # noqa: BLE001 (raised by run_pulled, in task order)
            try:
                pickle.dumps(e, pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - sent back from a child: its text
                e = RuntimeError(f"{type(e).__name__}: {e}")
            done[i] = (False, e)
            while os.read(queue, 1 << 16):  # the others stop after their current task
                pass
            return done


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
