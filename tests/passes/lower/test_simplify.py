"""Simplify, stated as TIR before and after."""
from __future__ import annotations

from pathlib import Path

from conftest import pass_checker, TESTS
from tirc.ir.equal import assert_structural_equal
from tirc.frontend.parse import parse
from tirc.passes.prepare.bind_target import bind_target
from tirc.passes.pass_context import PassContext
from tirc.passes.lower.simplify import simplify
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

CUDA = parse_target("cuda -arch=sm_90", host="llvm")
CTX = PassContext(CUDA)
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
DEV = 'T.target({"arch": "sm_90", "kind": "cuda"})'
FULL = 'T.target({"arch": "sm_90", "host": {"kind": "llvm"}, "kind": "cuda"})'
HOST = 'T.target({"kind": "llvm"})'
ROOT = TESTS.parent


def run(before: str):
    mod = verify(parse(HEADER + before, "before.tir"))
    return mod, verify(simplify(mod, CTX))


check = pass_checker(lambda mod: simplify(mod, CTX))


def test_seed_000_host_launch_extent_from_device_subroutine():
    # The sample after BindTarget (`tirc lower samples/device_call_add.tir --stop-after BindTarget`).
    text = (ROOT / "samples" / "device_call_add.tir").read_text()
    mod = bind_target(verify(parse(text, "device_call_add.tir")), CUDA)
    after = verify(simplify(mod, CTX))
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {DEV}}})
        return a + b

    @T.prim_func(private=True)
    def add_host(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {HOST}}})
        return a + b

    @T.prim_func
    def main(A: T.Buffer((128, 128), "int32"), B: T.Buffer((128, 128), "int32"), C: T.Buffer((128, 128), "int32")):
        T.func_attr({{"target": {FULL}}})
        for bx in T.thread_binding(128, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                C[bx, tx] = Module.add(A[bx, tx], B[bx, tx])
"""
    assert_structural_equal(after, parse(HEADER + expected, "expected.tir"))


def test_host_conditional_on_device_helper():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def f(x: T.int32) -> T.int32:
        T.func_attr({{"target": {DEV}}})
        y: T.int32 = x * 2
        if y > 4:
            return y - 1
        return y + 1

    @T.prim_func
    def main(A: T.Buffer((16,), "int32")):
        T.func_attr({{"target": {FULL}}})
        if Module.f(3) > 2:
            A[0] = 1
        else:
            A[0] = 2
        if Module.f(1) > 3:
            A[1] = 1
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def f(x: T.int32) -> T.int32:
        T.func_attr({{"target": {DEV}}})
        y: T.int32 = x * 2
        if y > 4:
            return y - 1
        return y + 1

    @T.prim_func
    def main(A: T.Buffer((16,), "int32")):
        T.func_attr({{"target": {FULL}}})
        A[0] = 1
"""
    check(before, expected)


def test_pure_call_with_float_arguments_and_nested_calls():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.float32, b: T.float32) -> T.float32:
        return a + b

    @T.prim_func(private=True)
    def twice(a: T.int32) -> T.int32:
        return Module.sq(a) + Module.sq(a)

    @T.prim_func(private=True)
    def sq(a: T.int32) -> T.int32:
        return a * a

    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32")):
        t: T.float32 = Module.add(T.float32(1.0), T.float32(2.5))
        A[0] = t
        B[Module.twice(2)] = Module.twice(1)
"""
    expected = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.float32, b: T.float32) -> T.float32:
        return a + b

    @T.prim_func(private=True)
    def twice(a: T.int32) -> T.int32:
        return Module.sq(a) + Module.sq(a)

    @T.prim_func(private=True)
    def sq(a: T.int32) -> T.int32:
        return a * a

    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32")):
        A[0] = T.float32(3.5)
        B[8] = 2
"""
    check(before, expected)


