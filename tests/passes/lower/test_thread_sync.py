"""ThreadSync, stated as TIR before and after."""
from __future__ import annotations

from conftest import ROOT, pass_checker

from tirc.ir.equal import assert_structural_equal
from tirc.frontend.parse import parse
from tirc.passes.lower.lower_thread_bindings import lower_thread_bindings
from tirc.passes.pass_context import PassContext
from tirc.passes.lower.thread_sync import thread_sync
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

CTX = PassContext(parse_target("cuda -arch=sm_80", host="llvm"))
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"


def run(text: str):
    mod = verify(parse(HEADER + text, "before.tir"))
    return mod, verify(thread_sync(mod, CTX))


check = pass_checker(lambda mod: thread_sync(mod, CTX))


def unchanged(before: str):
    mod, after = run(before)
    assert after is mod


def kernel(body: str, params: str = 'A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")',
           threads: str = 'tx = T.launch_thread("threadIdx.x", 128)') -> str:
    lines = "\n".join("        " + line for line in body.strip("\n").splitlines())
    return f"""
@I.ir_module
class Module:
    @T.prim_func
    def k({params}):
        bx = T.launch_thread("blockIdx.x", 32)
        {threads}
{lines}
"""


def without_barriers(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "tvm_storage_sync" not in line)


# -- the sample reduction ------------------------------------------------------------------
def test_shared_reduction_sample_gets_its_barriers_back():
    text = (ROOT / "samples" / "shared_reduction.tir").read_text()
    with_barriers = lower_thread_bindings(parse(text, "sample.tir"), CTX)
    stripped = lower_thread_bindings(parse(without_barriers(text), "stripped.tir"), CTX)
    after = verify(thread_sync(stripped, CTX))
    assert_structural_equal(after, with_barriers)


def test_shared_reduction_in_launch_thread_form():
    before = kernel("""
red = T.alloc_shared((128,))
red[tx] = A[bx * 128 + tx]
for s in T.unroll(7):
    if tx < T.shift_right(64, s):
        red[tx] = red[tx] + red[tx + T.shift_right(64, s)]
if tx == 0:
    B[bx] = red[0]
""")
    expected = kernel("""
red = T.alloc_shared((128,))
red[tx] = A[bx * 128 + tx]
T.tvm_storage_sync("shared")
for s in T.unroll(7):
    if tx < T.shift_right(64, s):
        red[tx] = red[tx] + red[tx + T.shift_right(64, s)]
    T.tvm_storage_sync("shared")
if tx == 0:
    B[bx] = red[0]
""")
    check(before, expected)


def test_module_with_its_barriers_is_unchanged():
    text = (ROOT / "samples" / "shared_reduction.tir").read_text()
    mod = lower_thread_bindings(parse(text, "sample.tir"), CTX)
    assert thread_sync(mod, CTX) is mod
    tvm = (ROOT / "tests" / "corpus" / "tvm" / "lowered_reduce_sum_04_thread_sync.tir").read_text()
    mod = parse(tvm, "tvm.tir")
    assert thread_sync(mod, CTX) is mod


# -- accesses by the same thread -------------------------------------------------------------
def test_every_thread_touching_its_own_element_needs_no_barrier():
    unchanged(kernel("""
s = T.alloc_shared((128,))
s[tx] = A[bx * 128 + tx]
s[tx] = s[tx] * T.float32(2.0)
for k in range(4):
    s[tx] = s[tx] + A[k * 128 + tx]
B[bx * 128 + tx] = s[tx]
"""))


def test_own_element_per_iteration_needs_no_barrier():
    unchanged(kernel("""
s = T.alloc_shared((512,))
for k in range(4):
    s[k * 128 + tx] = A[k * 128 + tx]
    B[k * 128 + tx] = s[k * 128 + tx] + T.float32(1.0)
"""))


def test_two_thread_axes_own_element():
    unchanged(kernel("""
s = T.alloc_shared((128,))
s[ty * 32 + tx] = A[bx * 128 + ty * 32 + tx]
B[bx * 128 + ty * 32 + tx] = s[ty * 32 + tx]
""", threads='ty = T.launch_thread("threadIdx.y", 4)\n        tx = T.launch_thread("threadIdx.x", 32)'))


