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

LOCATION = re.compile(r"^(?P<file>[^\n]+):(?P<line>\d+):(?P<col>\d+): error: .+")


def _code_positions(text: str, chars: str) -> list[int]:
    """Offsets of ``chars`` outside comments and string literals."""
    out, quote, comment = [], None, False
    for i, ch in enumerate(text):
        if ch == "\n":
            comment, quote = False, None
        elif comment:
            continue
        elif quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in chars:
            out.append(i)
    return out


def _body_lines(lines: list[str]) -> list[int]:
    """Indices of code lines indented like the line before them (not a block's first)."""
    out = []
    for i in range(1, len(lines)):
        cur, prev = lines[i], lines[i - 1]
        if not cur.strip() or cur.lstrip().startswith("#") or not prev.strip():
            continue
        indent = len(cur) - len(cur.lstrip())
        if indent and indent == len(prev) - len(prev.lstrip()) and not prev.rstrip().endswith(":"):
            out.append(i)
    return out


def mutants(text: str, rng: random.Random, per_kind: int):
    brackets = _code_positions(text, "()[]{}")
    for pos in rng.sample(brackets, min(per_kind, len(brackets))):
        yield "deleted bracket", text[:pos] + text[pos + 1:]
    for pos in rng.sample(brackets, min(per_kind, len(brackets))):
        if text[pos] in "([{":
            yield "truncated", text[:pos + 1]
    cuts = _code_positions(text, ",=:")
    for pos in rng.sample(cuts, min(per_kind, len(cuts))):
        yield "truncated", text[:pos + 1]
    names = [m for m in re.finditer(r"\bT\.([A-Za-z_]\w*)", text)
             if not text[text.rfind("\n", 0, m.start()) + 1:m.start()].lstrip().startswith("#")]
    for m in rng.sample(names, min(per_kind, len(names))):
        yield "unknown name", text[:m.end()] + "_nosuch" + text[m.end():]
    spots = _code_positions(text, " ")
    for pos in rng.sample(spots, min(per_kind, len(spots))):
        yield "stray token", text[:pos] + " $ " + text[pos:]
    for pos in rng.sample(spots, min(per_kind // 2, len(spots))):
        yield "stray token", text[:pos] + " ) " + text[pos:]
    lines = text.split("\n")
    body = _body_lines(lines)
    for i in rng.sample(body, min(per_kind, len(body))):
        changed = list(lines)
        changed[i] = " " + changed[i] if rng.random() < 0.5 else changed[i][1:]
        yield "bad indentation", "\n".join(changed)
    for m in list(re.finditer(r'"(float32|int32|float16)"', text))[:per_kind]:
        yield "unknown dtype", text[:m.start() + 1] + "float33" + text[m.end() - 1:]


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
