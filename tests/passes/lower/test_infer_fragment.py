"""InferFragment, stated as TIR before and after, and its located errors.

TVM has no unit test of this pass. On the corpus's kernels TVM 0.27 gives each fragment
the same attributes (same keys, values and order: layout around shape; an accumulator
filled first gets "row_major"), but wraps the allocation statement in them; tirc puts
them inside the allocation, where the fragment's variable is defined."""
from __future__ import annotations

import pytest
from conftest import pass_checker

from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.lower.infer_fragment import infer_fragment
from tirc.passes.prepare.verify import verify

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
check = pass_checker(infer_fragment, reprint=True)

PARAMS = 'A: T.Buffer((256,), "float16"), B: T.Buffer((256,), "float16"), C: T.Buffer((256,), "float32")'


def kernel(body: str, allocs: str | None = None) -> str:
    allocs = allocs if allocs is not None else (
        'Cf = T.alloc_buffer((256,), scope="wmma.accumulator")\n'
        'Af = T.alloc_buffer((256,), "float16", scope="wmma.matrix_a")\n'
        'Bf = T.alloc_buffer((256,), "float16", scope="wmma.matrix_b")\n')
    lines = "\n".join("    " + line for line in (allocs + body).strip("\n").splitlines())
    return f"""
@T.prim_func
def main({PARAMS}):
    tx = T.launch_thread("threadIdx.x", 32)
{lines}
"""


LOAD_A = 'T.tvm_load_matrix_sync(Af.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 256, 1), 16, "{layout}")'
LOAD_B = 'T.tvm_load_matrix_sync(Bf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), B.data, 0, 256, 1), 16, "col_major")'
FILL_C = "T.tvm_fill_fragment(Cf.data, 16, 16, 16, 0, T.float32(0))"
MMA = "T.tvm_mma_sync(Cf.data, 0, Af.data, 0, Bf.data, 0, Cf.data, 0)"
STORE_C = 'T.tvm_store_matrix_sync(Cf.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")'
GEMM = "\n".join([FILL_C, LOAD_A.format(layout="row_major"), LOAD_B, MMA, STORE_C])


def test_fragments_get_shape_and_layout_inside_their_allocation():
    check(kernel(GEMM), f"""
@T.prim_func
def main({PARAMS}):
    tx = T.launch_thread("threadIdx.x", 32)
    Cf = T.alloc_buffer((256,), scope="wmma.accumulator")
    with T.attr(Cf.data, "fragment_layout", "row_major"):
        T.attr(Cf.data, "fragment_shape", "16, 16, 16")
        Af = T.alloc_buffer((256,), "float16", scope="wmma.matrix_a")
        with T.attr(Af.data, "fragment_layout", "row_major"):
            T.attr(Af.data, "fragment_shape", "16, 16, 16")
            Bf = T.alloc_buffer((256,), "float16", scope="wmma.matrix_b")
            with T.attr(Bf.data, "fragment_layout", "col_major"):
                T.attr(Bf.data, "fragment_shape", "16, 16, 16")
{chr(10).join("                " + line for line in GEMM.splitlines())}
""")


def test_an_accumulator_loaded_first_has_no_layout():
    load_c = 'T.tvm_load_matrix_sync(Cf.data, 32, 8, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 1), 8, "row_major")'
    allocs = 'Cf = T.alloc_buffer((256,), scope="wmma.accumulator")\n'
    check(kernel(load_c, allocs), f"""
@T.prim_func
def main({PARAMS}):
    tx = T.launch_thread("threadIdx.x", 32)
    Cf = T.alloc_buffer((256,), scope="wmma.accumulator")
    T.attr(Cf.data, "fragment_shape", "32, 8, 16")
    {load_c}
""")


def test_a_function_without_fragments_is_unchanged():
    mod = verify(parse(HEADER + kernel("C[tx] = T.float32(1)", ""), "x.tir"))
    assert infer_fragment(mod) is not None
    assert infer_fragment(mod).functions["main"] is mod.functions["main"]


@pytest.mark.parametrize("body, message", [
    (GEMM.replace("T.tvm_fill_fragment(Cf.data, 16, 16, 16", "T.tvm_fill_fragment(Cf.data, 32, 8, 16"),
     "names fragment 'Cf' with shape m16n16k16, and an earlier call with m32n8k16"),
    ("\n".join([LOAD_A.format(layout="row_major"), LOAD_A.format(layout="col_major")]),
     "loads fragment 'Af' as col_major, and an earlier call as row_major"),
    ("\n".join([FILL_C, LOAD_A.format(layout="row_major"), MMA]),
     "uses fragment 'Bf', which no T.tvm_fill_fragment or T.tvm_load_matrix_sync fills or loads"),
    ("\n".join([FILL_C, LOAD_A.format(layout="row_major"),
                LOAD_B.replace("Bf.data, 16, 16, 16", "Bf.data, 32, 8, 16"), MMA]),
     "multiplies fragments of different shapes"),
    (GEMM + "\nC[0] = Cf[3]", "reads an element of the WMMA fragment 'Cf'"),
])
def test_disagreeing_calls_are_located_errors(body, message):
    text = HEADER + kernel(body)
    mod = verify(parse(text, "x.tir"))
    with pytest.raises(Diagnostic) as e:
        infer_fragment(mod)
    assert message in e.value.message
    last = text.index(body.splitlines()[-1])  # each error is at the body's last line
    assert e.value.span is not None and e.value.span.line == text[:last].count("\n") + 1


def test_fragment_elements_without_wmma_calls_are_a_located_error_in_the_pipeline():
    """A kernel that touches a fragment only element by element (no WMMA call at all)
    still reaches InferFragment's check: the pipeline does not skip it there."""
    from tirc.passes.pass_context import PassContext
    from tirc.passes.pipeline import run_pipeline
    from tirc.target.kinds import parse_target
    body = "Cf[0] = T.float32(1)\nC[0] = Cf[0]"
    text = HEADER + kernel(body, allocs='Cf = T.alloc_buffer((256,), scope="wmma.accumulator")\n')
    mod = parse(text, "x.tir")
    with pytest.raises(Diagnostic) as e:
        run_pipeline(mod, PassContext(parse_target("cuda -arch=sm_80")))
    assert "writes an element of the WMMA fragment 'Cf'" in e.value.message
    assert e.value.span is not None and e.value.span.line == text.count("\n") - 1
