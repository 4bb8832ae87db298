"""A public function of a device target that has no thread axes of its own, called from
host code, is device code throughout: as TVM 0.27 does, it becomes a
kernel taking its buffers' data pointers, launched as one thread where it is called,
instead of host code that writes device memory."""
from __future__ import annotations

import json

import numpy as np

from conftest import ROOT
from tirc.build.stages import build
from tirc.ir.attrs import KERNEL_LAUNCH_PARAMS, TARGET, is_kernel
from tirc.ir.expr import Call
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target
from tirc.testing import simt

SOURCE = (ROOT / "tests" / "corpus" / "tvm" / "cuda_public_device_function.tir").read_text()
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def lowered(text: str):
    return run_pipeline(parse(text), PassContext(parse_target("cuda -arch=sm_90", host="llvm")),
                        "LowerDeviceKernelLaunch")


def test_it_becomes_a_kernel_launched_from_its_caller_like_tvms():
    mod = lowered(SOURCE)
    fill = mod["fill"]
    # TVM 0.27: fill gets calling_conv 2, kernel_launch_params [] and the target without host
    assert is_kernel(fill) and tuple(fill.attrs[KERNEL_LAUNCH_PARAMS]) == ()
    assert fill.attrs[TARGET].host is None
    assert [p.name for p in fill.params] == ["A_ptr"]
    launches = [n for n in walk(mod["main"].body) if isinstance(n, Call) and n.op == "call_ffi_kernel"]
    assert len(launches) == 1 and launches[0].args[0].value == "fill"


def test_it_runs_once_on_the_device():
    a = np.zeros(16, dtype="float32")
    run = simt.run(SOURCE, "main", [a])
    assert np.array_equal(a, np.ones(16, dtype="float32"))
    assert [(x.kernel, x.config.grid, x.config.block) for x in run.launches] == [("fill", (1, 1, 1), (1, 1, 1))]


def test_it_builds_and_is_not_exported(tmp_path):
    build(SOURCE, "cuda -arch=sm_90", "llvm", tmp_path, "m")
    assert ".entry fill(" in (tmp_path / "m.ptx").read_text()
    manifest = json.loads((tmp_path / "m.json").read_text())
    assert [f["name"] for f in manifest["functions"]] == ["main"]
    assert [k["name"] for k in manifest["kernels"]] == ["fill"]
    assert "fill" not in (tmp_path / "m.h").read_text()


def test_functions_that_stay_host_code():
    """Not called, with thread axes of its own (a host function that launches its own
    kernel, called host to host), or returning a value: not made a kernel."""
    text = HEADER + """
@I.ir_module
class Module:
    @T.prim_func
    def alone(A: T.Buffer((16,), "float32")):
        T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90"})})
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            A[tx] = T.float32(2)

    @T.prim_func
    def main(A: T.Buffer((16,), "float32")):
        Module.alone(A)
"""
    mod = lowered(text)
    assert not is_kernel(mod["alone"]) and is_kernel(mod["alone_kernel"])
