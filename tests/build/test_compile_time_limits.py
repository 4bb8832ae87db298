"""Limits checked at compile time: thread extents below 1, the
target's grid and block axis limits, vector widths beyond a vector's lanes, --dim values
beyond this machine's memory; -mcpu/-mattr/-mtriple checked against what LLVM knows
before LLVM sees them, with the error at the target text and the accepted values listed;
break/continue outside a loop, public functions called from device code, extern names
no linker takes. Each failed before: it built, aborted the process or was an internal
error."""
from __future__ import annotations

import re
import textwrap

import pytest
from click.testing import CliRunner
from conftest import ROOT

from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.target.kinds import CUDA_AXIS_LIMITS, TargetError, parse_target, thread_axis_limits

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def tirc(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def write(tmp_path, body: str, name: str = "m.tir"):
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body).lstrip("\n"))
    return path


# -- item 7 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("extent", [-4, 0])
def test_thread_extent_below_one_is_a_located_error(tmp_path, extent):
    path = write(tmp_path, f"""
        @T.prim_func
        def f(A: T.Buffer((16,), "float32")):
            for tx in T.thread_binding({extent}, thread="threadIdx.x"):
                A[0] = T.float32(1)
        """)
    r = tirc("check", path)
    assert r.exit_code == 1
    assert (f"m.tir:5:5: error: 'threadIdx.x' is bound with extent {extent}: a thread extent "
            "must be at least 1") in r.output


def test_launch_thread_extent_below_one_is_a_located_error(tmp_path):
    path = write(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((16,), "float32")):
            T.func_attr({"target": T.target("cuda")})
            tx = T.launch_thread("threadIdx.x", -2)
            A[0] = T.float32(1)
        """)
    r = tirc("check", path)
    assert r.exit_code == 1
    assert "'threadIdx.x' is launched with extent -2: a thread extent must be at least 1" in r.output


def test_cuda_axis_limits_live_with_the_target():
    assert CUDA_AXIS_LIMITS["blockIdx.x"] == 2**31 - 1
    assert CUDA_AXIS_LIMITS["blockIdx.y"] == CUDA_AXIS_LIMITS["blockIdx.z"] == 65535
    assert CUDA_AXIS_LIMITS["threadIdx.z"] == 64
    assert thread_axis_limits(parse_target("llvm")) == {}


@pytest.mark.parametrize("tag, extent, ok", [
    ("blockIdx.y", 70000, False), ("blockIdx.z", 65536, False), ("blockIdx.y", 65535, True),
    ("blockIdx.x", 70000, True), ("threadIdx.z", 128, False), ("threadIdx.z", 64, True),
])
def test_grid_and_block_axis_limits(tmp_path, tag, extent, ok):
    path = write(tmp_path, f"""
        @T.prim_func
        def f(A: T.Buffer((1,), "float32")):
            for b in T.thread_binding({extent}, thread="{tag}"):
                A[0] = T.float32(1)
        """)
    r = tirc("lower", path, "--target", "cuda -arch=sm_90", "--host", "llvm")
    if ok:
        assert r.exit_code == 0, r.output
        return
    assert r.exit_code == 1
    limit = CUDA_AXIS_LIMITS[tag]
    assert (f"m.tir:5:5: error: kernel 'f_kernel' launches '{tag}' with extent {extent}; "
            f"target 'cuda -arch=sm_90' allows at most {limit} for '{tag}'") in r.output


def test_vectorized_loop_wider_than_a_vector_is_a_located_error(tmp_path):
    path = write(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((2147483648,), "int8")):
            for i in T.vectorized(2147483648):
                A[i] = T.int8(1)
        """)
    r = tirc("check", path)
    assert r.exit_code == 1
    assert ("m.tir:5:5: error: vectorized loop of 2147483648 lanes: a vector has at most "
            "65535 lanes") in r.output


def test_run_dim_beyond_memory_is_an_error(tmp_path):
    path = write(tmp_path, """
        @T.prim_func
        def f(a: T.handle):
            n = T.int64()
            A = T.match_buffer(a, (n,), "float32")
            for i in range(n):
                A[i] = A[i] + T.float32(1)
        """)
    r = tirc("run", path, "--random", "--dim", f"n={10**15}")
    assert r.exit_code == 1
    assert "'a' of shape (1000000000000000,) float32 needs 4000000000000000 bytes" in r.output
    assert "bytes of memory available" in r.output


