"""TVM constructs tirc reads but does not build (tirc.frontend.not_built): a located
error that names the construct and says why, in each spelling TVM accepts, and no
output written."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from conftest import ROOT
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.frontend.parse import parse

HEADER = "# from tvm.script import tirx as T\n@T.prim_func\n"


def test_tvm_printed_tensor_map_is_refused_where_it_is_declared(tmp_path):
    path = ROOT / "tests" / "errors" / "cuda_tensormap.tir"
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "T.TensorMap()" in text)
    r = CliRunner().invoke(cli, ["build", str(path), "--target", "cuda -arch=sm_90", "-o", str(tmp_path / "out")])
    assert r.exit_code == 1, r.output
    assert f"{path}:{line}:" in r.stderr and "CUDA tensor maps (TMA" in r.stderr
    assert "Traceback" not in r.output and not (tmp_path / "out").exists()


@pytest.mark.parametrize("statement", [
    'm: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)',
    'm: T.let[T.TensorMap()] = T.tvm_stack_alloca("tensormap", 1)',
    'T.evaluate(T.create_tma_descriptor(A.data))',
])
def test_every_spelling_of_a_tensor_map_is_refused(statement):
    text = HEADER + f'def f(A: T.Buffer((16,), "float32")):\n    {statement}\n'
    with pytest.raises(Diagnostic, match="CUDA tensor maps") as e:
        parse(text, "tma.tir")
    assert e.value.span.line == 4
