"""MergeSharedMemoryAllocations, stated as TIR before and after."""
from __future__ import annotations

import pytest

from conftest import pass_checker
from tirc.diagnostics import Diagnostic
from tirc.ir.stmt import AllocBuffer
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.split.annotate_device_regions import annotate_device_regions
from tirc.passes.split.lower_device_kernel_launch import lower_device_kernel_launch
from tirc.passes.lower.merge_shared_memory_allocations import merge_shared_memory_allocations
from tirc.passes.pass_context import PassContext
from tirc.passes.split.split_host_device import split_host_device
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

CTX = PassContext(parse_target("cuda -arch=sm_80", host="llvm"))
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
TARGET = 'T.target({"arch": "sm_80", "host": {"kind": "llvm"}, "kind": "cuda"})'


def run(text: str):
    mod = verify(parse(HEADER + text, "before.tir"))
    return mod, verify(merge_shared_memory_allocations(mod, CTX))


check = pass_checker(lambda mod: merge_shared_memory_allocations(mod, CTX))


def kernel(body: str, target: str = TARGET, params: str = "") -> str:
    lines = "\n".join("        " + line for line in body.strip("\n").splitlines())
    return f"""
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"){params}):
        T.func_attr({{"target": {target}}})
        bx = T.launch_thread("blockIdx.x", 16)
{lines}
"""


# -- one merged buffer per kernel launch ---------------------------------------------------
TWO_KERNELS = f"""
@I.ir_module
class Module:
    @T.prim_func
    def two_kernels(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"), C: T.Buffer((4096,), "float32")):
        T.func_attr({{"target": {TARGET}, "tir.noalias": True}})
        with T.launch_thread("blockIdx.x", 32) as bx:
            tx = T.launch_thread("threadIdx.x", 128)
            stage = T.alloc_shared((128,))
            log = T.alloc_buffer((128,), "int32", scope="shared.dyn")
            stage[tx] = A[bx * 128 + tx] * T.float32(2.0)
            log[tx] = tx
            T.tvm_storage_sync("shared")
            B[bx * 128 + tx] = stage[127 - tx] + T.Cast("float32", log[127 - tx])
        with T.launch_thread("blockIdx.x", 16) as bx:
            tx = T.launch_thread("threadIdx.x", 256)
            tile = T.alloc_shared((256,), "float32")
            flags = T.alloc_shared((256,), "int32")
            tile[tx] = B[bx * 256 + tx]
            flags[tx] = T.Cast("int32", tile[tx] > T.float32(0.0))
            T.tvm_storage_sync("shared")
            C[bx * 256 + tx] = tile[255 - tx] * T.Cast("float32", flags[255 - tx])
"""


