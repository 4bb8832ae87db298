"""Tensors built on the stack for a packed call (te.extern's calls, such as TVM's test of
``tvm.contrib.cblas.matmul``): ``T.tvm_stack_make_shape`` and ``T.tvm_stack_make_array``
make a DLTensor over a buffer's data, which ``T.call_packed`` passes as a tensor. The
callee sees its shape, dtype, device and data (with the element offset as its byte
offset). Both the form TVM 0.27 prints and TVM's source form (``dtype=`` keywords) read."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import tvm_ffi

import tirc
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse

HEADER = "# from tvm.script import tirx as T\n\n@T.prim_func\n"
# TVM 0.27's print of the source form below (tvm.script.from_source(...).script())
TVM_PRINTED = HEADER + '''def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    T.call_packed("tirc_test.double", T.tvm_stack_make_array(A.data, T.tvm_stack_make_shape(4), 0, 1, T.float32(0.0), 0), T.tvm_stack_make_array(B.data, T.tvm_stack_make_shape(3), 0, 1, T.float32(0.0), 1))
'''
SOURCE = HEADER + '''def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    T.evaluate(T.tvm_call_packed("tirc_test.double", T.tvm_stack_make_array(A.data, T.tvm_stack_make_shape(4, dtype="handle"), 0, 1, T.float32(0.0), 0, dtype="handle"), T.tvm_stack_make_array(B.data, T.tvm_stack_make_shape(3, dtype="handle"), 0, 1, T.float32(0.0), 1, dtype="handle"), dtype="int32"))
'''

SEEN: list = []


@tvm_ffi.register_global_func("tirc_test.double", override=True)
def _double(a, b):
    SEEN.append([(tuple(t.shape), str(t.dtype), str(t.device)) for t in (a, b)])
    n = b.shape[0]
    src = (ctypes.c_float * a.shape[0]).from_address(a.data_ptr())
    dst = (ctypes.c_float * n).from_address(b.data_ptr())
    for i in range(n):
        dst[i] = src[i] * 2


@pytest.mark.parametrize("text", [TVM_PRINTED, SOURCE], ids=["tvm-printed", "source"])
def test_the_callee_gets_tensors_over_the_buffers(text):
    SEEN.clear()
    k = tirc.compile(text, filename="stack.tir")
    a, b = np.arange(4, dtype="float32") + 1, np.zeros(4, "float32")
    k["main"](a, b)
    assert SEEN == [[((4,), "float32", "cpu:0"), ((3,), "float32", "cpu:0")]]
    assert np.array_equal(b, [0, 2, 4, 6])  # B from element 1: its byte offset is 4


def test_a_dtype_keyword_that_is_not_the_result_is_a_located_error():
    text = SOURCE.replace('T.tvm_stack_make_shape(4, dtype="handle")', 'T.tvm_stack_make_shape(4, dtype="int32")')
    with pytest.raises(Diagnostic, match="T.tvm_stack_make_shape returns handle, not int32") as e:
        parse(text, "stack.tir")
    assert e.value.span.line == 5
