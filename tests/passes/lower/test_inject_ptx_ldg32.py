"""InjectPTXLDG32 beyond TVM's own cases (before/after pairs in
tests/passes/blocks/test_sblock_pass_pairs.py): in a kernel the two local buffers go
under its thread launches, the PTX has the predicated ``ld.global.nc.f32``, the SIMT
interpreter's result is NumPy's, and what TVM's instruction would get wrong (another
dtype, a nonzero value otherwise, a load on the ``else`` side) stays as written."""
from __future__ import annotations

import numpy as np
import pytest

from tirc.build.stages import build
from tirc.frontend.parse import parse
from tirc.passes.lower.inject_ptx_ldg32 import inject_ptx_ldg32
from tirc.passes.pass_context import PassContext
from tirc.target.kinds import parse_target
from tirc.testing import simt

HEADER = "# from tvm.script import tirx as T\n\n"
CONFIG = {"tirx.s_tir.ldg32": True}


def _kernel(value: str, dtype: str = "float32") -> str:
    return HEADER + f'''@T.prim_func
def main(A: T.Buffer((256,), "{dtype}"), C: T.Buffer((256,), "{dtype}")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            C[bx * 128 + tx] = {value}
'''


GUARDED = _kernel("T.if_then_else(A[bx * 128 + tx] > T.float32(0.0), A[bx * 128 + tx], T.float32(0.0))")


def test_a_guarded_load_is_one_predicated_ld_global_nc(tmp_path):
    result = build(GUARDED, "cuda -arch=sm_80", None, tmp_path, "m", device_only=True,
                   pass_config=CONFIG)
    (image,) = result.images.values()
    ptx = open(image).read()
    assert "@p ld.global.nc.f32" in ptx and "@!p mov.b32" in ptx
    plain = build(GUARDED, "cuda -arch=sm_80", None, tmp_path / "plain", "m", device_only=True)
    assert "ld.global.nc" not in open(next(iter(plain.images.values()))).read()


def test_it_computes_what_the_guarded_load_computes():
    a = np.linspace(-1, 1, 256, dtype=np.float32)
    c = np.full(256, 7, np.float32)
    simt.run(GUARDED, "main", [a, c], pass_config=CONFIG)
    np.testing.assert_array_equal(c, np.where(a > 0, a, 0))


@pytest.mark.parametrize("source", [
    _kernel("T.if_then_else(A[tx] > 0, A[tx], 0)", "int32"),
    _kernel("T.if_then_else(A[tx] > T.float32(0.0), A[tx], T.float32(1.0))"),
    _kernel("T.if_then_else(A[tx] > T.float32(0.0), T.float32(0.0), A[tx])"),
])
def test_what_the_instruction_would_get_wrong_stays_as_written(source):
    mod = parse(source, "l.tir")
    assert inject_ptx_ldg32(mod, force=True) is mod


def test_only_with_the_option_and_only_for_cuda():
    from tirc.passes.prepare.bind_target import bind_target
    cuda = parse_target("cuda -arch=sm_80", host="llvm")
    mod = bind_target(parse(GUARDED, "l.tir"), cuda)
    assert inject_ptx_ldg32(mod, PassContext(cuda)) is mod
    assert inject_ptx_ldg32(mod, PassContext(cuda, config=(("tirx.s_tir.ldg32", True),))) is not mod
    cpu = bind_target(parse(GUARDED, "l.tir"), parse_target("llvm"))
    assert inject_ptx_ldg32(cpu, force=True) is cpu
