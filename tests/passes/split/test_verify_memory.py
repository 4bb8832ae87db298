"""VerifyMemory: a host access to a device buffer is an error, not a CPU read of GPU memory."""
from __future__ import annotations

import pytest

from split_helpers import run
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target
from conftest import TESTS

FORGOT_TO_BIND = """
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    for i in range(64):
        A[i] = A[i] * T.float32(2.0)
"""


def test_unbound_loop_on_device_buffers_is_an_error():
    mod = parse("# from tvm.script import tirx as T\n" + FORGOT_TO_BIND, "f.tir")
    with pytest.raises(Diagnostic) as info:
        run_pipeline(mod, PassContext(parse_target("cuda -arch=sm_90", host="llvm")))
    d = info.value
    assert "host code of 'f' writes buffer 'A', which lives on the cuda device" in d.message
    assert (d.span.file, d.span.line) == ("f.tir", 6)


def test_same_module_for_the_cpu_is_fine():
    from tirc.ir.stmt import BufferStore
    from tirc.ir.visitor import walk
    from tirc.passes.split.verify_memory import verify_memory
    mod = parse("# from tvm.script import tirx as T\n" + FORGOT_TO_BIND)
    ctx = PassContext(parse_target("llvm"))
    at = run_pipeline(mod, ctx, stop_after="VerifyMemory")
    # VerifyMemory saw host code writing the parameter buffer A (what the cuda target
    # refuses above) and let it through
    assert any(isinstance(n, BufferStore) and n.buffer.name == "A" for n in walk(at["f"].body))
    assert verify_memory(at, ctx) is at
    assert "f" in run_pipeline(mod, ctx).functions


def test_host_locals_and_kernels_are_fine():
    from tirc.passes.split.verify_memory import verify_memory
    mod = run([], """
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90", "host": {"kind": "llvm"}})})
        tmp = T.alloc_buffer((4,), "int32")
        tmp[0] = 1
        T.call_ffi_kernel("k", A.data, tmp[0], launch_params=["threadIdx.x"])
""")
    assert verify_memory(mod, None) is mod


KERNEL_WITH_GLOBAL = """# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for bx in T.thread_binding(1, thread="blockIdx.x"):
            tmp = T.alloc_buffer((64,), scope="{scope}")
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                tmp[tx] = A[tx] * T.float32(2.0)
                B[tx] = tmp[63 - tx]
"""


@pytest.mark.parametrize("scope", ["global"])
def test_kernel_allocating_global_memory_is_refused(scope, tmp_path):
    """Each thread got a private alloca of what the program shares (B read other threads'
    uninitialised copies): a located error, as TVM's CUDA code generator gives."""
    from tirc.build.stages import build
    text = KERNEL_WITH_GLOBAL.replace("{scope}", scope)
    with pytest.raises(Diagnostic, match=f"'tmp' is allocated in '{scope}' memory inside device "
                                         "code") as err:
        build(text, "cuda", "llvm", tmp_path, "m")
    assert err.value.span.line == 9
    assert not list(tmp_path.iterdir())


def test_kernel_shared_and_local_allocations_build(tmp_path):
    from tirc.build.stages import build
    for scope in ("shared", "local"):
        build(KERNEL_WITH_GLOBAL.replace("{scope}", scope), "cuda", "llvm", tmp_path / scope, "m")
        ptx = (tmp_path / scope / "m.ptx").read_text()
        assert ".entry main_kernel" in ptx
        assert (tmp_path / scope / "m.o").stat().st_size > 0
        if scope == "shared":  # one array per block, written, synchronised, read back
            assert ".shared .align 16 .b8 main_kernel_tmp[256];" in ptx
            st, bar, ld = (ptx.find(op) for op in ("st.shared", "bar.sync", "ld.shared"))
            assert 0 <= st < bar < ld, "not written, synchronised and read back in that order"


def test_warp_memory_on_a_target_without_warps_is_refused(tmp_path):
    """'warp' memory is shared by a warp through shuffles (LowerWarpMemory); OpenCL's warp
    is one work-item (thread_warp_size 1), where it would become a per-thread array."""
    from tirc.build.stages import build
    with pytest.raises(Diagnostic, match="'tmp' is allocated in 'warp' memory, which target "
                                         "'opencl' does not have") as err:
        build(KERNEL_WITH_GLOBAL.replace("{scope}", "warp"), "opencl", "llvm", tmp_path, "m")
    assert err.value.span.line == 9
    assert not list(tmp_path.iterdir())


# Two hand schedules of the block-level corpus as they once were (tests/corpus/sblock/,
# gen_sblock_corpus.py, before their temporaries got set_scope): the schedule itself and
# TVM's lowering of it. Each leaves a global-scope buffer inside the kernel; TVM's CUDA
# code generator refuses them ("Cannot allocate global memory when targeting CUDA").
GLOBAL_IN_KERNEL_CORPUS = {
    "cuda_global_alloc_in_kernel_softmax.tir": ("T_softmax_maxelem", "T.sblock_alloc_buffer((64,))"),
    "cuda_global_alloc_in_kernel_softmax.lowered.tir": ("T_softmax_maxelem", "T.alloc_buffer((64,))"),
    "cuda_global_alloc_in_kernel_rfactor.tir": ("B_rf", "T.sblock_alloc_buffer((32, 64))"),
    "cuda_global_alloc_in_kernel_rfactor.lowered.tir": ("B_rf", "T.alloc_buffer((2048,))"),
}


@pytest.mark.parametrize("name", sorted(GLOBAL_IN_KERNEL_CORPUS))
def test_corpus_schedule_leaving_global_buffer_in_kernel_is_refused(name, tmp_path):
    """Built, each thread got its own copy of the row's max/sum (the softmax, where every
    copy but thread 0's stayed uninitialised: NaN everywhere on the SIMT interpreter) or of
    B_rf: a located error at the buffer's allocation, and no output written."""
    from pathlib import Path

    from tirc.build.stages import build
    path = TESTS / "tir" / name
    text = path.read_text()
    buf, alloc = GLOBAL_IN_KERNEL_CORPUS[name]
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(Diagnostic, match=f"buffer '{buf}' is allocated in 'global' memory "
                                         "inside device code") as err:
        build(text, "cuda -arch=sm_80", "llvm", out, "m", filename=name)
    span = err.value.span
    assert span.file == name
    assert text.splitlines()[span.line - 1].strip() == f"{buf} = {alloc}"
    assert not list(out.iterdir())
