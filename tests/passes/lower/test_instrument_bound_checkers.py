"""InstrumentBoundCheckers (opt-in): every access of host code checked at run time, a
RuntimeError naming the buffer instead of a stray read or write."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, pass_checker
from tirc.passes.lower.instrument_bound_checkers import instrument_bound_checkers

check = pass_checker(instrument_bound_checkers)


def test_checks_go_before_the_statement_and_provable_ones_are_dropped():
    check('''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), n: T.int32):
        for i in range(16):
            B[i] = A[i] * T.float32(2.0)
        for i in range(n):
            B[i] = A[i + 1]
''', '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), n: T.int32):
        for i in range(16):
            B[i] = A[i] * T.float32(2.0)
        for i in range(n):
            assert T.Cast("int64", i) < T.int64(16), ("RuntimeError", ["out-of-bounds access of buffer 'B' (index must be in [0, 16)) at before.tir:12"])
            assert T.Cast("int64", i + 1) < T.int64(16), ("RuntimeError", ["out-of-bounds access of buffer 'A' (index must be in [0, 16)) at before.tir:12"])
            B[i] = A[i + 1]
''')


def test_lets_conditions_vectors_and_guarded_loads():
    check('''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), k: T.int32):
        x: T.float32 = A[k]
        if A[k - 1] > x:
            B[T.Ramp(k, 1, 4)] = A[T.Ramp(0, 1, 4)]
        B[0] = T.if_then_else(k < 16, A[k], T.float32(0))
''', '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), k: T.int32):
        assert T.Cast("int64", k) >= T.int64(0) and T.Cast("int64", k) < T.int64(16), ("RuntimeError", ["out-of-bounds access of buffer 'A' (index must be in [0, 16)) at before.tir:9"])
        x: T.float32 = A[k]
        assert T.Cast("int64", k - 1) >= T.int64(0) and T.Cast("int64", k - 1) < T.int64(16), ("RuntimeError", ["out-of-bounds access of buffer 'A' (index must be in [0, 16)) at before.tir:10"])
        if A[k - 1] > x:
            assert T.Cast("int64", k) >= T.int64(0) and T.Cast("int64", k) < T.int64(16) and T.Cast("int64", k + 3) >= T.int64(0) and T.Cast("int64", k + 3) < T.int64(16), ("RuntimeError", ["out-of-bounds access of buffer 'B' (index must be in [0, 16)) at before.tir:11"])
            B[T.Ramp(k, 1, 4)] = A[T.Ramp(0, 1, 4)]
        B[0] = T.if_then_else(k < 16, A[k], T.float32(0))
''')


def test_device_code_is_not_instrumented():
    text = '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), n: T.int32):
        T.func_attr({"target": T.target({"kind": "cuda", "host": {"kind": "llvm"}})})
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            A[tx + n] = T.float32(1)
'''
    check(text, text)


OOB = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32"), n: T.int32):
        for i in T.parallel(4):
            for j in range(n):
                B[i, j] = A[i, j] * T.float32(2.0)
'''


def test_built_module_raises_naming_the_buffer():
    import tirc
    c = tirc.compile(OOB, instrument_bound_checkers=True, filename="oob.tir")
    a = np.arange(64, dtype=np.float32).reshape(4, 16)
    b = np.zeros((4, 16), np.float32)
    c["main"](a, b, 16)
    np.testing.assert_array_equal(b, a * 2)
    with pytest.raises(RuntimeError, match=r"out-of-bounds access of buffer 'B' "
                                           r"\(index must be in \[0, 64\)\) at oob.tir:10"):
        c["main"](a, b, 17)
    # without the option nothing is checked: the pass does not run
    plain = tirc.lower(OOB, filename="oob.tir")
    assert "out-of-bounds" not in plain
    assert "out-of-bounds" in tirc.lower(OOB, filename="oob.tir", instrument_bound_checkers=True)


def test_cli_flag_on_run_and_lower(tmp_path):
    src = tmp_path / "oob.tir"
    src.write_text(OOB)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "tirc", "run", str(src), "--random",
                          "--arg", "n=17", "--instrument-bound-checkers"],
                         capture_output=True, text=True, env=env, check=False)
    assert run.returncode == 1, run.stderr
    assert "RuntimeError: out-of-bounds access of buffer 'B'" in run.stderr
    assert "Traceback" not in run.stderr
    lower = subprocess.run([sys.executable, "-m", "tirc", "lower", str(src), "--passes",
                            "FlattenBuffer,InstrumentBoundCheckers"],
                           capture_output=True, text=True, env=env, check=True)
    assert lower.stdout.count("out-of-bounds access") == 2
