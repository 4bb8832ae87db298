"""The build as a table of stages and backends as registered objects:
``build()`` names no target kind; a new kind is a target-kind entry plus a backend object
registered for it, and nothing else. Shown with a toy emit-only host target (not shipped)."""
from __future__ import annotations

import types
from pathlib import Path

import pytest

from conftest import ROOT
from tirc.backends import registry
from tirc.build.stages import STAGES, build
from tirc.diagnostics import Diagnostic
from tirc.target.kinds import KINDS, Option, TargetKind

MATMUL = ROOT / "samples" / "cpu_matmul.tir"


class ToyBackend(registry.Backend):
    """An emit-only host target: its "object" is the host module as TIR text."""

    kind, name, role, doc = "toy", "toy", "host", "the host module as text"

    def host_object(self, mod, target, name, *, keep_ir=False, debug=False, device_code=None,
                    jobs=1):
        from tirc.ir.printer import print_module
        text = f"; toy object of {name} for {target.describe()}\n" + print_module(mod)
        return types.SimpleNamespace(object=text.encode(), llvm_ir="", triple="toy-unknown",
                                     uses_openmp=False, uses_cuda=False, suffix=".o")


@pytest.fixture
def toy_kind(monkeypatch):
    kind = TargetKind("toy", "cpu", 1, {"keys": Option("list", ("cpu",), "schedule keys")},
                      lambda opts: opts, "a toy host target")
    monkeypatch.setitem(KINDS, "toy", kind)
    monkeypatch.setitem(registry.BACKENDS, "toy", ToyBackend())
    return kind


def test_a_new_target_kind_is_a_kind_entry_and_a_registered_backend(tmp_path, toy_kind):
    text = MATMUL.read_text().replace('T.target({"kind": "llvm"})', 'T.target({"kind": "toy"})')
    assert 'T.target({"kind": "toy"})' in text
    result = build(text, "toy", None, tmp_path, "mm", filename="mm.tir")
    obj = (tmp_path / "mm.o").read_text()
    assert obj.startswith("; toy object of mm for toy")
    assert '"calling_conv": 1' in obj  # the module after the pipeline (MakePackedAPI ran)
    assert '"kind": "toy"' in result.manifest["host_target"]
    assert [n for n, _ in result.stage_times] == [n for n, _, _ in STAGES]


def test_the_build_table_names_no_target_kind():
    import inspect

    import tirc.build.stages as b
    for _, stage, text in STAGES:  # ("llvm" is also an --emit kind, LLVM IR text: not checked)
        for code in (stage, text):
            source = inspect.getsource(code)
            assert "kind ==" not in source and "kind !=" not in source, stage.__name__
            for kind in ("cuda", "nvptx", "cpu"):
                assert f'"{kind}"' not in source, (stage.__name__, kind)
    assert "cuda" not in inspect.getsource(b._Build)


def test_an_unregistered_kind_is_a_located_diagnostic_listing_the_registered(tmp_path, monkeypatch):
    monkeypatch.delitem(registry.BACKENDS, "llvm")
    with pytest.raises(Diagnostic) as e:
        build(MATMUL.read_text(), "llvm", None, tmp_path, "mm", filename=str(MATMUL))
    assert "no host code generator for target kind 'llvm' (available: c)" in e.value.message
    assert e.value.span is not None and Path(e.value.span.file) == MATMUL
    assert not list(tmp_path.iterdir())


def test_backends_are_objects_not_import_strings():
    for kind, backend in registry.BACKENDS.items():
        assert isinstance(backend, registry.Backend) and backend.kind == kind
        assert backend.role in ("host", "device")
    assert registry.get_backend("cuda", role="device").launch_table({}) is not None
    with pytest.raises(Diagnostic, match=r"no device code generator for target kind 'llvm' "
                                         r"\(available: cuda, nvptx, opencl, rocm\)"):
        registry.get_backend("llvm", role="device")


def test_build_reports_the_time_of_every_stage_and_pass(tmp_path):
    result = build(MATMUL.read_text(), "llvm", None, tmp_path, "mm", filename=str(MATMUL))
    assert [n for n, _ in result.stage_times] == [n for n, _, _ in STAGES]
    assert all(t >= 0 for _, t in result.stage_times)
    assert [n for n, _ in result.pass_times][:2] == ["Verify", "BindTarget"]


def test_time_passes_on_the_command_line_names_passes_and_stages(tmp_path):
    from click.testing import CliRunner

    from tirc.driver import cli
    r = CliRunner().invoke(cli, ["build", str(MATMUL), "-o", str(tmp_path), "--time-passes",
                                 "-q"])
    assert r.exit_code == 0, r.output
    assert "pass timings:" in r.output and "stage timings:" in r.output
    for name, _, _ in STAGES:
        assert f"  {name}\n" in r.output


def test_backends_import_no_pass():
    """Layers: the code generators use the IR, the ABI description (tirc.ir.ffi_abi) and the
    targets, never a pass (the pipeline has run when they do)."""
    import ast
    for path in sorted((ROOT / "tirc" / "backends").rglob("*.py")):
        tree = ast.parse(path.read_text())
        found = [n.module for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("tirc.passes")]
        assert not found, (path.name, found)


def test_llvmlite_internals_are_used_in_one_adapter_only():
    """Going past llvmlite's public API (``_insert``, a class swap, setting ``.type``)
    happens in tirc/backends/llvm/llvmlite_compat.py and builder.py (llvmlite's objects
    made without their constructors, for speed) alone, which say why."""
    import re
    pattern = re.compile(r"\._insert\(|__class__\s*=|\.type\s*=(?!=)")
    for path in sorted((ROOT / "tirc").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ("tirc/backends/llvm/llvmlite_compat.py", "tirc/backends/llvm/builder.py",
                   "tirc/syntax/grammar_parser.py", "tirc/syntax/tree.py",
                   "tirc/syntax/lexer.py"):  # the last three: Lark's Token .type
            continue
        hits = [line for line in path.read_text().splitlines() if pattern.search(line)]
        assert not hits, (path.relative_to(ROOT), hits)
