"""How the CPU backend optimises a host module: the full -O pipeline where a function
has a loop, a short pipeline and the fast instruction selector for loop-free modules
(argument checks and kernel launches), cold CUDA helpers never optimised."""
from __future__ import annotations

import textwrap

import pytest

import tirc.backends.cpu.backend as cpu
import tirc.backends.cpu.context as cpu_context
from tirc.build.stages import host_target_of, split_module
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"

LOOP = """
@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    for i in range(1024):
        B[i] = A[i] * T.float32(2.0)
"""

NO_LOOP = """
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    B[0] = A[0] + A[3]
"""

LAUNCH = """
@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            B[bx * 256 + tx] = A[bx * 256 + tx] + T.float32(1.0)
"""


def host_module(text: str, target: str):
    bind = parse_target(target)
    mod = run_pipeline(parse(HEAD + textwrap.dedent(text), "t.tir"), PassContext(bind))
    host, devices = split_module(mod)
    return host, host_target_of(host, bind), devices


@pytest.fixture
def code_gen_levels(monkeypatch):
    """The code generation levels of the machines the backend makes."""
    levels = []
    original = cpu_context.target_machine

    def recording(target, opt=None):
        levels.append(int(target.get("opt-level", 3)) if opt is None else opt)
        return original(target, opt)

    monkeypatch.setattr(cpu_context, "target_machine", recording)
    return levels


def test_function_with_a_loop_gets_the_full_pipeline(code_gen_levels):
    host, target, _ = host_module(LOOP, "llvm")
    text, ctx = cpu.lower_to_llvm(host, target)
    # the loop is outlined from the argument checks (tirc.backends.cpu.outline)
    assert [name.split(".loop")[0] for name in ctx.loop_functions] == ["__tvm_ffi_f"]
    obj = cpu.generate(host, target)
    assert code_gen_levels and set(code_gen_levels) == {3}
    assert "<4 x float>" in obj.llvm_ir or "<8 x float>" in obj.llvm_ir  # the loop vectoriser ran


def test_loop_free_module_gets_the_short_pipeline_and_fast_isel(code_gen_levels):
    host, target, _ = host_module(NO_LOOP, "llvm")
    obj = cpu.generate(host, target)
    assert code_gen_levels[-1] == 0
    # SROA ran: no stack slot is left but the failure path's array of message parts,
    # whose address tvm-ffi takes
    slots = [line for line in obj.llvm_ir.splitlines() if " alloca " in line]
    assert all("%error_parts = alloca" in line for line in slots), slots
    assert obj.object.startswith(b"\x7fELF")


def test_kernel_launch_module_takes_the_fast_path_with_cold_helpers(code_gen_levels):
    host, target, devices = host_module(LAUNCH, "cuda -arch=sm_80")
    from tirc.backends.cuda.launch import DeviceCode
    code = DeviceCode()
    (device,) = devices.values()
    code.add(device, ("f_kernel",), b"// ptx", "ptx", "sm_80")
    text, ctx = cpu.lower_to_llvm(host, target, device_code=code)
    assert ctx.loop_functions == set()
    helpers = [line for line in text.splitlines() if line.startswith("define internal")
               and "__tirc_cuda" in line]
    assert helpers and all("optnone" in line for line in helpers)
    # run once per device or on failure, all but the one every plain launch calls
    assert [line.split('"')[1] for line in helpers if "cold" not in line] == ["__tirc_cuda_launch"]
    cpu.generate(host, target, device_code=code)
    assert code_gen_levels[-1] == 0


def test_opt_level_zero_is_left_unoptimised(code_gen_levels):
    host, target, _ = host_module(LOOP, "llvm -opt-level=0")
    obj = cpu.generate(host, target)
    assert set(code_gen_levels) == {0}
    assert "<4 x float>" not in obj.llvm_ir


def test_explicit_opt_level_gets_the_full_pipeline_without_loops(code_gen_levels):
    host, target, _ = host_module(NO_LOOP, "llvm -opt-level=3")
    cpu.generate(host, target)
    assert set(code_gen_levels) == {3}
