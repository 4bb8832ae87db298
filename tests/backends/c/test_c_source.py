"""The ``c`` host target (tirc/backends/c_source*.py): C99 source compiled by the system's
C compiler, run through tvm-ffi (packed ABI) and ctypes (C ABI).

What it must compute is fixed by others: TVM 0.27's outputs for the block-level corpus
(tests/corpus/sblock, printed and run by TVM), the IR evaluator on generated modules,
and the LLVM host backend's behaviour (errors, messages) on the same modules."""
from __future__ import annotations

import ctypes
import json
import re
import shutil
import subprocess
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ROOT, check_expected_outputs, TESTS
from tirc.api import build_and_load
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic, SourceFile
from tirc.driver import cli
from tirc.frontend.parse import parse
from tirc.testing.differential import compare_args, check_module, make_inputs, public_functions
from tirc.testing.evaluate import Unsupported
from tirc.testing.gen import generate

tvm_ffi = pytest.importorskip("tvm_ffi")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
SBLOCK = ROOT / "tests" / "corpus" / "sblock"
SBLOCK_CPU = [e for e in json.loads((SBLOCK / "index.json").read_text()) if e["target"] == "llvm"]


TVM_TESTS = ROOT / "tests" / "corpus" / "tvm_tests"
_TVM_TESTS_INDEX = json.loads((TVM_TESTS / "index.json").read_text())
# an llvm target, with its nested host dict if it has one
_LLVM_TARGET = re.compile(r'T\.target\(\{(?:[^{}]|\{[^{}]*\})*"kind": "llvm"(?:[^{}]|\{[^{}]*\})*\}\)')
# CPU modules of TVM's unit tests (tests/corpus/tvm_tests) that tirc builds for this machine
TVM_TESTS_CPU = [n for n, e in sorted(_TVM_TESTS_INDEX.items())
                 if e["target"] == "llvm" and not e.get("host")
                 and n not in ("test_cpu_reduction__2.tir", "test_cpu_reduction__4.tir",
                               "test_target_codegen_llvm__1.tir")]


def _load(text: str, **kw):
    return build_and_load(SourceFile("t.tir", text), "c", **kw).module


def _arr(a):
    return tvm_ffi.from_dlpack(a)


# -- TVM's outputs ------------------------------------------------------------------------
@pytest.mark.parametrize("form", [".tir", ".lowered.tir"])
@pytest.mark.parametrize("entry", SBLOCK_CPU, ids=[e["name"] for e in SBLOCK_CPU])
def test_tvm_corpus_cpu_module_as_c_gives_tvms_outputs(entry, form, tmp_path):
    """The block-level module as TVM printed it (and TVM's own lowering of it, its llvm
    targets made c), built as C source, computes what TVM's build computed on the same
    seeded inputs."""
    text = _LLVM_TARGET.sub('T.target({"kind": "c"})', (SBLOCK / f"{entry['name']}{form}").read_text())
    result = build(text, "c", None, tmp_path, "m", shared=True)
    assert [p.name for p in result.files][:1] == ["m.c"]
    assert not (tmp_path / "m.o").exists()
    check_expected_outputs(SBLOCK, entry, tmp_path / "m.so")


# outputs whose values are undefined: TVM's tests check these modules' IR, not their values
UNDEFINED_OUTPUTS = {  # module: (function, parameter, why)
    f"test_tir_schedule_fuse_reduction_epilogue{kind}__3.tir":
        (f"matmul_{fn}_multiple_epilogue_before", "E", "E is computed from temp[0], an "
         "allocation nothing writes")
    for kind, fn in (("", "bias"), ("_clipping", "clipping"), ("_relu", "bias_relu"))}


