"""UnrollLoop, stated as TIR before and after."""
from __future__ import annotations

from conftest import pass_checker
from tirc.ir.buffer import Buffer
from tirc.ir.equal import assert_structural_equal
from tirc.ir.expr import Var
from tirc.ir.stmt import AllocBuffer, For, LetStmt
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.pass_context import PassContext
from tirc.passes.lower.unroll_loop import MAX_COPIES, unroll_loop
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
CTX = PassContext(parse_target("cuda -arch=sm_90", host="llvm"))
DEV = 'T.target({"arch": "sm_90", "kind": "cuda"})'


check = pass_checker(lambda mod: unroll_loop(mod, CTX), reprint=True)


def _defined(body) -> list[object]:
    out: list[object] = []
    for n in walk(body):
        if isinstance(n, For):
            out.append(n.loop_var)
        elif isinstance(n, LetStmt):
            out.append(n.var)
        elif isinstance(n, AllocBuffer):
            out.extend((n.buffer, n.buffer.data))
    return out


def test_tvm_reduce_sum_tree():
    # tests/corpus/tvm/lowered_reduce_sum_03_unroll_loop.tir: the copies are not simplified.
    before = f"""
@T.prim_func
def main(B: T.Buffer((256,), "float32")):
    T.func_attr({{"target": {DEV}}})
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_shared((128,))
    S[threadIdx_x] = B[threadIdx_x]
    for s in T.unroll(3):
        if threadIdx_x < 64 >> s:
            S[threadIdx_x] = S[threadIdx_x] + S[threadIdx_x + (64 >> s)]
    if threadIdx_x == 0:
        B[0] = S[0]
"""
    expected = f"""
@T.prim_func
def main(B: T.Buffer((256,), "float32")):
    T.func_attr({{"target": {DEV}}})
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_shared((128,))
    S[threadIdx_x] = B[threadIdx_x]
    if threadIdx_x < T.RShift(64, 0):
        S[threadIdx_x] = S[threadIdx_x] + S[threadIdx_x + T.RShift(64, 0)]
    if threadIdx_x < T.RShift(64, 1):
        S[threadIdx_x] = S[threadIdx_x] + S[threadIdx_x + T.RShift(64, 1)]
    if threadIdx_x < T.RShift(64, 2):
        S[threadIdx_x] = S[threadIdx_x] + S[threadIdx_x + T.RShift(64, 2)]
    if threadIdx_x == 0:
        B[0] = S[0]
"""
    check(before, expected)


def test_start_and_step_and_symbolic_start():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for k in T.unroll(2, 9, step=3):
        A[k] = T.float32(1.0)
    for j in T.unroll(n, n + 2):
        A[j] = T.float32(2.0)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    A[2] = T.float32(1.0)
    A[5] = T.float32(1.0)
    A[8] = T.float32(1.0)
    A[n] = T.float32(2.0)
    A[n + 1] = T.float32(2.0)
"""
    check(before, expected)


def test_definitions_inside_each_copy_are_fresh():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for k in T.unroll(2):
        t: T.let[T.float32] = A[k]
        L = T.alloc_buffer((2,), scope="local")
        for j in T.unroll(2):
            L[j] = t
        for i in range(2):
            A[k * 2 + i + 8] = L[i]
"""
    # Not simplified (as in TVM): k * 2 becomes T.Mul(0, 2), which the printer keeps as is.
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    t = T.float32()
    with T.LetStmt(A[0], var=t):
        L = T.alloc_buffer((2,), scope="local")
        L[0] = t
        L[1] = t
        for i in range(2):
            A[T.Mul(0, 2) + i + 8] = L[i]
    t_1: T.let[T.float32] = A[1]
    L_1 = T.alloc_buffer((2,), scope="local")
    L_1[0] = t_1
    L_1[1] = t_1
    for i in range(2):
        A[T.Mul(1, 2) + i + 8] = L_1[i]
"""
    after = check(before, expected)
    defined = _defined(after["main"].body)
    assert len(defined) == 8
    assert len({id(d) for d in defined}) == len(defined)
    assert all(isinstance(d, (Var, Buffer)) for d in defined)


def test_non_constant_extent_becomes_serial_and_zero_extent_disappears():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for k in T.unroll(n):
        A[k] = T.float32(0.0)
    for j in T.unroll(0):
        A[j] = T.float32(1.0)
    for i in T.unroll(0, 8, step=n):
        A[i] = T.float32(2.0)
    A[0] = T.float32(3.0)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for k in range(n):
        A[k] = T.float32(0.0)
    for i in range(0, 8, n):
        A[i] = T.float32(2.0)
    A[0] = T.float32(3.0)
"""
    check(before, expected)


def test_zero_extent_loop_as_the_whole_body():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for j in T.unroll(0):
        A[j] = T.float32(1.0)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    T.evaluate(0)
