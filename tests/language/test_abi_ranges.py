"""Sizes, strides, offsets and scalars at the call boundary.

A shape, stride or byte offset that does not fit the variable it binds, and an integer
scalar that does not fit its parameter, are ValueErrors naming the argument: before,
an ``int32`` ``n`` bound from 2**31 + 8 elements wrapped negative and the store landed
outside the array. Index arithmetic that can pass 2**31 is 64-bit. A tensor with a
dimension of 0 is valid input (the call does nothing). Both ABIs: packed through
tvm-ffi, C through ctypes.

Tensors with a fake shape, strides or byte offset over a small buffer come from a
DLPack producer made with ctypes: a call must fail before it touches memory. Calls run
in a child process, so a regression crashes the child and not the test run.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

np = pytest.importorskip("numpy")
tvm_ffi = pytest.importorskip("tvm_ffi")

from tirc.build.stages import build  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"

FAKE = r'''
import ctypes, sys
import numpy as np, tvm_ffi
from ctypes import POINTER, c_int64
from tirc.runtime import dlpack as dl


class Fake:
    """A DLPack producer over ``base``'s memory with any shape, strides, byte offset."""

    def __init__(self, base, shape, strides=None, byte_offset=0, null=False):
        self.base, self.shape, self.strides = base, shape, strides
        self.byte_offset, self.null = byte_offset, null

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        n = len(self.shape)
        shape = (c_int64 * n)(*self.shape)
        strides = (c_int64 * n)(*self.strides) if self.strides is not None else None
        m = dl.DLManagedTensor()
        t = m.dl_tensor
        t.data = None if self.null else self.base.ctypes.data
        t.device = dl.DLDevice(1, 0)
        t.ndim = n
        t.dtype = dl.DLDataType(*dl.dtypes.to_dlpack(self.base.dtype))
        t.shape = ctypes.cast(shape, POINTER(c_int64))
        t.strides = ctypes.cast(strides, POINTER(c_int64)) if strides is not None else None
        t.byte_offset = self.byte_offset
        m.deleter = dl._delete_managed
        address = ctypes.addressof(m)
        dl._LIVE[address] = (m, shape, strides, self)
        return dl._capsule_new(address, b"dltensor", dl._capsule_destructor)


def fake(*args, **kwargs):
    return tvm_ffi.from_dlpack(Fake(*args, **kwargs))


def attempt(name, call):
    try:
        call()
        print(name, "OK")
    except (TypeError, ValueError) as e:
        print(name, type(e).__name__, " ".join(str(e).split()))


