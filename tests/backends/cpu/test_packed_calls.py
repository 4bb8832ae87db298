"""T.call_packed / T.call_cpacked from host code (tirc/backends/cpu/packed_call.py).

The module of the first test is TVM 0.27's print (tests/corpus/tvm/call_packed_host.tir,
from gen_tvm_corpus.py); the values it must give are those TVM 0.27's own build gave
(``tvm.compile(mod, target="llvm")`` with the same registered function), recorded here."""
from __future__ import annotations

import shutil
import textwrap

import numpy as np
import pytest
from conftest import ROOT

from tirc.api import build_and_load
from tirc.diagnostics import Diagnostic, SourceFile

tvm_ffi = pytest.importorskip("tvm_ffi")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
CORPUS = ROOT / "tests" / "corpus" / "tvm" / "call_packed_host.tir"

# What TVM 0.27's build of CORPUS did with tirc_test.record (returning 40 + n), n = 3.
TVM_CALLS = [(3, "hello", 2.5), (4, "again", 0.5), (7, "third", 1.0)]
TVM_B = [43, 47]

_calls: list = []


@tvm_ffi.register_global_func("tirc_test.record")
def _record(ptr, n, s, x):
    _calls.append((n, s, x))
    return 40 + n


@tvm_ffi.register_global_func("tirc_test.raises")
def _raises(*args):
    raise ValueError(f"callee failed with {len(args)} arguments")


def _load(text: str, **kw):
    return build_and_load(SourceFile("t.tir", text), **kw).module


def _arr(a):
    return tvm_ffi.from_dlpack(a)


def test_tvm_printed_module_calls_the_registry_as_tvm_build_does():
    lib = build_and_load(SourceFile(str(CORPUS), CORPUS.read_text())).module
    A, B = np.arange(4, dtype="float32"), np.zeros(2, dtype="int32")
    _calls.clear()
    lib["main"](_arr(A), _arr(B), 3)
    assert _calls == TVM_CALLS
    assert B.tolist() == TVM_B
    _calls.clear()
    lib["main"](_arr(A), _arr(B), 3)  # the looked-up function is kept: same calls again
    assert _calls == TVM_CALLS


def _one(body: str, params: str = "A: T.Buffer((4,), \"float32\")", extra: str = "") -> str:
    return HEAD + textwrap.dedent(f"""
        @I.ir_module
        class Module:
            @T.prim_func
            def main({params}):
                T.func_attr({{"target": T.target("llvm")}})
        """) + textwrap.indent(textwrap.dedent(body), " " * 8) + textwrap.indent(textwrap.dedent(extra), " " * 4)


def test_unregistered_name_is_a_runtime_error_naming_it():
    lib = _load(_one('T.call_packed("tirc_test.nobody", A.data)'))
    with pytest.raises(RuntimeError, match="no global function named 'tirc_test.nobody'"):
        lib["main"](_arr(np.zeros(4, "float32")))


def test_callee_error_reaches_the_caller_and_stops_the_function():
    lib = _load(_one('''
        T.call_packed("tirc_test.raises", A.data, 1)
        A[0] = T.float32(9)
        '''))
    A = np.zeros(4, "float32")
    with pytest.raises(ValueError, match="callee failed with 2 arguments"):
        lib["main"](_arr(A))
    assert A[0] == 0  # nothing after the failed call ran


def test_result_dtypes():
    @tvm_ffi.register_global_func("tirc_test.half", override=True)
    def half(x):
        return x / 2

    @tvm_ffi.register_global_func("tirc_test.text", override=True)
    def text():
        return "an object result" * 3  # released by the caller, reads as 0

    lib = _load(_one('''
        B[0] = T.call_packed("tirc_test.half", T.float32(5))
        B[1] = T.call_packed("tirc_test.half", T.float32(-7))
        B[2] = T.call_packed("tirc_test.half", T.float64(1e300))
        B[3] = T.call_packed("tirc_test.text")
        B[4] = T.call_packed("tirc_test.half", T.int64(8))
        ''', 'B: T.Buffer((5,), "int32")'))
    B = np.full(5, -1, "int32")
    lib["main"](_arr(B))
    # a float result rounds toward zero (5e299 saturates, then wraps to int32 as a cast
    # of the int64 does); a string reads as 0; 8 / 2 is the float 4.0 in Python
    assert B.tolist() == [2, -3, np.int64(9.2e18).astype(np.int32), 0, 4]


