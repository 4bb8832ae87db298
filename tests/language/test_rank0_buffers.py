"""Rank-0 buffers as TVM prints them: ``T.Buffer((), ...)``, ``T.match_buffer(A[i], ())``
and the element ``B[()]`` in loads, stores and block regions; printed back the same."""
from __future__ import annotations

from tirc.ir.equal import assert_structural_equal
from tirc.ir.printer import print_module
from tirc.frontend.parse import parse

TEXT = '''# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((), "float32")):
    for i in range(8):
        with T.sblock(""):
            T.reads(A[i], B[()])
            T.writes(B[()])
            a = T.match_buffer(A[i], ())
            B[()] = B[()] + a[()]
'''


def test_rank0_buffers_read_and_print_back():
    mod = parse(TEXT)
    func = mod.functions["main"]
    assert func.buffer_map[1][1].shape == ()
    printed = print_module(mod)
    assert "B[()] = B[()] + a[()]" in printed and "T.reads(A[i], B[()])" in printed
    assert "T.match_buffer(A[i], ()" in printed
    assert_structural_equal(parse(printed), mod)
