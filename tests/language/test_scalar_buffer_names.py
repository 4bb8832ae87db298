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
from tirc.ir.expr import BinOp, BufferLoad, Call, Var
from tirc.ir.printer import print_module
from tirc.ir.stmt import BufferStore
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse

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
    ("B = n", lambda v: isinstance(v, Var) and v.name == "n"),
    ('B = T.call_extern("int32", "f", n)', lambda v: isinstance(v, Call) and v.op == "call_extern"),
    ("B = Module.twice(n)", lambda v: isinstance(v, Call) and getattr(v.op, "name", None) == "twice"),
    ("B = B + n", lambda v: isinstance(v, BinOp) and isinstance(v.a, BufferLoad) and v.a.buffer.name == "B"),
])
def test_bare_name_of_a_one_element_buffer_is_its_element(tvm_text, stored):
    mod = parse(_module(tvm_text), "t.tir")
    stores = [s for s in walk(mod["main"].body) if isinstance(s, BufferStore) and s.buffer.name == "B"]
    assert len(stores) == 1 and [i.value for i in stores[0].indices] == [0]
    assert stored(stores[0].value)
    # and tirc prints it back as TVM does
    text = print_module(mod)
    assert f"        {tvm_text}" in text.splitlines()


def test_other_buffers_keep_python_rebinding():
    """``C = n`` for a buffer of 2 elements binds a new variable, as in TVM."""
    text = print_module(parse(_module("C = n").replace("C[0] = n", "B[0] = C"), "t.tir"))
    assert "C_1: T.int32 = n" in text and "B = C_1" in text


def test_a_bare_multi_element_buffer_is_not_a_value():
    with pytest.raises(Diagnostic, match="must be an expression, not buffer 'C'"):
        parse(_module("B = C + n"), "t.tir")
