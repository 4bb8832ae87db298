"""Shared by the split-pipeline tests: run passes on TIR text and compare with TIR text."""
from __future__ import annotations

from conftest import check_pass
from tirc.frontend.parse import parse
from tirc.passes.pass_context import PassContext
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
CUDA = parse_target("cuda -arch=sm_90", host="llvm")
DEV = 'T.target({"arch": "sm_90", "kind": "cuda"})'
FULL = 'T.target({"arch": "sm_90", "host": {"kind": "llvm"}, "kind": "cuda"})'
HOST = 'T.target({"kind": "llvm"})'


def run(passes, before: str, target=CUDA):
    mod = parse(HEADER + before, "before.tir")
    for p in passes:
        mod = p(mod, PassContext(target))
    return mod


def check(passes, before: str, expected: str, target=CUDA):
    """:func:`conftest.check_pass` with ``passes`` applied in order (the input is not
    verified first: some of these tests start from modules only the split makes valid)."""
    def apply(mod):
        for p in passes:
            mod = p(mod, PassContext(target))
        return mod
    return check_pass(apply, before, expected, header=HEADER, verify_input=False)
