"""``-j N``: the passes of the block and lowering phases run on each call-graph component
apart, the components shared out between processes, and give the module the serial run
gives, its functions in the same order."""
from __future__ import annotations

from tirc.backends.forked import run_pulled
from tirc.frontend.parse import parse
from tirc.ir.printer import print_module
from tirc.passes.pipeline import PassContext, TimePasses, _costliest_first, run_pipeline
from tirc.ir.call_graph import components
from tirc.target.kinds import parse_target
from conftest import ROOT

CTX = PassContext(parse_target("cuda -arch=sm_90", host="llvm"))

MODULE = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale(x: T.float32) -> T.float32:
        return x * T.float32(2.0)

    @T.prim_func
    def first(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                B[bx * 32 + tx] = Module.scale(A[bx * 32 + tx])

    @T.prim_func
    def second(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                with T.sblock("copy"):
                    v = T.axis.spatial(64, bx * 32 + tx)
                    T.reads(A[v])
                    T.writes(B[v])
                    B[v] = A[v] + T.float32(1.0)

    @T.prim_func
    def third(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        for i in range(64):
            A[i] = A[i] * T.float32(3.0)
'''


def test_components_keep_a_private_callee_with_its_callers():
    mod = parse(MODULE)
    comps = components(mod)
    assert comps == [["scale", "first"], ["second"], ["third"]]
    # the largest in source lines first (second's 10 lines tie with scale's 4 and
    # first's 6: module order), third's 5 last
    assert _costliest_first(mod, comps) == [["scale", "first"], ["second"], ["third"]]
    assert _costliest_first(mod, comps[::-1]) == [["second"], ["scale", "first"], ["third"]]


def test_apart_gives_the_serial_module_and_adds_up_pass_times():
    mod = parse(MODULE)
    serial = print_module(run_pipeline(mod, CTX))
    timer = TimePasses()
    forked = run_pipeline(mod, CTX, instruments=(timer,), jobs=2,
                          spread=lambda tasks: run_pulled(tasks, 2, "pass group"))
    assert print_module(forked) == serial
    names = [n for n, _ in timer.times]
    assert names.count("CompactBufferAllocation") == 1 and "SplitHostDevice" in names


def test_the_model_corpus_the_same_apart():
    text = (ROOT / "bench" / "models" / "cnn.cuda.tir").read_text()
    mod = parse(text, "cnn.cuda.tir")
    serial = print_module(run_pipeline(mod, CTX))
    groups_run = []

    def spread(tasks):
        groups_run.append(len(tasks))
        return [t() for t in tasks]
    assert print_module(run_pipeline(mod, CTX, jobs=2, spread=spread)) == serial
    assert groups_run == [len(mod.functions)]  # its functions call none of the others


def test_a_group_that_cannot_come_back_runs_serially():
    mod = parse(MODULE)

    def spread(tasks):
        raise RecursionError("maximum recursion depth exceeded while pickling an object")
    assert print_module(run_pipeline(mod, CTX, jobs=2, spread=spread)) == \
        print_module(run_pipeline(mod, CTX))
