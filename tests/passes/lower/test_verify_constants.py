"""VerifyConstants: a constant that makes the program undefined
once unrolling, inlining or folding produced it is a located error; code that cannot
run (a branch a constant condition rules out, an unchosen ``T.if_then_else`` branch)
is not checked, and an index outside one dimension but inside the buffer is not an
error. The cases the text shows as written are in ``tests/errors/verify.tir``."""
from __future__ import annotations

import textwrap

import pytest

from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, pass_names, run_pipeline
from tirc.passes.lower.verify_constants import verify_constants
from tirc.target.kinds import parse_target

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
CTX = PassContext(parse_target("llvm"))


def lower(body: str, params: str = 'A: T.Buffer((16,), "int32")', stop_after: str | None = None):
    text = HEAD + f"@T.prim_func\ndef f({params}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    return run_pipeline(parse(text, "case.tir"), CTX, stop_after=stop_after)


ERRORS = [
    ("unrolled_index", """
        for i in T.unroll(20):
            A[i] = 0
     """, 7, "store to buffer 'A' (16,) at index 16: outside the buffer"),
    ("unrolled_divisor", """
        for i in T.unroll(2):
            A[0] = A[1] // i
     """, 7, "integer division (//) by zero"),
    ("let_divisor", """
        d: T.int32 = 0
        A[0] = A[1] % d
     """, 7, "integer modulo (%) by zero"),
    ("unrolled_view", """
        V = T.decl_buffer((8,), "int32", data=A.data, elem_offset=10)
        for i in T.unroll(8):
            V[i] = 1
     """, 8, "a view of 'A' (16,), reaches element 16 of 'A'"),
    ("unrolled_local", """
        L = T.alloc_buffer((4,), "int32", scope="local")
        for i in T.unroll(5):
            L[i] = i
        A[0] = L[0]
     """, 8, "store to buffer 'L' (4,) at index 4"),
    ("unrolled_2d", """
        B = T.decl_buffer((4, 4), "int32", data=A.data)
        for i in T.unroll(5):
            B[i, 0] = 1
     """, 8, "at index 16: outside the buffer"),
]


@pytest.mark.parametrize("body,line,message", [pytest.param(*c[1:], id=c[0]) for c in ERRORS])
def test_constants_made_by_the_pipeline_are_errors(body, line, message):
    with pytest.raises(Diagnostic) as info:
        lower(body)
    d = info.value
    assert message in d.message, d.message
    assert d.span is not None and d.span.file == "case.tir" and d.span.line == line, str(d)


VALID = [
    ("guarded_unrolled_index", """
        for i in T.unroll(20):
            if i < 16:
                A[i] = 0
     """),
    ("guarded_unrolled_divisor", """
        for i in T.unroll(3):
            if i > 0:
                A[i] = A[i] // i
     """),
    ("if_then_else_divisor", """
        for i in T.unroll(2):
            A[i] = T.if_then_else(i > 0, A[4] // i, 0)
     """),
    ("if_then_else_index", """
        for i in T.unroll(20):
            A[0] = A[0] + T.if_then_else(i < 16, A[i], 0)
     """),
    ("dimension_overrun_inside_the_buffer", """
        B = T.decl_buffer((4, 4), "int32", data=A.data)
        B[0, 5] = 1
        B[1, -1] = 2
     """),
    ("view_inside_its_memory", """
        V = T.decl_buffer((4,), "int64", data=A.data, elem_offset=3)
        V[3] = T.int64(1)
     """),
    ("address_of_one_past_the_end", """
        A[0] = T.call_extern("int32", "use", T.address_of(A[16]))
     """),
    ("float_division_by_zero", """
        F = T.decl_buffer((4,), "float32", data=A.data)
        F[0] = F[1] / T.float32(0.0)
     """),
]


@pytest.mark.parametrize("body", [pytest.param(c[1], id=c[0]) for c in VALID])
def test_code_that_cannot_run_or_stays_inside_is_accepted(body):
    at = lower(body, stop_after="VerifyConstants")  # the pass ran on it and accepted it
    assert verify_constants(at, CTX) is at
    assert list(lower(body).functions) == ["f"]  # and the rest of the pipeline


def test_runs_after_unrolling_and_folding():
    names = pass_names()
    at = names.index("VerifyConstants")
    for before in ("UnrollLoop", "Simplify", "InlinePrivateFunctions", "RemoveNoOp"):
        assert names.index(before) < at
    assert at < names.index("SplitHostDevice")


def test_pass_returns_the_module_unchanged():
    mod = parse(HEAD + '@T.prim_func\ndef f(A: T.Buffer((4,), "int32")):\n    A[3] = A[0] // 2\n',
                "ok.tir")
    assert verify_constants(mod, CTX) is mod
