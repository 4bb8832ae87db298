"""InlinePrivateFunctions, stated as TIR before and after."""
from __future__ import annotations

import pytest

from conftest import pass_checker
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.lower.inline_private_functions import inline_private_functions
from tirc.passes.pass_context import PassContext
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

CTX = PassContext(parse_target("cuda -arch=sm_90", host="llvm"))
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
NOCALL = 'T.target({"arch": "sm_90", "kind": "cuda", "supports_calls": False})'
NOCALL_FULL = 'T.target({"arch": "sm_90", "host": {"kind": "llvm"}, "kind": "cuda", "supports_calls": False})'
DEV = 'T.target({"arch": "sm_90", "kind": "cuda"})'
FULL = 'T.target({"arch": "sm_90", "host": {"kind": "llvm"}, "kind": "cuda"})'


def run(before: str):
    mod = verify(parse(HEADER + before, "before.tir"))
    return mod, inline_private_functions(mod, CTX)


check = pass_checker(lambda mod: inline_private_functions(mod, CTX))


EXPR_CALLS = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {dev}}})
        c: T.int32 = a * 2
        return c + b

    @T.prim_func
    def main(A: T.Buffer((128, 128), "int32"), C: T.Buffer((128, 128), "int32")):
        T.func_attr({{"target": {full}}})
        for bx in T.thread_binding(128, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                C[bx, tx] = Module.add(A[bx, tx], tx)
"""


def test_supports_calls_true_leaves_the_module_untouched():
    mod, after = run(EXPR_CALLS.format(dev=DEV, full=FULL))
    assert after is mod


def test_expression_call_becomes_the_returned_expression():
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((128, 128), "int32"), C: T.Buffer((128, 128), "int32")):
        T.func_attr({{"target": {NOCALL_FULL}}})
        c = T.int32()
        for bx in T.thread_binding(128, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                C[bx, tx] = T.Let(c + tx, where={{c: A[bx, tx] * 2}})
"""
    check(EXPR_CALLS.format(dev=NOCALL, full=NOCALL_FULL), expected)


def test_arguments_used_twice_are_bound_once_and_callees_inline_transitively():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def sq(x: T.int32) -> T.int32:
        T.func_attr({{"target": {NOCALL}}})
        return x * x

    @T.prim_func(private=True)
    def f(a: T.int32) -> T.int32:
        T.func_attr({{"target": {NOCALL}}})
        return Module.sq(a + 1)

    @T.prim_func
    def main(A: T.Buffer((64,), "int32")):
        T.func_attr({{"target": {NOCALL}}})
        for i in range(64):
            A[i] = Module.f(i)
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((64,), "int32")):
        T.func_attr({{"target": {NOCALL}}})
        x = T.int32()
        for i in range(64):
            A[i] = T.Let(x * x, where={{x: i + 1}})
"""
    check(before, expected)


def test_void_call_with_buffer_arguments_becomes_the_body():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(X: T.Buffer((64,), "float32"), v: T.float32):
        T.func_attr({{"target": {NOCALL}}})
        for i in range(64):
            X[i] = v

    @T.prim_func(private=True)
    def zero(p: T.handle("float32", "global"), k: T.int32):
        T.func_attr({{"target": {NOCALL}}})
        Y = T.decl_buffer((16,), data=p)
        Y[k] = T.float32(0.0)

    @T.prim_func
    def main(A: T.Buffer((4, 64), "float32"), B: T.Buffer((64,), "float32"), n: T.int32):
        T.func_attr({{"target": {NOCALL}}})
        for r in range(4):
            Module.fill(A[r, 0:64], T.float32(1.0))
        Module.fill(B, T.float32(2.0))
        Module.zero(B.data, n + 1)
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4, 64), "float32"), B: T.Buffer((64,), "float32"), n: T.int32):
        T.func_attr({{"target": {NOCALL}}})
        for r in range(4):
            A_region = T.decl_buffer((64,), "float32", data=A.data, elem_offset=r * 64)
            for i in range(64):
                A_region[i] = T.float32(1.0)
        for i in range(64):
            B[i] = T.float32(2.0)
        k: T.int32 = n + 1
        Y = T.decl_buffer((16,), data=B.data)
        Y[k] = T.float32(0.0)
"""
    check(before, expected)


def test_void_call_with_a_buffer_of_another_shape_is_declared_over_the_callers_data():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(n: T.int32, X: T.Buffer((n,), "float32")):
        T.func_attr({{"target": {NOCALL}}})
        for i in range(n):
            X[i] = T.float32(1.0)

    @T.prim_func
    def main(B: T.Buffer((64,), "float32")):
        T.func_attr({{"target": {NOCALL}}})
        Module.fill(32, B)
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def main(B: T.Buffer((64,), "float32")):
        T.func_attr({{"target": {NOCALL}}})
        X = T.decl_buffer((32,), "float32", data=B.data)
        for i in range(32):
            X[i] = T.float32(1.0)
"""
    check(before, expected)


def test_only_device_call_sites_of_a_no_calls_target_are_inlined():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {NOCALL}}})
        return a + b

    @T.prim_func(private=True)
    def add_host(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": T.target({{"kind": "llvm"}})}})
        return a + b

    @T.prim_func(private=True)
    def unused(a: T.int32) -> T.int32:
        T.func_attr({{"target": {NOCALL}}})
        return a

    @T.prim_func
    def main(A: T.Buffer((128,), "int32"), n: T.int32):
        T.func_attr({{"target": {NOCALL_FULL}}})
        length: T.int32 = Module.add_host(n, 64)
        for tx in T.thread_binding(length, thread="threadIdx.x"):
            A[tx] = Module.add(A[tx], tx)
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add_host(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": T.target({{"kind": "llvm"}})}})
        return a + b

    @T.prim_func(private=True)
    def unused(a: T.int32) -> T.int32:
        T.func_attr({{"target": {NOCALL}}})
        return a

    @T.prim_func
    def main(A: T.Buffer((128,), "int32"), n: T.int32):
        T.func_attr({{"target": {NOCALL_FULL}}})
        length: T.int32 = Module.add_host(n, 64)
        for tx in T.thread_binding(length, thread="threadIdx.x"):
            A[tx] = A[tx] + tx
"""
    check(before, expected)


def test_recursive_call_is_a_diagnostic_at_the_call():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def f(a: T.int32) -> T.int32:
        T.func_attr({{"target": {NOCALL}}})
        return Module.g(a)

    @T.prim_func(private=True)
    def g(a: T.int32) -> T.int32:
        T.func_attr({{"target": {NOCALL}}})
        return Module.f(a)

    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        T.func_attr({{"target": {NOCALL}}})
        A[0] = Module.f(1)
"""
    with pytest.raises(Diagnostic, match="recursive") as info:
        run(before)
    assert info.value.span is not None and info.value.span.line == 15  # g's call of f closes the cycle


def test_non_tail_return_is_a_diagnostic_at_the_call():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def f(a: T.int32) -> T.int32:
        if a > 0:
            return a
        return 0 - a

    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        T.func_attr({{"target": {NOCALL}}})
        A[0] = Module.f(A[1])
"""
    with pytest.raises(Diagnostic, match="single tail 'return'") as info:
        run(before)
    assert info.value.span is not None and info.value.span.line == 16  # the call in main
