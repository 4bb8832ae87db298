"""Integer division at run time: a divisor that may be zero, and the
INT_MIN / -1 pair, never kill the calling process with SIGFPE.

In host code such a division is checked: a zero divisor makes the call fail with
"integer division by zero in function 'F'" (a Python exception through tvm-ffi, -1 and
the message through ``NAME_last_error()`` with the C ABI), INT_MIN / -1 with an overflow
error, and INT_MIN % -1 is 0. A private function's failure reaches the exported caller,
also from the body of a T.parallel loop. Constant divisors keep the plain instruction.
On the GPU nothing traps: x / 0 is -1, x % 0 is x, INT_MIN / -1 wraps (selects in the
device code). Calls run in a child process, so a regression kills the child only.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tvm_ffi")

from tirc.build.stages import build  # noqa: E402

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

MODULE = """
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def q(a: T.int32, b: T.int32) -> T.int32:
            return a // b

        @T.prim_func
        def ops(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32"), C: T.Buffer((4, 6), "int32")):
            for i in range(4):
                C[i, 0] = A[i] // B[i]
                C[i, 1] = A[i] % B[i]
                C[i, 2] = T.truncdiv(A[i], B[i])
                C[i, 3] = T.truncmod(A[i], B[i])
                C[i, 4] = T.floordiv(A[i], 16) + T.floormod(A[i], 16)
                C[i, 5] = T.floormod(A[i], B[i])

        @T.prim_func
        def vec(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32"), C: T.Buffer((8,), "int32")):
            for i in T.vectorized(8):
                C[i] = A[i] // B[i]

        @T.prim_func
        def unsigned(A: T.Buffer((4,), "uint32"), B: T.Buffer((4,), "uint32"), C: T.Buffer((4,), "uint32")):
            for i in range(4):
                C[i] = A[i] // B[i]

        @T.prim_func
        def helper(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32"), C: T.Buffer((4,), "int32")):
            for i in range(4):
                C[i] = Module.q(A[i], B[i])

        @T.prim_func
        def par(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"), C: T.Buffer((64,), "int32")):
            for i in T.parallel(64):
                C[i] = Module.q(A[i], B[i])
"""

PACKED = r"""
import sys
import numpy as np, tvm_ffi
lib = tvm_ffi.load_module(sys.argv[1])
MIN = -2**31

def attempt(name, f, *args):
    try:
        f(*args)
        print(name, "OK", " ".join(str(int(v)) for v in args[-1].ravel()))
    except Exception as e:
        print(name, type(e).__name__, " ".join(str(e).split()))

i32 = lambda *v: np.array(v, "int32")
C = np.zeros((4, 6), "int32")
attempt("ops_ok", lib["ops"], i32(7, -7, MIN, 5), i32(2, 2, 3, -1), C)
attempt("ops_zero", lib["ops"], i32(7, -7, MIN, 5), i32(2, 0, 3, 1), C)
attempt("ops_overflow", lib["ops"], i32(7, -7, MIN, 5), i32(2, 2, -1, 1), C)
attempt("vec_zero", lib["vec"], i32(*range(8)), i32(1, 1, 1, 1, 1, 1, 0, 1), np.zeros(8, "int32"))
attempt("vec_overflow", lib["vec"], i32(MIN, *range(7)), i32(-1, *[1] * 7), np.zeros(8, "int32"))
attempt("vec_ok", lib["vec"], i32(*range(8)), i32(*[2] * 8), np.zeros(8, "int32"))
u32 = lambda *v: np.array(v, "uint32")
attempt("unsigned_zero", lib["unsigned"], u32(1, 2, 3, 4), u32(1, 0, 1, 1), np.zeros(4, "uint32"))
attempt("unsigned_ok", lib["unsigned"], u32(2**32 - 1, 2, 3, 4), u32(1, 2, 1, 4), np.zeros(4, "uint32"))
attempt("helper_zero", lib["helper"], i32(1, 2, 3, 4), i32(1, 1, 0, 1), np.zeros(4, "int32"))
attempt("helper_overflow", lib["helper"], i32(MIN, 2, 3, 4), i32(-1, 1, 1, 1), np.zeros(4, "int32"))
attempt("helper_ok", lib["helper"], i32(1, 2, 3, 4), i32(1, 1, 3, 1), np.zeros(4, "int32"))
B = np.ones(64, "int32")
B[37] = 0
attempt("par_zero", lib["par"], np.arange(64, dtype="int32"), B, np.zeros(64, "int32"))
for k in range(3):  # the failed calls left nothing behind: the next ones succeed
    attempt(f"par_ok{k}", lib["par"], np.arange(64, dtype="int32"), np.full(64, 2, "int32"),
            np.zeros(64, "int32"))
"""


def _run(tmp_path, script: str, abi: str = "packed") -> dict[str, str]:
    build(HEAD + textwrap.dedent(MODULE), "llvm", None, tmp_path, "m", shared=True, abi=abi)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.so")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"child died ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines())


@needs_cc
def test_packed_division_by_zero_and_overflow_raise(tmp_path):
    out = _run(tmp_path, PACKED)
    # floordiv, floormod, truncdiv, truncmod; INT_MIN % 3 and 5 // -1 as TVM defines them
    assert out["ops_ok"] == ("OK 3 1 3 1 7 1 -4 1 -3 -1 8 1 -715827883 1 -715827882 -2 "
                             "-134217728 1 -5 0 -5 0 5 0")
    for case, func in (("ops_zero", "ops"), ("vec_zero", "vec"), ("unsigned_zero", "unsigned"),
                       ("helper_zero", "q"), ("par_zero", "q")):
        assert out[case] == f"RuntimeError integer division by zero in function '{func}'", case
    for case, func in (("ops_overflow", "ops"), ("vec_overflow", "vec"),
                       ("helper_overflow", "q")):
        assert out[case] == ("RuntimeError integer division overflow: the minimum int32 "
                             f"divided by -1 in function '{func}'"), case
    assert out["vec_ok"] == "OK 0 0 1 1 2 2 3 3"
    assert out["unsigned_ok"] == "OK 4294967295 1 3 1"
    assert out["helper_ok"] == "OK 1 2 1 4"
    for k in range(3):
        assert out[f"par_ok{k}"] == "OK " + " ".join(str(i // 2) for i in range(64))


C_SCRIPT = r"""
import ctypes, sys
import numpy as np
c = ctypes.CDLL(sys.argv[1])
c.m_last_error.restype = ctypes.c_char_p
P = ctypes.c_void_p
for f in (c.ops, c.helper):
    f.argtypes = [P, P, P]
def call(name, f, *arrays):
    rc = f(*[a.ctypes.data for a in arrays])
    print(name, rc, c.m_last_error().decode() if rc else "")
i32 = lambda *v: np.array(v, "int32")
call("ops_zero", c.ops, i32(7, -7, 1, 5), i32(2, 0, 3, 1), np.zeros((4, 6), "int32"))
call("ops_overflow", c.ops, i32(-2**31, 1, 1, 1), i32(-1, 1, 1, 1), np.zeros((4, 6), "int32"))
call("helper_zero", c.helper, i32(1, 2, 3, 4), i32(1, 0, 1, 1), np.zeros(4, "int32"))
call("helper_ok", c.helper, i32(1, 2, 3, 4), i32(1, 1, 1, 1), np.zeros(4, "int32"))
"""


@needs_cc
def test_c_abi_division_by_zero_returns_an_error(tmp_path):
    out = _run(tmp_path, C_SCRIPT, abi="c")
    assert out["ops_zero"] == "-1 ZeroDivisionError: integer division by zero in function 'ops'"
    assert out["ops_overflow"].startswith("-1 OverflowError: integer division overflow")
    assert out["helper_zero"] == "-1 ZeroDivisionError: integer division by zero in function 'q'"
    assert out["helper_ok"] == "0 "


def test_constant_divisors_keep_the_plain_instruction(tmp_path):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
            for i in range(64):
                B[i] = A[i] // 7 + A[i] % 3 + T.truncdiv(A[i], -2) + T.floormod(A[i], 16)
        """)
    build(text, "llvm -opt-level=0", None, tmp_path, "f", emit=("llvm",))
    ll = (tmp_path / "f.ll").read_text()
    assert "sdiv i32" in ll and "srem i32" in ll
    assert "division" not in ll and "@__tirc_error" not in ll


def test_private_functions_that_cannot_fail_are_called_without_a_check(tmp_path):
    text = HEAD + textwrap.dedent("""
        @I.ir_module
        class Module:
            @T.prim_func(private=True)
            def half(a: T.int32) -> T.int32:
                return a // 2

            @T.prim_func
            def f(A: T.Buffer((64,), "int32")):
                for i in range(64):
                    A[i] = Module.half(A[i])
        """)
    build(text, "llvm -opt-level=0", None, tmp_path, "f", emit=("llvm",))
    assert "__tirc_error_kind" not in (tmp_path / "f.ll").read_text()


def test_gpu_division_does_not_trap_and_gives_set_values(tmp_path):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def k(A: T.Buffer((256,), "int32"), B: T.Buffer((256,), "int32"), C: T.Buffer((256,), "int32")):
            for i in T.thread_binding(256, thread="threadIdx.x"):
                C[i] = A[i] // B[i] + T.truncmod(A[i], B[i]) + A[i] // 8
        """)
    build(text, "cuda -arch=sm_80", "llvm", tmp_path, "k", emit=("llvm",))
    device = (tmp_path / "k.device.ll").read_text()
    assert "llvm.trap" not in device
    # the divisor is 1 where B is 0 (or the pair is INT_MIN / -1); x / 0 selects -1
    assert "select" in device and "sdiv" in device
    ptx = (tmp_path / "k.ptx").read_text()
    assert "trap" not in ptx


def test_divisors_bounded_away_from_zero_keep_the_plain_instruction(tmp_path):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((64,), "int32"), n: T.int32):
            for i in range(64):
                A[i] = A[i] // T.max(n, 1) + A[i] % T.min(n, -2)
        """)
    build(text, "llvm -opt-level=0", None, tmp_path, "f", emit=("llvm",))
    assert "division by zero" not in (tmp_path / "f.ll").read_text()
    text = text.replace("T.max(n, 1)", "T.max(n, 0)")
    build(text, "llvm -opt-level=0", None, tmp_path, "g", emit=("llvm",))
    assert "division by zero" in (tmp_path / "g.ll").read_text()
