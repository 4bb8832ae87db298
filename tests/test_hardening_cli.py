"""The command line under misuse and failure (issue 15, items 12-16): every file checked,
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
