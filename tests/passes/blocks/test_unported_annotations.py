"""Schedules ask for rewrites tirc does not port (software pipelining, double buffering):
every input of TVM's own tests of those passes (tests/corpus/sblock_passes, printed by
TVM 0.27) is a located error naming the annotation, never a build that silently ignores
it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.blocks.inject_double_buffer import inject_double_buffer
from tirc.passes.blocks.inject_software_pipeline import inject_software_pipeline
from conftest import TESTS

CORPUS = TESTS / "corpus" / "sblock_passes"
INDEX = json.loads((CORPUS / "index.json").read_text())
PASSES = {"InjectSoftwarePipeline": (inject_software_pipeline, "software_pipeline_"),
          "InjectDoubleBuffer": (inject_double_buffer, "double_buffer_scope")}
CASES = [c for c in INDEX if c["pass"] in PASSES]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['pass']}/{c['case']}" for c in CASES])
def test_annotation_is_refused_with_its_name_and_location(case):
    run, key = PASSES[case["pass"]]
    mod = parse((CORPUS / case["before"]).read_text(), case["before"])
    if case["pass"] == "InjectSoftwarePipeline" and not case.get("after") \
            and "software_pipeline" not in (CORPUS / case["before"]).read_text():
        pytest.skip("TVM's error case has no pipelining annotation")
    with pytest.raises(Diagnostic, match=key) as err:
        run(mod)
    assert err.value.span is not None and err.value.span.line > 0


def test_build_refuses_a_pipelined_loop_and_writes_nothing(tmp_path):
    text = '''# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(16, annotations={"software_pipeline_stage": [0, 1], "software_pipeline_order": [0, 1]}):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi] + T.float32(1.0)
'''
    with pytest.raises(Diagnostic, match="annotated \"software_pipeline_(order|stage)\"") as err:
        build(text, "llvm", None, tmp_path, "m")
    assert err.value.span.line == 5
    assert not list(tmp_path.iterdir())