def test_call_cpacked_calls_a_symbol_with_the_packed_signature():
    """The symbol of an exported function of the same module has that signature."""
    text = _one('B[0] = T.call_cpacked("__tvm_ffi_twice", 21)',
                'B: T.Buffer((1,), "int32")', extra='''
            @T.prim_func
            def twice(x: T.int32) -> T.int32:
                T.func_attr({"target": T.target("llvm")})
                return x * 2
        ''')
    lib = _load(text)
    B = np.zeros(1, "int32")
    lib["main"](_arr(B))
    assert B[0] == 42


@pytest.mark.parametrize("text,message", [
    (HEAD + textwrap.dedent('''
        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((4,), "float32")):
                T.func_attr({"target": T.target("llvm")})
                Module.helper(A.data)

            @T.prim_func(private=True)
            def helper(p: T.handle("float32")):
                T.func_attr({"target": T.target("llvm")})
                T.call_packed("tirc_test.record", p, 1, "x", T.float32(0))
        '''), "not supported in the private function 'helper'"),
    (_one('''
        for i in T.parallel(4):
            T.call_packed("tirc_test.record", A.data, i, "x", T.float32(0))
        '''), "not supported in a T.parallel loop"),
    (_one('T.call_packed("tirc_test.record", T.Broadcast(T.float32(1), 4))'),
     "a float32x4 value cannot be passed to a packed function"),
])
def test_places_a_packed_call_cannot_go_are_located_errors(text, message):
    with pytest.raises(Diagnostic) as err:
        _load(text)
    assert message in err.value.message and err.value.span is not None


def test_c_abi_refuses_packed_calls():
    with pytest.raises(Diagnostic) as err:
        _load(_one('T.call_packed("tirc_test.record", A.data, 1, "x", T.float32(0))'), abi="c",
              symbol_prefix="t_")
    assert "C ABI" in err.value.message and err.value.span is not None


# -- calls of exported functions (once an internal error) ---------------------------------

PUBLIC = ROOT / "tests" / "corpus" / "tvm" / "module_public_calls_public.tir"


def test_exported_function_calls_exported_functions():
    """TVM 0.27 prints the module; its own build stops at an internal error on it."""
    lib = build_and_load(SourceFile(str(PUBLIC), PUBLIC.read_text())).module
    A, B = np.zeros(4, "float32"), np.zeros(1, "int32")
    lib["main"](_arr(A), _arr(B), 5)
    assert A.tolist() == [5, 6, 7, 9]
    assert B.tolist() == [10]  # TVM prints the store B[0] = ... as `B = Module.twice(n)`
    with pytest.raises(RuntimeError, match="x is too large"):  # the callee's own check
        lib["main"](_arr(A), _arr(B), 100)


@pytest.mark.parametrize("body,message", [
    ('''
     X = T.alloc_buffer((4,), "float32")
     Module.fill(X, 1)
     ''', "buffer 'X' cannot be passed to the exported function 'fill'"),
])
def test_exported_calls_that_cannot_be_made_are_located_errors(body, message):
    with pytest.raises(Diagnostic) as err:
        _load(_one(body, extra='''
            @T.prim_func
            def fill(X: T.Buffer((4,), "float32"), x: T.int32):
                T.func_attr({"target": T.target("llvm")})
                X[0] = T.float32(1)
            '''))
    assert message in err.value.message and err.value.span is not None


def test_private_function_cannot_call_an_exported_one():
    text = HEAD + textwrap.dedent('''
        @I.ir_module
        class Module:
            @T.prim_func
            def main(n: T.int32):
                T.func_attr({"target": T.target("llvm")})
                Module.helper(n)

            @T.prim_func(private=True)
            def helper(n: T.int32):
                T.func_attr({"target": T.target("llvm")})
                Module.twice(n)

            @T.prim_func
            def twice(x: T.int32) -> T.int32:
                T.func_attr({"target": T.target("llvm")})
                return x * 2
        ''')
    with pytest.raises(Diagnostic) as err:
        _load(text)
    assert "private function 'helper' cannot call the exported function 'twice'" in err.value.message
