"""Device code may contract a * b + c into one fused multiply-add, as nvcc and NVRTC do
by default (``-fmad=true``), so TVM's CUDA C of the same TIR gets FFMA: tirc's NVPTX
lowering marks float add/sub/mul ``contract``. CPU code keeps separate operations
(no GPU needed; found by bench/gpu_kernels.py's matmul, which had mul.rn + add.rn)."""
from __future__ import annotations

from tirc.build.stages import build

KERNEL = """# from tvm.script import tirx as T

@T.prim_func
def axpy(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")):
    T.func_attr({"tir.noalias": True})
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            C[bx * 256 + tx] = C[bx * 256 + tx] + A[bx * 256 + tx] * B[bx * 256 + tx]
"""

CPU = KERNEL.replace('T.thread_binding(4, thread="blockIdx.x")', "range(4)").replace(
    'T.thread_binding(256, thread="threadIdx.x")', "range(256)")


def test_device_float_multiply_add_becomes_fma(tmp_path):
    build(KERNEL, "cuda -arch=sm_90", "llvm", tmp_path, "axpy", device_only=True)
    ptx = (tmp_path / "axpy.ptx").read_text()
    assert "fma.rn.f32" in ptx
    assert "mul.rn.f32" not in ptx and "add.rn.f32" not in ptx


def test_cpu_code_is_not_contracted(tmp_path):
    build(CPU, "llvm", None, tmp_path, "axpy", emit=("llvm",))
    ll = (tmp_path / "axpy.ll").read_text()
    assert "contract" not in ll
