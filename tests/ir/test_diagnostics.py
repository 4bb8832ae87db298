"""Broken input never gives a traceback: hundreds of mutants of the samples (truncations,
deleted brackets, unknown names, stray tokens, bad indentation, unknown dtypes) each
exit 1 with ``FILE:LINE:COL: error:``, the source line and a caret."""
from __future__ import annotations

import random
import re

import pytest
from click.testing import CliRunner

from conftest import SAMPLES
from tirc.driver import cli
from tirc.testing.mutate import mutants

LOCATION = re.compile(r"^(?P<file>[^\n]+):(?P<line>\d+):(?P<col>\d+): error: .+")


def _check(runner: CliRunner, path, text: str):
    path.write_text(text)
    result = runner.invoke(cli, ["check", str(path)])
    return result


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_broken_variants_of_samples_give_located_errors(sample, tmp_path):
    rng = random.Random(sample.name)
    runner = CliRunner()
    text = sample.read_text()
    count = 0
    for kind, broken in mutants(text, rng, per_kind=12):
        target = tmp_path / "broken.tir"
        result = _check(runner, target, broken)
        where = f"{kind} variant of {sample.name}:\n{broken}"
        assert result.exception is None or isinstance(result.exception, SystemExit), \
            f"crash ({result.exception!r}) on {where}"
        assert result.exit_code == 1, f"exit {result.exit_code} on {where}\n{result.output}"
        lines = result.output.splitlines()
        m = LOCATION.match(lines[0])
        assert m and m.group("file") == str(target), f"no location in {lines[0]!r} for {where}"
        assert len(lines) >= 3 and "^" in lines[2], f"no caret line for {where}:\n{result.output}"
        count += 1
    assert count >= 60


def test_deeply_nested_expression_is_a_diagnostic(tmp_path):
    depth = 5000
    text = ("@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n    A[0] = "
            + "(" * depth + "1" + ")" * depth + "\n")
    path = tmp_path / "deep.tir"
    result = _check(CliRunner(), path, text)
    assert result.exit_code == 1, result.output
    assert "nested" in result.output
    assert LOCATION.match(result.output.splitlines()[0])


def test_deeply_nested_blocks_are_a_diagnostic(tmp_path):
    depth = 400
    lines = ["@T.prim_func", "def f(A: T.Buffer((4,), \"int32\")):"]
    for d in range(depth):
        lines.append("    " * (d + 1) + "if A[0] > 0:")
    lines.append("    " * (depth + 1) + "A[0] = 1")
    path = tmp_path / "deep.tir"
    result = _check(CliRunner(), path, "\n".join(lines) + "\n")
    assert result.exit_code == 1, result.output
    assert "nested" in result.output
    assert LOCATION.match(result.output.splitlines()[0])


def test_binary_garbage_is_a_diagnostic(tmp_path):
    path = tmp_path / "garbage.tir"
    path.write_bytes(b"\xff\xfe\x00garbage")
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == 1
    assert LOCATION.match(result.output.splitlines()[0])
