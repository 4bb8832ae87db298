"""InjectSoftwarePipeline beyond TVM's own cases (those are before/after pairs in
tests/passes/blocks/test_sblock_pass_pairs.py): what it refuses is a located error, a
module without the annotation is returned as it is, and a pipelined loop computes what
the loop as written computes (built for the CPU and run)."""
from __future__ import annotations

import numpy as np
import pytest

import tirc
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.blocks.inject_software_pipeline import inject_software_pipeline
from tirc.passes.prepare.verify import verify

HEADER = "# from tvm.script import tirx as T\n\n"

PIPELINED = HEADER + '''@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for tx in range(16):
        for i in T.serial(16, annotations={ANNOTATIONS}):
            with T.sblock("compute"):
                T.reads(A[tx, i])
                T.writes(C[tx, i])
                B = T.sblock_alloc_buffer((16, 1))
                with T.sblock(""):
                    T.reads(A[tx, i])
                    T.writes(B[tx, 0])
                    B[tx, 0] = A[tx, i] * T.float32(2.0)
                with T.sblock(""):
                    T.reads(B[tx, 0])
                    T.writes(C[tx, i])
                    C[tx, i] = B[tx, 0] + T.float32(1.0)
'''


def _source(annotations: str) -> str:
    return PIPELINED.replace("{ANNOTATIONS}", annotations)


@pytest.mark.parametrize("annotations, message", [
    ('{"software_pipeline_stage": [0, 1]}', "order of the software pipeline is not defined"),
    ('{"software_pipeline_order": [0, 1]}', "stage of the software pipeline is not defined"),
    ('{"software_pipeline_stage": [0, 1, 1], "software_pipeline_order": [0, 1, 2]}',
     "pipelines 2 statements but \"software_pipeline_stage\" has 3 entries"),
    ('{"software_pipeline_stage": [0, 1], "software_pipeline_order": [1, 1]}',
     "same order 1"),
    ('{"software_pipeline_stage": [1, 0], "software_pipeline_order": [0, 1]}',
     "in a later stage 1"),
    ('{"software_pipeline_stage": [0, 0], "software_pipeline_order": [1, 0]}',
     "cannot reorder them"),
    ('{"software_pipeline_stage": "x", "software_pipeline_order": [0, 1]}',
     "must be a list of integers"),
])
def test_a_bad_pipeline_is_a_located_error(annotations, message):
    mod = verify(parse(_source(annotations), "p.tir"))
    with pytest.raises(Diagnostic, match=message) as err:
        inject_software_pipeline(mod)
    assert err.value.span.line == 6  # the annotated loop


def test_a_body_that_is_not_a_sequence_is_refused_at_the_loop():
    text = HEADER + '''@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(16, annotations={"software_pipeline_stage": [0], "software_pipeline_order": [0]}):
        with T.sblock("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] + T.float32(1.0)
'''
    with pytest.raises(Diagnostic, match="must be a sequence of statements") as err:
        inject_software_pipeline(verify(parse(text, "p.tir")))
    assert err.value.span.line == 5


def test_a_module_without_the_annotation_is_returned_as_it_is():
    mod = verify(parse(_source('{"k": 1}'), "p.tir"))
    assert inject_software_pipeline(mod) is mod


@pytest.mark.parametrize("annotations", [
    '{"software_pipeline_stage": [0, 1], "software_pipeline_order": [0, 1]}',
    '{"software_pipeline_stage": [0, 3], "software_pipeline_order": [0, 1], '
    '"software_pipeline_async_stages": [0]}',
    '{"software_pipeline_stage": [0, 1], "software_pipeline_order": [1, 0]}',
])
def test_the_pipelined_loop_computes_what_the_loop_computes(annotations):
    compiled = tirc.compile(_source(annotations), "llvm")
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    c = np.zeros((16, 16), np.float32)
    compiled["main"](a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


FLAT = HEADER + '''@T.prim_func
def main(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((SIZE,))
    for i in T.serial(16, annotations={"software_pipeline_order": [0, 1], "software_pipeline_stage": [0, 1]}):
        B[INDEX] = A[i] * T.float32(2.0)
        C[i] = B[INDEX] + T.float32(1.0)
'''


def test_a_buffer_the_pipeline_cannot_version_is_refused_where_tvm_would_miscompile():
    """``B`` lives outside the loop: TVM keeps one copy, and iteration ``i + 1``'s write
    would land before iteration ``i``'s read."""
    text = FLAT.replace("SIZE", "1").replace("INDEX", "0")
    with pytest.raises(Diagnostic, match="allocated outside the loop") as err:
        inject_software_pipeline(verify(parse(text, "p.tir")))
    assert err.value.span.line == 6


def test_a_buffer_each_iteration_writes_apart_needs_no_version():
    compiled = tirc.compile(FLAT.replace("SIZE", "16").replace("INDEX", "i"), "llvm")
    a = np.arange(16, dtype=np.float32)
    c = np.zeros(16, np.float32)
    compiled["main"](a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)