# -- item 8 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("llvm -mcpu=notacpu", "invalid value 'notacpu' for option 'mcpu' of 'llvm': not a CPU"),
    ("llvm -mattr=+notafeature", "invalid value '+notafeature' in option 'mattr' of 'llvm'"),
    ("llvm -mattr=avx2", "a feature is '+name' to enable it or '-name' to disable it"),
    ("llvm -mtriple=notanarch-linux", "invalid value 'notanarch-linux' for option 'mtriple'"),
])
def test_bad_llvm_options_are_target_errors(text, message):
    with pytest.raises(TargetError, match=re.escape(message)):
        parse_target(text)


def test_unknown_mcpu_lists_the_cpus_at_the_target_option():
    r = tirc("build", ROOT / "samples" / "cpu_matmul.tir", "--target",
             "llvm -mcpu=notacpu -mtriple=x86_64-unknown-linux-gnu", "-o", "/nonexistent-out")
    assert r.exit_code == 2
    assert "Invalid value for '--target': invalid value 'notacpu' for option 'mcpu'" in r.output
    assert "valid values:" in r.output and "skylake-avx512" in r.output


def test_unknown_mcpu_in_the_file_points_at_t_target(tmp_path):
    path = write(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": T.target("llvm -mcpu=notacpu -mtriple=x86_64-unknown-linux-gnu")})
            A[0] = T.float32(1)
        """)
    r = tirc("check", path)
    assert r.exit_code == 1
    assert "m.tir:5:37: error: invalid target: invalid value 'notacpu' for option 'mcpu'" in r.output


def test_known_cpus_and_features_are_accepted():
    t = parse_target("llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=skylake-avx512 -mattr=+avx2,-fma")
    assert t.get("mcpu") == "skylake-avx512"
    parse_target("llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=neoverse-v1 -mattr=+sve")
    parse_target("llvm -mcpu=native")  # this machine's CPU, resolved by the backend


# -- item 9 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("stmt", ["break", "continue"])
def test_break_continue_outside_a_loop(tmp_path, stmt):
    path = write(tmp_path, f"""
        @T.prim_func
        def f(A: T.Buffer((16,), "float32")):
            A[0] = T.float32(1)
            {stmt}
        """)
    r = tirc("check", path)
    assert r.exit_code == 1
    assert f"m.tir:6:5: error: '{stmt}' outside a loop" in r.output


def test_break_inside_loops_is_accepted(tmp_path):
    path = write(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((16,), "int32")):
            for i in range(16):
                if A[i] == 0:
                    break
            i = T.int32(0)
            while i < 4:
                i = i + 1
                continue
        """)
    assert tirc("check", path).exit_code == 0


@pytest.mark.parametrize("callee, what", [("main", "itself"), ("g", "the public function 'g'")])
def test_public_function_called_from_device_code(tmp_path, callee, what):
    path = write(tmp_path, f"""
        @I.ir_module
        class Module:
            @T.prim_func
            def g(A: T.Buffer((16,), "float32")):
                A[0] = T.float32(1)

            @T.prim_func
            def main(A: T.Buffer((16,), "float32")):
                T.func_attr({{"target": T.target("cuda", host="llvm")}})
                for tx in T.thread_binding(16, thread="threadIdx.x"):
                    Module.{callee}(A)
        """)
    r = tirc("lower", path, "--target", "cuda", "--host", "llvm")
    assert r.exit_code == 1
    assert (f"m.tir:13:13: error: 'main' calls {what} from device code; a public function "
            "is an entry point") in r.output


@pytest.mark.parametrize("name, message", [
    ("", "the name of an external function is empty"),
    ("a b", "external function name 'a b' is not a linker symbol: it holds ' '"),
    ("f\\x00g", "external function name 'f\\x00g' is not a linker symbol: it holds '\\x00'"),
    ("9lives", "external function name '9lives' is not a linker symbol"),
])
def test_extern_names_a_linker_cannot_take(tmp_path, name, message):
    path = write(tmp_path, f"""
        @T.prim_func
        def f(A: T.Buffer((16,), "float32")):
            A[0] = T.call_extern("float32", "{name}", A[1])
        """)
    r = tirc("check", path)
    assert r.exit_code == 1, r.output
    assert "m.tir:5:12: error: " + message in r.output


def test_usual_extern_names_are_accepted(tmp_path):
    path = write(tmp_path, """
        @T.prim_func
        def f(A: T.Buffer((16,), "float32")):
            A[0] = T.call_extern("float32", "__nv_expf", A[1])
            A[1] = T.call_pure_extern("float32", "llvm.fabs.f32", A[2])
            A[2] = T.call_extern("float32", "_ZN3foo3barEf", A[3])
        """)
    assert tirc("check", path).exit_code == 0


def test_diagnostic_type_is_public():
    assert issubclass(Diagnostic, Exception)
