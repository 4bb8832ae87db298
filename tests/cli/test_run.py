"""``tirc run`` (tirc/run.py): the CPU path without a GPU; the CUDA run is marked gpu."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import ROOT

from tirc.driver import cli
from tirc.frontend.parse import parse
from tirc.diagnostics import Diagnostic
from tirc.passes.lower.serialize_threads import serialize_threads
from tirc.run import (
    EXIT_NO_CUDA,
    RunError,
    _build_and_load,
    compare,
)

MATMUL = str(ROOT / "samples" / "cpu_matmul.tir")
VECTOR_ADD = str(ROOT / "samples" / "vector_add.tir")
REDUCTION = str(ROOT / "samples" / "shared_reduction.tir")


def run(*args):
    return CliRunner().invoke(cli, ["run", *args])


def test_random_summary_and_timing(tmp_path):
    r = run(MATMUL, "--random", "--repeat", "3", "--save-outputs", str(tmp_path / "o.npz"))
    assert r.exit_code == 0, r.output
    assert "ran matmul on cpu:0" in r.output
    assert "C: shape (128, 64) float32  min " in r.output
    assert "time: median " in r.output and "over 3 runs" in r.output
    with np.load(tmp_path / "o.npz") as out:
        assert list(out.files) == ["C"]  # A and B are only read
    # seeded: the same seed gives the same outputs
    assert run(MATMUL, "--random", "--save-outputs", str(tmp_path / "o2.npz")).exit_code == 0
    with np.load(tmp_path / "o.npz") as a, np.load(tmp_path / "o2.npz") as b:
        np.testing.assert_array_equal(a["C"], b["C"])


def test_inputs_match_numpy(tmp_path):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 256)).astype("float32")
    b = rng.standard_normal((256, 64)).astype("float32")
    np.savez(tmp_path / "in.npz", A=a, B=b, C=np.full((128, 64), 7, "float32"))
    r = run(MATMUL, "--inputs", str(tmp_path / "in.npz"), "--save-outputs",
            str(tmp_path / "out.npz"), "-o", str(tmp_path / "build"))
    assert r.exit_code == 0, r.output
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["C"], a @ b, rtol=1e-4, atol=1e-4)
    assert (tmp_path / "build" / "cpu_matmul.so").exists()


def test_inputs_partial_with_random(tmp_path):
    np.savez(tmp_path / "in.npz", A=np.ones((128, 256), "float32"))
    assert run(MATMUL, "--inputs", str(tmp_path / "in.npz")).exit_code == 1
    r = run(MATMUL, "--inputs", str(tmp_path / "in.npz"), "--random")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("arrays, message", [
    ({"A": np.zeros((128, 256)), "B": np.zeros((256, 64)), "C": np.zeros((128, 64)),
      "D": np.zeros(3)}, "no buffer parameter named 'D'"),
    ({"A": np.zeros((128, 256)), "B": np.zeros((256, 64))}, "no array for 'C'"),
    ({"A": np.zeros((128, 255)), "B": np.zeros((256, 64)), "C": np.zeros((128, 64))},
     "'A' has shape (128, 255), the function takes (128, 256)"),
    ({"A": np.zeros((128, 256), "complex64"), "B": np.zeros((256, 64)),
      "C": np.zeros((128, 64))}, "'A' has dtype complex64"),
])
def test_bad_inputs(tmp_path, arrays, message):
    np.savez(tmp_path / "in.npz", **arrays)
    r = run(MATMUL, "--inputs", str(tmp_path / "in.npz"))
    assert r.exit_code == 1
    assert message in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("args, message", [
    (["--random", "--dim", "n"], "bad --dim 'n'"),
    (["--random", "--dim", "n=x"], "must be an integer"),
    (["--random", "--func", "nope"], "no public function of that name; the module has matmul"),
    ([], "--inputs FILE.npz, --random, or both"),
    (["--random", "--arg", "x=1"], "no scalar parameter 'x'"),
])
def test_usage_errors(args, message):
    r = run(MATMUL, *args)
    assert r.exit_code == 2, r.output
    assert message in r.output


def test_missing_dim_names_it():
    r = run(VECTOR_ADD, "--target", "cuda", "--random")
    assert r.exit_code == 2
    assert "needs the dimension 'n': give --dim n=VALUE" in r.output


def _has_gpu() -> bool:
    from tirc import runtime as rt
    return rt.device("cuda", 0).exists


@pytest.mark.skipif(_has_gpu(), reason="checks the message given without a GPU")
def test_cuda_without_gpu():
    r = run(VECTOR_ADD, "--target", "cuda", "--random", "--dim", "n=1024")
    assert r.exit_code == EXIT_NO_CUDA == 4
    assert "no CUDA device is present" in r.output and "Traceback" not in r.output


def test_check_against_refused_for_shared_memory():
    r = run(REDUCTION, "--target", "cuda", "--random", "--check-against", "llvm")
    assert r.exit_code == 1
    assert "--check-against llvm is not possible for this module" in r.output
    assert "shared memory" in r.output


def test_check_against_llvm_cpu_module():
    r = run(MATMUL, "--random", "--check-against", "llvm")
    assert r.exit_code == 0, r.output
    assert "check against llvm: ok (1 output" in r.output


def test_serialized_vector_add_matches_numpy(tmp_path):
    """The rewrite --check-against uses for CUDA modules, run on the CPU."""
    mod = serialize_threads(parse(Path(VECTOR_ADD).read_text(), VECTOR_ADD))
    lib, manifest = _build_and_load(mod, "llvm", None, str(tmp_path), "vector_add", VECTOR_ADD)
    assert [p["shape"] for p in manifest["functions"][0]["params"]] == [["n"]] * 3
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(1000).astype("float32") for _ in range(2))
    c = np.zeros_like(a)
    lib["vector_add"](a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_serialize_refuses_barriers_and_launch_thread():
    text = '''
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        A[tx] = T.float32(1)
        T.tvm_storage_sync("shared")
'''
    with pytest.raises(Diagnostic, match="calls T.tvm_storage_sync") as e:
        serialize_threads(parse(text, "f.tir"))
    assert e.value.span.line == 6  # at the barrier
    text = '''
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    A[tx] = T.float32(1)
'''
    with pytest.raises(Diagnostic, match="T.launch_thread"):
        serialize_threads(parse(text, "f.tir"))


def test_compare_reports_largest_difference():
    got = {"C": np.array([1.0, 2.0, 3.5], "float32")}
    want = {"C": np.array([1.0, 2.0, 3.0], "float32")}
    with pytest.raises(RunError, match=r"largest difference 0.5 at \(2,\)"):
        compare(got, want, lambda s: None)
    lines = []
    compare({"C": np.array([1, 2], "int32")}, {"C": np.array([1, 2], "int32")}, lines.append)
    assert lines and "ok" in lines[0]
    with pytest.raises(RunError, match="exact"):
        compare({"C": np.array([1, 3], "int32")}, {"C": np.array([1, 2], "int32")})


@pytest.mark.gpu
def test_cuda_vector_add_matches_llvm():
    r = run(VECTOR_ADD, "--target", "cuda", "--random", "--repeat", "20", "--dim",
            "n=1048576", "--check-against", "llvm")
    assert r.exit_code == 0, r.output
    assert "on cuda:0" in r.output and "CUDA events" in r.output
    assert "over 20 runs" in r.output
    assert "check against llvm: ok" in r.output
