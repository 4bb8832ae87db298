"""Deep input (``tirc.nesting``): the documented limits are located errors; the deepest
input within them builds under Python's default recursion limit, for every target and
output; the statement chains the text does not nest (lets, asserts, allocations, the
checks of many parameters) have no limit; and tirc never touches the recursion limit."""
from __future__ import annotations

import pathlib
import sys

import pytest
from click.testing import CliRunner

from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.nesting import MAX_BLOCK_DEPTH, MAX_EXPR_DEPTH
from tirc.frontend.parse import parse
from conftest import TESTS

HEADER = "# from tvm.script import tirx as T\n@T.prim_func\n"
PYTHON_DEFAULT_LIMIT = 1000


def chain(n: int) -> str:
    terms = " + ".join(f"A[{i % 16}]" for i in range(n + 1))  # n operators
    return HEADER + f'def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):\n    B[0] = {terms}\n'


def many_params(n: int) -> str:
    params = ", ".join(f'A{i}: T.Buffer((4,), "float32")' for i in range(n))
    body = "\n".join(f"    A{i}[0] = A{i}[1]" for i in range(n))
    return HEADER + f"def f({params}):\n{body}\n"


def parses(text: str) -> bool:
    try:
        parse(text)
        return True
    except Diagnostic:
        return False


LONGEST_CHAIN = next(n for n in range(MAX_EXPR_DEPTH, 0, -1) if parses(chain(n)))


@pytest.fixture
def default_limit():
    """A caller whose recursion limit is Python's default; tirc must not change it."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(PYTHON_DEFAULT_LIMIT)
    yield PYTHON_DEFAULT_LIMIT
    assert sys.getrecursionlimit() == PYTHON_DEFAULT_LIMIT
    sys.setrecursionlimit(before)


def deepest(kernel: bool) -> str:
    """Statements nested as deep as allowed around an expression as deep as allowed."""
    terms = " + ".join(f"A[{i % 16}]" for i in range(LONGEST_CHAIN + 1))
    lines = [HEADER + 'def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):']
    depth = MAX_BLOCK_DEPTH - 1
    for i in range(depth):
        if kernel and i == 0:
            lines.append('    for tx in T.thread_binding(16, thread="threadIdx.x"):')
        else:
            lines.append("    " * (i + 1) + f"for i{i} in range(2):")
    lines.append("    " * (depth + 1) + f"B[{'tx' if kernel else 0}] = {terms}")
    return "\n".join(lines) + "\n"


def test_the_chain_limit_counts_operators():
    assert MAX_EXPR_DEPTH - 4 <= LONGEST_CHAIN < MAX_EXPR_DEPTH
    with pytest.raises(Diagnostic, match=f"expression nested more than {MAX_EXPR_DEPTH} levels") as e:
        parse(chain(MAX_EXPR_DEPTH), "chain.tir")
    assert e.value.span.file == "chain.tir" and e.value.span.line == 4


@pytest.mark.parametrize("logic", ["and", "or"])
def test_logic_chains_count_their_operators(logic):
    cond = f" {logic} ".join(f"A[{i % 16}] > T.float32(0)" for i in range(MAX_EXPR_DEPTH + 1))
    text = HEADER + f'def f(A: T.Buffer((16,), "float32")):\n    if {cond}:\n        A[0] = T.float32(1)\n'
    with pytest.raises(Diagnostic, match="levels deep"):
        parse(text)


@pytest.mark.parametrize("config", [
    dict(target="llvm"),
    dict(target="llvm", abi="c"),
    dict(target="llvm", debug=True),
    dict(target="llvm", print_after=("all",), show=lambda text: None),
    dict(target="cuda -arch=sm_90", kernel=True),
], ids=["packed", "c-abi", "debug", "print-after-all", "cuda"])
def test_the_deepest_input_allowed_builds_at_the_default_limit(tmp_path, default_limit, config):
    config = dict(config)
    kernel = config.pop("kernel", False)
    target = config.pop("target")
    seen = []
    show = config.pop("show", None)
    build(deepest(kernel), target, None, tmp_path, "m",
          **config, **({"show": lambda text: seen.append(sys.getrecursionlimit())} if show else {}))
    assert all(limit == default_limit for limit in seen)
    assert (tmp_path / "m.o").exists()


def lets(n: int) -> str:
    body = "\n".join(f"    x{i} = A[{i % 4}] + T.float32({i})" for i in range(n))
    return HEADER + f'def f(A: T.Buffer((4,), "float32")):\n{body}\n    A[0] = x{n - 1}\n'


def asserts(n: int) -> str:
    body = "\n".join(f'    assert A[{i % 4}] > T.float32({i}), "check {i}"' for i in range(n))
    return HEADER + f'def f(A: T.Buffer((4,), "float32")):\n{body}\n    A[0] = T.float32(0)\n'


def allocations(n: int) -> str:
    body = "\n".join(f'    B{i} = T.alloc_buffer((4,), "float32")\n    B{i}[0] = A[{i % 4}]\n    A[1] = B{i}[0]'
                     for i in range(n))
    return HEADER + f'def f(A: T.Buffer((4,), "float32")):\n{body}\n'


def kernel_lets(n: int) -> str:
    body = "\n".join(f"        x{i} = A[tx] + T.float32({i})" for i in range(n))
    return (HEADER + 'def f(A: T.Buffer((32,), "float32")):\n'
            '    for tx in T.thread_binding(32, thread="threadIdx.x"):\n'
            f"{body}\n        A[tx] = x{n - 1}\n")


@pytest.mark.parametrize("text, target, abi", [
    (lets(3000), "llvm", "packed"),
    (asserts(2000), "llvm", "packed"),
    (allocations(1000), "llvm", "packed"),
    (many_params(500), "llvm", "packed"),
    (many_params(500), "llvm", "c"),
    (kernel_lets(2000), "cuda -arch=sm_90", "packed"),
], ids=["lets", "asserts", "allocations", "packed-params", "c-params", "kernel-lets"])
def test_long_statement_chains_build_at_the_default_limit(tmp_path, default_limit, text, target, abi):
    build(text, target, None, tmp_path, "m", abi=abi)
    assert (tmp_path / "m.o").exists()


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


def test_a_caller_without_stack_left_gets_an_error_not_a_traceback(tmp_path):
    """A caller deep in its own recursion (here: a low limit) leaves tirc less stack than
    the documented limits need: the input is then reported as too deep, with nothing
    written."""
    path = tmp_path / "chain.tir"
    path.write_text(chain(LONGEST_CHAIN))
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(250)
    try:
        r = CliRunner().invoke(cli, ["build", str(path), "-o", str(tmp_path / "out")])
    finally:
        sys.setrecursionlimit(before)
    assert r.exit_code == 1, r.output
    assert f"{path}:1:1: error: input nested too deeply" in r.stderr
    assert "Traceback" not in r.output and not (tmp_path / "out").exists()


def test_no_module_of_tirc_sets_the_recursion_limit():
    root = TESTS.parent / "tirc"
    offenders = [str(p) for p in root.rglob("*.py") if "setrecursionlimit" in p.read_text()]
    assert offenders == []
