"""FlattenBuffer, stated as TIR before and after."""
from __future__ import annotations

import pytest

from conftest import pass_checker
from tirc.diagnostics import Diagnostic
from tirc.ir.expr import BufferLoad
from tirc.ir.stmt import AllocBuffer, BufferStore
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.lower.flatten_buffer import flatten_buffer
from tirc.passes.pass_context import PassContext
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
CTX = PassContext(parse_target("cuda -arch=sm_90", host="llvm"))
DEV = 'T.target({"arch": "sm_90", "kind": "cuda"})'


def run(before: str):
    return flatten_buffer(verify(parse(HEADER + before, "before.tir")), CTX)


def _flat(after) -> None:
    assert flatten_buffer(after, CTX) is after  # flat output is a fixed point
    for node in walk(after["main"].body):
        if isinstance(node, (BufferLoad, BufferStore)):
            assert len(node.indices) == 1
        if isinstance(node, AllocBuffer):
            assert node.buffer.ndim == 1


check = pass_checker(lambda mod: flatten_buffer(mod, CTX), reprint=True, post=_flat)


def test_2d_and_3d_params_get_flat_declarations_and_row_major_indices():
    before = """
@T.prim_func
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256,), "float32"), D: T.Buffer((2, 3, 4), "int8")):
    for i, k in T.grid(256, 256):
        B[i] = B[i] + A[i, k]
    for i, j, k in T.grid(2, 3, 4):
        D[i, j, k] = D[1, 2, 3]
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256,), "float32"), D: T.Buffer((2, 3, 4), "int8")):
    A_1 = T.decl_buffer((65536,), data=A.data, layout=None)
    D_1 = T.decl_buffer((24,), "int8", data=D.data, layout=None)
    for i, k in T.grid(256, 256):
        B[i] = B[i] + A_1[i * 256 + k]
    for i, j, k in T.grid(2, 3, 4):
        D_1[i * 12 + j * 4 + k] = D_1[23]
"""
    after = check(before, expected)
    # MakePackedAPI checks arguments against the original buffers.
    assert [b.shape for _, b in after["main"].buffer_map] == \
        [b.shape for _, b in run(before)["main"].buffer_map]
    assert after["main"].buffer_map[0][1].ndim == 2


def test_kernel_like_tvm_reduce_sum():
    # tests/corpus/tvm/lowered_reduce_sum_02_flatten_buffer.tir, this pass's part of it.
    before = f"""
@T.prim_func
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256,), "float32")):
    T.func_attr({{"target": {DEV}}})
    blockIdx_x = T.launch_thread("blockIdx.x", 256)
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    for k in range(2):
        B[blockIdx_x] = B[blockIdx_x] + A[blockIdx_x, k * 128 + threadIdx_x]
"""
    expected = f"""
@T.prim_func
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256,), "float32")):
    T.func_attr({{"target": {DEV}}})
    A_1 = T.decl_buffer((65536,), data=A.data, layout=None)
    blockIdx_x = T.launch_thread("blockIdx.x", 256)
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    for k in range(2):
        B[blockIdx_x] = B[blockIdx_x] + A_1[blockIdx_x * 256 + k * 128 + threadIdx_x]
"""
    check(before, expected)


def test_strided_param_with_offset():
    before = """
@T.prim_func
def main(A: T.Buffer((16, 16), "float32", strides=(32, 1), elem_offset=3), B: T.Buffer((16, 8), "float32", strides=(1, 16))):
    for i, j in T.grid(16, 8):
        B[i, j] = A[i, j * 2]
    A[1, 2] = T.float32(1.0)
"""
    # A reaches 15 * 32 + 15 * 1 + 1 = 496 elements past its offset 3; B 15 + 7 * 16 + 1.
    expected = """
@T.prim_func
def main(A: T.Buffer((16, 16), "float32", strides=(32, 1), elem_offset=3), B: T.Buffer((16, 8), "float32", strides=(1, 16))):
    A_1 = T.decl_buffer((499,), data=A.data, layout=None)
    B_1 = T.decl_buffer((128,), data=B.data, layout=None)
    for i, j in T.grid(16, 8):
        B_1[i + j * 16] = A_1[i * 32 + j * 2 + 3]
    A_1[37] = T.float32(1.0)
"""
    check(before, expected)


