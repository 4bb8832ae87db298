"""CUDA's half-precision math functions (cuda_fp16.h's ``hexp``, ``hlog``, ... as TVM's
CUDA code calls them, also on float32 values after BF16 legalization; TVM's fast-math
tests print them so): the argument rounded to float16, libdevice's float function, the
result rounded to float16."""
from __future__ import annotations

import pytest

from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.backends.cuda.nvptx import HALF_MATH

HEADER = "# from tvm.script import tirx as T\n@T.prim_func\n"


def kernel(call: str, dtype: str = "float32") -> str:
    return HEADER + f'''def f(A: T.Buffer((32,), "{dtype}"), B: T.Buffer((32,), "{dtype}")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        B[tx] = {call}
'''


@pytest.mark.parametrize("name", sorted(HALF_MATH))
def test_half_math_rounds_through_float16(tmp_path, name):
    try:
        build(kernel(f'T.call_pure_extern("float32", "{name}", A[tx])'), "cuda -arch=sm_80",
              None, tmp_path, "m")
    except Diagnostic as e:
        if "libdevice" in e.message and "not found" in e.message:
            pytest.skip("libdevice is not installed")
        raise
    ptx = (tmp_path / "m.ptx").read_text()
    assert "cvt.rn.f16.f32" in ptx and "cvt.f32.f16" in ptx


def test_a_half_value_and_an_unknown_h_name(tmp_path):
    build(kernel('T.call_pure_extern("float16", "hsin", A[tx])', "float16"), "cuda -arch=sm_80",
          None, tmp_path, "m")
    with pytest.raises(Diagnostic, match="unknown extern function 'hfoo' on the GPU"):
        build(kernel('T.call_pure_extern("float32", "hfoo", A[tx])'), "cuda -arch=sm_80",
              None, tmp_path / "x", "m")
