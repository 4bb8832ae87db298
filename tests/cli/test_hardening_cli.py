"""The command line under misuse and failure: every file checked,
clear usage errors, random scalars, output paths that cannot be written, temporaries
removed, failed rebuilds that leave the previous outputs alone, dead workers."""
from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner
from conftest import ROOT

from tirc.driver import cli

MATMUL = ROOT / "samples" / "cpu_matmul.tir"
BROKEN = "# from tvm.script import tirx as T\n@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    A[0] = T.expp(A[1])\n"
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def tirc(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


# -- item 16 --------------------------------------------------------------------------------

def test_check_checks_every_file(tmp_path):
    bad1, bad2 = tmp_path / "bad1.tir", tmp_path / "bad2.tir"
    bad1.write_text(BROKEN)
    bad2.write_text(BROKEN.replace("expp", "logg"))
    r = tirc("check", bad1, MATMUL, bad2)
    assert r.exit_code == 1
    assert "bad1.tir:4:12: error: unknown name 'T.expp'" in r.output
    assert "bad2.tir:4:12: error: unknown name 'T.logg'" in r.output
    assert tirc("check", MATMUL, MATMUL).exit_code == 0


def test_run_negative_seed_is_a_usage_error():
    r = tirc("run", MATMUL, "--random", "--seed", "-1")
    assert r.exit_code == 2
    assert "Invalid value for '--seed': -1 is not in the range x>=0" in r.output


SCALARS = """# from tvm.script import tirx as T
@T.prim_func
def axpy(a: T.float32, k: T.int32, X: T.Buffer((16,), "float32"), Y: T.Buffer((16,), "float32")):
    for i in range(16):
        Y[i] = a * X[i] + Y[i] + T.Cast("float32", k)
"""


@needs_cc
def test_run_random_draws_scalar_parameters(tmp_path):
    path = tmp_path / "axpy.tir"
    path.write_text(SCALARS)
    r = tirc("run", path, "--random")
    assert r.exit_code == 0, r.output
    assert "Y: shape (16,) float32" in r.output
    r = tirc("run", path, "--random", "--arg", "a=2")  # k drawn, a given
    assert r.exit_code == 0, r.output
    r = tirc("run", path, "--inputs", tmp_path / "none.npz")
    assert r.exit_code != 0


@needs_cc
def test_shared_with_emit_tir_links_the_object(tmp_path):
    r = tirc("build", MATMUL, "--shared", "--emit", "tir,llvm", "-o", tmp_path)
    assert r.exit_code == 0, r.output
    names = sorted(os.listdir(tmp_path))
    assert names == ["cpu_matmul.h", "cpu_matmul.json", "cpu_matmul.ll", "cpu_matmul.lowered.tir",
                     "cpu_matmul.o", "cpu_matmul.so"]


# -- item 13: output paths that cannot be written ---------------------------------------------

def test_output_directory_that_cannot_be_made_is_a_diagnostic(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for out, why in ((blocker / "out", "Not a directory"),
                     (tmp_path / ("x" * 300), "File name too long")):
        r = tirc("build", MATMUL, "-o", out)
        assert r.exit_code == 1, r.output
        assert f"cpu_matmul.tir: error: cannot create the output directory '{out}': {why}" \
            in r.output
        assert "internal compiler error" not in r.output
    r = tirc("build", MATMUL, "-o", tmp_path, "-MF", blocker / "x.d")
    assert r.exit_code == 1 and f"cannot create the output directory '{blocker}'" in r.output


@pytest.mark.parametrize("errno_, where, message", [
    (13, "mkstemp", "Permission denied"),   # a read-only directory, for a non-root user
    (28, "write", "No space left on device"),  # a full disk
])
def test_unwritable_outputs_are_diagnostics(tmp_path, monkeypatch, errno_, where, message):
    import tirc.build.stages as tb
    from tirc.diagnostics import Diagnostic

    def fail(*args, **kwargs):
        raise OSError(errno_, os.strerror(errno_))

    if where == "mkstemp":
        monkeypatch.setattr(tb.tempfile, "mkstemp", fail)
    else:
        real = tb.os.fdopen

        class Full:
            def __init__(self, f):
                self.f = f

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.f.close()

            def write(self, data):
                fail()

        monkeypatch.setattr(tb.os, "fdopen", lambda fd, mode: Full(real(fd, mode)))
    with pytest.raises(Diagnostic) as e:
        tb.build(MATMUL.read_text(), None, None, tmp_path, "m")
    assert str(e.value.message).startswith(f"cannot write '{tmp_path / 'm.'}")
    assert e.value.message.endswith(message)
    assert os.listdir(tmp_path) == []  # no temporary left behind


# -- items 14, 15: temporaries and failed rebuilds ---------------------------------------------

def _snapshot(d):
    return {p: (d / p).read_bytes() for p in sorted(os.listdir(d)) if (d / p).is_file()}


def test_failed_rebuild_leaves_every_previous_output(tmp_path):
    assert tirc("build", MATMUL, "-o", tmp_path, "-MD").exit_code == 0
    before = _snapshot(tmp_path)
    (tmp_path / "cpu_matmul.json").unlink()
    (tmp_path / "cpu_matmul.json").mkdir()  # one destination unusable
    del before["cpu_matmul.json"]
    edited = tmp_path / "src" / "cpu_matmul.tir"
    edited.parent.mkdir()
    edited.write_text(MATMUL.read_text().replace("128", "64"))
    r = tirc("build", edited, "-o", tmp_path, "-MD")
    assert r.exit_code == 1
    assert f"cannot write '{tmp_path / 'cpu_matmul.json'}': it is a directory" in r.output
    assert _snapshot(tmp_path) == before  # .o, .h and .d untouched, no temporaries


def test_interrupted_write_removes_temporaries(tmp_path, monkeypatch):
    import tirc.build.stages as tb
    assert tirc("build", MATMUL, "-o", tmp_path).exit_code == 0
    before = _snapshot(tmp_path)

    def interrupted(*args):  # SIGINT (or SIGTERM, which tirc turns into SystemExit) arrives
        raise KeyboardInterrupt

    monkeypatch.setattr(tb, "_link", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tb.build(MATMUL.read_text(), None, None, tmp_path, "cpu_matmul", shared=True)
    assert _snapshot(tmp_path) == before


def test_stale_temporaries_of_the_outputs_are_removed(tmp_path):
    stale = [".cpu_matmul.o.abcd1234", ".cpu_matmul.json.zz_9x0q1"]
    keep = [".cpu_matmul.o.notmine", ".other.o.abcd1234", "notes.txt"]
    for name in stale + keep:
        (tmp_path / name).write_text("x")
    assert tirc("build", MATMUL, "-o", tmp_path).exit_code == 0
    names = set(os.listdir(tmp_path))
    assert not names & set(stale) and set(keep) <= names


FAKE_CC = """#!/bin/sh
echo "$PPID $*" >> "{log}"
i=0
while [ $i -lt {sleep}0 ]; do sleep 0.1; i=$((i+1)); done
exec {cc} "$@"
"""


def _fake_cc(tmp_path, sleep):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "cc.log"
    (bin_dir / "cc").write_text(FAKE_CC.format(log=log, sleep=sleep, cc=shutil.which("cc")))
    (bin_dir / "cc").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    return env, log


def _wait_for(cond, seconds=60.0):
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def _inputs(tmp_path):
    paths = []
    for name in ("a", "b"):
        p = tmp_path / f"{name}.tir"
        p.write_text(MATMUL.read_text())
        paths.append(str(p))
    return paths


@needs_cc
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_signal_during_a_build_removes_temporaries(tmp_path, jobs, signame):
    import signal
    import subprocess
    import sys
    sig = getattr(signal, signame)
    env, log = _fake_cc(tmp_path, 30)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "tirc", "build", *_inputs(tmp_path), "-j", jobs,
                             "--shared", "-o", str(out)], env=env, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: log.exists())  # linking: the temporaries are written
        assert any(n.startswith(".") for n in os.listdir(out))
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 128 + sig
    finally:
        proc.kill()
        proc.wait()
    assert _wait_for(lambda: os.listdir(out) == [], 10), os.listdir(out)


# -- item 12: a worker that dies ----------------------------------------------------------------

@needs_cc
def test_dead_worker_fails_its_input_and_the_others_build(tmp_path):
    import signal
    import subprocess
    import sys
    env, log = _fake_cc(tmp_path, 2)
    out = tmp_path / "out"
    a, b = _inputs(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "tirc", "build", a, b, "-j", "2", "--shared",
                             "-o", str(out)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: log.exists() and log.read_text().count("\n") >= 1)
        worker, args = log.read_text().splitlines()[0].split(" ", 1)
        victim = a if "/.a.so." in args else b
        os.kill(int(worker), signal.SIGKILL)  # as the OOM killer would
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 1, err
    assert (f"{victim}: error: the worker process building this input died (killed by signal 9 "
            "(SIGKILL); out of memory?)") in err
    survivor = b if victim == a else a
    assert (out / (os.path.basename(survivor)[:-4] + ".so")).exists()
    assert "1 of 2 inputs failed" in err


@needs_cc
def test_run_output_paths_that_cannot_be_written_are_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = tirc("run", MATMUL, "--random", "--save-outputs", blocker / "x.npz")
    assert r.exit_code == 1 and f"cannot write '{blocker / 'x.npz'}': Not a directory" in r.output
    r = tirc("run", MATMUL, "--random", "-o", blocker / "out")
    assert r.exit_code == 1
    assert f"cannot create the output directory '{blocker / 'out'}': Not a directory" in r.output