"""
    check(before, expected)


def test_loops_over_the_limits_stay_unrolled_loops():
    before = f"""
@T.prim_func
def main(A: T.Buffer((4096,), "float32")):
    for k in T.unroll({MAX_COPIES + 1}):
        A[k] = T.float32(0.0)
    for i in T.unroll(128):
        for j in T.unroll(64):
            A[i * 64 + j] = T.float32(1.0)
"""
    # The inner loop is unrolled; 128 copies of its 64 stores would exceed MAX_STATEMENTS.
    # (i * 64 + 0 is written T.Add(i * 64, 0): the parser folds x + 0, as TVM's does)
    inner = "".join(f"        A[{'T.Add(i * 64, 0)' if j == 0 else f'i * 64 + {j}'}] = T.float32(1.0)\n"
                    for j in range(64))
    expected = f"""
@T.prim_func
def main(A: T.Buffer((4096,), "float32")):
    for k in T.unroll({MAX_COPIES + 1}):
        A[k] = T.float32(0.0)
    for i in T.unroll(128):
{inner}"""
    after = check(before, expected)
    kinds = [n.kind for n in walk(after["main"].body) if isinstance(n, For)]
    assert kinds == ["unrolled", "unrolled"]


def test_exactly_max_copies_are_unrolled():
    before = f"""
@T.prim_func
def main(A: T.Buffer((4096,), "float32")):
    for k in T.unroll({MAX_COPIES}):
        A[k] = T.float32(0.0)
"""
    after = unroll_loop(verify(parse(HEADER + before)), CTX)
    verify(after)
    assert not any(isinstance(n, For) for n in walk(after["main"].body))
    assert len(after["main"].body.stmts) == MAX_COPIES


def test_module_without_unrolled_loops_is_unchanged():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in range(64):
        A[i] = T.float32(0.0)
"""
    mod = verify(parse(HEADER + before))
    assert unroll_loop(mod, CTX) is mod


def test_loop_pragmas_from_a_schedule_are_consumed():
    # LowerOpaqueBlock writes a loop's pragma annotations as T.attr(loop_var, key, value)
    # around the loop; the attribute names the loop variable outside the loop, so it must
    # not reach SplitHostDevice (the variable would become a kernel input).
    from tirc.ir.stmt import AttrStmt
    from tirc.passes.blocks.lower_opaque_block import lower_opaque_block
    mod = lower_opaque_block(parse(HEADER + """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32")):
    for i in T.serial(16, annotations={"pragma_auto_unroll_max_step": 16, "pragma_vectorize": 1}):
        with T.sblock("b"):
            T.reads()
            T.writes(A[i])
            A[i] = T.float32(0.0)
""", "before.tir"))
    assert isinstance(mod.functions["main"].body, AttrStmt)
    after = unroll_loop(mod, CTX)
    # 16 iterations of one store fit pragma_auto_unroll_max_step 16: unrolled, as TVM does
    stores = "\n".join(f"    A[{i}] = T.float32(0.0)" for i in range(16))
    assert_structural_equal(after, parse(HEADER + """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32")):
""" + stores + "\n", "expected.tir"))


# Made by TVM 0.27's UnrollLoop (tvm.tirx.transform.UnrollLoop(), default config) from
# AUTO_BEFORE: the automatic unrolling rules under the loop pragmas dlight writes.
AUTO_BEFORE = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((8, 8), "float32")):
    i = T.int32()
    with T.attr(i, "pragma_auto_unroll_max_step", 16):
        for i in range(4):
            A[i] = T.float32(0.0)
            A[i + 4] = T.float32(1.0)
    j = T.int32()
    with T.attr(j, "pragma_auto_unroll_max_step", 16):
        for j in range(8):
            for k in range(4):
                A[j * 4 + k] = T.float32(2.0)
    m = T.int32()
    with T.attr(m, "pragma_auto_unroll_max_step", 64):
        with T.attr(m, "pragma_unroll_explicit", 0):
            for m in range(4):
                A[m] = T.float32(3.0)
    n = T.int32()
    with T.attr(n, "pragma_auto_unroll_max_step", 64):
        for n in range(2):
            for q in range(T.Cast("int32", B[0, 0])):
                A[q] = T.float32(4.0)
"""
AUTO_AFTER_TVM = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((8, 8), "float32")):
    A[0] = T.float32(0.0)
    A[T.Add(0, 4)] = T.float32(1.0)
    A[1] = T.float32(0.0)
    A[T.Add(1, 4)] = T.float32(1.0)
    A[2] = T.float32(0.0)
    A[T.Add(2, 4)] = T.float32(1.0)
    A[3] = T.float32(0.0)
    A[T.Add(3, 4)] = T.float32(1.0)
    for j in range(8):
        A[T.Add(j * 4, 0)] = T.float32(2.0)
        A[j * 4 + 1] = T.float32(2.0)
        A[j * 4 + 2] = T.float32(2.0)
        A[j * 4 + 3] = T.float32(2.0)
    for m in T.unroll(4):
        A[m] = T.float32(3.0)
    for n, q in T.grid(2, T.Cast("int32", B[0, 0])):
        A[q] = T.float32(4.0)
"""


