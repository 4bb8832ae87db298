"""Verifier and front-end findings, one small case each, with the expected diagnostic
written next to the offending line (``# E: text``)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tirc.diagnostics import Diagnostic
from tirc.ir import (IRModule, PrimFunc, Var, Buffer, BufferStore, IntImm, Call, GlobalVar,
                     INT32, HANDLE, PointerType, AllocBuffer, DataType, Evaluate)
from tirc.frontend.parse import parse
from tirc.passes.prepare.verify import verify
from conftest import TESTS

CASES_FILE = TESTS / "errors" / "verify.tir"
EXPECT = re.compile(r"#\s*E:\s*(?P<text>.+)$")


def _cases():
    text = CASES_FILE.read_text()
    cases = []
    for chunk in re.split(r"^# ---- ", text, flags=re.M)[1:]:
        name, _, body = chunk.partition("\n")
        lines = body.split("\n")
        marks = [(i + 1, EXPECT.search(l).group("text").strip()) for i, l in enumerate(lines)
                 if EXPECT.search(l)]
        assert len(marks) == 1, f"case {name!r} needs exactly one '# E:' line"
        cases.append(pytest.param(body, marks[0][0], marks[0][1], id=name.strip()))
    return cases


@pytest.mark.parametrize("text,line,message", _cases())
def test_case_reports_expected_diagnostic(text, line, message):
    with pytest.raises(Diagnostic) as info:
        verify(parse(text, "case.tir"))
    d = info.value
    assert message in d.message, f"got: {d}"
    assert d.span is not None and d.span.file == "case.tir"
    assert d.span.line == line, f"got: {d}"


def _func(body, params=(), buffer_map=(), ret=None):
    return PrimFunc(tuple(params), body, ret, tuple(buffer_map))


def test_call_to_function_missing_from_module_built_as_ir():
    call = Evaluate(Call(INT32, GlobalVar("gone"), ()))
    mod = IRModule({"main": _func(call)})
    with pytest.raises(Diagnostic, match="'gone', which is not a function of this module"):
        verify(mod)


def test_duplicate_exported_symbols():
    body = Evaluate(IntImm(INT32, 0))
    f = _func(body)
    mod = IRModule({"a": f.with_attr("global_symbol", "x"), "b": f.with_attr("global_symbol", "x")})
    with pytest.raises(Diagnostic, match="both export the symbol 'x'"):
        verify(mod)


def test_unknown_scope_built_as_ir():
    data = Var("S", HANDLE, PointerType(INT32, "texture"))
    buf = Buffer("S", data, INT32, (IntImm(INT32, 4),))
    body = AllocBuffer(buf, BufferStore(buf, IntImm(INT32, 1), (IntImm(INT32, 0),)))
    with pytest.raises(Diagnostic, match="storage scope 'texture' of buffer 'S' is not supported"):
        verify(IRModule({"main": _func(body)}))


def test_buffer_used_outside_its_allocation():
    data = Var("S", HANDLE, PointerType(INT32, "local"))
    buf = Buffer("S", data, INT32, (IntImm(INT32, 4),))
    store = BufferStore(buf, IntImm(INT32, 1), (IntImm(INT32, 0),))
    with pytest.raises(Diagnostic, match="buffer 'S' is used outside"):
        verify(IRModule({"main": _func(store)}))


def test_valid_samples_verify():
    from conftest import SAMPLES
    assert {"vector_add.tir", "device_call_add.tir", "cpu_matmul.tir"} <= {p.name for p in SAMPLES}
    for path in SAMPLES:
        mod = parse(path.read_text(), str(path))
        assert verify(mod) is mod, path


def test_dtype_module_is_int32():
    assert DataType("int32") == INT32


# -- a constant index outside its dimension but inside the buffer: a warning, and it builds --
DIMENSION_WARNINGS = [
    ("store", """
        A[1, 9] = T.float32(1.0)
     """, [(6, 5, "store to buffer 'A' (4, 4) at index [1, 9]: index 9 is outside dimension 1 "
                 "(extent 4); it reaches element 13, inside the buffer")]),
    ("load_and_negative_index", """
        B[0] = A[0, 5] + A[1, -1] + A[2, 3]
     """, [(6, 12, "load from buffer 'A' (4, 4) at index [0, 5]: index 5 is outside dimension 1"),
           (6, 22, "load from buffer 'A' (4, 4) at index [1, -1]: index -1 is outside "
                   "dimension 1 (extent 4); it reaches element 3")]),
    ("ramp", """
        A[0, T.Ramp(2, 1, 4)] = T.Broadcast(T.float32(0.0), 4)
     """, [(6, 5, "at index [0, 2..5]: index 5 is outside dimension 1 (extent 4); it reaches "
                 "elements 2..5, inside the buffer")]),
    ("middle_dimension_of_three", """
        C = T.decl_buffer((2, 2, 4), "float32", data=A.data)
        C[0, 3, 1] = T.float32(1.0)
     """, [(7, 5, "store to buffer 'C' (2, 2, 4) at index [0, 3, 1]: index 3 is outside "
                 "dimension 1 (extent 2); it reaches element 13")]),
    ("in_a_block", """
        for i in range(1):
            with T.sblock("b"):
                vi = T.axis.spatial(1, i)
                T.reads()
                T.writes(A[0:4, 0:4])
                A[vi + 1, 6] = T.float32(1.0)
                A[1, 6] = T.float32(1.0)
     """, [(12, 13, "store to buffer 'A' (4, 4) at index [1, 6]: index 6 is outside dimension 1")]),
    ("none_inside_every_dimension_or_not_constant", """
        for i in range(4):
            A[i, 3] = B[15]
        A[3, 3] = T.float32(0.0)
     """, []),
]


def _dimension_case(body: str) -> str:
    import textwrap
    return ('# from tvm.script import tirx as T\n\n@T.prim_func(s_tir=True)\n'
            'def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((16,), "float32")):\n'
            '    T.func_attr({"global_symbol": "f"})\n'
            + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n")


@pytest.mark.parametrize("body,expected", [pytest.param(c[1], c[2], id=c[0])
                                           for c in DIMENSION_WARNINGS])
def test_index_outside_its_dimension_inside_the_buffer_is_a_located_warning(body, expected):
    """TVM builds it (its own tests index so), and so does tirc; Verify, which decides
    the constant facts of the text, records a warning at the access for the build."""
    mod = verify(parse(_dimension_case(body), "case.tir"))
    got = mod.facts.warnings
    assert len(got) == len(expected), [w.message for w in got]
    for w, (line, col, message) in zip(got, expected):
        assert message in w.message, w.message
        assert (w.span.file, w.span.line, w.span.col) == ("case.tir", line, col)


def test_dimension_warnings_reach_the_build_and_tirc_check(tmp_path):
    from click.testing import CliRunner

    from tirc.build.stages import build
    from tirc.driver import cli
    text = _dimension_case(DIMENSION_WARNINGS[0][1])
    result = build(text, "llvm", None, tmp_path, "m", filename="case.tir")
    assert [(w.severity, w.span.line) for w in result.warnings] == [("warning", 6)]
    assert (tmp_path / "m.o").stat().st_size > 0  # built
    path = tmp_path / "case.tir"
    path.write_text(text)
    checked = CliRunner().invoke(cli, ["check", str(path)])
    assert checked.exit_code == 0
    assert f"{path}:6:5: warning: store to buffer 'A' (4, 4) at index [1, 9]" in checked.output
    assert "A[1, 9] = T.float32(1.0)" in checked.output  # the source line, with its caret