@pytest.mark.parametrize("name", TVM_TESTS_CPU)
def test_tvm_unit_test_module_as_c_computes_as_llvm(name, tmp_path):
    """The CPU modules TVM 0.27 printed in its own unit tests, with their llvm targets
    made c: every public function gives the values and errors of the llvm build on the
    same random inputs."""
    text = (TVM_TESTS / name).read_text()
    libs = {}
    for target in ("llvm", "c"):
        body = _LLVM_TARGET.sub(f'T.target({{"kind": "{target}"}})', text)
        build(body, target, None, tmp_path / target, "m", shared=True, filename=name)
        libs[target] = tvm_ffi.load_module(str(tmp_path / target / "m.so"))
    mod = parse(_LLVM_TARGET.sub('T.target({"kind": "c"})', text), name)
    assert "#include <math.h>" in (tmp_path / "c" / "m.c").read_text()
    rng = np.random.default_rng(0)
    for fname in public_functions(mod):
        try:
            args = make_inputs(mod[fname], rng)
        except Unsupported:
            continue
        results = []
        for target in ("llvm", "c"):
            actual = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            try:
                value = libs[target][fname](*actual)
                results.append((actual, value, None))
            except Exception as e:  # noqa: BLE001 - the error is what is compared
                results.append((actual, None, f"{type(e).__name__}: {e}"))
        (llvm_args, llvm_value, llvm_error), (c_args, c_value, c_error) = results
        if UNDEFINED_OUTPUTS.get(name, (None,))[0] == fname:
            i = [p.name for p in mod[fname].params].index(UNDEFINED_OUTPUTS[name][1])
            llvm_args[i] = c_args[i]
        assert c_error == llvm_error, fname
        assert compare_args(mod[fname], llvm_args, c_args) == "", fname
        assert c_value == llvm_value or np.isclose(c_value, llvm_value), fname


# -- the evaluator, on generated modules ----------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 3, 81, 193, 264, *range(100, 112)])
def test_generated_modules_as_c_match_the_evaluator(seed, tmp_path):
    """Calls of private functions as statements (their errors checked
    after the statement); 81, 193, 264: float16 constants rounded to float16."""
    result = check_module(generate(seed, 8), tmp_path, seed, target="c")
    assert result.status != "build_error", result.detail
    bad = [f"{f.name}: {f.status}: {f.detail}" for f in result.funcs
           if f.status in ("mismatch", "error")]
    assert not bad, "\n".join(bad)