def test_impure_or_non_constant_calls_are_kept():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def load(X: T.Buffer((16,), "int32"), i: T.int32) -> T.int32:
        return X[i]

    @T.prim_func(private=True)
    def ext(a: T.int32) -> T.int32:
        return T.call_extern("int32", "rand") + a

    @T.prim_func(private=True)
    def rec(a: T.int32) -> T.int32:
        return Module.rec(a)

    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        return a + b

    @T.prim_func
    def main(A: T.Buffer((16,), "int32"), n: T.int32):
        A[0] = Module.load(A, 1)
        A[1] = Module.ext(1)
        A[2] = Module.rec(1)
        A[3] = Module.add(n, 1)
"""
    mod, after = run(before)
    assert_structural_equal(after, mod)
    assert after is mod


def test_constant_folding_follows_tvm_integer_semantics():
    # (a division by a constant 0 is a verifier error: tests/errors/verify.tir)
    before = """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), F: T.Buffer((4,), "float32"), B: T.Buffer((4,), "bool")):
    A[0] = T.Div(-7, 2)
    A[1] = T.Mod(-7, 2)
    A[2] = T.FloorDiv(-7, 2)
    A[3] = T.FloorMod(-7, 2)
    A[4] = T.min(T.Add(3, 4), T.Mul(2, 5))
    A[5] = T.Cast("int32", T.float32(-2.75))
    A[6] = T.Cast("int32", T.Cast("int8", T.Add(100, 20)))
    A[7] = T.shift_left(T.Add(1, 0), T.Add(4, 0))
    A[9] = T.Add(2147483647, 1)
    A[10] = T.Cast("int32", T.Cast("int8", T.Add(100, 200)))
    A[11] = T.shift_left(T.Add(1, 0), T.Add(40, 0))
    F[0] = T.Add(T.float32(1.5), T.float32(2.0))
    F[1] = T.Div(T.float32(1.0), T.float32(0.0))
    B[0] = T.Not(T.LT(T.Add(1, 1), 3))
    B[1] = T.And(T.EQ(T.Add(1, 1), 2), T.GE(T.Add(4, 0), 5))
    A[12] = T.Select(T.EQ(T.Add(1, 1), 2), 5, 6)
    A[13] = T.if_then_else(T.NE(T.Add(1, 1), 2), 5, 6)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), F: T.Buffer((4,), "float32"), B: T.Buffer((4,), "bool")):
    A[0] = -3
    A[1] = -1
    A[2] = -4
    A[3] = 1
    A[4] = 7
    A[5] = -2
    A[6] = 120
    A[7] = 16
    A[9] = T.Add(2147483647, 1)
    A[10] = T.Cast("int32", T.Cast("int8", 300))
    A[11] = T.shift_left(1, 40)
    F[0] = T.float32(3.5)
    F[1] = T.Div(T.float32(1.0), T.float32(0.0))
    B[0] = T.bool(False)
    B[1] = T.bool(False)
    A[12] = 5
    A[13] = 6
"""
    check(before, expected)


def test_identities_and_reassociation():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), F: T.Buffer((4,), "float32"), B: T.Buffer((4,), "bool"), n: T.int32, x: T.float32, p: T.bool):
    A[0] = T.Add(n, 0) + T.Add(0, n) + T.Mul(n, 1) + T.Mul(1, n)
    A[1] = T.Mul(n, 0) + T.FloorDiv(n, 1) + T.FloorMod(n, 1) + T.Sub(n, n) + T.Sub(n, 0)
    A[2] = T.min(n, n) + T.max(n, n)
    A[3] = T.Add(T.Add(n, 2), 3)
    A[4] = T.Sub(T.Add(n, 2), 5) + 3
    A[5] = T.Mul(T.Mul(n, 2), 3)
    A[6] = T.Add(2, n)
    F[0] = T.Add(x, T.float32(0.0))
    F[1] = T.Mul(x, T.float32(1.0))
    F[2] = T.Add(T.Add(x, T.float32(1.0)), T.float32(2.0))
    B[0] = T.EQ(n, n) or T.LT(n, n)
    B[1] = T.And(p, T.bool(True))
    B[2] = T.Or(p, T.bool(True))
    A[7] = T.Mul(T.call_extern("int32", "rand"), 0)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), F: T.Buffer((4,), "float32"), B: T.Buffer((4,), "bool"), n: T.int32, x: T.float32, p: T.bool):
    A[0] = n + n + n + n
    A[1] = n + n
    A[2] = n + n
    A[3] = n + 5
    A[4] = n
    A[5] = n * 6
    A[6] = n + 2
    F[0] = T.Add(x, T.float32(0.0))
    F[1] = x
    F[2] = x + T.float32(1.0) + T.float32(2.0)
    B[0] = T.bool(True)
    B[1] = p
    B[2] = T.bool(True)
    A[7] = T.Mul(T.call_extern("int32", "rand"), 0)
"""
    check(before, expected)


