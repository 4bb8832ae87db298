"""InjectDoubleBuffer beyond TVM's own cases (before/after pairs in
tests/passes/blocks/test_sblock_pass_pairs.py): the ``split_loop`` option through
``--pass-config``, what it refuses (located errors), and that the doubled loop computes
what the loop as written computes."""
from __future__ import annotations

import numpy as np
import pytest

import tirc
from tirc.api import lower_source
from tirc.build.options import OptionError, parse_pass_config
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.lower.inject_double_buffer import inject_double_buffer
from tirc.passes.pass_context import PassContext
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import tirx as T\n\n"

SOURCE = HEADER + '''@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        cache = T.alloc_buffer((32,))
        with T.attr(cache.data, "double_buffer_scope", 1):
            for j in range(32):
                cache[j] = A[i, j]
        B[i] = T.float32(0.0)
        for j in range(32):
            B[i] = B[i] + cache[j]
'''


@pytest.mark.parametrize("split", [None, "1", "2", "4"])
def test_the_doubled_loop_computes_what_the_loop_computes(split):
    config = {} if split is None else {"s_tir.InjectDoubleBuffer.split_loop": split}
    compiled = tirc.compile(SOURCE, "llvm", pass_config=config)
    a = np.arange(512, dtype=np.float32).reshape(16, 32)
    b = np.zeros(16, np.float32)
    compiled["main"](a, b)
    np.testing.assert_allclose(b, a.sum(axis=1))


def test_split_loop_comes_from_the_pass_config():
    ctx = PassContext(parse_target("llvm"),
                      config=parse_pass_config(["s_tir.InjectDoubleBuffer.split_loop=2"]))
    text = lower_source(parse(SOURCE, "d.tir"), "llvm", passes=["InjectDoubleBuffer"],
                        pass_config=ctx.config)
    # the loop of 15 steps after the first runs 7 times two, then two guarded tail steps
    assert "for i_outer in range(7):" in text
    assert text.count("if T.bool(True):") == 2
    assert "cache = T.alloc_buffer((64,))" in text


@pytest.mark.parametrize("value, message", [
    (["s_tir.InjectDoubleBuffer.split=2"], "has no field 'split'"),
    (["s_tir.InjectDoubleBuffer.split_loop=two"], "takes an integer"),
    (["tirx.use_async_copy=maybe"], "takes true or false"),
    (["no_such_option=1"], "unknown pass option 'no_such_option'"),
    (["tirx.use_async_copy"], "takes KEY=VALUE"),
])
def test_a_bad_pass_config_is_an_option_error(value, message):
    with pytest.raises(OptionError, match=message):
        parse_pass_config(value)


def test_an_odd_split_factor_is_refused_at_the_loop():
    with pytest.raises(Diagnostic, match="must be 1 or a multiple of 2") as err:
        inject_double_buffer(parse(SOURCE, "d.tir"), split_loop=3)
    assert err.value.span.line == 5


@pytest.mark.parametrize("body, message, line", [
    ('''    cache = T.alloc_buffer((32,))
    with T.attr(cache.data, "double_buffer_scope", 1):
        cache[0] = A[0, 0]
    B[0] = cache[0]
''', "must be inside a loop", 6),
    ('''    for i in range(16):
        cache = T.alloc_buffer((4, 8))
        with T.attr(cache.data, "double_buffer_scope", 1):
            for j in range(8):
                cache[0, j] = A[i, j]
        B[i] = cache[0, 0]
''', "flat one-dimensional buffers", 6),
])
def test_what_it_refuses_is_a_located_error(body, message, line):
    text = HEADER + '''@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16,), "float32")):
''' + body
    with pytest.raises(Diagnostic, match=message) as err:
        inject_double_buffer(parse(text, "d.tir"))
    assert err.value.span.line == line
