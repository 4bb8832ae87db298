"""A bug in tirc names where it happened: ``internal error in pass NAME``
or ``in stage NAME``, the input file, a request for a bug report with ``--dump-ir``
output, exit status 3; errors in the input stay ``file:line:col: error:`` with status 1.
The bugs are stood in for by monkeypatching a pass or a backend to raise."""
from __future__ import annotations

import re

from click.testing import CliRunner

from conftest import ROOT
from tirc.driver import cli
from tirc.frontend.parse import parse

SAMPLE = ROOT / "samples" / "vector_add.tir"


def _broken(*args, **kwargs):
    raise TypeError("unsupported operand type(s) for +: 'NoneType' and 'int'")


def test_a_bug_in_a_pass_names_the_pass_and_the_input(tmp_path, monkeypatch):
    import tirc.passes.lower.flatten_buffer as module
    monkeypatch.setattr(module, "flatten_buffer", _broken)
    r = CliRunner().invoke(cli, ["build", str(SAMPLE), "--target", "cuda", "-o", str(tmp_path)])
    assert r.exit_code == 3, r.output
    assert (f"tirc: internal error in pass FlattenBuffer while compiling {SAMPLE}: TypeError: "
            "unsupported operand") in r.output
    assert "this is a bug in tirc" in r.output and "--dump-ir DIR" in r.output
    assert "Traceback" not in r.output
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_bug_in_a_backend_names_the_stage(tmp_path, monkeypatch):
    import tirc.backends.cpu.backend as cpu
    monkeypatch.setattr(cpu, "generate", _broken)
    r = CliRunner().invoke(cli, ["build", str(SAMPLE), "--target", "cuda", "-o", str(tmp_path)])
    assert r.exit_code == 3, r.output
    assert "internal error in stage host-codegen while compiling" in r.output
    assert not list(tmp_path.iterdir())


def test_a_bug_in_device_codegen_names_the_stage(tmp_path, monkeypatch):
    import tirc.backends.cuda.nvptx as nvptx
    monkeypatch.setattr(nvptx, "generate", _broken)
    r = CliRunner().invoke(cli, ["build", str(SAMPLE), "--target", "cuda", "-o", str(tmp_path)])
    assert r.exit_code == 3 and "internal error in stage device-codegen" in r.output, r.output


def test_lower_reports_the_pass_and_the_file(monkeypatch):
    import tirc.passes.lower.flatten_buffer as module
    monkeypatch.setattr(module, "flatten_buffer", _broken)
    r = CliRunner().invoke(cli, ["lower", str(SAMPLE), "--target", "cuda"])
    assert r.exit_code == 3, r.output
    assert f"internal error in pass FlattenBuffer while compiling {SAMPLE}" in r.output


def test_errors_in_the_input_stay_user_errors(tmp_path):
    bad = tmp_path / "bad.tir"
    bad.write_text(SAMPLE.read_text().replace("A[bx * 256 + tx] + B", "A[bx * 256 + tx] + Q"))
    r = CliRunner().invoke(cli, ["build", str(bad), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1, r.output
    assert re.search(rf"{re.escape(str(bad))}:\d+:\d+: error: ", r.output)
    assert "internal error" not in r.output


def test_dump_ir_writes_the_module_after_every_pass(tmp_path):
    from tirc.passes.pipeline import pass_names
    out = tmp_path / "ir"
    r = CliRunner().invoke(cli, ["build", str(SAMPLE), "--target", "cuda", "-o",
                                 str(tmp_path / "o"), "--dump-ir", str(out)])
    assert r.exit_code == 0, r.output
    files = sorted(p.name for p in out.iterdir())
    ran = [n for n in pass_names("packed")]  # block passes are skipped on this module
    labels = [re.match(r"vector_add\.\d\d-(\w+)\.tir", f).group(1) for f in files]
    assert labels[0] == "input" and labels[1:] == [n for n in ran if n in labels[1:]]
    assert {"Verify", "SplitHostDevice", "MakePackedAPI"} <= set(labels)
    for f in files:  # each is a module tirc reads back
        parse((out / f).read_text())


def test_after_an_internal_error_the_last_dump_is_the_failing_pass_input(tmp_path, monkeypatch):
    import tirc.passes.split.split_host_device as module
    monkeypatch.setattr(module, "split_host_device", _broken)
    out = tmp_path / "ir"
    r = CliRunner().invoke(cli, ["lower", str(SAMPLE), "--target", "cuda", "--dump-ir", str(out)])
    assert r.exit_code == 3
    last = sorted(p.name for p in out.iterdir())[-1]
    assert last.endswith("-AnnotateDeviceRegions.tir"), last  # the pass before SplitHostDevice