# -- float16 ------------------------------------------------------------------------------
def test_float16_conversions_round_as_ieee(tmp_path):
    """The file's float <-> float16 conversions against NumPy's (round to nearest even):
    every float16, the midpoints between neighbours, subnormals, overflow, NaN."""
    from tirc.backends.c.text import BASE, HALF
    program = BASE + HALF + textwrap.dedent("""
        #include <stdio.h>
        int main(void) {
          uint32_t x; float f; double d;
          while (scanf("%x", &x) == 1) {
            memcpy(&f, &x, sizeof f);
            d = (double)f * 1.0000001;
            printf("%u %u %u\\n", tirc_f16_bits(f), tirc_f16_bits(tirc_f16_value(tirc_f16_bits(f))),
                   tirc_f16_bits(tirc_f16_round_double(d)));
          }
          return 0;
        }
        """)
    (tmp_path / "h.c").write_text(program)
    subprocess.run(["cc", "-O1", "-o", str(tmp_path / "h"), str(tmp_path / "h.c"), "-lm"],
                   check=True)
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = halves[np.isfinite(halves)].astype(np.float32)
    ordered = np.unique(np.abs(finite))
    mids = ((ordered[1:].astype(np.float64) + ordered[:-1]) / 2).astype(np.float32)
    rng = np.random.default_rng(0)
    values = np.concatenate([halves.astype(np.float32), mids, -mids,
                             rng.standard_normal(20000).astype(np.float32) * 1000,
                             np.array([65504, 65519.99, 65520, 1e30, -1e30, 5.96e-8, 2.98e-8,
                                       2.99e-8, np.inf, -np.inf, np.nan], np.float32)])
    words = values.view(np.uint32)
    out = subprocess.run([str(tmp_path / "h")], input=" ".join(f"{w:x}" for w in words),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    got = np.array([[int(v) for v in line.split()] for line in out if line], np.uint32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = values.astype(np.float16).view(np.uint16).astype(np.uint32)
    nan = np.isnan(values)
    assert np.array_equal(got[~nan, 0], want[~nan])
    assert np.array_equal(got[~nan, 1], want[~nan])  # bits -> value -> bits is exact
    assert all((g & 0x7C00) == 0x7C00 and (g & 0x3FF) for g in got[nan, 0])
    doubles = (values.astype(np.float64) * 1.0000001)[~nan]
    with np.errstate(over="ignore"):
        assert np.array_equal(got[~nan, 2], doubles.astype(np.float16).view(np.uint16))


# -- errors and ABIs ------------------------------------------------------------------------
CHECKS = HEAD + textwrap.dedent("""
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def checked(A: T.Buffer((4,), "int32"), i: T.int32) -> T.int32:
            assert i < 4, "index out of range"
            return A[i]

        @T.prim_func
        def divide(A: T.Buffer((4,), "int32"), d: T.int32):
            for i in range(4):
                A[i] = A[i] // d

        @T.prim_func
        def pick(A: T.Buffer((4,), "int32"), B: T.Buffer((1,), "int32"), i: T.int32):
            B[0] = Module.checked(A, i) + 1

        @T.prim_func
        def big(A: T.Buffer((4,), "float32"), n: T.int32):
            tmp = T.alloc_buffer((n,), "float32")
            for i in range(n):
                tmp[i] = T.float32(i)
            for i in range(4):
                A[i] = tmp[i % n]
    """)


def _run_both(text: str, fname: str, *args):
    """Call ``fname`` built for llvm and for c: (values after, error) for each."""
    out = []
    for target in ("llvm", "c"):
        lib = build_and_load(SourceFile("t.tir", text), target).module
        arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            lib[fname](*[_arr(a) if isinstance(a, np.ndarray) else a for a in arrays])
            out.append(([a.tolist() for a in arrays if isinstance(a, np.ndarray)], None))
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            out.append((None, f"{type(e).__name__}: {e}"))
    return out


@pytest.mark.parametrize("call", [
    ("divide", np.array([7, -7, 8, -9], "int32"), 2),
    ("divide", np.array([7, -7, 8, -9], "int32"), 0),  # ZeroDivisionError
    ("divide", np.array([-2**31, 4, 0, 1], "int32"), -1),  # OverflowError
    ("pick", np.arange(4, dtype="int32"), np.zeros(1, "int32"), 2),
    ("pick", np.arange(4, dtype="int32"), np.zeros(1, "int32"), 9),  # the private check fails
    ("big", np.zeros(4, "float32"), 3),
    ("big", np.zeros(4, "float32"), 3000),  # on the heap
    ("divide", np.zeros(3, "int32"), 1),  # the argument check
], ids=["div", "div0", "overflow", "pick", "pick_fails", "big", "big_heap", "shape"])
def test_c_source_computes_and_fails_as_the_llvm_backend(call):
    llvm, c = _run_both(CHECKS, *call)
    assert c == llvm
    if call[-1] in (0, -1, 9):
        assert c[1] is not None


def test_c_abi_and_last_error(tmp_path):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def scale(A: T.Buffer((n,), "float32"), n: T.int32, s: T.float32, d: T.int32):
            for i in T.parallel(n):
                A[i] = A[i] * s + T.Cast("float32", i // d)
        """)
    build(text, "c", None, tmp_path, "demo", abi="c", shared=True)
    src = (tmp_path / "demo.c").read_text()
    assert "TVMFFI" not in src  # the C ABI needs nothing of tvm-ffi
    assert "int32_t scale(float* A, int32_t n, float s, int32_t d)" in src
    assert "int32_t scale(float* A, int32_t n, float s, int32_t d);" in (tmp_path / "demo.h").read_text()
    lib = ctypes.CDLL(str(tmp_path / "demo.so"))
    lib.scale.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_float, ctypes.c_int32]
    lib.demo_last_error.restype = ctypes.c_char_p
    a = np.arange(6, dtype="float32")
    assert lib.scale(a.ctypes.data, 6, 2.0, 4) == 0
    assert a.tolist() == [0, 2, 4, 6, 9, 11]
    assert lib.demo_last_error() == b""
    assert lib.scale(a.ctypes.data, 6, 2.0, 0) == -1  # a division by zero: serial loop
    assert lib.demo_last_error() == b"ZeroDivisionError: integer division by zero in function 'scale'"
    assert lib.scale(None, 6, 2.0, 1) == -1
    assert lib.demo_last_error() == b"ValueError: argument 'A' of scale is a NULL pointer"


def test_parallel_loop_is_an_openmp_loop_when_its_body_cannot_fail(tmp_path):
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((64, 64), "float32")):
            for i in T.parallel(64):
                for j in T.vectorized(64):
                    A[i, j] = A[i, j] * T.float32(2) + T.float32(i)
        """)
    build(text, "c", None, tmp_path, "m", shared=True)
    src = (tmp_path / "m.c").read_text()
    assert src.count("#pragma omp parallel for") == 1 and "-fopenmp" in src.split("\n")[1]
    a = np.ones((64, 64), "float32")
    tvm_ffi.load_module(str(tmp_path / "m.so"))["f"](a)
    assert np.array_equal(a, 2 + np.arange(64, dtype="float32")[:, None] + np.zeros((1, 64)))


_calls: list = []


@tvm_ffi.register_global_func("tirc_test.c_source_record")
def _record(n, s, x):
    _calls.append((n, s, x))
    return 40 + n


def test_packed_call_to_the_global_registry():
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(B: T.Buffer((2,), "int32"), n: T.int32):
            B[0] = T.call_packed("tirc_test.c_source_record", n, "hello", T.float64(2.5))
            B[1] = T.call_packed("tirc_test.c_source_record", n + 1, "again", T.float64(0.5))
        """)
    lib = _load(text)
    b = np.zeros(2, "int32")
    _calls.clear()
    lib["f"](_arr(b), 3)
    assert _calls == [(3, "hello", 2.5), (4, "again", 0.5)] and b.tolist() == [43, 44]
    missing = text.replace("tirc_test.c_source_record", "tirc_test.not_registered")
    with pytest.raises(RuntimeError, match="no global function named 'tirc_test.not_registered'"):
        _load(missing)["f"](_arr(b), 3)


def test_kernel_launch_needs_the_llvm_host(tmp_path):
    text = (ROOT / "samples" / "vector_add.tir").read_text()
    with pytest.raises(Diagnostic, match="the c host target does not launch GPU kernels") as e:
        build(text, "cuda -arch=sm_90", "c", tmp_path, "m")
    assert e.value.span is not None
    assert not list(tmp_path.iterdir())


def test_float16_cast_rounds_ties_to_even():
    text = HEAD + textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((2,), "float16"), x: T.float32):
            A[0] = T.Cast("float16", x)
            A[1] = A[0] + T.float16(0.0004882812)
        """)
    a = np.zeros(2, "float16")
    _load(text)["f"](_arr(a), 1 + 2 ** -11)  # halfway between 1 and the next float16
    assert a.tolist() == [1.0, 1.0]  # 1 + 2**-11 again: to even


def test_same_input_same_source_and_cli(tmp_path):
    src = tmp_path / "mm.tir"
    src.write_text((ROOT / "samples" / "cpu_matmul.tir").read_text()
                   .replace('"target": T.target({"kind": "llvm"}), ', ""))
    runner = CliRunner()
    for out in ("a", "b"):
        r = runner.invoke(cli, ["build", str(src), "--target", "c", "-o", str(tmp_path / out)])
        assert r.exit_code == 0, r.output
    a, b = (tmp_path / "a" / "mm.c").read_bytes(), (tmp_path / "b" / "mm.c").read_bytes()
    assert a == b and sorted(p.name for p in (tmp_path / "a").iterdir()) == ["mm.c", "mm.h", "mm.json"]
    r = runner.invoke(cli, ["build", str(src), "--target", "c", "--emit", "llvm", "-o", str(tmp_path / "e")])
    assert r.exit_code != 0 and "writes mm.c, not LLVM IR" in r.output
    assert not (tmp_path / "e").exists() or not list((tmp_path / "e").iterdir())
    # the file compiles on its own with warnings as errors
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-Wno-unused-variable",
                    "-Wno-unknown-pragmas", "-fsyntax-only", str(tmp_path / "a" / "mm.c")], check=True)