def test_1d_buffers_with_strides_or_offset_are_flattened_too():
    before = """
@T.prim_func
def main(Y: T.Buffer((8,), "float32", elem_offset=2), Z: T.Buffer((8,), "float32", strides=(2,)), W: T.Buffer((8,), "float32", strides=(1,))):
    for i in range(8):
        Y[i] = Z[i] + W[i]
"""
    expected = """
@T.prim_func
def main(Y: T.Buffer((8,), "float32", elem_offset=2), Z: T.Buffer((8,), "float32", strides=(2,)), W: T.Buffer((8,), "float32", strides=(1,))):
    Y_1 = T.decl_buffer((10,), data=Y.data, layout=None)
    Z_1 = T.decl_buffer((15,), data=Z.data, layout=None)
    for i in range(8):
        Y_1[i + 2] = Z_1[i * 2] + W[i]
"""
    check(before, expected)


def test_symbolic_shapes():
    before = """
@T.prim_func
def main(X: T.Buffer(("n", "m"), "float32"), S: T.Buffer((n, m), "float32", strides=("s0", "s1"))):
    n = T.int32()
    m = T.int32()
    s0 = T.int32()
    s1 = T.int32()
    for i, j in T.grid(n, m):
        X[i, j] = X[j, i] + S[i, j]
"""
    expected = """
@T.prim_func
def main(X: T.Buffer(("n", "m"), "float32"), S: T.Buffer((n, m), "float32", strides=("s0", "s1"))):
    n = T.int32()
    m = T.int32()
    s0 = T.int32()
    s1 = T.int32()
    X_1 = T.decl_buffer((T.Cast("int64", n) * T.Cast("int64", m),), data=X.data, layout=None)
    S_1 = T.decl_buffer(((T.Cast("int64", n) - T.int64(1)) * T.Cast("int64", s0) + (T.Cast("int64", m) - T.int64(1)) * T.Cast("int64", s1) + T.int64(1),), data=S.data, layout=None)
    for i, j in T.grid(n, m):
        X_1[T.Cast("int64", i) * T.Cast("int64", m) + T.Cast("int64", j)] = X_1[T.Cast("int64", j) * T.Cast("int64", m) + T.Cast("int64", i)] + S_1[T.Cast("int64", i) * T.Cast("int64", s0) + T.Cast("int64", j) * T.Cast("int64", s1)]
"""
    check(before, expected)


def test_index_that_may_pass_2_31_is_int64():
    """Int32 sizes (n, m) may hold more than 2**31 elements: the flat index and extent
    are computed in int64 (int32 wrapped and stored before the array). Constant shapes
    whose reach fits keep int32; one that does not (65536 x 65536) gets int64."""
    before = """
@T.prim_func
def main(a: T.handle, B: T.Buffer((16, 16), "int8"), C: T.Buffer((65536, 65536), "int8")):
    n = T.int32()
    m = T.int32()
    A = T.match_buffer(a, (n, m), "int8")
    V = T.decl_buffer((4,), "int8", data=B.data, elem_offset=n * m)
    A[n - 1, m - 1] = B[15, 15]
    C[65535, 65535] = V[1]
"""
    expected = """
@T.prim_func
def main(a: T.handle, B: T.Buffer((16, 16), "int8"), C: T.Buffer((65536, 65536), "int8")):
    n = T.int32()
    m = T.int32()
    A = T.match_buffer(a, (n, m), "int8")
    B_1 = T.decl_buffer((256,), "int8", data=B.data, layout=None)
    C_1 = T.decl_buffer((T.int64(4294967296),), "int8", data=C.data, layout=None)
    A_1 = T.decl_buffer((T.Cast("int64", n) * T.Cast("int64", m),), "int8", data=A.data, layout=None)
    V = T.decl_buffer((T.int64(4) + T.Cast("int64", n) * T.Cast("int64", m),), "int8", data=B.data, layout=None)
    A_1[T.Cast("int64", n - 1) * T.Cast("int64", m) + T.Cast("int64", m - 1)] = B_1[255]
    C_1[T.int64(4294967295)] = V[T.int64(1) + T.Cast("int64", n) * T.Cast("int64", m)]
"""
    check(before, expected)