lib = tvm_ffi.load_module(sys.argv[1])
'''


def run_calls(tmp_path, text: str, script: str, abi: str = "packed") -> dict[str, str]:
    """Build ``text`` (--shared), run ``script`` after FAKE in a child process with the
    library's path as argv[1]; its lines ``NAME RESULT`` as a dict."""
    build(HEAD + textwrap.dedent(text), "llvm", None, tmp_path, "m", shared=True, abi=abi)
    proc = subprocess.run([sys.executable, "-c", FAKE + textwrap.dedent(script),
                           str(tmp_path / "m.so")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"child died ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines())


# -- item 1: shapes, strides and offsets that do not fit --------------------------------

SIZES = """
    @I.ir_module
    class Module:
        @T.prim_func
        def last(a: T.handle):
            n = T.int32()
            A = T.match_buffer(a, (n,), "int8")
            A[n - 1] = T.int8(7)

        @T.prim_func
        def pair(a: T.handle, b: T.handle):
            n = T.int32()
            A = T.match_buffer(a, (n,), "int8")
            B = T.match_buffer(b, (n * 2,), "int8")
            A[0] = B[n * 2 - 1]

        @T.prim_func
        def fixed(A: T.Buffer((4, 4), "int8")):
            A[3, 3] = T.int8(7)

        @T.prim_func
        def strided(a: T.handle):
            s = T.int32()
            A = T.match_buffer(a, (4,), "int8", strides=(s,))
            A[3] = T.int8(7)

        @T.prim_func
        def offset(a: T.handle):
            e = T.int32()
            A = T.match_buffer(a, (4,), "int8", elem_offset=e)
            A[3] = T.int8(7)
    """


def test_sizes_that_do_not_fit_their_variable_are_value_errors(tmp_path):
    out = run_calls(tmp_path, SIZES, """
        a = np.zeros(64, "int8")
        last, pair, fixed = lib["last"], lib["pair"], lib["fixed"]
        attempt("wrap_negative", lambda: last(fake(a, (2**31 + 8,))))
        attempt("wrap_small", lambda: last(fake(a, (2**32 + 4,))))
        attempt("negative", lambda: last(fake(a, (-3,))))
        attempt("largest", lambda: last(fake(a, (2**31 - 1,), null=True)))
        attempt("fits", lambda: last(fake(a, (16,))))
        print("stored_value", a[15])
        attempt("recurring", lambda: pair(fake(a, (4,)), fake(a, (2**32 + 8,))))
        attempt("expression", lambda: pair(fake(a, (2**30 + 1,), null=True), fake(a, (2,))))
        attempt("constant", lambda: fixed(fake(a, (2**32 + 4, 4))))
        attempt("compact_stride", lambda: fixed(fake(a, (4, 4), strides=(2**32 + 4, 1))))
        attempt("stride", lambda: lib["strided"](fake(a, (4,), strides=(2**32 + 1,))))
        attempt("stride_ok", lambda: lib["strided"](fake(a, (4,), strides=(2,))))
        print("strided_value", a[6])
        attempt("offset", lambda: lib["offset"](fake(a, (4,), byte_offset=2**33)))
        attempt("offset_ok", lambda: lib["offset"](fake(a, (4,), byte_offset=32)))
        print("offset_value", a[35])
        """)
    for case, where in (("wrap_negative", "A.shape[0]"), ("wrap_small", "A.shape[0]"),
                        ("negative", "A.shape[0]"), ("recurring", "B.shape[0]"),
                        ("expression", "B.shape[0]"), ("constant", "A.shape[0]"),
                        ("compact_stride", "A.strides"), ("stride", "A.strides[0]"),
                        ("offset", "A.byte_offset")):
        assert out[case].startswith("ValueError"), (case, out[case])
        assert where in out[case] and "argument #" in out[case], (case, out[case])
    assert "from 0 to 2147483647 (n is int32)" in out["wrap_negative"]
    # the largest int32 size is accepted (data NULL: the check stops before any store)
    assert "data pointer is NULL" in out["largest"]
    for case in ("fits", "stride_ok", "offset_ok"):
        assert out[case] == "OK", (case, out[case])
    assert out["stored_value"] == out["strided_value"] == out["offset_value"] == "7"


def test_index_arithmetic_past_2_31_is_64_bit(tmp_path):
    """int32 sizes (n, m) of an array of 2**31 + 65536 int8 elements (NumPy's zeros are
    mapped lazily: only the pages touched are memory): ``(n - 1) * m + m - 1`` wrapped
    in int32 and stored 2 GiB before the array; so did a region argument's offset."""
    out = run_calls(tmp_path, """
        @I.ir_module
        class Module:
            @T.prim_func(private=True)
            def tail(X: T.Buffer((4,), "int8")):
                X[3] = T.int8(3)

            @T.prim_func
            def region(a: T.handle):
                n = T.int32()
                m = T.int32()
                A = T.match_buffer(a, (n, m), "int8")
                Module.tail(A[n - 1, m - 4:m])

            @T.prim_func
            def corner(a: T.handle):
                n = T.int32()
                m = T.int32()
                A = T.match_buffer(a, (n, m), "int8")
                A[n - 1, m - 1] = T.int8(7)
                for i, j in T.grid(2, 2):
                    A[n - 1 - i, j] = T.int8(5)

            @T.prim_func
            def long(a: T.handle):
                n = T.int64()
                A = T.match_buffer(a, (n,), "int8")
                A[n - T.int64(1)] = T.int8(9)
        """, """
        a = np.zeros((65536, 32769), "int8")
        attempt("corner", lambda: lib["corner"](a))
        print("values", a[-1, -1], a[-1, 0], a[-2, 1], a[0, 0])
        attempt("region", lambda: lib["region"](a))
        print("region_value", a[-1, -1])
        del a
        b = np.zeros(2**31 + 8, "int8")
        attempt("long", lambda: lib["long"](b))
        print("long_value", b[-1])
        """)
    assert out["corner"] == "OK" and out["values"] == "7 5 5 0"
    # a region argument's offset (n - 1) * m + m - 4 is an address: 64-bit too
    assert out["region"] == "OK" and out["region_value"] == "3"
    assert out["long"] == "OK" and out["long_value"] == "9"


# -- item 2: scalars ---------------------------------------------------------------------

def test_integer_scalars_out_of_range_are_value_errors(tmp_path):
    out = run_calls(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((4,), "int64"), k: T.int32, b: T.int8, u: T.uint8, w: T.int64):
            A[0] = T.Cast("int64", k)
            A[1] = T.Cast("int64", b)
            A[2] = T.Cast("int64", u)
            A[3] = w
        """, """
        a = np.zeros(4, "int64")
        f = lib["f"]
        attempt("k_big", lambda: f(a, 2**40, 0, 0, 0))
        attempt("k_above", lambda: f(a, 2**31, 0, 0, 0))
        attempt("k_below", lambda: f(a, -2**31 - 1, 0, 0, 0))
        attempt("b_big", lambda: f(a, 0, 300, 0, 0))
        attempt("u_negative", lambda: f(a, 0, 0, -1, 0))
        attempt("u_big", lambda: f(a, 0, 0, 256, 0))
        attempt("edges", lambda: f(a, -2**31, -128, 255, 2**62))
        print("values", *a)
        attempt("edges2", lambda: f(a, 2**31 - 1, True, 0, -2**63))
        print("values2", *a)
        """)
    for case, arg in (("k_big", "#1 (k: int32)"), ("k_above", "#1 (k: int32)"),
                      ("k_below", "#1 (k: int32)"), ("b_big", "#2 (b: int8)"),
                      ("u_negative", "#3 (u: uint8)"), ("u_big", "#3 (u: uint8)")):
        assert out[case].startswith("ValueError") and arg in out[case], (case, out[case])
    assert "-2147483648 to 2147483647" in out["k_big"]
    assert out["edges"] == "OK" and out["values"] == f"{-2**31} -128 255 {2**62}"
    assert out["edges2"] == "OK" and out["values2"] == f"{2**31 - 1} 1 0 {-2**63}"


# -- item 6: empty tensors ----------------------------------------------------------------

def test_empty_tensors_are_valid_and_do_nothing(tmp_path):
    out = run_calls(tmp_path, """
        @I.ir_module
        class Module:
            @T.prim_func
            def add(a: T.handle, b: T.handle):
                n = T.int32()
                m = T.int32()
                A = T.match_buffer(a, (n, m), "float32")
                B = T.match_buffer(b, (n, m), "float32")
                for i, j in T.grid(n, m):
                    B[i, j] = A[i, j] + T.float32(1)

            @T.prim_func
            def flat(a: T.handle):
                n = T.int32()
                A = T.match_buffer(a, (n,), "float32")
                for i in range(n):
                    A[i] = T.float32(1)

            @T.prim_func
            def fixed(A: T.Buffer((0, 4), "float32"), B: T.Buffer((3,), "float32")):
                B[0] = T.float32(2)
        """, """
        for shape in [(4, 0), (0, 4), (0, 0), (3, 0)]:
            a, b = np.zeros(shape, "float32"), np.zeros(shape, "float32")
            attempt("add_%d_%d" % shape, lambda: lib["add"](a, b))
        attempt("flat", lambda: lib["flat"](np.zeros(0, "float32")))
        z = np.zeros(1, "float32")
        attempt("fake", lambda: lib["add"](fake(z, (5, 0), strides=(0, 0), null=True),
                                           fake(z, (5, 0), strides=(7, 3), null=True)))
        b = np.zeros(3, "float32")
        attempt("fixed", lambda: lib["fixed"](np.zeros((0, 4), "float32"), b))
        print("fixed_value", b[0])
        attempt("mismatch", lambda: lib["add"](np.zeros((4, 0), "float32"),
                                              np.zeros((0, 4), "float32")))
        a, b = np.ones((2, 3), "float32"), np.zeros((2, 3), "float32")
        attempt("nonempty", lambda: lib["add"](a, b))
        print("nonempty_sum", b.sum())
        attempt("nonempty_strided", lambda: lib["add"](fake(a, (2, 3), strides=(0, 0)), b))
        """)
    for case in ("add_4_0", "add_0_4", "add_0_0", "add_3_0", "flat", "fake", "fixed",
                 "nonempty"):
        assert out[case] == "OK", (case, out[case])
    assert out["fixed_value"] == "2.0" and out["nonempty_sum"] == "12.0"
    assert out["mismatch"].startswith("ValueError") and "B.shape[0]" in out["mismatch"]
    assert out["nonempty_strided"].startswith("ValueError") and "A.strides" in out["nonempty_strided"]


# -- the C ABI ----------------------------------------------------------------------------

C_CALLS = """
    import ctypes
    c = ctypes.CDLL(sys.argv[1])
    c.m_last_error.restype = ctypes.c_char_p
    c.fill.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    c.flat.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    def call(name, f, *args):
        rc = f(*args)
        print(name, rc, c.m_last_error().decode() if rc else "")
    a = np.zeros((4, 8), "int8")
    p = a.ctypes.data
    call("fits", c.fill, p, 4, 8)
    print("value", a[3, 7])
    call("wrap", c.fill, p, 2**32 + 4, 8)
    call("wrap_m", c.fill, p, 4, 2**32 + 8)
    call("negative", c.fill, p, -1, 8)
    call("empty_flat", c.flat, None, 0)
    call("null", c.flat, None, 3)
    call("largest", c.flat, None, 2**31 - 1)
    call("above", c.flat, None, 2**31)
    """


def test_c_abi_sizes_that_do_not_fit_are_errors(tmp_path):
    out = run_calls(tmp_path, """
        @I.ir_module
        class Module:
            @T.prim_func
            def fill(a: T.handle):
                n = T.int32()
                m = T.int32()
                A = T.match_buffer(a, (n, m), "int8")
                A[n - 1, m - 1] = T.int8(7)

            @T.prim_func
            def flat(a: T.handle):
                k = T.int32()
                A = T.match_buffer(a, (k,), "int8")
                for i in range(k):
                    A[i] = T.int8(1)
        """, C_CALLS, abi="c")
    assert out["fits"] == "0 " and out["value"] == "7"
    for case, size in (("wrap", "'n'"), ("wrap_m", "'m'"), ("above", "'k'")):
        assert out[case].startswith("-1 ValueError") and size in out[case], (case, out[case])
        assert "larger than 2147483647" in out[case]
    assert out["negative"].startswith("-1") and "negative" in out["negative"]
    assert out["empty_flat"] == "0 "
    assert out["null"].startswith("-1") and "NULL" in out["null"]
    assert out["largest"].startswith("-1") and "NULL" in out["largest"]
