"""A ``device_scope`` region (``T.attr(0, "device_scope", 0)``, printed by TVM 0.27 as
``T.attr({"device_scope": 0})``) is device code without thread axes:
as in TVM, it becomes a kernel of its own, launched as one thread, instead of running on
the host against device memory."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import CALLING_CONV, KERNEL_LAUNCH_PARAMS, CallingConv
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target
from tirc.testing import simt

SOURCE = (ROOT / "tests" / "corpus" / "tvm" / "cuda_device_scope.tir").read_text()


def test_the_region_is_a_kernel_like_tvms():
    mod = run_pipeline(parse(SOURCE), PassContext(parse_target("cuda -arch=sm_90", host="llvm")),
                       "SplitHostDevice")
    kernels = {n: f for n, f in mod.functions.items()
               if f.attrs.get(CALLING_CONV) == int(CallingConv.DEVICE_KERNEL_LAUNCH)}
    # TVM 0.27: f_kernel(A_ptr: T.handle("float32", "global"), n: T.int32), no launch params
    assert list(kernels) == ["f_kernel"]
    assert [p.name for p in kernels["f_kernel"].params] == ["A_ptr", "n"]
    mod = run_pipeline(mod, PassContext(parse_target("cuda -arch=sm_90", host="llvm")),
                       "LowerDeviceKernelLaunch")
    assert tuple(mod["f_kernel"].attrs[KERNEL_LAUNCH_PARAMS]) == ()


def test_it_runs_once_on_the_device():
    a = np.arange(16, dtype="float32")
    run = simt.run(SOURCE, "f", [a, 3])
    assert np.array_equal(a, np.arange(16, dtype="float32") * 3)
    assert [(x.kernel, x.config.grid, x.config.block) for x in run.launches] == [("f_kernel", (1, 1, 1), (1, 1, 1))]


def test_the_kernel_is_built_for_one_thread(tmp_path):
    result = build(SOURCE, "cuda -arch=sm_90", "llvm", tmp_path, "m")
    ptx = (tmp_path / "m.ptx").read_text()
    assert ".entry f_kernel(" in ptx and ".maxntid 1, 1, 1" in ptx and "%tid" not in ptx
    assert result is not None


def test_on_a_cpu_target_it_is_a_located_error():
    with pytest.raises(Diagnostic, match="a 'device_scope' region in a function for the CPU target") as e:
        run_pipeline(parse(SOURCE, "ds.tir"), PassContext(parse_target("llvm")), "AnnotateDeviceRegions")
    assert e.value.span.file == "ds.tir"
