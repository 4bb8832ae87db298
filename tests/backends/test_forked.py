"""``forked.run_pulled``: tasks shared out between processes that each take the next
task when free; the results in task order, the first failing task's error."""
from __future__ import annotations

import os
import time

import pytest

from tirc.backends import forked
from tirc.backends.forked import run_pulled
from tirc.diagnostics import Diagnostic, InternalError, Span


def _task(i, seconds=0.0):
    def run():
        time.sleep(seconds)
        return i, os.getpid()
    return run


def test_results_come_back_in_task_order_from_several_processes():
    # the first task is long: the other process takes the next ones meanwhile
    tasks = [_task(0, 0.6)] + [_task(i, 0.01) for i in range(1, 12)]
    results = run_pulled(tasks, 2)
    assert [i for i, _ in results] == list(range(12))
    pids = {pid for _, pid in results}
    assert len(pids) == 2 and os.getpid() in pids
    # the process that took the long task ran nothing else while the other took the rest
    assert {pid for _, pid in results[1:]} == pids - {results[0][1]}


def test_one_process_runs_them_here_in_order():
    assert run_pulled([_task(i) for i in range(3)], 1) == [(i, os.getpid()) for i in range(3)]


def test_the_first_failing_task_in_order_is_the_error():
    def failing(i, seconds):
        def run():
            time.sleep(seconds)
            raise Diagnostic(f"task {i} failed", Span("m.tir", i + 1, 1))
        return run
    # task 3 fails after task 5 has already failed in the other process
    tasks = [_task(0), _task(1), _task(2), failing(3, 0.3), _task(4), failing(5, 0.0)] + \
        [_task(i) for i in range(6, 10)]
    with pytest.raises(Diagnostic) as e:
        run_pulled(tasks, 2)
    assert e.value.message == "task 3 failed" and e.value.span.line == 4


def test_an_error_that_does_not_pickle_comes_back_as_its_text():
    class Unpicklable(Exception):
        def __reduce__(self):
            raise TypeError("no")

    def run():
        if os.getpid() != parent:
            raise Unpicklable("from a child")
        time.sleep(0.3)
        return 0
    parent = os.getpid()
    with pytest.raises(RuntimeError, match="Unpicklable: from a child"):
        run_pulled([run, run, run], 2)


def test_a_child_that_dies_is_an_internal_error():
    def run():
        if os.getpid() != parent:
            os._exit(3)
        time.sleep(0.3)
        return 0
    parent = os.getpid()
    with pytest.raises(InternalError, match="task 1.*died without a result"):
        run_pulled([run, run, run], 2)


def test_more_tasks_than_the_pipe_holds_go_in_runs(monkeypatch):
    monkeypatch.setattr(forked, "_MAX_PULLED", 4)
    results = run_pulled([_task(i) for i in range(30)], 2)
    assert [i for i, _ in results] == list(range(30))


def test_an_error_in_this_process_is_raised_with_the_children_reaped(monkeypatch):
    pids, fork = [], forked._fork

    def recording(task):
        pid, fd = fork(task)
        pids.append(pid)
        return pid, fd
    monkeypatch.setattr(forked, "_fork", recording)
    parent = os.getpid()

    def run():
        if os.getpid() == parent:
            return 1 // 0
        time.sleep(0.3)  # a child still busy when the error comes
        return 0
    with pytest.raises(ZeroDivisionError):
        run_pulled([run, run], 2)
    assert len(pids) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], os.WNOHANG)


def test_a_childs_error_is_raised_here_as_raised_there():
    parent = os.getpid()

    def run():
        if os.getpid() != parent:
            raise KeyError("from a child")
        time.sleep(0.3)
        return 1
    with pytest.raises(KeyError, match="from a child"):
        run_pulled([run, run, run], 2)
