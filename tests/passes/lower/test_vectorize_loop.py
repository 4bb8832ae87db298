"""VectorizeLoop, stated as TIR before and after."""
from __future__ import annotations

from conftest import pass_checker
from tirc.ir.equal import assert_structural_equal
from tirc.ir.stmt import For
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.pass_context import PassContext
from tirc.passes.lower.vectorize_loop import vectorize_loop
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
CTX = PassContext(parse_target("cuda -arch=sm_90", host="llvm"))
DEV = 'T.target({"arch": "sm_80", "kind": "cuda"})'


def _no_vectorized_loop_left(after) -> None:
    for func in after.functions.values():
        assert not any(isinstance(n, For) and n.kind == "vectorized" for n in walk(func.body))


check = pass_checker(lambda mod: vectorize_loop(mod, CTX), reprint=True, post=_no_vectorized_loop_left)


def test_tvm_vec_math_example():
    # tests/corpus/tvm/lowered_vec_math_01_vectorize_loop.tir, this pass's part of it.
    before = f"""
@T.prim_func
def main(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
    T.func_attr({{"target": {DEV}}})
    blockIdx_x = T.launch_thread("blockIdx.x", 8)
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    for v in T.vectorized(4):
        B[blockIdx_x * 512 + threadIdx_x * 4 + v] = T.exp(A[blockIdx_x * 512 + threadIdx_x * 4 + v]) * T.float32(0.5) + T.sqrt(A[blockIdx_x * 512 + threadIdx_x * 4 + v])
"""
    expected = f"""
@T.prim_func
def main(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
    T.func_attr({{"target": {DEV}}})
    blockIdx_x = T.launch_thread("blockIdx.x", 8)
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    B[blockIdx_x * 512 + threadIdx_x * 4:blockIdx_x * 512 + threadIdx_x * 4 + 4] = T.exp(A[T.Ramp(blockIdx_x * 512 + threadIdx_x * 4, 1, 4)]) * T.Broadcast(T.float32(0.5), 4) + T.sqrt(A[T.Ramp(blockIdx_x * 512 + threadIdx_x * 4, 1, 4)])
"""
    check(before, expected)


def test_loop_min_scaled_index_casts_and_binary_math():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), I: T.Buffer((64,), "int32")):
    for i in range(8):
        for v in T.vectorized(2, 6):
            B[i * 8 + v] = T.pow(A[v * 2 + 1], T.float32(2.0)) + T.Cast("float32", v)
            I[i * 8 + v] = T.max(v, i) * 3
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), I: T.Buffer((64,), "int32")):
    for i in range(8):
        B[i * 8 + 2:i * 8 + 2 + 4] = T.pow(A[T.Ramp(5, 2, 4)], T.Broadcast(T.float32(2.0), 4)) + T.Cast("float32x4", T.Ramp(2, 1, 4))
        I[i * 8 + 2:i * 8 + 2 + 4] = T.max(T.Ramp(2, 1, 4), T.Broadcast(i, 4)) * T.Broadcast(3, 4)
"""
    check(before, expected)


def test_lets_get_vector_variables_and_select_and_comparisons_vectorize():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), flag: T.bool):
    for v in T.vectorized(8):
        x: T.let[T.float32] = A[v] * T.float32(2.0)
        if flag:
            B[v] = T.Select(x > T.float32(0.0), x, T.float32(0.0))
        else:
            B[v] = T.if_then_else(flag, x, T.float32(1.0))
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), flag: T.bool):
    x: T.let[T.float32x8] = A[T.Ramp(0, 1, 8)] * T.Broadcast(T.float32(2.0), 8)
    if flag:
        B[0:8] = T.Select(x > T.Broadcast(T.float32(0.0), 8), x, T.Broadcast(T.float32(0.0), 8))
    else:
        B[0:8] = T.if_then_else(flag, x, T.Broadcast(T.float32(1.0), 8))
"""
    check(before, expected)


def test_loop_invariant_loads_are_broadcast():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), s: T.Buffer((1,), "float32")):
    for v in T.vectorized(4):
        B[v] = A[v] * s[0] + A[v * 0 + 3]
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), s: T.Buffer((1,), "float32")):
    B[0:4] = A[T.Ramp(0, 1, 4)] * T.Broadcast(s[0], 4) + T.Broadcast(A[3], 4)
"""
    check(before, expected)


def test_int64_loop_variable_and_integer_casts_of_the_ramp():
    before = """
@T.prim_func
def main(A: T.Buffer((T.int64(64),), "int64"), B: T.Buffer((64,), "int32")):
    for v in T.vectorized(T.int64(4)):
        A[v + T.int64(4)] = v * T.int64(2)
    for w in T.vectorized(4):
        A[T.Cast("int64", w)] = T.Cast("int64", w)
        B[w] = T.Cast("int32", T.Cast("float32", w))
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((T.int64(64),), "int64"), B: T.Buffer((64,), "int32")):
    A[T.int64(4):T.int64(8)] = T.Ramp(T.int64(0), T.int64(2), 4)
    A[T.int64(0):T.int64(4)] = T.Ramp(T.int64(0), T.int64(1), 4)
    B[0:4] = T.Cast("int32x4", T.Cast("float32x4", T.Ramp(0, 1, 4)))
