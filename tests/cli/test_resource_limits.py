"""Bounded resources: the input is read with a size limit, blank
lines and long tokens cost memory in proportion to the input, folding nested calls of
pure private functions is memoised, and a slice wider than a vector can be is a located
error instead of an expansion that does not finish."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tracemalloc

import pytest
from click.testing import CliRunner

from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.frontend.parse import parse

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
BODY = '@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = T.float32(1)\n'


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_endless_input_is_refused_at_the_size_limit():
    r = CliRunner().invoke(cli, ["check", "/dev/zero"])
    assert r.exit_code == 1
    assert "/dev/zero:1:1: error: the input is larger than 64 MiB, the largest tirc reads" in r.output


def test_text_over_the_limit_is_refused(monkeypatch):
    import tirc.diagnostics as d
    monkeypatch.setattr(d, "MAX_SOURCE_BYTES", 1000)
    with pytest.raises(Diagnostic, match="larger than 0 MiB"):
        parse(HEAD + "\n" * 2000 + BODY, "big.tir")


@pytest.mark.parametrize("filler", [
    "\n" * 1_000_000,  # a million blank lines
    "\n".join(["# a comment line"] * 200_000) + "\n",
])
def test_blank_lines_and_comments_use_memory_in_proportion(filler):
    text = HEAD + filler + BODY
    tracemalloc.start()
    try:
        parse(text, "blank.tir")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * len(text) + (30 << 20), peak  # was 600 MB for a 1 MB file


def test_long_string_literal_uses_memory_in_proportion():
    text = HEAD + textwrap.dedent(f"""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            T.evaluate(T.call_extern("int32", "{'a' * 2_000_000}"))
        """)
    tracemalloc.start()
    try:
        parse(text, "s.tir")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * len(text) + (30 << 20), peak


NESTED = """
import sys, time
from tirc.frontend.parse import parse
from tirc.passes.lower.simplify import simplify
d = 40
fs = []
for k in range(d):
    fs.append(f'''    @T.prim_func(private=True)
    def f{k}(x: T.int32) -> T.int32:
        return T.max(Module.f{k+1}(x), Module.f{k+1}(x + 1))
''')
fs.append(f'''    @T.prim_func(private=True)
    def f{d}(x: T.int32) -> T.int32:
        return x * 2
''')
text = ("# from tvm.script import ir as I\\n# from tvm.script import tirx as T\\n@I.ir_module\\n"
        "class Module:\\n" + "\\n".join(fs) + '''
    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        A[0] = Module.f0(1)
''')
mod = simplify(parse(text))
print(mod.functions["main"].body.value.value)
"""


def test_folding_nested_pure_calls_is_memoised():
    # 2**40 call paths, 41 * 40 / 2 distinct calls: exponential before (depth 18 took 13 s)
    proc = subprocess.run([sys.executable, "-c", NESTED], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["82"]


@pytest.mark.parametrize("store, message", [
    ("A[0:100000000] = B[0:100000000]", "a slice of 100000000 lanes: a vector has at most 65535"),
    ("A[T.Ramp(0, 1, 70000)] = T.Broadcast(T.float32(1), 70000)",
     "a vector of 70000 lanes: a vector has at most 65535"),
])
def test_vectors_wider_than_a_dtype_are_located_errors(store, message):
    text = HEAD + textwrap.dedent(f"""
        @T.prim_func
        def f(A: T.Buffer((100000000,), "float32"), B: T.Buffer((100000000,), "float32")):
            {store}
        """)
    with pytest.raises(Diagnostic, match=message) as e:
        parse(text, "wide.tir")
    assert e.value.span is not None and e.value.span.line == 6
