"""RemoveNoOp, stated as TIR before and after (TVM's own 24 cases are in
tests/passes/blocks/test_sblock_pass_pairs.py). Unless a test says otherwise, the expected text is what
TVM 0.27's ``tirx.transform.RemoveNoOp`` prints for the same input."""
from __future__ import annotations

from conftest import pass_checker
from tirc.ir.stmt import LetStmt, SeqStmt
from tirc.frontend.parse import parse
from tirc.passes.lower.remove_no_op import remove_no_op
from tirc.passes.prepare.verify import verify

HEADER = "# from tvm.script import tirx as T\n\n"


check = pass_checker(remove_no_op, header=HEADER)


def test_an_empty_loop_keeps_the_side_effects_of_its_extent():
    check("""
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    for i in range(T.call_extern("int32", "count")):
        T.evaluate(0)
""", """
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    T.call_extern("int32", "count")
""")


def test_a_loop_without_iterations_under_a_thread_axis_goes():
    """``tx - 40`` is negative for every thread of the 32."""
    check("""
@T.prim_func
def main(A: T.Buffer((64,), "int32")):
    tx = T.launch_thread("threadIdx.x", 32)
    for j in range(tx - 40):
        A[j] = 1
    A[tx] = 2
""", """
@T.prim_func
def main(A: T.Buffer((64,), "int32")):
    tx = T.launch_thread("threadIdx.x", 32)
    A[tx] = 2
""")


def test_a_kernel_that_only_stores_what_is_there_disappears():
    check("""
@T.prim_func
def main(A: T.Buffer((64,), "int32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    for j in range(4):
        A[j] = A[j]
""", """
@T.prim_func
def main(A: T.Buffer((64,), "int32")):
    T.evaluate(0)
""")


def test_assume_and_side_effects_stay_pure_evaluations_go():
    check("""
@T.prim_func
def main(A: T.Buffer((64,), "int32"), n: T.int32):
    T.evaluate(T.assume(n < 64))
    T.evaluate(n + 1)
    A[n] = 1
""", """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), n: T.int32):
    T.assume(n < 64)
    A[n] = 1
""")


def test_debug_skip_region_is_dropped_with_its_body():
    check("""
@T.prim_func
def main(A: T.Buffer((64,), "int32"), n: T.int32):
    with T.attr(0, "pragma_debug_skip_region", 1):
        A[n] = 1
    A[0] = 2
""", """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), n: T.int32):
    A[0] = 2
""")


def test_let_values_are_followed_through_a_chain():
    """``b`` is ``i * 8 + 1``, so ``A[i * 8 + 1] = A[b]`` stores what is there; the lets
    stay, with nothing after them."""
    after = check("""
@T.prim_func
def main(A: T.Buffer((64,), "int32"), n: T.int32):
    for i in range(8):
        a: T.let[T.int32] = i * 8
        b: T.let[T.int32] = a + 1
        A[i * 8 + 1] = A[b]
""", """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), n: T.int32):
    for i in range(8):
        a: T.let[T.int32] = i * 8
        b: T.let[T.int32] = a + 1
""")
    inner = after["main"].body.body.body
    assert isinstance(inner, LetStmt) and inner.body == SeqStmt(())


def test_a_store_whose_indices_call_an_extern_function_stays():
    """Two calls of ``f`` may return different indices, so the store is not known to
    store what is there. (TVM 0.27 removes it, keeping only the calls: a bug there.)"""
    text = """
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    A[T.call_extern("int32", "f")] = A[T.call_extern("int32", "f")]
"""
    check(text, text)


def test_an_equality_that_reads_memory_is_not_used_after_a_store():
    """Inside ``if i == B[0]`` the store ``B[0] = 5`` changes ``B[0]``: ``A[i] = A[B[0]]``
    is no longer a no-op (substituting ``B[0]`` for ``i`` would remove it)."""
    text = """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), B: T.Buffer((1,), "int32"), i: T.int32):
    if i == B[0]:
        B[0] = 5
        A[i] = A[B[0]]
"""
    check(text, text)


def test_a_let_that_reads_memory_is_not_substituted():
    """Not TVM's output (TVM 0.27 reads ``x: T.int32 = B[0]`` as a local variable)."""
    text = """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), B: T.Buffer((1,), "int32")):
    x: T.let[T.int32] = B[0]
    B[0] = 5
    A[x] = A[B[0]]
"""
    check(text, text)


def test_equalities_known_in_a_branch_are_used():
    """Where ``i == 3 and j == 2``, ``A[i * 4 + j]`` is ``A[14]``: the then branch goes
    and the else branch becomes the then branch of the negated condition."""
    check("""
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    for i, j in T.grid(4, 4):
        if i == 3 and j == 2:
            A[i * 4 + j] = A[14]
        else:
            A[i * 4 + j] = A[i * 4 + j] + 1
""", """
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    for i, j in T.grid(4, 4):
        if not (i == 3 and j == 2):
            A[i * 4 + j] = A[i * 4 + j] + 1
""")


def test_an_unchanged_module_is_returned_as_it_is():
    mod = parse(HEADER + """
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    for i in range(16):
        A[i] = 1
""")
    assert remove_no_op(mod) is mod


def test_a_value_that_simplifies_to_the_destination_is_not_stored():
    check("""
@T.prim_func
def main(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    for i in range(16):
        A[i] = T.max(A[i], A[i])
        B[i] = B[i] + A[i] * 0
""", """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    T.evaluate(0)
""")


def test_lets_that_double_in_size_are_not_expanded():
    """Each let uses the previous one twice: substituting them all into a proof would take
    2**40 nodes; past a size the value is not substituted and the store stays."""
    lets = "\n".join(f"    a{k}: T.let[T.int32] = a{k - 1} + a{k - 1}" for k in range(1, 41))
    text = f"""
@T.prim_func
def main(A: T.Buffer((16,), "int32"), n: T.int32):
    a0: T.let[T.int32] = n
{lets}
    A[a40] = A[a40 + 1]
"""
    mod = verify(parse(HEADER + text, "before.tir"))
    assert remove_no_op(mod) is mod


def test_a_wait_for_a_negative_number_of_copy_groups_goes_and_a_count_folds():
    """An unrolled pipeline epilogue waits for ``1 - i`` groups: at ``i = 2`` that is no
    wait at all (TVM's RemoveNoOp), at ``i = 0`` the count folds to 1 for the code
    generator (TVM's simplifier after unrolling)."""
    check("""
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    with T.attr({"async_wait_queue_scope": 0}):
        T.attr({"async_wait_inflight_count": T.Sub(1, 2)})
        A[0] = 1
    with T.attr({"async_wait_queue_scope": 0}):
        T.attr({"async_wait_inflight_count": T.Sub(1, 0)})
        A[1] = 2
""", """
@T.prim_func
def main(A: T.Buffer((16,), "int32")):
    A[0] = 1
    with T.attr({"async_wait_queue_scope": 0}):
        T.attr({"async_wait_inflight_count": 1})
        A[1] = 2
""")
