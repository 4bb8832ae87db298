"""Input fuzzing through `tirc build` (CI-sized): mutated samples never give a
traceback or a crash; a rejected input exits 1 with a location and leaves no output
file; an input that stays valid builds. The long run is `bench/fuzz_input.py`."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SAMPLES, TESTS
from tirc.driver import cli
from tirc.testing.mutate import blind_mutants, mutants

LOCATION = re.compile(r"^(?P<file>[^\n]+):(?P<line>\d+):(?P<col>\d+): error: .+")


CUDA = ["--target", "cuda -arch=sm_90", "--host", "llvm"]
CORPUS = sorted((TESTS / "corpus" / "tvm").glob("*.tir"))


def build(tmp_path, data: bytes, index: int, flags: list[str] = CUDA):
    src = tmp_path / f"m{index}.tir"
    src.write_bytes(data)
    out = tmp_path / f"out{index}"
    result = CliRunner().invoke(cli, ["build", str(src), "-o", str(out)] + flags)
    return src, out, result


def check(src, out, result, must_fail: bool, what: str):
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"crash ({result.exception!r}) on {what}"
    assert result.exit_code in ((1,) if must_fail else (0, 1)), \
        f"exit {result.exit_code} on {what}:\n{result.output}"
    if result.exit_code == 1:
        first = result.output.splitlines()[0]
        m = LOCATION.match(first)
        assert m and m.group("file") == str(src), f"no location in {first!r} for {what}"
        assert not out.exists() or not any(out.iterdir()), f"partial output left for {what}"
    else:
        assert (out / f"{src.stem}.o").is_file()


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_mutated_samples_through_build(sample, tmp_path):
    rng = random.Random(f"build:{sample.name}")
    text = sample.read_text()
    cases = [(k, t.encode(), True) for k, t in mutants(text, rng, per_kind=3)]
    cases += [(k, d, False) for k, d in blind_mutants(text, rng, 10)]
    assert len(cases) >= 25
    for i, (kind, data, must_fail) in enumerate(cases):
        src, out, result = build(tmp_path, data, i)
        check(src, out, result, must_fail, f"{kind} variant {i} of {sample.name}")


@pytest.mark.parametrize("source", CORPUS[::5], ids=[p.name for p in CORPUS[::5]])
def test_mutated_tvm_corpus_through_build(source, tmp_path):
    """Text TVM 0.27 printed, mutated, under the target its unmutated text builds with
    (CUDA for GPU modules, the default llvm for CPU ones)."""
    text = source.read_text()
    flags = CUDA if build(tmp_path, text.encode(), 999, CUDA)[2].exit_code == 0 else []
    rng = random.Random(f"corpus:{source.name}")
    cases = [(k, t.encode(), True) for k, t in mutants(text, rng, per_kind=1)]
    cases += [(k, d, False) for k, d in blind_mutants(text, rng, 6)]
    for i, (kind, data, must_fail) in enumerate(cases):
        src, out, result = build(tmp_path, data, i, flags)
        check(src, out, result, must_fail, f"{kind} variant {i} of {source.name}")


def _corpus(name: str) -> Path:
    return next(p for p in CORPUS if p.name == name)


@pytest.mark.parametrize("path", [*SAMPLES[:3], _corpus("literals_float_formats.tir")],
                         ids=lambda p: p.name)
def test_hostile_mutants_build_or_fail_with_a_location(path, tmp_path):
    """Issue 15's classes (huge and out-of-range literals, zero divisors, constant
    indices outside a buffer, deep nesting, bad target options in the text): each
    variant builds or is refused with a location, never a crash (seeded, CI-sized; the
    long run is bench/fuzz_input.py)."""
    from tirc.testing.mutate import hostile_mutants
    text = path.read_text()
    flags = [] if "cuda" not in text and path.parent.name == "tvm" else CUDA
    for i, (kind, variant) in enumerate(hostile_mutants(text, random.Random(15), 1)):
        src, out, result = build(tmp_path, variant.encode(), i, flags)
        check(src, out, result, False, f"{kind} of {path.name}")


def test_unfolded_float_operand_of_an_integer_operator_is_typed(tmp_path):
    """Found by the hostile fuzzer: ``T.float64(-1e-10 // (1 - 1))`` (two Python numbers
    an integer-only operator leaves unfolded) was an internal error (AttributeError)."""
    text = ('# from tvm.script import tirx as T\n\n@T.prim_func\n'
            'def f(D: T.Buffer((8,), "float64")):\n'
            '    D[7] = T.float64(-1e-10 // (1 - 1))\n    D[6] = T.float64(2.5 % 2)\n')
    src, out, result = build(tmp_path, text.encode(), 0, [])
    assert result.exit_code == 0, result.output
