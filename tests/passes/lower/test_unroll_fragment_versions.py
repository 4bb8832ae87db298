"""UnrollFragmentVersions, stated as TIR before and after; the pipelined tensor-core
modules' fragments in registers are checked in tests/backends/cuda/test_wmma.py."""
from __future__ import annotations

from conftest import HEADER, pass_checker
from tirc.frontend.parse import parse
from tirc.passes.lower.unroll_fragment_versions import unroll_fragment_versions

check = pass_checker(lambda mod: unroll_fragment_versions(mod, None), reprint=True)

HEAD = """def main(A: T.Buffer((2048,), "float16"), B: T.Buffer((256,), "float16"), C: T.Buffer((256,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    Cf = T.alloc_buffer((256,), scope="wmma.accumulator")
    Af = T.alloc_buffer((512,), "float16", scope="wmma.matrix_a")
    Bf = T.alloc_buffer((256,), "float16", scope="wmma.matrix_b")
    T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, T.float32(0))
    T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), B.data, 0, 256, 1), 16, "col_major")
    T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 256, 1), 16, "row_major")
"""
TAIL = """    T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")
"""


def test_two_versions_of_a_fragment_unroll_by_two_with_the_odd_iteration_after():
    # fragment (k + 1) % 2 is loaded while k % 2 is multiplied: with k = 2 * k_outer + r
    # both are constants; the fifth iteration follows the loop. The inner loop's index
    # varies only with its own variable (LLVM unrolls such loops itself): left alone.
    before = "@T.prim_func\n" + HEAD + """    for k in range(5):
        T.tvm_load_matrix_sync(Af.data, 16, 16, 16, (k + 1) % 2, T.tvm_access_ptr(T.type_annotation("float16"), A.data, (k + 1) * 256, 256, 1), 16, "row_major")
        T.tvm_mma_sync(Cf.data, 0, Af.data, k % 2, Bf.data, 0, Cf.data, 0)
    for k in range(3):
        for j in range(2):
            T.tvm_mma_sync(Cf.data, 0, Af.data, j, Bf.data, 0, Cf.data, 0)
""" + TAIL
    expected = """@T.prim_func
def main(A: T.Buffer((2048,), "float16"), B: T.Buffer((256,), "float16"), C: T.Buffer((256,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    Cf = T.alloc_buffer((256,), scope="wmma.accumulator")
    Af = T.alloc_buffer((512,), "float16", scope="wmma.matrix_a")
    Bf = T.alloc_buffer((256,), "float16", scope="wmma.matrix_b")
    T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, T.float32(0.0))
    T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), B.data, 0, 256, 1), 16, "col_major")
    T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 256, 1), 16, "row_major")
    for k_outer in range(2):
        T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 1, T.tvm_access_ptr(T.type_annotation("float16"), A.data, (k_outer * 2 + 1) * 256, 256, 1), 16, "row_major")
        T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)
        T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, (k_outer * 2 + 1 + 1) * 256, 256, 1), 16, "row_major")
        T.tvm_mma_sync(Cf.data, 0, Af.data, 1, Bf.data, 0, Cf.data, 0)
    T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 1, T.tvm_access_ptr(T.type_annotation("float16"), A.data, T.Add(4, 1) * 256, 256, 1), 16, "row_major")
    T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)
    for k, j in T.grid(3, 2):
        T.tvm_mma_sync(Cf.data, 0, Af.data, j, Bf.data, 0, Cf.data, 0)
    T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")

"""
    check(before, expected)


def test_a_cycle_longer_than_four_and_a_loop_of_one_period_are_handled():
    # (k // 2) % 3 repeats every 6 iterations: no period of at most 4 (and 12 iterations
    # are more than two periods of 4, see the docstring), the loop stays;
    # with two iterations and two versions the loop disappears
    loops = """    for k in range(12):
        T.tvm_mma_sync(Cf.data, 0, Af.data, k // 2 % 3, Bf.data, 0, Cf.data, 0)
"""
    text = "@T.prim_func\n" + HEAD + loops + TAIL
    mod = parse(HEADER + text, "t.tir")
    assert unroll_fragment_versions(mod, None) is mod
    check("@T.prim_func\n" + HEAD + """    for k in range(2):
        T.tvm_mma_sync(Cf.data, 0, Af.data, k % 2, Bf.data, 0, Cf.data, 0)
""" + TAIL, "@T.prim_func\n" + HEAD + """    T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)
    T.tvm_mma_sync(Cf.data, 0, Af.data, 1, Bf.data, 0, Cf.data, 0)
""" + TAIL)
