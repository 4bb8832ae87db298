"""InjectVirtualThread, stated as TIR before and after: virtual thread axes become
unrolled loops, pushed inward past barriers with per-virtual-thread allocations (found
by building the TVM corpus: "unknown thread axis 'vthread'")."""
from __future__ import annotations

import textwrap

import pytest

from test_backend_nvptx import filecheck, images
from conftest import pass_checker
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.lower.inject_virtual_thread import inject_virtual_thread
from tirc.passes.pass_context import PassContext
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
CTX = PassContext(parse_target("cuda -arch=sm_90", host="llvm"))
DEV = 'T.target({"arch": "sm_90", "kind": "cuda"})'


def run(before: str):
    return inject_virtual_thread(verify(parse(HEADER + before, "before.tir")), CTX)


check = pass_checker(lambda mod: inject_virtual_thread(mod, CTX))


def test_body_without_barrier_becomes_one_unrolled_loop():
    check(f"""
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    T.func_attr({{"target": {DEV}}})
    tx = T.launch_thread("threadIdx.x", 16)
    vt = T.launch_thread("vthread", 4)
    L = T.alloc_buffer((1,), scope="local")
    L[0] = A[vt * 16 + tx]
    A[vt * 16 + tx] = L[0] * T.float32(2.0)
""", f"""
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    T.func_attr({{"target": {DEV}}})
    tx = T.launch_thread("threadIdx.x", 16)
    for vt in T.unroll(4):
        L = T.alloc_buffer((1,), scope="local")
        L[0] = A[vt * 16 + tx]
        A[vt * 16 + tx] = L[0] * T.float32(2.0)
""")


def test_barrier_splits_the_loop_and_allocations_get_a_copy_per_virtual_thread():
    """Every virtual thread stores to shared memory before any reads it back: one loop
    before the barrier, one after; the local value that lives across the barrier gets
    one element per virtual thread; the statement that does not use the axis runs once."""
    check(f"""
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T.func_attr({{"target": {DEV}}})
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.alloc_buffer((64,), scope="shared")
    vt = T.launch_thread("vthread", 2)
    L = T.alloc_buffer((1,), scope="local")
    for k in range(2):
        L[0] = A[vt * 32 + tx] * T.float32(2.0)
        B[0] = T.float32(0.0)
        S[vt * 32 + tx] = L[0]
        T.tvm_storage_sync("shared")
        B[vt * 32 + tx] = S[63 - (vt * 32 + tx)] + L[0]
""", f"""
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    T.func_attr({{"target": {DEV}}})
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.alloc_buffer((64,), scope="shared")
    L = T.alloc_buffer((2,), scope="local")
    for k in range(2):
        for vt in T.unroll(2):
            L[vt] = A[vt * 32 + tx] * T.float32(2.0)
        B[0] = T.float32(0.0)
        for vt in T.unroll(2):
            S[vt * 32 + tx] = L[vt]
        T.tvm_storage_sync("shared")
        for vt in T.unroll(2):
            B[vt * 32 + tx] = S[63 - (vt * 32 + tx)] + L[vt]
""")


def test_barrier_under_a_condition_on_the_virtual_thread_is_a_diagnostic():
    text = f"""
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    T.func_attr({{"target": {DEV}}})
    tx = T.launch_thread("threadIdx.x", 32)
    vt = T.launch_thread("vthread", 2)
    if vt == 0:
        A[tx] = T.float32(1.0)
        T.tvm_storage_sync("shared")
"""
    with pytest.raises(Diagnostic, match="the condition of an if uses the virtual thread") as e:
        run(text)
    assert e.value.span is not None and e.value.span.line == 10


def test_tvm_printed_vthread_binding_builds_to_ptx(tmp_path):
    """TVM's thread_binding form of a virtual thread inside a kernel, end to end."""
    text = "# from tvm.script import tirx as T\n" + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((256,), "float32")):
            for bx in T.thread_binding(2, thread="blockIdx.x"):
                for vx in T.thread_binding(4, thread="vthread.x"):
                    for tx in T.thread_binding(32, thread="threadIdx.x"):
                        A[bx * 128 + vx * 32 + tx] = A[bx * 128 + vx * 32 + tx] + T.float32(1.0)
    """)
    filecheck(images(text)["sm_90"].ptx, r"""
        CHECK: .visible .entry f_kernel(
        CHECK: .maxntid 32, 1, 1
        CHECK-COUNT-4: st.global.b32
    """, tmp_path)
