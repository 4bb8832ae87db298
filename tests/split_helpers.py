"""Shared by the split-pipeline tests: run passes on TIR text and compare with TIR text."""
from __future__ import annotations

from tirc.ir.equal import assert_structural_equal
from tirc.parser import parse
from tirc.passes.pipeline import PassContext
from tirc.passes.prepare.verify import verify
from tirc.target import parse_target

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
    after = run(passes, before, target)
    verify(after)
    assert_structural_equal(after, parse(HEADER + expected, "expected.tir"))
    return after