def test_int64_shapes_keep_int64_indices():
    before = """
@T.prim_func
def main(A: T.Buffer((T.int64(4), T.int64(8)), "float32")):
    for i, j in T.grid(T.int64(4), T.int64(8)):
        A[i, j] = T.float32(0.0)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((T.int64(4), T.int64(8)), "float32")):
    A_1 = T.decl_buffer((T.int64(32),), data=A.data, layout=None)
    for i, j in T.grid(T.int64(4), T.int64(8)):
        A_1[i * T.int64(8) + j] = T.float32(0.0)
"""
    check(before, expected)


def test_2d_shared_and_local_allocations_become_flat():
    before = f"""
@T.prim_func
def main(A: T.Buffer((256,), "float32")):
    T.func_attr({{"target": {DEV}}})
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_shared((8, 16), "float16")
    L = T.alloc_local((4, 4))
    G = T.alloc_buffer((64,))
    S[tx // 16, tx % 16] = T.Cast("float16", A[tx])
    L[0, 1] = T.Cast("float32", S[tx // 16, tx % 16])
    G[tx % 64] = L[0, 1]
    A[tx] = G[tx % 64]
"""
    expected = f"""
@T.prim_func
def main(A: T.Buffer((256,), "float32")):
    T.func_attr({{"target": {DEV}}})
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_shared((128,), "float16", layout=None)
    L = T.alloc_local((16,), layout=None)
    G = T.alloc_buffer((64,))
    S[tx] = T.Cast("float16", A[tx])
    L[1] = T.Cast("float32", S[tx])
    G[tx % 64] = L[1]
    A[tx] = G[tx % 64]
"""
    check(before, expected)


def test_vector_slices_stay_ramps_of_the_flat_base():
    before = """
@T.prim_func
def main(A: T.Buffer((16, 16), "float32", strides=(32, 1), elem_offset=3), C: T.Buffer((16, 4), "float32"), E: T.Buffer((8, 8), "float32", strides=(16, 2))):
    for i in range(16):
        C[i, 0:4] = A[i, T.Ramp(0, 1, 4)]
    C[1, 0:4] = T.Broadcast(T.float32(0.0), 4)
    C[2, 0:4:2] = E[3, T.Ramp(1, 2, 2)]
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((16, 16), "float32", strides=(32, 1), elem_offset=3), C: T.Buffer((16, 4), "float32"), E: T.Buffer((8, 8), "float32", strides=(16, 2))):
    A_1 = T.decl_buffer((499,), data=A.data, layout=None)
    C_1 = T.decl_buffer((64,), data=C.data, layout=None)
    E_1 = T.decl_buffer((127,), data=E.data, layout=None)
    for i in range(16):
        C_1[i * 4:i * 4 + 4] = A_1[T.Ramp(i * 32 + 3, 1, 4)]
    C_1[4:8] = T.Broadcast(T.float32(0.0), 4)
    C_1[8:12:2] = E_1[T.Ramp(50, 4, 2)]
"""
    check(before, expected)


def test_flat_module_is_returned_unchanged():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        S = T.alloc_buffer((64,), scope="shared")
        for i in range(1024):
            S[i % 64] = A[i]
            B[i] = S[i % 64]
        B[0:4] = A[T.Ramp(0, 1, 4)]

    @T.prim_func(private=True)
    def helper(x: T.float32) -> T.float32:
        return x
