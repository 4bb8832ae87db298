"""Host functions for different CPU triples in one module: each triple's
functions make an object of their own, ``NAME.<triple>.o``, listed in ``NAME.json`` with
the functions it holds, instead of an error. Functions of two triples cannot call each
other, one triple cannot have two targets, and a shared library is for one triple: each
a located error, with nothing written."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from test_build_cpu import EM_AARCH64, EM_X86_64, ET_REL, elf_header
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.driver import cli

X86 = "x86_64-unknown-linux-gnu"
ARM = "aarch64-unknown-linux-gnu"
HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def module(arm_body: str = "A[0] = A[1] * T.float32(2)", arm_target: str = ARM) -> str:
    return HEAD + f'''
@I.ir_module
class Module:
    @T.prim_func
    def on_x86(A: T.Buffer((4,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "llvm", "mtriple": "{X86}"}})}})
        A[0] = A[1] + T.float32(1)

    @T.prim_func
    def on_arm(A: T.Buffer((4,), "float32")):
        T.func_attr({{"target": T.target({{"kind": "llvm", "mtriple": "{arm_target}"}})}})
        {arm_body}
'''


@pytest.mark.parametrize("abi", ["packed", "c"])
def test_each_triple_gets_its_object(tmp_path, abi):
    result = build(module(), None, None, tmp_path, "m", abi=abi)
    x86, arm = tmp_path / f"m.{X86}.o", tmp_path / f"m.{ARM}.o"
    assert {p.name for p in result.files} == {x86.name, arm.name, "m.h", "m.json"}
    assert elf_header(x86.read_bytes()) == (ET_REL, EM_X86_64)
    assert elf_header(arm.read_bytes()) == (ET_REL, EM_AARCH64)
    symbol = "__tvm_ffi_{}" if abi == "packed" else "{}"
    assert symbol.format("on_x86").encode() in x86.read_bytes()
    assert symbol.format("on_arm").encode() not in x86.read_bytes()
    assert symbol.format("on_arm").encode() in arm.read_bytes()
    data = json.loads((tmp_path / "m.json").read_text())
    assert [(o["file"], o["functions"], o["target_summary"]) for o in data["host_objects"]] == [
        (x86.name, ["on_x86"], f"llvm -mtriple={X86}"), (arm.name, ["on_arm"], f"llvm -mtriple={ARM}")]
    assert {f["name"] for f in data["functions"]} == {"on_x86", "on_arm"}


def test_one_triple_keeps_one_object_named_as_before(tmp_path):
    build(module(arm_target=X86), None, None, tmp_path, "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.h", "m.json", "m.o"]
    assert "host_objects" not in json.loads((tmp_path / "m.json").read_text())


@pytest.mark.parametrize("text, message", [
    (module(arm_body="A[0] = T.float32(0)\n        T.evaluate(Module.on_x86(A))"),
     "'on_arm' (host code for 'llvm -mtriple=aarch64-unknown-linux-gnu') calls 'on_x86'"),
    (module().replace(f'"mtriple": "{ARM}"', f'"mtriple": "{X86}", "mcpu": "skylake"'),
     "one object is made per triple"),
])
def test_what_two_objects_cannot_do_is_a_located_error(tmp_path, text, message):
    with pytest.raises(Diagnostic, match=message.replace("(", r"\(").replace(")", r"\)")):
        build(text, None, None, tmp_path / "out", "m", filename="m.tir")
    assert not (tmp_path / "out").exists()


def test_a_shared_library_is_for_one_triple(tmp_path):
    src = tmp_path / "m.tir"
    src.write_text(module())
    r = CliRunner().invoke(cli, ["build", str(src), "--shared", "-o", str(tmp_path / "out")])
    assert r.exit_code == 1, r.output
    assert "a shared library is for one triple" in r.stderr
    assert "Traceback" not in r.output and not (tmp_path / "out").exists()
