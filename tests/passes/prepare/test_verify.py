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