def test_index_missing_a_thread_axis_is_shared_between_threads():
    # Threads (tx, 0) and (tx, 1) both write s[tx]: not private.
    before = kernel("""
s = T.alloc_shared((32,))
s[tx] = A[bx * 128 + ty * 32 + tx]
B[bx * 128 + ty * 32 + tx] = s[tx]
""", threads='ty = T.launch_thread("threadIdx.y", 4)\n        tx = T.launch_thread("threadIdx.x", 32)')
    expected = kernel("""
s = T.alloc_shared((32,))
s[tx] = A[bx * 128 + ty * 32 + tx]
T.tvm_storage_sync("shared")
B[bx * 128 + ty * 32 + tx] = s[tx]
""", threads='ty = T.launch_thread("threadIdx.y", 4)\n        tx = T.launch_thread("threadIdx.x", 32)')
    check(before, expected)


def test_identical_index_that_is_not_per_thread():
    before = kernel("""
s = T.alloc_shared((64,))
s[tx // 2] = A[tx]
B[tx] = s[tx // 2]
""")
    expected = kernel("""
s = T.alloc_shared((64,))
s[tx // 2] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = s[tx // 2]
""")
    check(before, expected)


# -- read after write, write after read, loops ---------------------------------------------
def test_write_after_read_of_another_threads_element():
    before = kernel("""
s = T.alloc_shared((128,))
s[tx] = A[tx]
B[tx] = s[127 - tx]
s[tx] = A[tx + 128]
""")
    expected = kernel("""
s = T.alloc_shared((128,))
s[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = s[127 - tx]
T.tvm_storage_sync("shared")
s[tx] = A[tx + 128]
""")
    check(before, expected)


def test_loop_carried_write_read_gets_a_barrier_at_the_end_of_the_body():
    before = kernel("""
a = T.alloc_shared((128,))
b = T.alloc_shared((128,))
b[tx] = A[bx * 128 + tx]
for k in range(8):
    a[tx] = b[127 - tx] + T.float32(1.0)
    T.tvm_storage_sync("shared")
    b[tx] = a[127 - tx]
B[bx * 128 + tx] = b[tx]
""")
    expected = kernel("""
a = T.alloc_shared((128,))
b = T.alloc_shared((128,))
b[tx] = A[bx * 128 + tx]
T.tvm_storage_sync("shared")
for k in range(8):
    a[tx] = b[127 - tx] + T.float32(1.0)
    T.tvm_storage_sync("shared")
    b[tx] = a[127 - tx]
    T.tvm_storage_sync("shared")
B[bx * 128 + tx] = b[tx]
""")
    check(before, expected)


def test_loop_reading_and_writing_neighbours():
    before = kernel("""
s = T.alloc_shared((128,))
acc = T.alloc_local((1,))
s[tx] = A[tx]
acc[0] = T.float32(0.0)
for k in range(8):
    acc[0] = acc[0] + s[127 - tx]
    s[tx] = acc[0]
B[tx] = s[tx]
""")
    expected = kernel("""
s = T.alloc_shared((128,))
acc = T.alloc_local((1,))
s[tx] = A[tx]
acc[0] = T.float32(0.0)
T.tvm_storage_sync("shared")
for k in range(8):
    acc[0] = acc[0] + s[127 - tx]
    T.tvm_storage_sync("shared")
    s[tx] = acc[0]
    T.tvm_storage_sync("shared")
B[tx] = s[tx]
""")
    check(before, expected)


def test_loop_index_moving_with_the_iteration_is_loop_carried():
    # Thread t reads s[t + k + 1] in iteration k + 1, which thread t + 1 wrote in k.
    before = kernel("""
s = T.alloc_shared((256,))
for k in range(8):
    B[tx] = s[tx + k + 1]
    s[tx + k] = A[tx]
""")
    expected = kernel("""
s = T.alloc_shared((256,))
for k in range(8):
    B[tx] = s[tx + k + 1]
    T.tvm_storage_sync("shared")
    s[tx + k] = A[tx]
    T.tvm_storage_sync("shared")
""")
    check(before, expected)


def test_while_loop_condition_reads_shared():
    before = kernel("""
s = T.alloc_shared((128,))
s[0] = T.float32(0.0)
while s[0] < T.float32(10.0):
    if tx == 0:
        s[0] = s[0] + A[tx]
""")
    expected = kernel("""
s = T.alloc_shared((128,))
s[0] = T.float32(0.0)
T.tvm_storage_sync("shared")
while s[0] < T.float32(10.0):
    T.tvm_storage_sync("shared")
    if tx == 0:
        s[0] = s[0] + A[tx]
    T.tvm_storage_sync("shared")
""")
    check(before, expected)


