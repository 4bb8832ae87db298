"""An exported function's outermost loops as internal functions of their own, its
argument checks left unoptimised (tirc.backends.cpu.outline): the IR's shape, what
is not split, and failures inside an outlined loop raised as before."""
from __future__ import annotations

import re
import shutil
import textwrap

import numpy as np
import pytest

import tirc.backends.cpu.backend as cpu
from tirc.build.stages import build, host_target_of, split_module
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target
from test_cpu_codegen_quality import COPY_ROWS as ROW_COPY  # a noalias function's row copy
import workspace_kernels

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"

TWO_LOOPS = """
@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), n: T.int32):
    T.func_attr({"tir.noalias": True})
    for i in range(1024):
        B[i] = A[i] * T.float32(2.0)
    for j in range(n):
        for k in range(4):
            B[j * 4 + k] = B[j * 4 + k] + T.float32(1.0)
"""

STORE_OUTSIDE = """
@T.prim_func
def f(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    B[0] = A[0]
    for i in range(1, 1024):
        B[i] = A[i] * T.float32(2.0)
"""


def lowered(text: str, target: str = "llvm"):
    bind = parse_target(target)
    mod = run_pipeline(parse(HEAD + textwrap.dedent(text), "t.tir"), PassContext(bind))
    host, _ = split_module(mod)
    target = host_target_of(host, bind)
    return host, target, *cpu.lower_to_llvm(host, target)


def defines(text: str) -> dict[str, str]:
    return {m.group(2): m.group(0) for m in
            re.finditer(r'^define (\w+) i32 @"([^"]+)"\(.*$', text, re.M)}


def test_each_outermost_loop_becomes_a_function_and_the_checks_stay_unoptimised():
    host, target, text, ctx = lowered(TWO_LOOPS)
    funcs = defines(text)
    wrapper = funcs.pop("__tvm_ffi_f")
    assert wrapper.startswith("define external") and wrapper.endswith("noinline nounwind optnone")
    assert sorted(n.split(".loop")[0] for n in funcs) == ["__tvm_ffi_f"] * 2
    assert all(line.startswith("define internal") and "optnone" not in line
               for line in funcs.values())
    assert ctx.loop_functions == set(funcs)
    # the values a loop uses are its arguments (the data pointers, n for the second),
    # and the device id of the enclosing device attribute
    assert sorted(len(line.split(",")) for line in funcs.values()) == [3, 3]
    assert all('i32 %"device_id"' in line for line in funcs.values())
    assert '%"n"' in funcs[max(funcs)]
    # the checks do not loop; the loops keep the buffers' alias scopes
    body = text.split(wrapper, 1)[1].split("\n}\n", 1)[0]
    assert "for_head" not in body and body.count("call i32 @\"__tvm_ffi_f.loop") == 2
    opt = cpu.generate(host, target).llvm_ir
    assert "<4 x float>" in opt and "!alias.scope" in opt


def test_a_noalias_functions_loop_takes_noalias_pointers():
    """The data pointers of a ``tirx.noalias`` function's buffers are ``noalias``
    parameters of its loop functions (TVM's compute function's are): LLVM's loop idioms
    read parameters, not alias scopes, so only then is a row copy one memcpy (and the
    loop optimised in a few milliseconds: without them LoopVectorize took 210 ms over
    a transpose of the model corpus, bench/README.md)."""
    host, target, text, _ = lowered(ROW_COPY)
    (loop,) = [line for name, line in defines(text).items() if ".loop" in name]
    assert loop.count("noalias") == 2
    assert "llvm.memcpy" in cpu.generate(host, target).llvm_ir
    # without the attribute, the scopes alone say nothing of the parameters
    _, _, plain, _ = lowered(ROW_COPY.replace('T.func_attr({"tirx.noalias": True})\n    ', ""))
    (loop,) = [line for name, line in defines(plain).items() if ".loop" in name]
    assert "noalias" not in loop


def test_a_store_outside_the_loops_keeps_the_function_whole():
    _, _, text, ctx = lowered(STORE_OUTSIDE)
    assert list(defines(text)) == ["__tvm_ffi_f"]
    assert ctx.loop_functions == {"__tvm_ffi_f"} and "optnone" not in text


