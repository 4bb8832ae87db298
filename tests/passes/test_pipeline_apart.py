"""``-j N``: the passes after the prepare phase run on each call-graph component apart,
the components shared out between processes, and give the module the serial run gives:
its functions (the kernels SplitHostDevice adds included) and the build's facts in the
same order, the same names, the same error."""
from __future__ import annotations

import pytest

from tirc.backends.forked import run_pulled
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.ir.printer import print_module
from tirc.passes.pipeline import PartWork, PassContext, TimePasses, _costliest_first, run_pipeline
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
    serial = run_pipeline(mod, CTX)
    timer = TimePasses()
    forked = run_pipeline(mod, CTX, instruments=(timer,), jobs=2,
                          spread=lambda tasks: run_pulled(tasks, 2, "pass group"))
    assert print_module(forked) == print_module(serial)
    assert forked.facts == serial.facts
    names = [n for n, _ in timer.times]
    assert names.count("CompactBufferAllocation") == 1 and "SplitHostDevice" in names


def test_the_model_corpus_the_same_apart():
    text = (ROOT / "bench" / "models" / "cnn.cuda.tir").read_text()
    mod = parse(text, "cnn.cuda.tir")
    serial = run_pipeline(mod, CTX)
    groups_run = []

    def spread(tasks):
        groups_run.append(len(tasks))
        return [t() for t in tasks]
    forked = run_pipeline(mod, CTX, jobs=2, spread=spread)
    assert print_module(forked) == print_module(serial)
    assert forked.facts == serial.facts
    assert groups_run == [len(mod.functions)]  # its functions call none of the others


def test_a_group_that_cannot_come_back_runs_serially():
    mod = parse(MODULE)

    def spread(tasks):
        raise RecursionError("maximum recursion depth exceeded while pickling an object")
    assert print_module(run_pipeline(mod, CTX, jobs=2, spread=spread)) == \
        print_module(run_pipeline(mod, CTX))


# Kernels made from several functions, a CPU function already called what a's first
# kernel would be called, and a component of two functions that both launch kernels: the
# components, largest first, are not in module order.
KERNELS = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
@I.ir_module
class Module:
    @T.prim_func
    def a(A: T.Buffer((64,), "float32")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = A[tx] + T.float32(1.0)
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = A[tx] * T.float32(2.0)

    @T.prim_func
    def a_kernel(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        for i in range(64):
            A[i] = T.float32(0.0)

    @T.prim_func(private=True)
    def fill(A: T.Buffer((64,), "float32")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = T.float32(3.0)

    @T.prim_func
    def b(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        Module.fill(A)
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                B[bx * 32 + tx] = A[bx * 32 + tx] + A[63 - bx * 32 - tx] + T.float32(1.0)
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                B[bx * 32 + tx] = B[bx * 32 + tx] * A[bx * 32 + tx] + T.float32(2.0)

    @T.prim_func
    def c(A: T.Buffer((64,), "float32")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = A[tx] - T.float32(1.0)
'''


def test_kernels_names_and_facts_are_those_of_the_serial_run():
    mod = parse(KERNELS)
    assert _costliest_first(mod, components(mod))[0] == ["fill", "b"]
    serial = run_pipeline(mod, CTX)
    assert list(serial.functions) == ["a", "a_kernel", "fill", "b", "c", "a_kernel_1",
                                      "a_kernel_2", "fill_kernel", "b_kernel", "b_kernel_1",
                                      "c_kernel"]
    forked = run_pipeline(mod, CTX, jobs=2, spread=lambda tasks: [t() for t in tasks])
    assert list(forked.functions) == list(serial.functions)
    assert print_module(forked) == print_module(serial)
    assert [k.name for k in forked.facts.kernels] == [k.name for k in serial.facts.kernels]
    assert forked.facts == serial.facts


# big's kernel allocates global memory (VerifyMemory), small's has too many threads
# (LowerDeviceKernelLaunch, the pass before): the serial run reports small's, though
# big's component goes first and fails first
ERRORS = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
@I.ir_module
class Module:
    @T.prim_func
    def big(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                G = T.alloc_buffer((4,), scope="global")
                G[0] = A[tx]
                B[tx] = G[0]
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                B[bx * 32 + tx] = A[bx * 32 + tx] + T.float32(1.0)

    @T.prim_func
    def small(A: T.Buffer((4096,), "float32")):
        for tx in T.thread_binding(2048, thread="threadIdx.x"):
            A[tx] = T.float32(0.0)
'''


def test_the_error_is_the_one_the_serial_run_raises():
    mod = parse(ERRORS, "errors.tir")
    with pytest.raises(Diagnostic, match="small_kernel' uses 2048 threads") as serial:
        run_pipeline(mod, CTX)
    with pytest.raises(Diagnostic) as forked:
        run_pipeline(mod, CTX, jobs=2, spread=lambda tasks: run_pulled(tasks, 2, "pass group"))
    assert str(forked.value) == str(serial.value)


class _Names(PartWork):
    """Each component's functions after its passes, as its process saw them."""

    def __init__(self):
        self.taken = []

    def run(self, mod):
        return sorted(mod.functions)

    def take(self, results):
        self.taken += results


def test_part_work_runs_on_each_component_after_its_passes():
    mod = parse(KERNELS)
    work = _Names()
    run_pipeline(mod, CTX, jobs=2, spread=lambda tasks: run_pulled(tasks, 2, "pass group"),
                 part_work=work)
    # in the order the components were given out, the largest first
    assert work.taken == [["b", "b_kernel", "b_kernel_1", "fill", "fill_kernel"],
                          ["a", "a_kernel_1", "a_kernel_2"], ["a_kernel"], ["c", "c_kernel"]]


def test_no_part_work_is_taken_when_the_passes_run_whole():
    mod = parse(ERRORS, "errors.tir")
    work = _Names()
    with pytest.raises(Diagnostic):
        run_pipeline(mod, CTX, jobs=2, spread=lambda tasks: [t() for t in tasks], part_work=work)
    assert work.taken == []
