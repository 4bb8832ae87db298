"""AnnotateIrregularLoop in the pipeline: a unit loop that breaks or continues stays a
loop (it used to be dropped for its body, leaving the jump to the enclosing loop or to
none). TVM's own unit tests of the pass run in test_sblock_pass_pairs.py."""
from __future__ import annotations

import numpy as np
import pytest

UNIT_LOOPS = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((10,), "int32")):
        for k in range(10):
            for i in range(1):
                if A[k] > 5:
                    T.break_loop()
                A[k] = A[k] + 100
            A[k] = A[k] + 1
'''


def test_unit_loop_with_a_break_keeps_its_loop():
    import tirc
    out = tirc.lower(UNIT_LOOPS, stop_after="LowerOpaqueBlock")
    assert 'for i in T.serial(1, annotations={"irregular_loop_mark": 1}):' in out
    c = tirc.compile(UNIT_LOOPS)
    a = np.arange(10, dtype=np.int32)
    c["main"](a)
    # the break leaves the unit loop only: every k still gets its + 1
    np.testing.assert_array_equal(a, [v + 101 if v <= 5 else v + 1 for v in range(10)])


def test_parallel_loop_that_breaks_is_located():
    import tirc
    text = UNIT_LOOPS.replace("for k in range(10):", "for k in T.parallel(10):").replace(
        "for i in range(1):\n                if A[k] > 5:\n                    T.break_loop()\n"
        "                A[k] = A[k] + 100\n", "if A[k] > 5:\n                T.break_loop()\n")
    with pytest.raises(tirc.CompileError, match="loop 'k' breaks or continues, so it must be "
                                                 "serial, not parallel") as err:
        tirc.lower(text)
    assert ":8:" in str(err.value)