# -- divergent code --------------------------------------------------------------------------
def test_barrier_goes_before_a_thread_dependent_if():
    before = kernel("""
s = T.alloc_shared((128,))
s[tx] = A[tx]
if tx < 64:
    B[tx] = s[tx] + s[tx + 64]
""")
    expected = kernel("""
s = T.alloc_shared((128,))
s[tx] = A[tx]
T.tvm_storage_sync("shared")
if tx < 64:
    B[tx] = s[tx] + s[tx + 64]
""")
    check(before, expected)


def test_no_barrier_inside_a_thread_dependent_if():
    # The conflict lies wholly inside divergent code: a barrier there would deadlock.
    unchanged(kernel("""
s = T.alloc_shared((128,))
if tx < 64:
    s[tx] = A[tx]
    B[tx] = s[63 - tx]
"""))


def test_no_barrier_inside_a_loop_with_a_thread_dependent_extent():
    unchanged(kernel("""
s = T.alloc_shared((128,))
for k in range(tx):
    B[tx] = s[127 - tx]
    s[tx] = A[k]
"""))


def test_barrier_inside_a_uniform_if():
    before = kernel("""
s = T.alloc_shared((128,))
if bx < 8:
    s[tx] = A[bx * 128 + tx]
    B[bx * 128 + tx] = s[127 - tx]
""")
    expected = kernel("""
s = T.alloc_shared((128,))
if bx < 8:
    s[tx] = A[bx * 128 + tx]
    T.tvm_storage_sync("shared")
    B[bx * 128 + tx] = s[127 - tx]
""")
    check(before, expected)


# -- scopes, pointers, code outside kernels --------------------------------------------------
def test_dynamic_shared_memory_gets_a_shared_dyn_barrier():
    before = kernel("""
s = T.alloc_buffer((128,), scope="shared.dyn")
s[tx] = A[tx]
B[tx] = s[127 - tx]
""")
    expected = kernel("""
s = T.alloc_buffer((128,), scope="shared.dyn")
s[tx] = A[tx]
T.tvm_storage_sync("shared.dyn")
B[tx] = s[127 - tx]
""")
    check(before, expected)


def test_pointer_passed_to_a_call_is_an_access_of_everything():
    before = kernel("""
s = T.alloc_shared((128,))
s[tx] = A[tx]
T.evaluate(T.call_extern("int32", "consume", s.data, tx))
""")
    expected = kernel("""
s = T.alloc_shared((128,))
s[tx] = A[tx]
T.tvm_storage_sync("shared")
T.evaluate(T.call_extern("int32", "consume", s.data, tx))
""")
    check(before, expected)


def test_local_and_global_memory_need_no_barrier():
    unchanged(kernel("""
acc = T.alloc_local((4,))
acc[tx % 4] = A[tx]
B[tx] = acc[3 - tx % 4]
A[tx] = B[127 - tx]
"""))


