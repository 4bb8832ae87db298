"""A one-element buffer named bare, as TVM 0.27 prints it: ``B = v`` stores ``B[0]`` and
``B`` in an expression loads it, for parameter buffers too (TVM's parser reads
``name = value`` as a store when ``name`` is a 1-D buffer of shape (1,)). tirc used to
read ``B = n`` as a new variable, silently dropping the store.

The bodies below are TVM 0.27's print of ``B[0] = n``, ``B[0] = T.call_extern(...)``,
``B[0] = Module.twice(n)`` and ``B[0] = B[0] + n`` (printed with tvm.script.from_source
and .script() on the module of ``_module``)."""
from __future__ import annotations

import pytest

from tirc.diagnostics import Diagnostic
from tirc.ir.printer import print_module
from tirc.parser import parse

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def _module(body: str) -> str:
    return HEAD + f'''
@I.ir_module
class Module:
    @T.prim_func
    def main(B: T.Buffer((1,), "int32"), C: T.Buffer((2,), "int32"), n: T.int32):
        {body}
        C[0] = n

    @T.prim_func
    def twice(x: T.int32) -> T.int32:
        return x * 2
'''


@pytest.mark.parametrize("tvm_text,stored", [
    ("B = n", "B[0] = n"),
    ('B = T.call_extern("int32", "f", n)', 'B[0] = T.call_extern("int32", "f", n)'),
    ("B = Module.twice(n)", "B[0] = Module.twice(n)"),
    ("B = B + n", "B[0] = B[0] + n"),
])
def test_bare_name_of_a_one_element_buffer_is_its_element(tvm_text, stored):
    text = print_module(parse(_module(tvm_text), "t.tir"))
    assert stored in text.splitlines()[text.splitlines().index(
        '    def main(B: T.Buffer((1,), "int32"), C: T.Buffer((2,), "int32"), n: T.int32):') + 1]


def test_other_buffers_keep_python_rebinding():
    """``C = n`` for a buffer of 2 elements binds a new variable, as in TVM."""
    text = print_module(parse(_module("C = n").replace("C[0] = n", "B[0] = C"), "t.tir"))
    assert "C_1: T.int32 = n" in text and "B[0] = C_1" in text


def test_a_bare_multi_element_buffer_is_not_a_value():
    with pytest.raises(Diagnostic, match="must be an expression, not buffer 'C'"):
        parse(_module("B = C + n"), "t.tir")
