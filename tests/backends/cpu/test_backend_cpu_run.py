"""CPU modules built with --shared and run through tvm-ffi with NumPy, against NumPy."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tirc.build.stages import build

tvm_ffi = pytest.importorskip("tvm_ffi")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def load(tmp_path, text, target="llvm", name="m"):
    build(HEAD + textwrap.dedent(text), target, None, tmp_path, name, shared=True)
    return tvm_ffi.load_module(str(tmp_path / f"{name}.so"))


INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", INT_TYPES + ["float16", "float32", "float64"])
def test_elementwise_dtypes(tmp_path, dtype):
    m = load(tmp_path, f"""
        @T.prim_func
        def f(A: T.Buffer((64,), "{dtype}"), B: T.Buffer((64,), "{dtype}"), C: T.Buffer((64,), "{dtype}")):
            for i in range(64):
                C[i] = A[i] * B[i] + A[i]
        """)
    rng = np.random.default_rng(0)
    a = rng.integers(0, 10, 64).astype(dtype)
    b = rng.integers(0, 10, 64).astype(dtype)
    c = np.zeros(64, dtype)
    m["f"](a, b, c)
    np.testing.assert_array_equal(c, a * b + a)


def test_bool_buffers(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((8,), "bool"), B: T.Buffer((8,), "bool"), C: T.Buffer((8,), "bool")):
            for i in range(8):
                C[i] = A[i] and not B[i]
        """)
    a = np.array([1, 0, 1, 0, 1, 1, 0, 0], bool)
    b = np.array([1, 1, 0, 0, 0, 1, 0, 1], bool)
    c = np.zeros(8, bool)
    m["f"](a, b, c)
    np.testing.assert_array_equal(c, a & ~b)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_division_semantics(tmp_path, dtype):
    m = load(tmp_path, f"""
        @T.prim_func
        def f(A: T.Buffer((16,), "{dtype}"), B: T.Buffer((16,), "{dtype}"), Q: T.Buffer((4, 16), "{dtype}")):
            for i in range(16):
                Q[0, i] = T.floordiv(A[i], B[i])
                Q[1, i] = T.floormod(A[i], B[i])
                Q[2, i] = T.truncdiv(A[i], B[i])
                Q[3, i] = T.truncmod(A[i], B[i])
        """)
    a = np.array([7, -7, 7, -7, 0, 5, -5, 9, -9, 100, -100, 3, -3, 1, -1, 13], dtype)
    b = np.array([2, 2, -2, -2, 3, 5, 5, -4, 4, 7, 7, -1, 1, 3, 3, -5], dtype)
    q = np.zeros((4, 16), dtype)
    m["f"](a, b, q)
    np.testing.assert_array_equal(q[0], a // b)
    np.testing.assert_array_equal(q[1], a % b)
    np.testing.assert_array_equal(q[2], np.fix(a / b).astype(dtype))
    np.testing.assert_array_equal(q[3], np.fmod(a, b))


def test_shifts_bitwise_and_casts(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((8,), "int32"), U: T.Buffer((8,), "uint32"), F: T.Buffer((8,), "float32"), O: T.Buffer((8, 8), "int32"), G: T.Buffer((8,), "float64")):
            for i in range(8):
                O[0, i] = T.shift_right(A[i], 1)
                O[1, i] = T.Cast("int32", T.shift_right(U[i], T.uint32(1)))
                O[2, i] = T.shift_left(A[i], 3)
                O[3, i] = T.bitwise_xor(T.bitwise_and(A[i], 12), T.bitwise_or(A[i], 1))
                O[4, i] = T.Cast("int32", F[i])
                O[5, i] = T.Cast("int32", T.Cast("int8", A[i] * 100))
                O[6, i] = T.Cast("int32", F[i] > T.float32(0)) + T.Cast("int32", T.Cast("bool", A[i]))
                O[7, i] = T.Cast("int32", T.Cast("uint8", A[i]))
                G[i] = T.Cast("float64", U[i]) + T.Cast("float64", A[i])
        """)
    a = np.array([-9, -2, -1, 0, 1, 2, 5, 77], np.int32)
    u = np.array([0, 1, 2, 3, 0xFFFFFFF0, 100, 7, 8], np.uint32)
    f = np.array([-2.7, -0.5, 0, 0.5, 1.99, 3, -100.2, 7.9], np.float32)
    o = np.zeros((8, 8), np.int32)
    g = np.zeros(8, np.float64)
    m["f"](a, u, f, o, g)
    np.testing.assert_array_equal(o[0], a >> 1)
    np.testing.assert_array_equal(o[1], (u >> 1).astype(np.int32))
    np.testing.assert_array_equal(o[2], a << 3)
    np.testing.assert_array_equal(o[3], (a & 12) ^ (a | 1))
    np.testing.assert_array_equal(o[4], f.astype(np.int32))
    np.testing.assert_array_equal(o[5], (a * 100).astype(np.int8).astype(np.int32))
    np.testing.assert_array_equal(o[6], (f > 0).astype(np.int32) + (a != 0))
    np.testing.assert_array_equal(o[7], a.astype(np.uint8).astype(np.int32))
    np.testing.assert_array_equal(g, u.astype(np.float64) + a)


def test_symbolic_shape_reduction(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def rowsum(a: T.handle, b: T.handle):
            m = T.int32()
            n = T.int32()
            A = T.match_buffer(a, (m, n), "float32")
            B = T.match_buffer(b, (m,), "float32")
            for i in range(m):
                B[i] = T.float32(0)
                for j in range(n):
                    B[i] = B[i] + A[i, j]
        """)
    for shape in ((3, 5), (17, 1), (1, 100)):
        a = np.random.default_rng(1).random(shape, dtype=np.float32)
        b = np.zeros(shape[0], np.float32)
        m["rowsum"](a, b)
        np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_local_accumulator_and_while(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((1000,), "float64"), B: T.Buffer((2,), "float64"), n: T.int32):
            acc = T.alloc_buffer((1,), "float64")
            big = T.alloc_buffer((4096,), "float64")
            acc[0] = T.float64(0)
            for i in range(1000):
                big[i] = A[i] * T.float64(2)
                acc[0] = acc[0] + big[i]
            B[0] = acc[0]
            k: T.int32 = 0
            s: T.float64 = T.float64(0)
            while k < n:
                k = k + 1
                if k % 3 == 0:
                    T.continue_loop()
                if k > 50:
                    T.break_loop()
                s = s + A[k]
            B[1] = s
        """)
    a = np.arange(1000, dtype=np.float64)
    b = np.zeros(2)
    m["f"](a, b, 80)
    assert b[0] == 2 * a.sum()
    assert b[1] == sum(a[k] for k in range(1, 51) if k % 3)


def test_lets_ifs_selects(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
            for i in range(16):
                x: T.let[T.int32] = A[i] * 2
                if x > 20:
                    B[i] = x
                else:
                    B[i] = T.Select(x < 4, 0 - x, T.if_then_else(x == 6, 100, x + 1))
        """)
    a = np.arange(-3, 13, dtype=np.int32)
    b = np.zeros(16, np.int32)
    m["f"](a, b)
    x = a * 2
    np.testing.assert_array_equal(b, np.where(x > 20, x, np.where(x < 4, -x, np.where(x == 6, 100, x + 1))))


