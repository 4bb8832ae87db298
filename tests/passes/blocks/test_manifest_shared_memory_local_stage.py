"""ManifestSharedMemoryLocalStage: TVM's own test is a before/after pair
(tests/passes/blocks/test_sblock_pass_pairs.py); here the copies it cannot stage are
located errors, and a module without the annotation is left as it is."""
from __future__ import annotations

import pytest

from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.blocks.manifest_shared_memory_local_stage import manifest_shared_memory_local_stage
from tirc.passes.prepare.verify import verify

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
COPY = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        with T.sblock("outer"):
            T.reads(A[0:64])
            T.writes(C[0:64])
            S = T.sblock_alloc_buffer((64,), scope="shared")
            for i in {LOOP}(8):
                with T.sblock("S"):
                    T.reads(A[i * 8 + tx])
                    T.writes(S[i * 8 + tx])
                    {ATTR}
                    {TARGET}[i * 8 + tx] = A[i * 8 + tx]
            for i in range(8):
                with T.sblock("C"):
                    T.reads(S[i * 8 + tx])
                    T.writes(C[i * 8 + tx])
                    C[i * 8 + tx] = S[i * 8 + tx]
"""
ATTR = 'T.sblock_attr({"tirx.manifest_shared_memory_local_stage": 1})'


def _module(loop="range", attr=ATTR, target="S"):
    text = HEADER + COPY.replace("{LOOP}", loop).replace("{ATTR}", attr).replace("{TARGET}", target)
    return text, verify(parse(text, "t.tir"))


def test_the_copy_goes_through_a_local_buffer_of_its_loops():
    _, mod = _module()
    out = manifest_shared_memory_local_stage(mod)
    from tirc.ir.printer import print_module
    text = print_module(out)
    assert 'S_local = T.sblock_alloc_buffer((8,), scope="local")' in text
    assert "S[i * 8 + tx] = S_local[i]" in text
    assert "S_local[i] = A[i * 8 + tx]" in text
    assert "manifest_shared_memory_local_stage" not in text


def test_a_module_without_the_annotation_is_unchanged():
    _, mod = _module(attr="")
    assert manifest_shared_memory_local_stage(mod).functions["main"] is mod.functions["main"]


@pytest.mark.parametrize("loop, target, message", [
    ("T.parallel", "S", "the loop 'i' around block 'S' (annotated \"tirx.manifest_shared_memory_local_stage\") "
                        "must be serial or vectorized, not parallel"),
    ("range", "C", "so its body must be one store to shared memory"),
])
def test_a_copy_it_cannot_stage_is_a_located_error(loop, target, message):
    text, mod = _module(loop=loop, target=target)
    with pytest.raises(Diagnostic) as e:
        manifest_shared_memory_local_stage(mod)
    assert message in e.value.message
    assert e.value.span is not None