def test_two_sibling_kernels_get_one_merged_buffer_each():
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def two_kernels(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"), C: T.Buffer((4096,), "float32")):
        T.func_attr({{"target": {TARGET}, "tir.noalias": True}})
        with T.launch_thread("blockIdx.x", 32) as bx:
            buf_dyn_shmem = T.alloc_buffer((1024,), "uint8", scope="shared.dyn")
            tx = T.launch_thread("threadIdx.x", 128)
            stage = T.decl_buffer((128,), data=buf_dyn_shmem.data, scope="shared.dyn")
            log = T.decl_buffer((128,), "int32", data=buf_dyn_shmem.data, elem_offset=128, scope="shared.dyn")
            stage[tx] = A[bx * 128 + tx] * T.float32(2.0)
            log[tx] = tx
            T.tvm_storage_sync("shared")
            B[bx * 128 + tx] = stage[127 - tx] + T.Cast("float32", log[127 - tx])
        with T.launch_thread("blockIdx.x", 16) as bx:
            tx = T.launch_thread("threadIdx.x", 256)
            tile = T.alloc_shared((256,), "float32")
            flags = T.alloc_shared((256,), "int32")
            tile[tx] = B[bx * 256 + tx]
            flags[tx] = T.Cast("int32", tile[tx] > T.float32(0.0))
            T.tvm_storage_sync("shared")
            C[bx * 256 + tx] = tile[255 - tx] * T.Cast("float32", flags[255 - tx])
"""
    after = check(TWO_KERNELS, expected)
    allocs = [n.buffer for n in walk(after["two_kernels"].body) if isinstance(n, AllocBuffer)]
    assert [(b.name, b.scope) for b in allocs] == [
        ("buf_dyn_shmem", "shared.dyn"), ("tile", "shared"), ("flags", "shared")]


def test_sibling_kernels_with_dynamic_memory_get_one_merged_buffer_each():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
        T.func_attr({{"target": {TARGET}}})
        with T.launch_thread("blockIdx.x", 32) as bx:
            tx = T.launch_thread("threadIdx.x", 128)
            s = T.alloc_buffer((128,), scope="shared.dyn")
            s[tx] = A[bx * 128 + tx]
            B[bx * 128 + tx] = s[tx]
        with T.launch_thread("blockIdx.x", 32) as bx:
            tx = T.launch_thread("threadIdx.x", 128)
            s = T.alloc_buffer((128,), scope="shared.dyn")
            s[tx] = B[bx * 128 + tx]
            A[bx * 128 + tx] = s[tx]
"""
    _, after = run(before)
    merged = [n.buffer for n in walk(after["k"].body) if isinstance(n, AllocBuffer)]
    assert [b.name for b in merged] == ["buf_dyn_shmem", "buf_dyn_shmem"]
    assert merged[0] is not merged[1] and merged[0].data is not merged[1].data


def test_two_sibling_kernels_split_into_two_correct_kernels():
    _, after = run(TWO_KERNELS)
    mod = after
    for step in (annotate_device_regions, split_host_device, lower_device_kernel_launch):
        mod = verify(step(mod, CTX))
    allocs = {name: [(n.buffer.name, n.buffer.scope) for n in walk(mod[name].body)
                     if isinstance(n, AllocBuffer)]
              for name in ("two_kernels_kernel", "two_kernels_kernel_1")}
    assert allocs == {"two_kernels_kernel": [("buf_dyn_shmem", "shared.dyn")],
                      "two_kernels_kernel_1": [("tile", "shared"), ("flags", "shared")]}
    assert mod["two_kernels_kernel"].attrs["tirx.kernel_launch_params"][-1] == "tirx.use_dyn_shared_memory"
    assert "tirx.use_dyn_shared_memory" not in mod["two_kernels_kernel_1"].attrs["tirx.kernel_launch_params"]


def test_sample_two_kernels_in_launch_thread_form_keep_static_memory():
    # samples/two_kernels.tir (already flat) with its thread_binding loops as launch_thread:
    # no dynamic allocation and less than 48 KiB, so both kernels stay as they are.
    before = f"""
@I.ir_module
class Module:
    @T.prim_func
    def two_kernels(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"), C: T.Buffer((4096,), "float32")):
        T.func_attr({{"target": {TARGET}, "tir.noalias": True}})
        with T.launch_thread("blockIdx.x", 32) as bx:
            tx = T.launch_thread("threadIdx.x", 128)
            stage = T.alloc_shared((128,))
            stage[tx] = A[bx * 128 + tx] * T.float32(2.0)
            T.tvm_storage_sync("shared")
            B[bx * 128 + tx] = stage[127 - tx]
        with T.launch_thread("blockIdx.x", 16) as bx:
            tx = T.launch_thread("threadIdx.x", 256)
            tile = T.alloc_shared((256,), "float32")
            flags = T.alloc_shared((256,), "int32")
            tile[tx] = B[bx * 256 + tx]
            flags[tx] = T.Cast("int32", tile[tx] > T.float32(0.0))
            T.tvm_storage_sync("shared")
            C[bx * 256 + tx] = tile[255 - tx] * T.Cast("float32", flags[255 - tx])
"""
    mod, after = run(before)
    assert after is mod


# -- fast path -----------------------------------------------------------------------------
def test_one_small_static_allocation_is_unchanged():
    mod, after = run(kernel("""
tx = T.launch_thread("threadIdx.x", 128)
s = T.alloc_shared((128,))
s[tx] = A[bx * 128 + tx]
T.tvm_storage_sync("shared")
B[bx * 128 + tx] = s[127 - tx]
"""))
    assert after is mod


def test_kernel_without_shared_memory_and_host_code_are_unchanged():
    mod, after = run(kernel("""
tx = T.launch_thread("threadIdx.x", 128)
acc = T.alloc_local((1,))
acc[0] = A[bx * 128 + tx]
B[bx * 128 + tx] = acc[0]
"""))
    assert after is mod


def test_exactly_48_kib_static_stays_static():
    mod, after = run(kernel("""
tx = T.launch_thread("threadIdx.x", 128)
s = T.alloc_shared((12288,))
s[tx] = A[tx]
"""))
    assert after is mod


# -- merging -------------------------------------------------------------------------------
def test_three_allocations_of_mixed_dtypes_get_aligned_offsets():
    # All three alive together. As TVM 0.27 lays them out (checked there): by increasing
    # size, each at a multiple of 64 bytes: int8 x 5 at 0, float32 x 3 at 64 (element 16),
    # float16 x 100 at 128 (element 64); 128 + 200 = 328 bytes.
    before = kernel("""
h = T.alloc_buffer((100,), "float16", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 128)
w = T.alloc_shared((3,), "float32")
c = T.alloc_buffer((5,), "int8", scope="shared")
h[tx] = T.Cast("float16", A[tx])
w[tx % 3] = A[tx]
c[tx % 5] = T.Cast("int8", tx)
B[tx] = T.Cast("float32", h[tx]) + w[0] + T.Cast("float32", c[4])
""")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((328,), "uint8", scope="shared.dyn")
h = T.decl_buffer((100,), "float16", data=buf_dyn_shmem.data, elem_offset=64, scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 128)
w = T.decl_buffer((3,), "float32", data=buf_dyn_shmem.data, elem_offset=16, scope="shared.dyn")
c = T.decl_buffer((5,), "int8", data=buf_dyn_shmem.data, scope="shared.dyn")
h[tx] = T.Cast("float16", A[tx])
w[tx % 3] = A[tx]
c[tx % 5] = T.Cast("int8", tx)
B[tx] = T.Cast("float32", h[tx]) + w[0] + T.Cast("float32", c[4])
""")
    check(before, expected)


def test_single_dynamic_allocation_becomes_a_view_of_the_merged_buffer():
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
s = T.alloc_buffer((128,), "float16", scope="shared.dyn")
s[tx] = T.Cast("float16", A[tx])
""")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((256,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 128)
s = T.decl_buffer((128,), "float16", data=buf_dyn_shmem.data, scope="shared.dyn")
s[tx] = T.Cast("float16", A[tx])
""")
    check(before, expected)


def test_single_64_kib_static_allocation_moves_to_dynamic():
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
big = T.alloc_shared((16384,))
big[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = big[16383 - tx]
""")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((65536,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 128)
big = T.decl_buffer((16384,), data=buf_dyn_shmem.data, scope="shared.dyn")
big[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = big[16383 - tx]
""")
    check(before, expected)


def test_symbolic_size_known_at_launch():
    # constant storages come first, symbolic ones after them (as in TVM)
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
h = T.alloc_buffer((n,), "float16", scope="shared.dyn")
w = T.alloc_shared((128,))
h[tx] = T.Cast("float16", A[tx])
w[tx] = A[tx] + T.Cast("float32", h[tx])
B[tx] = w[tx]
""", params=", n: T.int32")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((512 + n * 2,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 128)
h = T.decl_buffer((n,), "float16", data=buf_dyn_shmem.data, elem_offset=256, scope="shared.dyn")
w = T.decl_buffer((128,), data=buf_dyn_shmem.data, scope="shared.dyn")
h[tx] = T.Cast("float16", A[tx])
w[tx] = A[tx] + T.Cast("float32", h[tx])
B[tx] = w[tx]
""", params=", n: T.int32")
    check(before, expected)


def test_pointer_uses_and_views_follow_the_merged_buffer():
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
s = T.alloc_buffer((128,), scope="shared.dyn")
t = T.alloc_shared((64,), "float16")
t2 = T.decl_buffer((32,), "int32", data=t.data)
t2[tx % 32] = tx
T.evaluate(T.call_extern("int32", "consume", t.data, s.data))
""")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((640,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 128)
s = T.decl_buffer((128,), data=buf_dyn_shmem.data, elem_offset=32, scope="shared.dyn")
t = T.decl_buffer((64,), "float16", data=buf_dyn_shmem.data, scope="shared.dyn")
t2 = T.decl_buffer((32,), "int32", data=buf_dyn_shmem.data, scope="shared.dyn")
t2[tx % 32] = tx
T.evaluate(T.call_extern("int32", "consume", T.address_of(t[0]), T.address_of(s[0])))
""")
    check(before, expected)


# -- memory reused by liveness (as TVM 0.27 plans it) ---------------------------------------
def test_two_1_kib_buffers_never_alive_together_need_1_kib():
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 256)
a = T.alloc_buffer((256,), scope="shared.dyn")
b = T.alloc_buffer((256,), scope="shared.dyn")
a[tx] = A[bx * 256 + tx]
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = a[255 - tx]
T.tvm_storage_sync("shared")
b[tx] = A[bx * 256 + tx] * T.float32(2.0)
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = B[bx * 256 + tx] + b[255 - tx]
""")
    # the barrier before b's first write already orders it after a's last read
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((1024,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 256)
a = T.decl_buffer((256,), data=buf_dyn_shmem.data, scope="shared.dyn")
b = T.decl_buffer((256,), data=buf_dyn_shmem.data, scope="shared.dyn")
a[tx] = A[bx * 256 + tx]
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = a[255 - tx]
T.tvm_storage_sync("shared")
b[tx] = A[bx * 256 + tx] * T.float32(2.0)
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = B[bx * 256 + tx] + b[255 - tx]
""")
    check(before, expected)


def test_reused_memory_gets_the_barrier_other_threads_need():
    # b takes a's memory: thread tx writes b[tx] where thread 255 - tx just read a[tx]
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 256)
a = T.alloc_buffer((256,), scope="shared.dyn")
b = T.alloc_buffer((256,), scope="shared.dyn")
a[tx] = A[bx * 256 + tx]
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = a[255 - tx]
b[tx] = A[bx * 256 + tx] * T.float32(2.0)
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = B[bx * 256 + tx] + b[255 - tx]
""")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((1024,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 256)
a = T.decl_buffer((256,), data=buf_dyn_shmem.data, scope="shared.dyn")
b = T.decl_buffer((256,), data=buf_dyn_shmem.data, scope="shared.dyn")
a[tx] = A[bx * 256 + tx]
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = a[255 - tx]
T.tvm_storage_sync("shared.dyn")
b[tx] = A[bx * 256 + tx] * T.float32(2.0)
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = B[bx * 256 + tx] + b[255 - tx]
""")
    check(before, expected)


def test_same_element_reuse_needs_no_barrier():
    # TVM's simple_alloc_reuse: each thread writes a[tx], then b[tx] at the same address
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
a = T.alloc_buffer((128,), scope="shared.dyn")
b = T.alloc_buffer((128,), scope="shared.dyn")
a[tx] = A[tx]
b[tx] = A[tx] + T.float32(1.0)
B[tx] = b[tx]
""")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((512,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 128)
a = T.decl_buffer((128,), data=buf_dyn_shmem.data, scope="shared.dyn")
b = T.decl_buffer((128,), data=buf_dyn_shmem.data, scope="shared.dyn")
a[tx] = A[tx]
b[tx] = A[tx] + T.float32(1.0)
B[tx] = b[tx]
""")
    check(before, expected)


def test_a_bigger_buffer_takes_the_memory_of_two_dead_smaller_ones():
    # TVM's matmul case: two 512-byte tiles side by side, then a 1 KiB buffer over both
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 256)
x = T.alloc_buffer((256,), "float16", scope="shared.dyn")
y = T.alloc_buffer((256,), "float16", scope="shared.dyn")
z = T.alloc_buffer((256,), scope="shared.dyn")
x[tx] = T.Cast("float16", A[tx])
y[tx] = T.Cast("float16", A[tx])
T.tvm_storage_sync("shared")
B[tx] = T.Cast("float32", x[255 - tx] + y[255 - tx])
T.tvm_storage_sync("shared")
z[tx] = B[tx]
T.tvm_storage_sync("shared")
B[tx] = z[255 - tx]
""")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((1024,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 256)
x = T.decl_buffer((256,), "float16", data=buf_dyn_shmem.data, elem_offset=256, scope="shared.dyn")
y = T.decl_buffer((256,), "float16", data=buf_dyn_shmem.data, scope="shared.dyn")
z = T.decl_buffer((256,), data=buf_dyn_shmem.data, scope="shared.dyn")
x[tx] = T.Cast("float16", A[tx])
y[tx] = T.Cast("float16", A[tx])
T.tvm_storage_sync("shared")
B[tx] = T.Cast("float32", x[255 - tx] + y[255 - tx])
T.tvm_storage_sync("shared")
z[tx] = B[tx]
T.tvm_storage_sync("shared")
B[tx] = z[255 - tx]
""")
    check(before, expected)


def test_a_statement_reads_the_dead_buffer_elsewhere_than_it_writes_the_new_one():
    # a's life ends and b's begins in one statement that reads a[127 - tx]: TVM would
    # give b a's memory (a race: thread tx overwrites what thread 127 - tx reads); here
    # they do not share it. With the same element (b[tx] = a[tx]) they do.
    def body(index: str) -> str:
        return f"""
tx = T.launch_thread("threadIdx.x", 128)
a = T.alloc_buffer((128,), scope="shared.dyn")
b = T.alloc_buffer((128,), scope="shared.dyn")
a[tx] = A[tx]
T.tvm_storage_sync("shared")
b[tx] = a[{index}] * T.float32(2.0)
T.tvm_storage_sync("shared")
B[tx] = b[127 - tx]
"""
    sizes = {}
    for index in ("127 - tx", "tx"):
        _, after = run(kernel(body(index)))
        merged, = [n.buffer for n in walk(after["k"].body) if isinstance(n, AllocBuffer)]
        sizes[index] = merged.shape[0].value
    assert sizes == {"127 - tx": 1024, "tx": 512}


def test_the_merged_buffer_is_volatile_when_a_merged_one_was():
    # LowerThreadAllreduce's shared staging buffer is volatile; so is TVM's merged buffer then
    _, after = run(kernel("""
tx = T.launch_thread("threadIdx.x", 128)
red = T.alloc_buffer((128,), scope="shared", annotations={"tirx.volatile": True})
s = T.alloc_buffer((128,), scope="shared.dyn")
red[tx] = A[tx]
s[tx] = A[tx]
B[tx] = red[tx] + s[tx]
"""))
    merged, = [n for n in walk(after["k"].body) if isinstance(n, AllocBuffer)]
    assert merged.buffer.name == "buf_dyn_shmem" and merged.annotations == (("tirx.volatile", True),)


# -- static shared memory --------------------------------------------------------------------
def test_static_shared_memory_stays_static_without_a_dynamic_allocation():
    # two static buffers never alive together: kept as they are (as TVM keeps static
    # memory without tirx.merge_static_smem)
    mod, after = run(kernel("""
tx = T.launch_thread("threadIdx.x", 128)
s = T.alloc_shared((128,))
t = T.alloc_shared((128,), "int32")
s[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = s[127 - tx]
T.tvm_storage_sync("shared")
t[tx] = tx
T.tvm_storage_sync("shared")
B[tx] = B[tx] + T.Cast("float32", t[127 - tx])
"""))
    assert after is mod


def test_static_memory_over_48_kib_becomes_dynamic_and_is_reused():
    # two 32 KiB static buffers, never alive together: dynamic (a launch gets more than
    # 48 KiB only that way), and 32 KiB in all
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
s = T.alloc_shared((8192,))
t = T.alloc_shared((8192,))
s[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = s[127 - tx]
T.tvm_storage_sync("shared")
t[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = B[tx] + t[127 - tx]
""")
    expected = kernel("""
buf_dyn_shmem = T.alloc_buffer((32768,), "uint8", scope="shared.dyn")
tx = T.launch_thread("threadIdx.x", 128)
s = T.decl_buffer((8192,), data=buf_dyn_shmem.data, scope="shared.dyn")
t = T.decl_buffer((8192,), data=buf_dyn_shmem.data, scope="shared.dyn")
s[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = s[127 - tx]
T.tvm_storage_sync("shared")
t[tx] = A[tx]
T.tvm_storage_sync("shared")
B[tx] = B[tx] + t[127 - tx]
""")
    check(before, expected)


def test_the_launch_reads_the_reused_size():
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 256)
a = T.alloc_buffer((256,), scope="shared.dyn")
b = T.alloc_buffer((256,), scope="shared.dyn")
a[tx] = A[bx * 256 + tx]
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = a[255 - tx]
T.tvm_storage_sync("shared")
b[tx] = A[bx * 256 + tx]
T.tvm_storage_sync("shared")
B[bx * 256 + tx] = B[bx * 256 + tx] + b[255 - tx]
""")
    _, mod = run(before)
    for step in (annotate_device_regions, split_host_device, lower_device_kernel_launch):
        mod = verify(step(mod, CTX))
    kernel_facts, = mod.facts.kernels
    assert kernel_facts.launch_params[-1] == "tirx.use_dyn_shared_memory"
    assert kernel_facts.sizes.dynamic_shared_memory == 1024


# -- diagnostics ---------------------------------------------------------------------------
def test_over_the_limit_is_a_diagnostic_at_the_crossing_allocation():
    # a (100 KiB) is dead when b (200 KiB) is born: b takes a's memory, 200 KiB in all
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
a = T.alloc_buffer((25600,), scope="shared.dyn")
b = T.alloc_buffer((51200,), scope="shared.dyn")
a[tx] = A[tx]
b[tx] = A[tx]
""")
    with pytest.raises(Diagnostic) as info:
        run(before)
    d = info.value
    assert "204800 bytes" in d.message and "166912" in d.message and "sm_80" in d.message
    assert "'b'" in d.message
    assert d.span is not None and d.span.line == before.splitlines().index(
        "        b = T.alloc_buffer((51200,), scope=\"shared.dyn\")") + 3 + 1


