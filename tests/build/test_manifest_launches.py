"""The manifest's record of kernel launches: every launch of a kernel, wherever it sits
in its host function (a branch, a loop), with its grid and block."""
from __future__ import annotations

import json
import textwrap

from tirc.build.stages import build

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"

MODULE = """
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((1024,), "float32"), flag: T.int32):
        if flag > 0:
            for bx in T.thread_binding(4, thread="blockIdx.x"):
                for tx in T.thread_binding(256, thread="threadIdx.x"):
                    A[bx * 256 + tx] = T.float32(1.0)
        else:
            for r in range(2):
                for bx in T.thread_binding(8, thread="blockIdx.x"):
                    for tx in T.thread_binding(128, thread="threadIdx.x"):
                        A[bx * 128 + tx] = A[bx * 128 + tx] + T.float32(1.0)
"""


def test_launches_in_branches_and_loops_are_all_recorded(tmp_path):
    build(HEAD + textwrap.dedent(MODULE), "cuda -arch=sm_80", "llvm", tmp_path, "m")
    kernels = {k["name"]: k for k in json.loads((tmp_path / "m.json").read_text())["kernels"]}
    launches = {name: [(l["caller"], l["grid"], l["block"]) for l in k["launches"]]
                for name, k in kernels.items()}
    assert sorted(launches.values()) == [[("f", [4, 1, 1], [256, 1, 1])],
                                         [("f", [8, 1, 1], [128, 1, 1])]]
