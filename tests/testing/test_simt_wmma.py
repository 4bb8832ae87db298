"""The SIMT interpreter's WMMA builtins (tirc/testing/simt_wmma.py): the tensor-core
corpus (tests/corpus/tensor_core) run on the CPU computes the matrix products NumPy does:
float16 in with float32 or float16 accumulation, int8/uint8 in with int32."""
from __future__ import annotations


import numpy as np
import pytest

from conftest import TESTS
from tirc.frontend.parse import parse
from tirc.testing import simt
from tirc.testing.evaluate import Unsupported

CORPUS = TESTS / "corpus" / "tensor_core"

# module -> is B given transposed (N x K, C = A B^T)?
MODULES = {"wmma_f16_f32": False, "wmma_f16_f16": False, "wmma_f16_f32_bcol": True,
           "wmma_s8_s32": False, "wmma_u8_s32_bcol": True, "wmma_f16_f32_m32n8k16": True,
           "wmma_s8_s32_m8n32k16": False,
           "dlight_matmul_f16_nopipe": True, "dlight_matmul_int8_nopipe": True,
           "dlight025_matmul_f16_128x256x512_nopipe": True,
           "dlight025_matmul_f16_f32_256x128x256_nopipe": True,
           "dlight025_matmul_int8_128x128x256_nopipe": True,
           # software-pipelined: their fragments get one version per stage in flight
           "dlight_matmul_f16": True, "dlight_matmul_int8": True, "dlight025_matmul_f16_128x256x512": True,
           "dlight025_matmul_f16_f32_256x128x256": True, "dlight025_matmul_int8_128x128x256": True}


def _inputs(fn, rng):
    out = []
    for p in fn.params:
        b = fn.buffer_of(p)
        shape, dt = tuple(int(s.value) for s in b.shape), str(b.dtype)
        if dt.startswith("float"):
            out.append(rng.uniform(-1, 1, shape).astype(dt))
        else:
            out.append(rng.integers(-128 if dt == "int8" else 0, 128, shape).astype(dt))
    out[-1][:] = 0
    return out


@pytest.mark.parametrize("name", sorted(MODULES))
def test_corpus_module_computes_a_matmul(name):
    text = (CORPUS / f"{name}.tir").read_text()
    a, b, c = _inputs(parse(text, name).functions["main"], np.random.default_rng(len(name)))
    simt.run(text, "main", [a, b, c], "cuda -arch=sm_80", "llvm", filename=f"{name}.tir")
    bb = b.astype(np.float64).T if MODULES[name] else b.astype(np.float64)
    want = a.astype(np.float64) @ bb
    if c.dtype == np.int32:
        np.testing.assert_array_equal(c, want.astype(np.int64))
    elif c.dtype == np.float16:  # a half accumulator is rounded after every 16-deep step
        acc = np.zeros(c.shape, np.float16)
        for k in range(0, a.shape[1], 16):
            acc = (acc.astype(np.float64) + a[:, k:k + 16].astype(np.float64) @ bb[k:k + 16]).astype(np.float16)
        np.testing.assert_allclose(c, acc, rtol=2e-3, atol=1e-2)
    else:
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


def test_wmma_by_part_of_a_warp_is_not_interpreted():
    text = (CORPUS / "wmma_f16_f32.tir").read_text().replace(
        'T.thread_binding(32, thread="threadIdx.x")', 'T.thread_binding(16, thread="threadIdx.x")')
    a, b, c = _inputs(parse(text, "t.tir").functions["main"], np.random.default_rng(0))
    with pytest.raises(Unsupported, match="run by part of a warp"):
        simt.run(text, "main", [a, b, c], "cuda -arch=sm_80", "llvm", filename="t.tir")