def test_limit_comes_from_the_kernel_target_region():
    region = 'T.target({"arch": "sm_75", "kind": "cuda"})'
    before = f"""
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((4096,), "float32")):
        T.func_attr({{"target": {TARGET}}})
        with T.attr({region}, "target", 0):
            bx = T.launch_thread("blockIdx.x", 16)
            tx = T.launch_thread("threadIdx.x", 128)
            s = T.alloc_buffer((20480,), scope="shared.dyn")
            s[tx] = A[tx]
"""
    with pytest.raises(Diagnostic, match=r"81920 bytes, over the limit of 65536 bytes per block on sm_75"):
        run(before)


def test_small_static_allocation_is_checked_against_a_lower_limit():
    target = ('T.target({"arch": "sm_80", "host": {"kind": "llvm"}, "kind": "cuda", '
              '"max_shared_memory_per_block": 1024})')
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
s = T.alloc_shared((512,))
s[tx] = A[tx]
""", target=target)
    with pytest.raises(Diagnostic, match="2048 bytes, over the limit of 1024 bytes"):
        run(before)


def test_size_defined_inside_the_kernel_is_a_diagnostic():
    before = kernel("""
tx = T.launch_thread("threadIdx.x", 128)
m: T.int32 = bx * 2 + 1
s = T.alloc_buffer((m,), scope="shared.dyn")
s[tx] = A[tx]
""")
    with pytest.raises(Diagnostic, match="depends on 'm', which is defined inside the kernel"):
        run(before)
