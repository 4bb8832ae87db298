"""Vectors whose size is not a power of two (``float32x3``, TVM's "padded vector dtype"):
a buffer of them holds its elements ``bits * lanes / 8`` bytes apart, packed, as DLPack
lays tensors out and as much memory as tirc allocates for them; accesses claim only a
power-of-two alignment. It was an internal error (LLVM refused "align 12"), and the
elements were addressed 16 bytes apart, past the end of a heap allocation."""
from __future__ import annotations

import numpy as np
import pytest

import tirc
from conftest import ptxas_check
from tirc.build.stages import build

HEADER = "# from tvm.script import tirx as T\n@T.prim_func\n"


def copy_through(n: int, lanes: int) -> str:
    total = n * lanes
    return HEADER + f'''def f(A: T.Buffer(({total},), "float32"), B: T.Buffer(({total},), "float32")):
    V = T.alloc_buffer(({n},), "float32x{lanes}")
    for i in range({n}):
        V[i] = A[i * {lanes}:i * {lanes} + {lanes}]
    for i in range({n}):
        B[i * {lanes}:i * {lanes} + {lanes}] = V[i]
'''


@pytest.mark.parametrize("n, lanes", [(4, 3), (512, 3), (100, 5), (64, 4)],
                         ids=["stack-x3", "heap-x3", "heap-x5", "x4"])
def test_elements_are_packed(n, lanes):
    k = tirc.compile(copy_through(n, lanes), filename="v.tir")
    a = np.arange(n * lanes, dtype="float32")
    b = np.zeros_like(a)
    k["f"](a, b)
    assert np.array_equal(a, b)


def test_a_kernel_with_them_assembles(tmp_path):
    text = HEADER + '''def f(A: T.Buffer((96,), "float32"), B: T.Buffer((96,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        V = T.alloc_buffer((1,), "float32x3", scope="local")
        V[0] = A[tx * 3:tx * 3 + 3]
        B[tx * 3:tx * 3 + 3] = V[0] * T.Broadcast(T.float32(2), 3)
'''
    build(text, "cuda -arch=sm_80", None, tmp_path, "m")
    ptxas_check((tmp_path / "m.ptx").read_text(), "sm_80", tmp_path)
