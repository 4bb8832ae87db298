"""Against TVM 0.27 (skipped without TVM): for every sample TVM compiles for
``cuda -arch=sm_90`` with host ``llvm``, tirc makes as many kernels, launched with the
same thread axes and the same constant sizes."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import ROOT, SAMPLES
from tirc.ir.expr import Call, IntImm
from tirc.ir.printer import print_module
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install '.[tvm]')")
pytestmark = pytest.mark.tvm


def _tvm_passes():
    spec = importlib.util.spec_from_file_location("gen_tvm_corpus", ROOT / "tests" / "corpus" / "gen_tvm_corpus.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen._s_tir_passes()


def launches(mod):
    """kernel name -> (launch params, constant sizes or None) from the host functions."""
    out = {}
    for f in mod.functions.values():
        for node in walk(f.body):
            if isinstance(node, Call) and node.op == "call_ffi_kernel":
                params = dict(node.kwargs)["launch_params"]
                sizes = node.args[len(node.args) - len(params):]
                out[node.args[0].value] = (tuple(params), tuple(s.value if isinstance(s, IntImm) else None for s in sizes))
    return out


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_kernels_and_launch_sizes_match_tvm(path):
    text = print_module(parse(path.read_text()))
    mod = tvm.script.from_source(text)
    if isinstance(mod, tvm.tirx.PrimFunc):
        mod = tvm.IRModule({"main": mod})
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"}, host={"kind": "llvm"})
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.tirx.transform.BindTarget(target)(mod)
        for _, p in _tvm_passes():
            mod = p(mod)
    theirs = launches(parse(mod.script()))
    ours = launches(run_pipeline(parse(path.read_text()), PassContext(parse_target("cuda -arch=sm_90", host="llvm")),
                                 "LowerDeviceKernelLaunch"))
    assert len(ours) == len(theirs)
    for (_, (our_params, our_sizes)), (_, (their_params, their_sizes)) in zip(sorted(ours.items()), sorted(theirs.items())):
        our_axes = tuple(p for p in our_params if p != "tirx.use_dyn_shared_memory")
        their_axes = tuple(p for p in their_params if p != "tirx.use_dyn_shared_memory")
        assert our_axes == their_axes
        for ours_size, theirs_size in zip(our_sizes, their_sizes):
            if ours_size is not None and theirs_size is not None:
                assert ours_size == theirs_size