def test_parallel_loop_uses_several_threads(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"), W: T.Buffer((4096,), "int32")):
            for i in T.parallel(4096):
                B[i] = A[i] * T.float32(3)
                W[i] = T.call_extern("int32", "omp_get_thread_num")
        """)
    a = np.arange(4096, dtype=np.float32)
    b, w = np.zeros(4096, np.float32), np.full(4096, -1, np.int32)
    m["f"](a, b, w)
    np.testing.assert_array_equal(b, a * 3)
    assert (w >= 0).all()
    if (os.cpu_count() or 1) > 1:
        assert len(set(w.tolist())) > 1
    assert b"libgomp" in (tmp_path / "m.so").read_bytes()


def test_parallel_loop_assert_raises(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((256,), "int32"), n: T.int32):
            for i in T.parallel(n):
                assert A[i] >= 0, ("ValueError", ["negative element"])
                A[i] = A[i] + 1
        """)
    a = np.arange(256, dtype=np.int32)
    m["f"](a, 256)
    np.testing.assert_array_equal(a, np.arange(1, 257))
    a[100] = -5
    with pytest.raises(ValueError, match="negative element"):
        m["f"](a, 256)


def test_vectorized_loop(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
            for i in range(16):
                for j in T.vectorized(4):
                    B[i * 4 + j] = A[i * 4 + j] * T.float32(2) + T.float32(1)
        """)
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    m["f"](a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


def _erf(x):
    return np.vectorize(math.erf)(x)


MATH = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "fabs": np.fabs,
        "floor": np.floor, "ceil": np.ceil, "erf": _erf, "sin": np.sin, "log1p": np.log1p,
        "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "atan": np.arctan, "exp2": np.exp2}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_math_intrinsics(tmp_path, dtype):
    names = sorted(MATH)
    lines = "\n".join(f"                O[{k}, i] = T.{n}(A[i])" for k, n in enumerate(names))
    m = load(tmp_path, f"""
        @T.prim_func
        def f(A: T.Buffer((16,), "{dtype}"), B: T.Buffer((16,), "{dtype}"), O: T.Buffer(({len(names) + 1}, 16), "{dtype}")):
            for i in range(16):
{lines}
                O[{len(names)}, i] = T.pow(A[i], B[i])
        """)
    a = np.linspace(0.1, 3.7, 16).astype(dtype)
    b = np.linspace(-1.5, 2, 16).astype(dtype)
    o = np.zeros((len(names) + 1, 16), dtype)
    m["f"](a, b, o)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for k, n in enumerate(names):
        np.testing.assert_allclose(o[k], MATH[n](a), rtol=rtol, err_msg=n)
    np.testing.assert_allclose(o[-1], a ** b, rtol=rtol)


def test_vector_and_half_math(tmp_path):
    m = load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), H: T.Buffer((8,), "float16")):
            for i in T.vectorized(8):
                B[i] = T.tanh(A[i]) + T.exp(A[i])
            for i in range(8):
                H[i] = T.exp(H[i])
        """)
    a = np.linspace(-1, 1, 8).astype(np.float32)
    b = np.zeros(8, np.float32)
    h = np.linspace(-1, 1, 8).astype(np.float16)
    m["f"](a, b, h)
    np.testing.assert_allclose(b, np.tanh(a) + np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(h, np.exp(np.linspace(-1, 1, 8).astype(np.float16)), rtol=2e-3)


def test_private_function_with_scalar_and_buffer_arguments(tmp_path):
    m = load(tmp_path, """
        @I.ir_module
        class Module:
            @T.prim_func(private=True)
            def scale(X: T.Buffer((8,), "float32"), s: T.float32, k: T.int32) -> T.float32:
                for i in range(8):
                    X[i] = X[i] * s + T.Cast("float32", k)
                return X[0]

            @T.prim_func
            def main(A: T.Buffer((16,), "float32"), R: T.Buffer((2,), "float32")):
                V0 = T.decl_buffer((8,), "float32", data=A.data, elem_offset=0)
                V1 = T.decl_buffer((8,), "float32", data=A.data, elem_offset=8)
                R[0] = Module.scale(V0, T.float32(2), 1)
                R[1] = Module.scale(V1, T.float32(3), 0)
        """)
    a = np.arange(16, dtype=np.float32)
    r = np.zeros(2, np.float32)
    m["main"](a, r)
    expect = np.concatenate([np.arange(8) * 2 + 1, np.arange(8, 16) * 3]).astype(np.float32)
    np.testing.assert_array_equal(a, expect)
    np.testing.assert_array_equal(r, [expect[0], expect[8]])


def test_scalar_return_values(tmp_path):
    m = load(tmp_path, """
        @I.ir_module
        class Module:
            @T.prim_func
            def add(a: T.int32, b: T.int32) -> T.int32:
                return a + b

            @T.prim_func
            def half(x: T.float32) -> T.float32:
                return x * T.float32(0.5)

            @T.prim_func
            def is_pos(x: T.int64) -> T.bool:
                return x > T.int64(0)
        """)
    assert m["add"](40, 2) == 42
    assert m["half"](3.0) == 1.5
    assert m["is_pos"](5) is True and m["is_pos"](-5) is False


WRONG_CALLS = r'''
import numpy as np, tvm_ffi, sys
m = tvm_ffi.load_module(sys.argv[1])
f = m["f"]
good = lambda: np.zeros((4, 8), "float32")
cases = {
    "shape": lambda: f(np.zeros((4, 9), "float32"), good(), 1),
    "dtype": lambda: f(np.zeros((4, 8), "float64"), good(), 1),
    "ndim": lambda: f(np.zeros(32, "float32"), good(), 1),
    "few": lambda: f(good(), good()),
    "none": lambda: f(None, good(), 1),
    "strided": lambda: f(np.zeros((4, 16), "float32")[:, ::2], good(), 1),
    "scalar": lambda: f(good(), good(), "x"),
}
for name, call in cases.items():
    try:
        call()
        print(name, "NO ERROR")
    except (TypeError, ValueError) as e:
        print(name, type(e).__name__, str(e).splitlines()[0])
f(good(), good(), 1)
print("ok")
'''


def test_wrong_calls_raise_and_never_crash(tmp_path):
    load(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32"), n: T.int32):
            for i, j in T.grid(4, 8):
                B[i, j] = A[i, j] + T.Cast("float32", n)
        """)
    proc = subprocess.run([sys.executable, "-c", WRONG_CALLS, str(tmp_path / "m.so")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[-1] == "ok"
    lines = dict(line.split(" ", 1) for line in out[:-1])
    assert "A.shape[1]" in lines["shape"] and lines["shape"].startswith("ValueError")
    assert "A.dtype" in lines["dtype"] and lines["dtype"].startswith("TypeError")
    assert "A.ndim" in lines["ndim"]
    assert "Expected 3 arguments" in lines["few"] and lines["few"].startswith("TypeError")
    assert "argument #0" in lines["none"] and lines["none"].startswith("TypeError")
    assert "A.strides" in lines["strided"] and lines["strided"].startswith("ValueError")
    assert "argument #2" in lines["scalar"] and lines["scalar"].startswith("TypeError")


_WAIT_POLICY = r'''
import ctypes, sys
import numpy as np, tvm_ffi
from tirc.build.stages import build
build("""# from tvm.script import tirx as T
@T.prim_func
def f(A: T.Buffer((64,), "int32")):
    for i in T.parallel(64):
        A[i] = A[i] + 1
""", "llvm", None, sys.argv[1], "m", shared=True)
m = tvm_ffi.load_module(sys.argv[1] + "/m.so")
a = np.zeros(64, np.int32)
m["f"](a)
assert (a == 1).all()
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
print(libc.getenv(b"OMP_WAIT_POLICY"), libc.getenv(b"GOMP_SPINCOUNT"))
'''


@pytest.mark.parametrize("given, seen", [(None, (None, b"10000")), ("active", (b"active", None))])
def test_parallel_loop_loads_libgomp_with_a_short_spin(tmp_path, given, seen):
    """libgomp is loaded at the first parallel loop (not linked), after setting
    GOMP_SPINCOUNT=10000 unless the environment chose a policy: long-spinning waiters
    cost a shared machine's busy cores (bench/README.md)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if given:
        env["OMP_WAIT_POLICY"] = given
    out = subprocess.run([sys.executable, "-c", _WAIT_POLICY, str(tmp_path)], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith(" ".join(map(repr, seen)))
