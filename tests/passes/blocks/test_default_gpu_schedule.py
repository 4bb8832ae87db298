"""DefaultGPUSchedule (opt-in): unscheduled GPU functions get TVM's default thread
binding and run; without the option they stay VerifyMemory's "Did you forget to bind?"
error. (TVM's own unit tests of the pass run in test_sblock_pass_pairs.py.)"""
from __future__ import annotations

import numpy as np
import pytest


ELEMENTWISE = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((64, 40), "float32"), B: T.Buffer((64, 40), "float32")):
        for i, j in T.grid(64, 40):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2.0) + T.float32(1.0)
'''

REDUCTION = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((100, 37), "float32"), B: T.Buffer((100,), "float32")):
        for i, k in T.grid(100, 37):
            with T.sblock("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0.0)
                B[vi] = B[vi] + A[vi, vk]
'''




@pytest.mark.parametrize("source", ["elementwise", "reduction"])
def test_unscheduled_gpu_function_builds_and_runs_with_the_option(source, tmp_path):
    import tirc
    from tirc.testing import simt
    text = ELEMENTWISE if source == "elementwise" else REDUCTION
    built = tirc.compile(text, "cuda -arch=sm_80", load=False, default_gpu_schedule=True,
                         emit=("ptx",))
    ptx = next(v for k, v in built.files.items() if k.endswith(".ptx"))
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    assert ".entry main_kernel" in ptx and "%tid.x" in ptx and "%ctaid.x" in ptx
    mod = simt.lower(text, default_gpu_schedule=True)
    rng = np.random.default_rng(0)
    if source == "elementwise":
        a = rng.random((64, 40), dtype=np.float32)
        b = np.zeros_like(a)
        simt.run(mod, "main", [a, b], target=None)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    else:
        a = rng.random((100, 37), dtype=np.float32)
        b = np.zeros(100, np.float32)
        simt.run(mod, "main", [a, b], target=None)
        np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("source", ["elementwise", "reduction"])
def test_without_the_option_it_is_the_bind_error(source):
    import tirc
    text = ELEMENTWISE if source == "elementwise" else REDUCTION
    with pytest.raises(tirc.CompileError, match="Did you forget to bind?"):
        tirc.compile(text, "cuda -arch=sm_80", load=False)


def test_lower_prints_the_schedule_and_cpu_functions_are_left_alone():
    import tirc
    out = tirc.lower(ELEMENTWISE, "cuda", stop_after="DefaultGPUSchedule",
                     default_gpu_schedule=True)
    assert 'for i_j_fused_0 in T.thread_binding(3, thread="blockIdx.x"):' in out
    assert 'for i_j_fused_1 in T.thread_binding(1024, thread="threadIdx.x"):' in out
    assert "T.where(i_j_fused_0 * 1024 + i_j_fused_1 < 2560)" in out
    cpu = tirc.lower(ELEMENTWISE, "llvm", stop_after="DefaultGPUSchedule",
                     default_gpu_schedule=True)
    assert "thread_binding" not in cpu


def test_a_nest_the_rule_cannot_schedule_is_located():
    import tirc
    text = ELEMENTWISE.replace('''        for i, j in T.grid(64, 40):
            with T.sblock("B"):''', '''        for i in range(64):
            B[i, 0] = T.float32(0.0)
            for j in range(40):
              with T.sblock("B"):''').replace("                vi, vj", "                  vi, vj").replace(
        "                B[vi, vj] =", "                  B[vi, vj] =")
    with pytest.raises(tirc.CompileError, match="not a perfect nest") as err:
        tirc.compile(text, "cuda", load=False, default_gpu_schedule=True)
    assert ":11:" in str(err.value)  # the block


def test_unscheduled_softmax_runs_as_four_kernels():
    """topi.nn.softmax as te.create_prim_func writes it (tests/corpus/sblock/): four leaf
    blocks (max, exp, sum, normalise) with intermediate buffers between them."""
    from conftest import TESTS
    from tirc.testing import simt
    mod = simt.lower((TESTS / "corpus" / "sblock" / "topi_softmax.tir").read_text(),
                     default_gpu_schedule=True)
    assert sorted(n for n in mod.functions if n.startswith("main_kernel")) == [
        "main_kernel", "main_kernel_1", "main_kernel_2", "main_kernel_3"]
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    y = np.zeros_like(x)
    simt.run(mod, "main", [x, y], target=None)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