def test_auto_unroll_under_pragmas_matches_tvm():
    """8 steps fit max_step 16 (unrolled); 8 x 4 do not, so only the inner loop is; with
    pragma_unroll_explicit 0 the loop becomes an unroll hint; a loop around a loop that
    stays (symbolic extent) is not unrolled."""
    from tirc.ir.stmt import AttrStmt
    from tirc.ir.visitor import walk
    before = parse(HEADER + AUTO_BEFORE, "before.tir")
    after = unroll_loop(before, CTX)
    assert not any(isinstance(n, AttrStmt) for n in walk(after.functions["main"].body))
    assert_structural_equal(after, parse(HEADER + AUTO_AFTER_TVM, "tvm.tir"))


def test_variable_used_before_its_definition_in_the_body_is_renewed_everywhere():
    """A body that uses a variable before defining it (the same Var object, not SSA):
    each copy renews it at every place, the use included, as a walk of the whole body
    finds the definition first (UnrollLoop's first copy learns the definitions as it
    meets them, and makes the copy again when a use came first)."""
    mod = parse(HEADER + """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), n: T.int32):
    for i in T.unroll(2):
        A[i] = n
        for j in range(2):
            A[j + 4] = j
""", "t.tir")
    loop = mod["main"].body
    store, inner = loop.body.stmts
    n = store.value
    from tirc.ir.renew import substitute
    inner = substitute(inner, {id(inner.loop_var): n})
    inner = inner.__class__(n, inner.min, inner.extent, inner.kind, inner.body)
    body = loop.body.__class__((store, inner))
    reused = mod.with_function("main", mod["main"].with_body(loop.__class__(
        loop.loop_var, loop.min, loop.extent, loop.kind, body)))
    out = unroll_loop(reused, CTX)["main"].body.stmts
    assert len(out) == 4
    for k in range(2):
        first, second = out[2 * k], out[2 * k + 1]
        assert first.value is second.loop_var is not n
    assert out[0].value is not out[2].value


def test_one_iteration_around_unrolled_loops():
    # the one-iteration loop's variable is replaced in its body before the inner loop is
    # unrolled: the copies read the replaced value
    before = f"""
@T.prim_func
def main(B: T.Buffer((16,), "float32")):
    T.func_attr({{"target": {DEV}}})
    threadIdx_x = T.launch_thread("threadIdx.x", 4)
    for i in T.unroll(1):
        for j in T.unroll(2):
            B[i * 8 + j * 4 + threadIdx_x] = T.float32(1.0)
"""
    expected = f"""
@T.prim_func
def main(B: T.Buffer((16,), "float32")):
    T.func_attr({{"target": {DEV}}})
    threadIdx_x = T.launch_thread("threadIdx.x", 4)
    B[T.Mul(0, 8) + T.Mul(0, 4) + threadIdx_x] = T.float32(1.0)
    B[T.Mul(0, 8) + T.Mul(1, 4) + threadIdx_x] = T.float32(1.0)
"""
    check(before, expected)


def test_one_iteration_whose_variable_bounds_an_inner_loop():
    # j's extent is i: unrolled after its body (as TVM), j's loop stays a serial loop
    # of extent 0 rather than vanishing
    before = f"""
@T.prim_func
def main(B: T.Buffer((16,), "float32")):
    T.func_attr({{"target": {DEV}}})
    threadIdx_x = T.launch_thread("threadIdx.x", 4)
    for i in T.unroll(1):
        for j in T.unroll(i):
            B[j * 4 + threadIdx_x] = T.float32(1.0)
"""
    expected = f"""
@T.prim_func
def main(B: T.Buffer((16,), "float32")):
    T.func_attr({{"target": {DEV}}})
    threadIdx_x = T.launch_thread("threadIdx.x", 4)
    for j in range(0):
        B[j * 4 + threadIdx_x] = T.float32(1.0)
"""
    check(before, expected)


def test_one_iteration_kept_as_a_loop_is_unrolled_as_written():
    # a serial loop of one iteration over a loop that stays a loop is not unrolled
    # (TVM's rule): its body is the inner loop, unchanged, its variable still there
    before = f"""
@T.prim_func
def main(B: T.Buffer((64,), "float32"), n: T.int32):
    T.func_attr({{"target": {DEV}}})
    threadIdx_x = T.launch_thread("threadIdx.x", 4)
    for i in range(1):
        for j in range(n):
            B[i * 16 + j * 4 + threadIdx_x] = T.float32(1.0)
"""
    check(before, before)