"""
    mod = verify(parse(HEADER + before))
    assert flatten_buffer(mod, CTX) is mod


def test_unchanged_functions_keep_their_identity():
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4, 4), "float32")):
        A[1, 1] = T.float32(0.0)

    @T.prim_func
    def flat(A: T.Buffer((16,), "float32")):
        A[5] = T.float32(0.0)
"""
    mod = verify(parse(HEADER + before))
    after = flatten_buffer(mod, CTX)
    assert after["flat"] is mod["flat"] and after["main"] is not mod["main"]


def test_call_arguments_keep_the_original_buffer():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(X: T.Buffer((4, 16), "float32"), v: T.float32):
        for i, j in T.grid(4, 16):
            X[i, j] = v

    @T.prim_func
    def main(A: T.Buffer((4, 16), "float32")):
        S = T.alloc_buffer((4, 16), scope="shared")
        Module.fill(A, T.float32(1.0))
        Module.fill(S, T.float32(2.0))
        S[0, 1] = A[1, 2]
"""
    expected = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(X: T.Buffer((4, 16), "float32"), v: T.float32):
        X_1 = T.decl_buffer((64,), data=X.data, layout=None)
        for i, j in T.grid(4, 16):
            X_1[i * 16 + j] = v

    @T.prim_func
    def main(A: T.Buffer((4, 16), "float32")):
        A_1 = T.decl_buffer((64,), data=A.data, layout=None)
        S = T.alloc_buffer((64,), scope="shared", layout=None)
        S_1 = T.decl_buffer((4, 16), data=S.data, scope="shared")
        Module.fill(A, T.float32(1.0))
        Module.fill(S_1, T.float32(2.0))
        S[1] = A_1[18]
"""
    check(before, expected)


def test_region_arguments_of_calls_are_left_alone():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(X: T.Buffer((64,), "float32"), v: T.float32):
        for i in range(64):
            X[i] = v

    @T.prim_func
    def main(A: T.Buffer((4, 64), "float32")):
        for r in range(4):
            Module.fill(A[r, 0:64], T.float32(1.0))
        A[0, 0] = T.float32(0.0)
"""
    # The region A[r, 0:64] is a declared 1-D view with offset r * 64, passed by reference.
    expected = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(X: T.Buffer((64,), "float32"), v: T.float32):
        for i in range(64):
            X[i] = v

    @T.prim_func
    def main(A: T.Buffer((4, 64), "float32")):
        A_1 = T.decl_buffer((256,), data=A.data, layout=None)
        for r in range(4):
            Module.fill(A[r, 0:64], T.float32(1.0))
        A_1[0] = T.float32(0.0)
"""
    check(before, expected)


def test_declared_views_in_the_body():
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((128,), "float32")):
    X = T.alloc_buffer((64,))
    Y = X.view(8, 8)
    W = T.decl_buffer((32,), "float32", data=B.data, elem_offset=4)
    U = T.decl_buffer((4, 4), "float32", data=A.data)
    Y[1, 2] = W[3]
    A[0] = X[10] + U[1, 1]
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((128,), "float32")):
    X = T.alloc_buffer((64,))
    Y = T.decl_buffer((64,), data=X.data, layout=None)
    W = T.decl_buffer((36,), data=B.data, layout=None)
    U = T.decl_buffer((16,), data=A.data, layout=None)
    Y[10] = W[7]
    A[0] = X[10] + U[5]
"""
    check(before, expected)


def test_vector_index_before_the_last_dimension_is_an_error():
    before = """
@T.prim_func
def main(C: T.Buffer((16, 4), "float32"), A: T.Buffer((64,), "float32")):
    A[0:4] = C[T.Ramp(0, 1, 4), 1]