"""
    check(before, expected)


def test_extent_one_substitutes_the_start():
    before = """
@T.prim_func
def main(B: T.Buffer((64,), "float32")):
    for v in T.vectorized(5, 6):
        B[v] = T.float32(0.0)
"""
    expected = """
@T.prim_func
def main(B: T.Buffer((64,), "float32")):
    B[5] = T.float32(0.0)
"""
    check(before, expected)


FALLBACKS = {
    "nonlinear_store": "B[v * v] = A[v]",
    "gather_load": "B[v] = A[v // 2]",
    "if_on_loop_var": "if v < 2:\n            B[v] = A[v]",
    "if_then_else_on_loop_var": "B[v] = T.if_then_else(v < 2, A[v], T.float32(0.0))",
    "call_with_side_effects": 'B[v] = T.call_extern("float32", "foo", A[v])',
    "pure_extern_without_vector_form": 'B[v] = T.call_pure_extern("float32", "foo", A[v])',
    "nested_loop": "for j in range(2):\n            B[v * 2 + j] = A[v]",
    "loop_carried_value": "B[v + 1] = B[v]",
    "invariant_store": "B[0] = B[0] + A[v]",
    "allocation": "t = T.alloc_buffer((4,))\n        t[v] = A[v]\n        B[v] = t[v]",
    "already_vector": "B[v * 4:v * 4 + 4] = A[T.Ramp(v * 4, 1, 4)]",
}


def test_bodies_that_cannot_be_vectorized_become_serial_loops():
    for name, body in FALLBACKS.items():
        before = f"""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for v in T.vectorized(4):
        {body}
"""
        after = vectorize_loop(verify(parse(HEADER + before, "before.tir")), CTX)
        verify(after)
        expected = parse(HEADER + before.replace("T.vectorized(4)", "range(4)"), "expected.tir")
        try:
            assert_structural_equal(after, expected)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from e


def test_non_constant_extent_and_step_become_serial():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for v in T.vectorized(n):
        A[v] = T.float32(0.0)
    for w in T.vectorized(0, 8, 2):
        A[w] = T.float32(1.0)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for v in range(n):
        A[v] = T.float32(0.0)
    for w in range(0, 8, 2):
        A[w] = T.float32(1.0)
"""
    check(before, expected)


def test_inner_vectorized_loop_vectorizes_and_the_outer_one_falls_back():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in T.vectorized(4):
        for v in T.vectorized(4):
            A[i * 4 + v] = T.float32(0.0)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in range(4):
        A[i * 4:i * 4 + 4] = T.Broadcast(T.float32(0.0), 4)
"""
    check(before, expected)


def test_module_without_vectorized_loops_is_unchanged():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in range(64):
        A[i] = T.float32(0.0)
"""
    mod = verify(parse(HEADER + before))
    assert vectorize_loop(mod, CTX) is mod


def test_stores_read_back_through_another_view_of_the_memory_stay_serial():
    before = """
@T.prim_func
def main(B: T.Buffer((64,), "float32")):
    W = T.decl_buffer((60,), "float32", data=B.data, elem_offset=1)
    for v in T.vectorized(4):
        B[v] = W[v]
"""
    check(before, before.replace("T.vectorized(4)", "range(4)"))


def test_fused_indices_are_simplified_with_the_loop_range_before_falling_back():
    # LowerAutoCopy's copies index through the fused variable: with v < 4 and the rest a
    # multiple of 4, `(x * 4 + v) // 64` does not depend on v and `% 64` is `... + v`, so
    # the store is a Ramp and the transposed load a stride-64 Ramp. With a multiple of 2 a
    # lane may cross a row: a scatter, and the loop stays serial.
    before = """
@T.prim_func
def main(A: T.Buffer((4096,), "float32"), S: T.Buffer((4352,), "float32")):
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    for i in range(8):
        for v in T.vectorized(4):
            S[((i * 128 + threadIdx_x) * 4 + v) // 64 * 68 + ((i * 128 + threadIdx_x) * 4 + v) % 64] = A[((i * 128 + threadIdx_x) * 4 + v) % 64 * 64 + ((i * 128 + threadIdx_x) * 4 + v) // 64]
        for v in T.vectorized(4):
            S[(threadIdx_x * 2 + v) // 64 * 68 + (threadIdx_x * 2 + v) % 64] = A[v]
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((4096,), "float32"), S: T.Buffer((4352,), "float32")):
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    for i in range(8):
        S[i * 544 + threadIdx_x // 16 * 68 + threadIdx_x % 16 * 4:i * 544 + threadIdx_x // 16 * 68 + threadIdx_x % 16 * 4 + 4] = A[T.Ramp(threadIdx_x % 16 * 256 + i * 8 + threadIdx_x // 16, 64, 4)]
        for v in range(4):
            S[(threadIdx_x * 2 + v) // 64 * 68 + (threadIdx_x * 2 + v) % 64] = A[v]
"""
    check(before, expected)
