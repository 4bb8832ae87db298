"""Deep input (``tirc.nesting``): the documented limits are located errors, the deep
shapes the text does not nest (operator chains, functions of many parameters) build, and
tirc leaves the process's recursion limit as it found it."""
from __future__ import annotations

import sys
import threading

import pytest
from click.testing import CliRunner

from tirc.build import build
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.nesting import MAX_BLOCK_DEPTH, MAX_EXPR_DEPTH, RECURSION_ROOM, room
from tirc.parser import parse

HEADER = "# from tvm.script import tirx as T\n@T.prim_func\n"


def chain(n: int) -> str:
    terms = " + ".join(f"A[{i % 16}]" for i in range(n))
    return HEADER + f'def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):\n    B[0] = {terms}\n'


def many_params(n: int) -> str:
    params = ", ".join(f'A{i}: T.Buffer((4,), "float32")' for i in range(n))
    body = "\n".join(f"    A{i}[0] = A{i}[1]" for i in range(n))
    return HEADER + f"def f({params}):\n{body}\n"


@pytest.fixture
def low_limit():
    """A caller whose recursion limit is Python's default, restored after."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield 1000
    sys.setrecursionlimit(before)


def test_the_limit_is_the_callers_again_after_a_build(tmp_path, low_limit):
    seen = []
    build(chain(4), "llvm", None, tmp_path, "m", show=lambda text: seen.append(sys.getrecursionlimit()),
          print_after=("passes",))
    assert seen == [RECURSION_ROOM]  # inside the build
    assert sys.getrecursionlimit() == low_limit
    parse(chain(4))
    assert sys.getrecursionlimit() == low_limit


def test_a_higher_limit_is_kept(low_limit):
    sys.setrecursionlimit(RECURSION_ROOM * 2)
    with room():
        assert sys.getrecursionlimit() == RECURSION_ROOM * 2
    assert sys.getrecursionlimit() == RECURSION_ROOM * 2


def test_room_is_restored_by_the_last_of_overlapping_calls(low_limit):
    inside, release = threading.Event(), threading.Event()

    def other():
        with room():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    with room():
        pass
    assert sys.getrecursionlimit() == RECURSION_ROOM  # the other thread is still in tirc
    release.set()
    t.join()
    assert sys.getrecursionlimit() == low_limit


@pytest.mark.parametrize("target", ["llvm", "cuda -arch=sm_90"])
def test_long_operator_chains_build(tmp_path, low_limit, target):
    text = chain(1000)
    if target != "llvm":
        text = text.replace("    B[0] =", '    for tx in T.thread_binding(16, thread="threadIdx.x"):\n        B[tx] =')
    build(text, target, None, tmp_path, "m")
    assert sys.getrecursionlimit() == low_limit


@pytest.mark.parametrize("abi", ["packed", "c"])
def test_functions_of_many_parameters_build(tmp_path, low_limit, abi):
    build(many_params(200), "llvm", None, tmp_path, "m", abi=abi)


def test_expression_nesting_limit_is_located():
    deep = "A[0]"
    for _ in range(MAX_EXPR_DEPTH):
        deep = f"({deep} + A[1])"
    text = HEADER + f'def f(A: T.Buffer((16,), "float32")):\n    A[2] = {deep}\n'
    with pytest.raises(Diagnostic, match=f"expression nested more than {MAX_EXPR_DEPTH} levels") as e:
        parse(text, "deep.tir")
    assert e.value.span.file == "deep.tir" and e.value.span.line == 4


def test_block_nesting_limit_is_located():
    lines = [HEADER + 'def f(A: T.Buffer((16,), "float32")):']
    for i in range(MAX_BLOCK_DEPTH + 1):
        lines.append("    " * (i + 1) + f"if A[0] > T.float32({i}):")
    lines.append("    " * (MAX_BLOCK_DEPTH + 2) + "A[1] = T.float32(1)")
    with pytest.raises(Diagnostic, match=f"statements nested more than {MAX_BLOCK_DEPTH} levels"):
        parse("\n".join(lines) + "\n", "deep.tir")


def test_deeper_than_the_room_is_an_error_not_a_traceback(tmp_path):
    path = tmp_path / "chain.tir"
    path.write_text(chain(RECURSION_ROOM // 2))
    r = CliRunner().invoke(cli, ["build", str(path), "-o", str(tmp_path / "out")])
    assert r.exit_code == 1, r.output
    assert f"{path}:1:1: error: input nested too deeply" in r.stderr
    assert "Traceback" not in r.output and not (tmp_path / "out").exists()
