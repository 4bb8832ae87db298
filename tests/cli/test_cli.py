"""The command line: exit statuses, silence on success, diagnostics on stderr."""
from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from conftest import SAMPLES, TESTS
from tirc import __version__
from tirc.driver import cli

BROKEN = """@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    A[0] = T.expp(A[1])
"""


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_check_is_silent_on_valid_input():
    result = run("check", *map(str, SAMPLES))
    assert result.exit_code == 0
    assert result.output == ""


def test_print_writes_canonical_text():
    path = next(p for p in SAMPLES if p.name == "device_call_add.tir")
    result = run("print", str(path))
    assert result.exit_code == 0
    assert result.output.startswith("# from tvm.script import ir as I\n")
    assert "def add(a: T.int32, b: T.int32) -> T.int32:" in result.output
    assert "length: T.int32 = Module.add(64, 64)" in result.output


def test_error_has_location_source_line_and_caret(tmp_path):
    path = tmp_path / "broken.tir"
    path.write_text(BROKEN)
    result = run("check", str(path))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{path}:3:12: error: unknown name 'T.expp'",
        "      A[0] = T.expp(A[1])",
        "             ^~~~~~~~~~~~",
    ]


def test_misuse_exits_2():
    assert run("check").exit_code == 2
    assert run("frobnicate").exit_code == 2
    assert run("check", "--no-such-flag", "x.tir").exit_code == 2


def test_missing_file_is_misuse(tmp_path):
    result = run("check", str(tmp_path / "nope.tir"))
    assert result.exit_code == 2
    assert "cannot read" in result.output


def test_version():
    result = run("--version")
    assert result.exit_code == 0
    assert __version__ in result.output


def test_python_dash_m_runs_the_same_cli(tmp_path):
    path = tmp_path / "broken.tir"
    path.write_text(BROKEN)
    proc = subprocess.run([sys.executable, "-m", "tirc", "check", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"{path}:3:12: error: unknown name 'T.expp'")
    assert "Traceback" not in proc.stderr
    ok = subprocess.run([sys.executable, "-m", "tirc", "check", str(SAMPLES[0])],
                        capture_output=True, text=True)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")


def test_the_program_flushes_before_its_quick_exit(tmp_path):
    """``main`` ends with os._exit: buffered output (a pipe) must still arrive whole,
    and statuses keep their meaning."""
    from tirc.ir.printer import print_module
    from tirc.frontend.parse import parse_file

    vector_add = next(p for p in SAMPLES if p.name == "vector_add.tir")
    proc = subprocess.run([sys.executable, "-m", "tirc", "print", str(vector_add)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    assert proc.stdout == print_module(parse_file(str(vector_add)))
    bad = tmp_path / "bad.tir"
    bad.write_text("@T.prim_func\ndef f(:\n")
    proc = subprocess.run([sys.executable, "-m", "tirc", "check", str(bad)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "error" in proc.stderr


def test_one_process_builds_several_inputs_in_turn(tmp_path):
    cpu = next(p for p in SAMPLES if p.name == "cpu_matmul.tir")
    other = tmp_path / "other.tir"
    other.write_text(cpu.read_text())
    proc = subprocess.run([sys.executable, "-m", "tirc", "build", str(cpu), str(other),
                           "-o", str(tmp_path / "out")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "[2/2]" in proc.stderr
    assert (tmp_path / "out" / "cpu_matmul.o").exists() and (tmp_path / "out" / "other.o").exists()


def test_pass_config_sets_tvm_pass_options_and_passes_run_by_tvm_name(tmp_path):
    gemm = TESTS / "corpus" / "pipelined_gemm" / "gemm_2stage_scalar.tir"
    base = ("lower", str(gemm), "--target", "cuda -arch=sm_80")
    passes = ("--passes", "Verify,InferBlockRegions,BindTarget,InjectSoftwarePipeline")
    result = run(*base, *passes)
    assert result.exit_code == 0, result.output
    assert "async_commit_queue_scope" in result.output
    for bad in ("tirx.use_async_copy=maybe", "no.such.option=1", "tirx.use_async_copy"):
        result = run(*base, "--pass-config", bad)
        assert result.exit_code == 2 and "--pass-config" in result.output
    result = run("build", str(gemm), "--target", "cuda -arch=sm_80", "--device-only",
                 "-o", str(tmp_path), "--pass-config", "tirx.use_async_copy=1")
    assert result.exit_code == 0, result.output
    assert "cp.async.ca.shared.global" in (tmp_path / "gemm_2stage_scalar.ptx").read_text()
