"""Buffer views: ``X.view("float16")`` sees ``X``'s bytes as another
dtype, its last dimension (and element offset) scaled by the ratio of the element sizes,
as TVM's ``Buffer.view(dtype)`` makes it; a shape view ``X.view(2, 4)`` keeps ``X``'s
element offset (it read from the start of the memory before). The values are what TVM
0.27's build of the same module computes (NumPy's views of the same bytes)."""
from __future__ import annotations

import numpy as np
import pytest

import tirc
from conftest import ROOT
from tirc.diagnostics import Diagnostic
from tirc.ir.printer import print_module
from tirc.frontend.parse import parse

MODULE = ROOT / "tests" / "tir" / "buffer_views.tir"
HEADER = "# from tvm.script import tirx as T\n@T.prim_func\n"


def check_views(text: str, filename: str) -> None:
    """``views`` of the module sees the bytes NumPy's views of the same array see."""
    k = tirc.compile(text, filename=filename)
    a = np.arange(16, dtype="float32") * 1.5 + 0.25
    h, f, d = np.zeros(32, "float16"), np.zeros(8, "float32"), np.zeros(4, "float64")
    k["views"](a, h, f, d)
    assert np.array_equal(h, a.view("float16"))
    assert np.array_equal(f, a[8:].view("float16")[:8].astype("float32") + a[8:16])
    assert np.array_equal(d, a[8:].view("float64"))


def test_views_see_the_same_bytes():
    check_views(MODULE.read_text(), str(MODULE))


# tests/tir/buffer_views.tir as TVM 0.27 prints it (tvm.script.from_source(...).script()):
# a dtype view of a buffer with an element offset is a declaration with a row-major
# T.TileLayout, which tirc reads as the buffer's own order.
TVM_PRINTED = HEADER.replace("@T.prim_func\n", "") + """@T.prim_func
def views(A: T.Buffer((16,), "float32"), H: T.Buffer((32,), "float16"), F: T.Buffer((8,), "float32"), D: T.Buffer((4,), "float64")):
    Ah = A.view("float16")
    for i in range(32):
        H[i] = Ah[i]
    W = T.decl_buffer((8,), data=A.data, elem_offset=8)
    Wh = T.decl_buffer((16,), "float16", data=W.data, elem_offset=16, layout=T.TileLayout(T.S[(8, 2):(2, 1)]))
    Ws = W.view(2, 4)
    for i in range(8):
        F[i] = T.Cast("float32", Wh[i]) + Ws[i // 4, i % 4]
    Ad = T.decl_buffer((4,), "float64", data=W.data, elem_offset=4)
    for i in range(4):
        D[i] = Ad[i]
"""


def test_tvm_printed_views_see_the_same_bytes():
    assert "layout=T.TileLayout(T.S[(8, 2):(2, 1)])" in TVM_PRINTED
    check_views(TVM_PRINTED, "tvm_printed.tir")


def test_views_print_as_written():
    text = print_module(parse(MODULE.read_text()))
    assert 'Ah = A.view("float16")' in text and 'Wh = W.view("float16")' in text
    assert "Ws = W.view(2, 4)" in text and 'Ad = W.view("float64")' in text
    assert print_module(parse(text)) == text


@pytest.mark.parametrize("body, message", [
    ('B = A.view("float64")', "cannot be viewed as float64"),  # 3 floats: not whole doubles
    ('B = A.view("int24")', "unknown dtype"),
    ('S = T.decl_buffer((3,), data=A.data, strides=(2,))\n    B = S.view(3)', "which has strides"),
    ('W = T.decl_buffer((4,), data=A.data, layout=T.TileLayout(T.S[(2, 2):(1, 2)]))',
     r"layout T.S\[\(2, 2\):\(1, 2\)\] is not supported"),  # column-major
    ('W = T.decl_buffer((3,), data=A.data, layout=T.TileLayout(T.S[4:1]))',
     "is not supported"),  # more elements than the buffer's
])
def test_views_that_cannot_be_made_are_located_errors(body, message):
    text = HEADER + f'def f(A: T.Buffer((3,), "float32")):\n    {body}\n    T.evaluate(0)\n'
    with pytest.raises(Diagnostic, match=message) as e:
        parse(text, "v.tir")
    assert e.value.span is not None and e.value.span.file == "v.tir"
