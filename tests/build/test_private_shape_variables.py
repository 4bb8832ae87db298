"""A private function (as relax leaves the PrimFuncs it makes) whose buffer shapes use a
variable no parameter passes: nothing binds it, since only a public function's packed
entry reads shapes from its arguments. The error says so, at the variable, and names
the two ways out; both build. (TVM 0.27's tvm.compile fails on the same module with an
InternalError in its storage legalizer.)"""
from __future__ import annotations

import pytest

from tirc.build.stages import build
from tirc.diagnostics import Diagnostic

PRIVATE = '''# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T

seq_len = TypeVar("seq_len")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add_one(A: T.Buffer((T.int64(1), seq_len), "float32"), B: T.Buffer((T.int64(1), seq_len), "float32")):
        for i, j in T.grid(T.int64(1), seq_len):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] + T.float32(1.0)
'''


def test_the_error_names_the_cause_and_the_way_out(tmp_path):
    with pytest.raises(Diagnostic) as e:
        build(PRIVATE, "llvm", None, tmp_path, "m", filename="private.tir")
    msg = e.value.message
    assert "variable 'seq_len' is used but never defined in function 'add_one'" in msg
    assert "shape variable of buffer 'A' of a private function" in msg
    assert "drop private=True" in msg and "pass 'seq_len' as a scalar parameter" in msg
    assert e.value.span is not None and e.value.span.line == 9
    assert not any(tmp_path.iterdir())


def test_both_ways_out_build(tmp_path):
    public = PRIVATE.replace("@T.prim_func(private=True, s_tir=True)", "@T.prim_func(s_tir=True)")
    build(public, "llvm", None, tmp_path / "public", "m")
    passed = PRIVATE.replace('seq_len = TypeVar("seq_len")\n', "").replace(
        "def add_one(A", "def add_one(seq_len: T.int64, A")
    build(passed, "llvm", None, tmp_path / "param", "m")
    assert (tmp_path / "public" / "m.o").stat().st_size and (tmp_path / "param" / "m.o").stat().st_size
