"""LowerMatchBuffer: matched buffers resolve to their sources. TVM's own pairs (and its
rejections) are in tests/passes/blocks/test_sblock_pass_pairs.py; here, checks those pairs do not make,
and a block-level module with matched buffers built and run end to end."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from tirc.diagnostics import Diagnostic
from tirc.ir.equal import assert_structural_equal
from tirc.frontend.parse import parse
from tirc.passes.blocks.lower_match_buffer import lower_match_buffer

HEADER = "# from tvm.script import tirx as T\n\n"

ROWS = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    for i in range(4):
        with T.sblock("row"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi, 0:16])
            T.writes(B[vi, 0:16])
            a = T.match_buffer(A[vi, 0:16], (16,), offset_factor=1)
            b = T.match_buffer(B[vi, 0:16], (16,), strides=("s",), offset_factor=1)
            for j in range(16):
                b[j] = a[j] * T.float32(2.0) + T.float32(b.strides[0])
'''

ROWS_LOWERED = HEADER + '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    for i in range(4):
        with T.sblock("row"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi, 0:16])
            T.writes(B[vi, 0:16])
            for j in range(16):
                B[vi, j] = A[vi, j] * T.float32(2.0) + T.Cast("float32", 1)
'''


def test_accesses_and_bound_strides_resolve_to_the_source():
    """b's stride variable s takes B's row stride 1 where the body uses it."""
    assert_structural_equal(lower_match_buffer(parse(ROWS)), parse(ROWS_LOWERED))


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_matched_buffers_build_and_run(tmp_path):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    from tirc.build.stages import build
    build(ROWS, "llvm", None, tmp_path, "m", shared=True)
    a = np.arange(64, dtype="float32").reshape(4, 16)
    b = np.zeros((4, 16), "float32")
    tvm_ffi.load_module(str(tmp_path / "m.so"))["main"](a, b)
    np.testing.assert_allclose(b, a * 2 + 1)


def _mismatch(decl: str) -> str:
    return HEADER + f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.sblock(""):
            T.reads(A[i * 4:i * 4 + 4])
            T.writes()
            a = {decl}
            T.evaluate(0)
'''


@pytest.mark.parametrize("decl,message", [
    ('T.match_buffer(A[i * 4:i * 4 + 4], (4,), "int32", offset_factor=1)', "region as int32"),
    ('T.match_buffer(A[i * 4:i * 4 + 4], (4,), scope="shared", offset_factor=1)', "in scope shared"),
    ('T.match_buffer(A[i * 4:i * 4 + 4], (8,), offset_factor=1)', "a.shape_0 is not met: 8 == 4"),
    ('T.match_buffer(A[i * 4:i * 4 + 4], (4,), offset_factor=8)', "multiple of offset_factor 8"),
    ('T.match_buffer(A[i * 4:i * 4 + 4], (4,))', "a.elem_offset is not met: 0 == i * 4"),
])
def test_signature_mismatch_is_a_located_error(decl, message):
    with pytest.raises(Diagnostic, match=re.escape(message)) as err:
        lower_match_buffer(parse(_mismatch(decl)))
    assert err.value.span is not None and err.value.span.line == 10