"""
    with pytest.raises(Diagnostic) as info:
        run(before)
    d = info.value
    assert "only the last index of an access to buffer 'C' may be a vector" in d.message
    assert (d.span.file, d.span.line) == ("before.tir", 7)


def test_an_allocation_of_one_element_is_accessed_at_index_zero():
    # the indices CompactBufferAllocation leaves for a per-thread rfactor element are zero
    # only arithmetically; a parameter of one element keeps its index
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), P: T.Buffer((1,), "float32")):
    acc = T.alloc_buffer((1, 1), scope="local")
    one = T.alloc_buffer((1,), scope="local")
    for i in range(64):
        acc[i // 64, i % 64 - i] = A[i]
        one[i // 64] = acc[i // 64, i % 64 - i]
        P[i // 64] = one[i - i]
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), P: T.Buffer((1,), "float32")):
    acc = T.alloc_buffer((1,), scope="local", layout=None)
    one = T.alloc_buffer((1,), scope="local")
    for i in range(64):
        acc[0] = A[i]
        one[0] = acc[0]
        P[i // 64] = one[0]
"""
    check(before, expected)


def test_indices_that_split_one_position_fold_back_into_it():
    """A reshape's ``[x // 4096, x % 4096]`` flattens to ``x`` (TVM's iterator-map
    simplification of the flat index does the same): before, every element divided and
    the sequential scan of a cumulative sum could not carry its value in a register
    (sampling's cumsum1 ran 3x TVM's time)."""
    before = """
@T.prim_func
def main(A: T.Buffer((4, 4096), "float32"), B: T.Buffer((4, 4096), "float32")):
    for v in range(4):
        for j in range(4095):
            B[(v * 4096 + (j + 1)) // 4096, (v * 4096 + (j + 1)) % 4096] = B[(v * 4096 + j) // 4096, (v * 4096 + j) % 4096] + A[(v * 4096 + (j + 1)) // 4096, (v * 4096 + (j + 1)) % 4096]
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((4, 4096), "float32"), B: T.Buffer((4, 4096), "float32")):
    A_1 = T.decl_buffer((16384,), data=A.data, layout=None)
    B_1 = T.decl_buffer((16384,), data=B.data, layout=None)
    for v in range(4):
        for j in range(4095):
            B_1[v * 4096 + j + 1] = B_1[v * 4096 + j] + A_1[v * 4096 + j + 1]
"""
    check(before, expected)


def test_a_split_that_does_not_fold_away_keeps_its_index():
    """Folding is taken only where no division is left: a partial rewrite spreads the
    terms that later passes cancel by their ranges (``a - max(0, a)`` with ``a`` a block
    index is 0), and a local tile's index would stop being a constant."""
    before = """
@T.prim_func
def main(A: T.Buffer((8, 16), "float32"), n: T.int32):
    for i in range(128):
        A[i // n, i % 16] = T.float32(1)
"""
    expected = """
@T.prim_func
def main(A: T.Buffer((8, 16), "float32"), n: T.int32):
    A_1 = T.decl_buffer((128,), data=A.data, layout=None)
    for i in range(128):
        A_1[i // n * 16 + i % 16] = T.float32(1)
"""
    check(before, expected)


def test_the_model_corpus_scan_divides_no_more():
    """sampling's cumsum1 as TVM 0.27 prints it (bench/models, through relax's zero
    pipeline): after the pipeline up to FlattenBuffer its accesses hold no division."""
    from dataclasses import replace

    from conftest import ROOT
    from tirc.ir.expr import BinOp
    from tirc.passes.pipeline import run_pipeline
    mod = parse((ROOT / "bench/models/sampling.llvm.tir").read_text(), "sampling.llvm.tir")
    mod = replace(mod, functions={"cumsum1": mod.functions["cumsum1"]})
    flat = run_pipeline(mod, PassContext(parse_target("llvm")), "FlattenBuffer")
    accesses = [n for n in walk(flat["cumsum1"].body) if isinstance(n, (BufferLoad, BufferStore))]
    assert len(accesses) == 5
    assert not any(isinstance(x, BinOp) and x.op in ("floordiv", "floormod")
                   for a in accesses for i in a.indices for x in walk(i))
