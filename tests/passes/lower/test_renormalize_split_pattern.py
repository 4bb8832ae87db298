"""RenormalizeSplitPattern (opt-in; TVM's own unit tests of the pass run in
test_sblock_pass_pairs.py)."""
from __future__ import annotations

from conftest import pass_checker
from tirc.passes.lower.renormalize_split_pattern import renormalize_split_pattern

check = pass_checker(renormalize_split_pattern)


def test_split_patterns_and_comparisons():
    check('''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), n: T.int32):
        for i in range(64):
            if i < n and i >= 3 and 60 > i:
                A[i] = A[(i * 8 + 4) % 64 // 8] + A[(i * 6 + 3) // 4]
''', '''
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), n: T.int32):
        for i in range(64):
            if i < n and 1 <= i // 3 and i // 60 < 1:
                A[i] = A[i % 8] + A[(i * 3 + 1) // 2]
''')


def test_runs_only_when_asked():
    import tirc
    from tirc.frontend.parse import parse
    from tirc.passes.pass_context import PassContext
    from tirc.passes.pipeline import run_pipeline
    from tirc.target.kinds import parse_target
    from tirc.ir.printer import print_module
    text = '''# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((64,), "float32")):
        for i in range(64):
            A[i] = A[(i * 8 + 4) % 64 // 8]
'''
    assert "% 64 // 8" in tirc.lower(text)
    ctx = PassContext(parse_target("llvm"), renormalize_split_pattern=True)
    out = print_module(run_pipeline(parse(text, "x.tir"), ctx))
    assert "A_1[i % 8]" in out or "A[i % 8]" in out