def test_constant_lets_are_propagated_into_bodies_and_buffer_shapes():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), n: T.int32):
    m: T.int32 = T.Add(8, 8)
    k: T.int32 = n + m
    X = T.decl_buffer((m,), "int32", data=A.data)
    X[0] = k
    A[1] = T.Let(y + n, where={y: T.Add(1, 2)})
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), n: T.int32):
    k: T.int32 = n + 16
    X = T.decl_buffer((16,), "int32", data=A.data)
    X[0] = k
    A[1] = n + 3
"""
    check(before.replace("    A[1] = T.Let", "    y = T.int32()\n    A[1] = T.Let"), expected)


def test_bounds_checks_decided_by_thread_and_loop_ranges():
    before = f"""
@T.prim_func
def main(A: T.Buffer((65536,), "float32"), n: T.int32):
    T.func_attr({{"target": {FULL}}})
    bx = T.launch_thread("blockIdx.x", 256)
    tx = T.launch_thread("threadIdx.x", 256)
    if bx * 256 + tx < 65536:
        A[bx * 256 + tx] = T.float32(1.0)
    if bx * 256 + tx >= 65536:
        A[0] = T.float32(2.0)
    else:
        A[1] = T.float32(3.0)
    if bx * 256 + tx < n:
        A[2] = T.float32(4.0)
    for i in range(4):
        if i * 64 + tx // 4 < 256:
            A[i] = T.Select(i < 4, T.float32(5.0), T.float32(6.0))
        A[T.min(i, 3) + T.max(tx, 255) + T.floordiv(tx, 256) + T.floormod(i, 4)] = T.float32(7.0)
        A[i] = T.if_then_else(tx > 300, A[0], A[1])
"""
    expected = f"""
@T.prim_func
def main(A: T.Buffer((65536,), "float32"), n: T.int32):
    T.func_attr({{"target": {FULL}}})
    bx = T.launch_thread("blockIdx.x", 256)
    tx = T.launch_thread("threadIdx.x", 256)
    A[bx * 256 + tx] = T.float32(1.0)
    A[1] = T.float32(3.0)
    if bx * 256 + tx < n:
        A[2] = T.float32(4.0)
    for i in range(4):
        A[i] = T.float32(5.0)
        A[i + i + 255] = T.float32(7.0)
        A[i] = A[1]
"""
    check(before, expected)


def test_select_keeps_side_effects_of_the_dropped_branch():
    before = """
@T.prim_func
def main(A: T.Buffer((4,), "int32")):
    A[0] = T.Select(T.EQ(T.Add(1, 1), 2), 1, T.call_extern("int32", "g"))
    A[1] = T.if_then_else(T.EQ(T.Add(1, 1), 2), 1, T.call_extern("int32", "g"))
    if T.EQ(T.Add(1, 1), 3):
        A[2] = 1
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((4,), "int32")):
    A[0] = T.Select(T.bool(True), 1, T.call_extern("int32", "g"))
    A[1] = 1
"""
    check(before, expected)


def test_unchanged_module_is_returned_as_is():
    mod, after = run("""
@T.prim_func
def main(A: T.Buffer((4,), "float32"), n: T.int32):
    for i in range(n):
        A[i % 4] = A[i % 4] + T.float32(1.0)
""")
    assert after is mod