def test_parallel_loops_and_debug_info_keep_the_function_whole():
    _, _, text, _ = lowered("""
        @T.prim_func
        def f(A: T.Buffer((64,), "float32")):
            for i in T.parallel(64):
                A[i] = A[i] + T.float32(1.0)
        """)
    assert "optnone" not in text and ".loop" not in text
    bind = parse_target("llvm")
    mod = run_pipeline(parse(HEAD + textwrap.dedent(TWO_LOOPS), "t.tir"), PassContext(bind))
    host, _ = split_module(mod)
    text, _ = cpu.lower_to_llvm(host, host_target_of(host, bind), debug=True)
    assert "optnone" not in text and ".loop" not in text


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_failure_inside_an_outlined_loop_is_raised_by_the_function(tmp_path):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    build(HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32"), d: T.int32):
            for i in range(8):
                B[i] = A[i] // d
        """), "llvm", None, tmp_path, "m", shared=True)
    f = tvm_ffi.load_module(str(tmp_path / "m.so"))["f"]
    a = np.arange(8, dtype="int32") * 3
    b = np.zeros(8, "int32")
    f(a, b, 3)
    np.testing.assert_array_equal(b, a // 3)
    # raised as before the split (tvm-ffi has no ZeroDivisionError: a RuntimeError)
    with pytest.raises(RuntimeError, match="integer division by zero in function 'f'"):
        f(a, b, 0)
    with pytest.raises(ValueError, match="Invalid A.shape"):  # the checks, as before
        f(np.zeros(4, "int32"), b, 3)


ALLOCATING = """
@T.prim_func
def f(A: T.Buffer((n,), "int32"), B: T.Buffer((n,), "int32"), d: T.int32, n: T.int32):
    T.func_attr({"tirx.noalias": True})
    tmp = T.alloc_buffer((n,), "int32")
    for i in range(n):
        tmp[i] = A[i] // d
    for i in range(n):
        B[i] = tmp[i] + tmp[n - 1 - i]
"""


def test_an_allocation_goes_out_with_the_loops_that_use_it():
    _, _, text, _ = lowered(ALLOCATING)
    funcs = defines(text)
    wrapper = funcs.pop("__tvm_ffi_f")
    (loop,) = funcs.values()
    body = text.split(wrapper, 1)[1].split("\n}\n", 1)[0]
    assert "malloc" not in body and "optnone" in wrapper
    inner = text.split(loop, 1)[1].split("\n}\n", 1)[0]
    assert "malloc" in inner and "free" in inner
    assert len(re.findall(r"^for_head\d+:", inner, re.M)) == 2


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_an_outlined_allocation_runs_and_fails_as_before(tmp_path):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    build(HEAD + textwrap.dedent(ALLOCATING), "llvm", None, tmp_path, "m", shared=True)
    f = tvm_ffi.load_module(str(tmp_path / "m.so"))["f"]
    a = np.arange(100, dtype="int32") * 3
    b = np.zeros(100, "int32")
    f(a, b, 3, 100)
    np.testing.assert_array_equal(b, a // 3 + (a // 3)[::-1])
    with pytest.raises(RuntimeError, match="integer division by zero in function 'f'"):
        f(a, b, 0, 100)
    f(a, b, 1, 100)  # the failed call freed its buffer and left nothing behind
    np.testing.assert_array_equal(b, a + a[::-1])


def test_a_workspace_used_by_kernel_launches_alone_is_not_outlined(tmp_path, monkeypatch):
    # no loop runs on the host: the function is lowered whole, and the module, with no
    # loop at all, gets the short pipeline of argument checks and launches
    seen = []

    def optimize(parsed, ctx, level):
        seen.append(set(ctx.loop_functions))
        return real(parsed, ctx, level)
    real = cpu.optimize
    monkeypatch.setattr(cpu, "optimize", optimize)
    build(workspace_kernels.SYMBOLIC, "cuda", None, tmp_path, "m",
          emit=("llvm",))
    text = (tmp_path / "m.ll").read_text()
    assert seen == [set()]
    wrapper = re.search(r"^define .*@__tvm_ffi_f\(.*$", text, re.M).group(0)
    assert ".loop" not in text and "optnone" not in wrapper
    assert "@__tirc_cuda_alloc(" in text and "malloc" not in text  # device memory
