"""Float literals at the edges of their dtype: what TVM's FloatImm
accepts builds, what it refuses is a located error (tests/errors/verify.tir), never an
internal error. A bfloat16 literal between the type's largest value (3.39e38) and TVM's
bound (3.895e38) is accepted, as TVM accepts it, and becomes infinity."""
from __future__ import annotations

import textwrap

import pytest

from tirc.build.stages import build

HEAD = "# from tvm.script import tirx as T\n"


@pytest.mark.parametrize("dtype, literal", [
    ("float16", "T.float16(65504.0)"), ("float16", "T.float16(-65504.0)"),
    ("float32", "T.float32(-3.4028234663852886e+38)"), ("float32", 'T.float32("inf")'),
    ("float16", 'T.float16("-inf")'), ("float16", 'T.float16("nan")'),
    ("float64", "T.float64(1e308)"), ("float32", "T.float32(1e400)"),  # read as inf
    ("bfloat16", "T.bfloat16(3.5e38)"), ("bfloat16", "T.bfloat16(-3.8e38)"),
    ("float8_e4m3fn", "T.float8_e4m3fn(448.0)"), ("float8_e5m2", "T.float8_e5m2(-57344.0)"),
])
def test_literals_tvm_accepts_build(tmp_path, dtype, literal):
    text = HEAD + textwrap.dedent(f"""
        @T.prim_func
        def f(A: T.Buffer((4,), "{dtype}")):
            A[0] = {literal}
        """)
    build(text, "llvm", None, tmp_path, "f", emit=("llvm",))
    assert (tmp_path / "f.o").exists()


def test_bfloat16_literal_past_its_largest_value_is_infinity(tmp_path):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((4,), "bfloat16")):
            A[0] = T.bfloat16(3.5e38)
        """)
    build(text, "llvm", None, tmp_path, "f", emit=("llvm",))
    assert "i16 32640" in (tmp_path / "f.ll").read_text()  # 0x7F80: bfloat16 +inf
