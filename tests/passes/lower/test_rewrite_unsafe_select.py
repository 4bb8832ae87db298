"""RewriteUnsafeSelect in the pipeline: a select that loads in its branches evaluates only
the branch taken (TVM's own unit tests of the pass run in test_sblock_pass_pairs.py)."""
from __future__ import annotations

import numpy as np

from conftest import pass_checker
from tirc.passes.lower.rewrite_unsafe_select import rewrite_unsafe_select

check = pass_checker(rewrite_unsafe_select)

SHIFT = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = T.Select(i > 0, A[i - 1], T.float32(0.0))
'''


def test_safe_selects_stay_and_vector_ones_too():
    text = '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), i: T.int32):
        A[0] = T.Select(i > 0, T.Cast("float32", i * 2), T.float32(1.0))
        A[T.Ramp(0, 1, 4)] = T.Select(T.Broadcast(i > 0, 4), A[T.Ramp(4, 1, 4)], T.Broadcast(T.float32(0), 4))
'''
    check(text, text)


def test_select_of_a_load_never_reads_outside_the_buffer():
    """Instrumented, a select evaluating both branches read A[-1] at i == 0; rewritten,
    the load runs only where i > 0."""
    import tirc
    out = tirc.lower(SHIFT, stop_after="RewriteUnsafeSelect")
    assert "B[i] = T.if_then_else(i > 0, A[i - 1], T.float32(0.0))" in out
    c = tirc.compile(SHIFT, instrument_bound_checkers=True)
    a = np.arange(1, 9, dtype=np.float32)
    b = np.zeros(8, np.float32)
    c["main"](a, b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 4, 5, 6, 7])