def test_each_sibling_kernel_is_planned_on_its_own():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def two(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
        with T.launch_thread("blockIdx.x", 32) as bx:
            s = T.alloc_shared((128,))
            tx = T.launch_thread("threadIdx.x", 128)
            s[tx] = A[bx * 128 + tx]
        with T.launch_thread("blockIdx.x", 32) as bx:
            s = T.alloc_shared((128,))
            tx = T.launch_thread("threadIdx.x", 128)
            B[bx * 128 + tx] = s[127 - tx]
"""
    unchanged(before)


def test_host_function_without_kernels_is_unchanged():
    unchanged("""
@I.ir_module
class Module:
    @T.prim_func
    def host(A: T.Buffer((16,), "float32")):
        for i in range(16):
            A[i] = A[15 - i]
""")


def test_per_thread_slots_a_constant_apart_need_no_barrier():
    unchanged(kernel("""
s = T.alloc_shared((512,))
s[tx * 4] = A[tx]
s[tx * 4 + 1] = s[tx * 4] + T.float32(1.0)
s[tx * 4 + 3] = s[tx * 4 + 1] + s[tx * 4 + 2]
B[tx] = s[tx * 4 + 3]
"""))


def test_neighbouring_element_is_another_threads():
    before = kernel("""
s = T.alloc_shared((256,))
s[tx * 2] = A[tx]
B[tx] = s[tx * 2 + 2]
""")
    expected = kernel("""
s = T.alloc_shared((256,))
s[tx * 2] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = s[tx * 2 + 2]
""")
    check(before, expected)


def test_vector_accesses_of_a_threads_own_lanes():
    unchanged(kernel("""
s = T.alloc_shared((512,))
s[T.Ramp(tx * 4, 1, 4)] = A[T.Ramp(tx * 4, 1, 4)]
B[T.Ramp(tx * 4, 1, 4)] = s[T.Ramp(tx * 4, 1, 4)] * T.Broadcast(T.float32(2.0), 4)
"""))
    before = kernel("""
s = T.alloc_shared((512,))
s[T.Ramp(tx * 4, 1, 4)] = A[T.Ramp(tx * 4, 1, 4)]
B[T.Ramp(tx * 2, 1, 4)] = s[T.Ramp(tx * 2, 1, 4)]
""")
    expected = kernel("""
s = T.alloc_shared((512,))
s[T.Ramp(tx * 4, 1, 4)] = A[T.Ramp(tx * 4, 1, 4)]
T.tvm_storage_sync("shared")
B[T.Ramp(tx * 2, 1, 4)] = s[T.Ramp(tx * 2, 1, 4)]
""")
    check(before, expected)


def test_let_bound_thread_index_is_seen_through():
    unchanged(kernel("""
s = T.alloc_shared((128,))
i: T.int32 = 127 - tx
s[i] = A[tx]
B[tx] = s[127 - tx]
"""))


def test_views_of_one_allocation_with_other_element_types_conflict():
    # Thread 1 reads byte 1 of v, which thread 0 wrote as part of s[0].
    before = kernel("""
s = T.alloc_shared((128,))
v = T.decl_buffer((512,), "int8", data=s.data)
s[tx] = A[tx]
B[tx] = T.Cast("float32", v[tx])
""")
    expected = kernel("""
s = T.alloc_shared((128,))
v = T.decl_buffer((512,), "int8", data=s.data)
s[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = T.Cast("float32", v[tx])
""")
    check(before, expected)


# -- stores a constant apart: the tiled matmul's unrolled loads into shared memory ---------
TILE_THREADS = 'tx = T.launch_thread("threadIdx.x", 16)\n        ty = T.launch_thread("threadIdx.y", 16)'


def test_unrolled_tile_stores_a_constant_apart_need_no_barrier_between_them():
    # As[tx * 64 + l * 16 + ty] and Bs[(l * 4 + ty // 4) * 64 + ty % 4 * 16 + tx] for
    # l = 0..3, as UnrollLoop leaves them: no two threads ever write one element, so only
    # the reads after them need a barrier (TVM's own ThreadSync places that one too).
    stores = "".join(
        f"As[tx * 64 + T.Mul({l}, 16) + ty] = A[tx * 64 + {l * 16} + ty]\n"
        f"Bs[(T.Mul({l}, 4) + ty // 4) * 64 + ty % 4 * 16 + tx] = A[{l} * 256 + ty * 16 + tx]\n"
        for l in range(4))
    body = 'As = T.alloc_shared((1024,))\nBs = T.alloc_shared((1024,))\n' + stores
    reads = "B[ty * 16 + tx] = As[ty * 64 + tx] + Bs[tx * 64 + ty]\n"
    before = kernel(body + reads, threads=TILE_THREADS)
    expected = kernel(body + 'T.tvm_storage_sync("shared")\n' + reads, threads=TILE_THREADS)
    check(before, expected)


def test_stores_a_reachable_distance_apart_are_ordered():
    # s[tx] then s[tx + 1]: thread 3's second store hits thread 4's first element.
    before = kernel("""
s = T.alloc_shared((256,))
s[tx] = A[tx]
s[tx + 1] = A[tx + 128]
""")
    expected = kernel("""
s = T.alloc_shared((256,))
s[tx] = A[tx]
T.tvm_storage_sync("shared")
s[tx + 1] = A[tx + 128]
""")
    check(before, expected)


def test_quotient_alone_does_not_number_the_threads():
    # s[tx // 4] is shared by four threads: a barrier orders their two stores.
    before = kernel("""
s = T.alloc_shared((64,))
s[tx // 4] = A[tx]
s[tx // 4] = s[tx // 4] + A[tx + 128]
""")
    expected = kernel("""
s = T.alloc_shared((64,))
s[tx // 4] = A[tx]
T.tvm_storage_sync("shared")
s[tx // 4] = s[tx // 4] + A[tx + 128]
""")
    check(before, expected)


def test_quotient_and_remainder_number_the_threads():
    before = kernel("""
s = T.alloc_shared((256,))
s[tx // 4 * 8 + tx % 4] = A[tx]
s[tx // 4 * 8 + tx % 4 + 4] = A[tx + 128]
B[tx] = s[tx // 4 * 8 + tx % 4] + s[tx // 4 * 8 + tx % 4 + 4]
""")
    expected = kernel("""
s = T.alloc_shared((256,))
s[tx // 4 * 8 + tx % 4] = A[tx]
s[tx // 4 * 8 + tx % 4 + 4] = A[tx + 128]
B[tx] = s[tx // 4 * 8 + tx % 4] + s[tx // 4 * 8 + tx % 4 + 4]
""")
    check(before, expected)


def _random_kernel(r) -> str:
    """Shared accesses of assorted index forms (thread and loop terms, constants,
    quotients, vectors, an unknown extent), in loops, branches and sequences."""
    def index(loops):
        pool = ["tx", "tx * 2", "tx * 4", "tx // 4", "tx % 4", "tx * 64", "n"]
        pool += [f"{v}{scale}" for v in loops for scale in ("", " * 16", " * 128")]
        terms = [r.choice(pool) for _ in range(r.randint(1, 3))]
        if r.random() < 0.7:
            terms.append(str(r.choice([0, 1, 2, 16, 64, 128, 129, 256])))
        return " + ".join(terms)

    def block(depth, loops, ind):
        for _ in range(r.randint(1, 6)):
            c, buf = r.random(), r.choice("ssd")
            if c < 0.35:
                lines.append(f"{ind}{buf}[{index(loops)}] = A[tx]")
            elif c < 0.6:
                lines.append(f"{ind}B[tx] = {buf}[{index(loops)}] + {r.choice('sd')}[{index(loops)}]")
            elif c < 0.72 and depth < 3:
                v = f"l{depth}_{r.randint(0, 99)}"
                lines.append(f"{ind}for {v} in range({r.choice(['2', '4', '1', 'n'])}):")
                block(depth + 1, loops + [v], ind + "    ")
            elif c < 0.8 and depth < 3:
                lines.append(f"{ind}if {r.choice(['tx < 16', 'n > 2'])}:")
                block(depth + 1, loops, ind + "    ")
            elif c < 0.85:
                lines.append(f'{ind}T.tvm_storage_sync("shared")')
            else:
                lines.append(f"{ind}{buf}[T.Ramp({index(loops)}, 1, 4)] = T.Broadcast(A[tx], 4)")

    lines: list[str] = []
    block(0, [], "")
    return kernel("s = T.alloc_shared((8192,))\nd = T.alloc_buffer((8192,), scope=\"shared.dyn\")\n"
                  + "\n".join(lines),
                  params='A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"), n: T.int32')


def test_conflicts_by_group_are_those_of_each_pair():
    """ThreadSync answers its conflicts by buffer, form and constant (thread_sync._Buffers,
    linear in the accesses); a planner with a conflict of its own tries each pair of a
    buffer (thread_sync._Pairs). Both place the same barriers on random kernels."""
    import random
    from dataclasses import replace

    from tirc.ir.printer import print_module
    from tirc.passes.lower import thread_sync as ts

    class Pairwise(ts.BarrierPlanner):
        def conflict(self, a, b):  # the same conflict, so each pair is tried
            return super().conflict(a, b)

    class PairwiseKernels(ts._Kernels):
        def kernel(self, root):
            body, _ = Pairwise(root).stmt(root.body, True)
            return root if body is root.body else replace(root, body=body)

    r = random.Random(32)
    changed = 0
    for _ in range(60):
        mod = verify(parse(HEADER + _random_kernel(r), "random.tir"))
        grouped = thread_sync(mod, CTX)
        f = mod["k"]
        pairwise = mod.with_function("k", f.with_body(PairwiseKernels().visit(f.body)))
        assert print_module(grouped) == print_module(pairwise)
        changed += grouped is not mod
    assert changed > 20  # most get barriers


def test_a_barrier_follows_every_wait_of_an_async_queue():
    """Each thread's cp.async copies are in after the wait, the block's are not: TVM's
    ThreadSync puts a barrier first thing under every ``async_wait_queue_scope``."""
    check("""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), scope="shared")
    with T.attr({"async_commit_queue_scope": 0}):
        with T.attr({"async_scope": 1}):
            S[tx] = A[tx]
    with T.attr({"async_wait_queue_scope": 0}):
        T.attr({"async_wait_inflight_count": 0})
        C[tx] = S[63 - tx]
""", """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), scope="shared")
    with T.attr({"async_commit_queue_scope": 0}):
        with T.attr({"async_scope": 1}):
            S[tx] = A[tx]
    with T.attr({"async_wait_queue_scope": 0}):
        T.attr({"async_wait_inflight_count": 0})
        T.tvm_storage_sync("shared")
        C[tx] = S[63 - tx]
""")
