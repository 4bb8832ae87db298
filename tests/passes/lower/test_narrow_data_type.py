"""NarrowDataType(32) in the pipeline (TVM's own unit tests of the pass run in
test_sblock_pass_pairs.py)."""
from __future__ import annotations

import numpy as np

from conftest import pass_checker
from tirc.passes.lower.narrow_data_type import narrow_data_type

check = pass_checker(narrow_data_type)


def test_what_does_not_fit_stays_and_lets_keep_their_types():
    """A variable passed to a call (whose bounds are unknown) or ranging past 32 bits
    stays 64-bit; a let keeps its variable's type."""
    check('''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((T.int64(8),), "int64"), B: T.Buffer((T.int64(4294967296),), "float32")):
        for i in range(T.int64(8)):
            x: T.int64 = i * T.int64(3)
            A[i] = x
        for k in range(T.int64(8)):
            A[k] = T.call_extern("int64", "f", k)
        for j in range(T.int64(4294967296)):
            B[j] = T.float32(0.0)
''', '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((T.int64(8),), "int64"), B: T.Buffer((T.int64(4294967296),), "float32")):
        for i in range(8):
            x: T.int64 = T.Cast("int64", i * 3)
            A[i] = x
        for k in range(T.int64(8)):
            A[k] = T.call_extern("int64", "f", k)
        for j in range(T.int64(4294967296)):
            B[j] = T.float32(0.0)
''')


INT64_LOOPS = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((T.int64(16), T.int64(8)), "float32"), B: T.Buffer((T.int64(16), T.int64(8)), "float32")):
        for i, j in T.grid(T.int64(16), T.int64(8)):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.Cast("float32", vi * T.int64(8) + vj)
'''


def test_int64_loops_become_int32_and_compute_the_same():
    import tirc
    out = tirc.lower(INT64_LOOPS, stop_after="NarrowDataType")
    assert "for i, j in T.grid(16, 8):" in out
    c = tirc.compile(INT64_LOOPS)
    a = np.random.default_rng(0).random((16, 8), dtype=np.float32)
    b = np.zeros_like(a)
    c["main"](a, b)
    np.testing.assert_allclose(b, a + np.arange(128, dtype=np.float32).reshape(16, 8))
