"""BindTarget against TVM 0.27's on the samples (skipped without TVM): the same
functions, the same targets (kind, arch, host), the same call rewriting."""
from __future__ import annotations

from dataclasses import replace

import pytest

from conftest import ROOT
from tirc.ir.equal import assert_structural_equal
from tirc.ir.printer import print_module
from tirc.frontend.parse import parse
from tirc.passes.prepare.bind_target import bind_target
from tirc.target.kinds import parse_target

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install '.[tvm]')")
pytestmark = pytest.mark.tvm


def summary(mod):
    """Targets reduced to what both tools agree on, and the module without them."""
    targets, funcs = {}, {}
    for name, f in mod.functions.items():
        t = f.attrs["target"]
        targets[name] = (t.kind, t.get("arch"), t.host.kind if t.host else None)
        funcs[name] = replace(f, attrs={k: v for k, v in f.attrs.items() if k != "target"})
    return targets, replace(mod, functions=funcs)


@pytest.mark.parametrize("sample", ["device_call_add.tir", "device_call_let.tir"])
def test_matches_tvm_on_seed_000(sample):
    text = print_module(parse((ROOT / "samples" / sample).read_text()))  # TVM 0.27 spelling
    theirs_in = tvm.script.from_source(text)
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"}, host={"kind": "llvm"})
    theirs = tvm.tirx.transform.BindTarget(target)(theirs_in)
    ours = bind_target(parse(text), parse_target("cuda -arch=sm_90", host="llvm"))
    their_targets, their_mod = summary(parse(theirs.script()))
    our_targets, our_mod = summary(ours)
    assert our_targets == their_targets
    assert our_targets["add_host"] == ("llvm", None, None)
    assert our_targets["main"] == ("cuda", "sm_90", "llvm")
    assert_structural_equal(our_mod, their_mod)
