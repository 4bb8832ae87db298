"""``--abi c`` (MakeCAPI, plain C functions and ``<NAME>_last_error``), ``OUT/NAME.h`` for
both ABIs, and the ``OUT/NAME.json`` manifest. No GPU needed."""
from __future__ import annotations

import json
import shutil
import subprocess
import textwrap

import pytest
from click.testing import CliRunner
from conftest import ROOT

from tirc.build.stages import build
from tirc.build.options import bind_target_from
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.ir.c_names import c_identifier
from tirc.build.header import make_header
from tirc.ir.describe import c_type
from tirc.ir.dtype import DataType
from tirc.ir.equal import assert_structural_equal
from tirc.ir.printer import print_module
from tirc.build.manifest import manifest, manifest_json
from tirc.frontend.parse import parse
from tirc.passes.pipeline import (
    PIPELINE,
    PassContext,
    pass_names,
    pipeline,
    run_pipeline,
)
from tirc.passes.prepare.verify import verify

SAMPLES = ROOT / "samples"
HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
DEMO = HEAD + textwrap.dedent("""
    @I.ir_module
    class Module:
        @T.prim_func
        def add(A: T.Buffer(("n",), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((n,), "float32")):
            n = T.int32()
            for i in range(n):
                C[i] = A[i] + B[i]

        @T.prim_func
        def scale(A: T.Buffer((m,), "float32"), m: T.int32, s: T.float32):
            for i in T.parallel(m):
                A[i] = A[i] * s

        @T.prim_func
        def total(A: T.Buffer((16,), "int32")) -> T.int32:
            acc = T.alloc_buffer((1,), "int32")
            acc[0] = 0
            for i in range(16):
                acc[0] = acc[0] + A[i]
            return acc[0]

        @T.prim_func
        def mean(A: T.Buffer(("k", 4), "float64")) -> T.float64:
            k = T.int64()
            acc = T.alloc_buffer((1,), "float64")
            acc[0] = T.float64(0)
            for i, j in T.grid(k, 4):
                acc[0] = acc[0] + A[i, j]
            return acc[0] / T.Cast("float64", k * T.int64(4))

        @T.prim_func(private=True)
        def helper(x: T.int32) -> T.int32:
            return x + 1
    """)
APP = r"""
#include <stdio.h>
#include "demo.h"
int main(void) {
    float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50}, c[5] = {0};
    int rc = add(a, b, c, 5);
    printf("add %d %g %g %g %g %g\n", rc, c[0], c[1], c[2], c[3], c[4]);
    rc = scale(a, 5, 2.0f);
    printf("scale %d %g %g %g %g %g\n", rc, a[0], a[1], a[2], a[3], a[4]);
    int32_t v[16], t = -1;
    for (int i = 0; i < 16; i++) v[i] = i;
    rc = total(v, &t);
    printf("total %d %d\n", rc, t);
    double m[8] = {1, 2, 3, 4, 5, 6, 7, 8}, mu = 0;
    rc = mean(m, 2, &mu);
    printf("mean %d %g\n", rc, mu);
    printf("before [%s]\n", demo_last_error());
    rc = add(a, NULL, c, 5);
    printf("null %d [%s]\n", rc, demo_last_error());
    rc = add(NULL, NULL, NULL, 0);
    printf("empty %d\n", rc);
    rc = add(a, b, c, -1);
    printf("negative %d [%s]\n", rc, demo_last_error());
    rc = total(v, NULL);
    printf("no_out %d [%s]\n", rc, demo_last_error());
    return 0;
}
"""
EXPECTED = """\
add 0 11 22 33 44 55
scale 0 2 4 6 8 10
total 0 120
mean 0 4.5
before []
null -1 [ValueError: argument 'B' of add is a NULL pointer]
empty 0
negative -1 [ValueError: size 'n' of add is negative]
no_out -1 [ValueError: the result pointer 'out' of total is NULL]
"""
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


def lowered(text: str, target: str = "llvm", abi: str = "c"):
    mod = parse(text, "demo.tir")
    return mod, run_pipeline(mod, PassContext(bind_target_from(target, None), abi))


# -- the pass and the pipeline ----------------------------------------------------------------
def test_pipeline_swaps_make_packed_api_for_make_c_api():
    c = pass_names("c")
    assert "MakeCAPI" in c and "MakePackedAPI" not in c
    assert c.index("MakeCAPI") == pass_names().index("MakePackedAPI")
    assert pass_names() == [p.name for p in PIPELINE]
    names = [p.name for p in pipeline("c")]
    for i, p in enumerate(pipeline("c")):
        for req in p.requires:
            assert req in names[:i], f"{p.name} requires {req}"
    assert set(pass_names(None)) == set(pass_names()) | {"MakeCAPI"}
    with pytest.raises(ValueError, match="unknown ABI"):
        pipeline("fortran")


def test_make_c_api_signatures():
    _, mod = lowered(DEMO)
    verify(mod)
    assert_structural_equal(parse(print_module(mod), "printed.tir"), mod)
    sig = {n: [(p.name, str(p.dtype), str(p.ptr.dtype) if p.ptr else None) for p in f.params]
           for n, f in mod.functions.items() if f.attrs.get("tirc.c_api")}
    assert sig == {
        "add": [("A", "handle", "float32"), ("B", "handle", "float32"), ("C", "handle", "float32"),
                ("n", "int64", None)],
        "scale": [("A", "handle", "float32"), ("m", "int32", None), ("s", "float32", None)],
        "total": [("A", "handle", "int32"), ("out", "handle", "int32")],
        "mean": [("A", "handle", "float64"), ("k", "int64", None), ("out", "handle", "float64")],
    }
    for n in sig:
        f = mod.functions[n]
        assert str(f.ret_type) == "int32" and "global_symbol" not in f.attrs
        assert f.buffer_map == () and "calling_conv" not in f.attrs
    assert not mod.functions["helper"].attrs.get("tirc.c_api")


def test_make_c_api_diagnostics():
    main = HEAD + "@T.prim_func\ndef main(A: T.Buffer((4,), \"float32\")):\n    A[0] = T.float32(1)\n"
    with pytest.raises(Diagnostic, match="C symbol 'main'"):
        lowered(main)
    renamed = main.replace('A[0] =', 'T.func_attr({"global_symbol": "fill"})\n    A[0] =')
    _, mod = lowered(renamed)
    assert mod.functions["main"].attrs["global_symbol"] == "fill"
    half = HEAD + "@T.prim_func\ndef f(A: T.Buffer((4,), \"float16\"), x: T.float16):\n    A[0] = x\n"
    with pytest.raises(Diagnostic, match="float16 cannot be passed through the C API"):
        lowered(half)


# -- a C program against NAME.h and NAME.o ----------------------------------------------------
@needs_cc
def test_c_program_calls_the_c_abi(tmp_path):
    result = build(DEMO, "llvm", None, tmp_path, "demo", abi="c")
    assert [p.name for p in result.files] == ["demo.o", "demo.h", "demo.json"]
    (tmp_path / "app.c").write_text(APP)
    exe = tmp_path / "app"
    subprocess.run(["cc", "-Wall", "-Werror", "-o", str(exe), str(tmp_path / "app.c"),
                    str(tmp_path / "demo.o"), "-lm", "-lgomp"], check=True, cwd=tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    assert out.stdout == EXPECTED


@needs_cc
@pytest.mark.parametrize("abi", ["c", "packed"])
def test_header_compiles_as_c_and_cxx(tmp_path, abi):
    build(DEMO, "llvm", None, tmp_path, "demo", abi=abi)
    header = tmp_path / "demo.h"
    subprocess.run(["cc", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic", "-std=c99",
                    "-x", "c", str(header)], check=True)
    if CXX is not None:
        subprocess.run([CXX, "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c++",
                        str(header)], check=True)
        src = tmp_path / "use.cc"  # C++ linkage of the declarations: extern "C" guards
        src.write_text('#include "demo.h"\nint main() { return 0; }\n')
        subprocess.run([CXX, "-c", "-o", str(tmp_path / "use.o"), str(src)], check=True)


def test_header_text():
    _, mod = lowered(DEMO)
    h = make_header("demo", mod.facts, "c")
    assert "#include <stdint.h>" in h and 'extern "C" {' in h
    assert "const char* demo_last_error(void);" in h
    assert "int32_t add(float* A, float* B, float* C, int64_t n);" in h
    assert "int32_t scale(float* A, int32_t m, float s);" in h
    assert "int32_t total(int32_t* A, int32_t* out);" in h
    assert "int32_t mean(double* A, int64_t k, double* out);" in h
    assert '/* add(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), C: ' in h
    assert " *   A: float64[k, 4], data pointer to the first element" in h
    assert "helper" not in h
    _, packed = lowered(DEMO, abi="packed")
    h = make_header("demo", packed.facts, "packed")
    assert ("int __tvm_ffi_add(void* self, const void* args, int32_t num_args, void* result);"
            in h)
    assert "last_error" not in h and '"demo.so"' in h


def test_c_names_and_types():
    assert c_identifier("my-mod.v2") == "my_mod_v2" and c_identifier("2x") == "_2x"
    assert [c_type(DataType(d)) for d in ("int8", "uint64", "float32", "float64", "bool",
                                          "bfloat16", "float8_e4m3fn")] == \
        ["int8_t", "uint64_t", "float", "double", "bool", "uint16_t", "uint8_t"]


# -- the manifest -----------------------------------------------------------------------------
def test_manifest_of_a_cpu_module(tmp_path):
    build(DEMO, "llvm", None, tmp_path, "demo", abi="c")
    data = json.loads((tmp_path / "demo.json").read_text())
    assert data["abi"] == "c" and data["module"] == "demo" and data["kernels"] == []
    assert json.loads(data["host_target"])["kind"] == "llvm"
    fns = {f["name"]: f for f in data["functions"]}
    assert list(fns) == ["add", "scale", "total", "mean"]
    assert fns["add"]["symbol"] == "add" and fns["add"]["target_summary"] == "llvm"
    assert fns["add"]["declaration"] == "int32_t add(float* A, float* B, float* C, int64_t n)"
    assert fns["add"]["params"][0] == {"name": "A", "kind": "buffer", "dtype": "float32",
                                       "shape": ["n"], "written": False}
    assert [p["written"] for p in fns["add"]["params"][:3]] == [False, False, True]
    assert fns["mean"]["params"][0]["shape"] == ["k", 4] and fns["mean"]["returns"] == "float64"
    assert fns["scale"]["params"][1:] == [{"name": "m", "kind": "scalar", "dtype": "int32"},
                                          {"name": "s", "kind": "scalar", "dtype": "float32"}]
    build(DEMO, "llvm", None, tmp_path / "p", "demo")
    packed = json.loads((tmp_path / "p" / "demo.json").read_text())
    assert packed["abi"] == "packed" and packed["functions"][0]["symbol"] == "__tvm_ffi_add"
    assert "declaration" not in packed["functions"][0]


def test_manifest_of_cuda_kernels_from_the_lowered_module():
    """The manifest is a function of the facts the passes recorded with the module."""
    text = (SAMPLES / "vector_add.tir").read_text()
    _, mod = lowered(text, "cuda -arch=sm_90", abi="packed")
    data = manifest(mod.facts, "vector_add", "packed")
    (k,) = data["kernels"]
    assert k["name"] == k["symbol"] == "vector_add_kernel"
    assert k["target_summary"] == "cuda -arch=sm_90" and json.loads(k["target"])["arch"] == "sm_90"
    assert k["grid"] == ["(n + 255) // 256", 1, 1] and k["block"] == [256, 1, 1]
    assert k["dynamic_shared_memory"] == 0
    assert k["launch_params"] == ["blockIdx.x", "threadIdx.x"]
    assert k["launches"] == [{"caller": "vector_add", "grid": ["(n + 255) // 256", 1, 1],
                              "block": [256, 1, 1], "dynamic_shared_memory": 0}]
    assert [p["name"] for p in k["params"]][-1] == "n"
    assert {p.get("points_to") for p in k["params"][:3]} == {"float32"}
    (f,) = data["functions"]
    assert f["symbol"] == "__tvm_ffi_vector_add" and f["target_summary"] == "cuda -arch=sm_90 (host llvm)"


DYN_SHARED = """# from tvm.script import tirx as T
@T.prim_func
def dyn(A: T.Buffer((4096,), "float32")):
    for bx in T.thread_binding(16, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            tile = T.alloc_buffer((256,), scope="shared.dyn")
            tile[tx] = A[bx * 256 + tx]
            T.tvm_storage_sync("shared")
            A[bx * 256 + tx] = tile[255 - tx]
"""


def test_manifest_dynamic_shared_memory_and_device_only_build(tmp_path):
    src = SAMPLES / "two_kernels.tir"
    build(src.read_text(), "cuda -arch=sm_90", None, tmp_path, "two_kernels", device_only=True)
    data = json.loads((tmp_path / "two_kernels.json").read_text())
    sizes = [(k["name"], k["grid"], k["block"], k["dynamic_shared_memory"], k["image"])
             for k in data["kernels"]]
    # both kernels keep their static shared buffers: no dynamic shared memory
    assert sizes == [("two_kernels_kernel", [32, 1, 1], [128, 1, 1], 0, "two_kernels.ptx"),
                     ("two_kernels_kernel_1", [16, 1, 1], [256, 1, 1], 0, "two_kernels.ptx")]
    assert not (tmp_path / "two_kernels.h").exists()
    build(DYN_SHARED, "cuda -arch=sm_90", None, tmp_path, "dyn", device_only=True)
    kernel = json.loads((tmp_path / "dyn.json").read_text())["kernels"][0]
    assert kernel["dynamic_shared_memory"] == 1024
    assert kernel["launch_params"][-1] == "tirx.use_dyn_shared_memory"


def test_manifest_multi_target_names_each_image(tmp_path):
    src = SAMPLES / "multi_target.tir"
    build(src.read_text(), out_dir=tmp_path, name="multi_target", filename=str(src),
          device_only=True)
    data = json.loads((tmp_path / "multi_target.json").read_text())
    images = {k["name"]: (k["target_summary"], k["image"]) for k in data["kernels"]}
    assert images == {"scale_sm80_kernel": ("cuda -arch=sm_80", "multi_target.sm_80.ptx"),
                      "scale_sm90_kernel": ("cuda -arch=sm_90", "multi_target.sm_90.ptx")}


def test_header_and_manifest_are_deterministic(tmp_path):
    for d in ("a", "b"):
        build(DEMO, "llvm", None, tmp_path / d, "demo", abi="c")
    for f in ("demo.h", "demo.json", "demo.o"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    text = (tmp_path / "a" / "demo.json").read_text()
    assert text == manifest_json(json.loads(text)) and text.endswith("}\n")
    assert str(tmp_path) not in text and str(tmp_path) not in (tmp_path / "a" / "demo.h").read_text()


# -- the command line -------------------------------------------------------------------------
def test_cli_abi_flag(tmp_path):
    src = tmp_path / "demo.tir"
    src.write_text(DEMO)
    r = CliRunner().invoke(cli, ["build", str(src), "--target", "llvm", "--abi", "c", "-o",
                                 str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["demo.h", "demo.json", "demo.o"]
    assert "demo_last_error" in (tmp_path / "out" / "demo.h").read_text()
    r = CliRunner().invoke(cli, ["build", str(src), "--abi", "fortran", "-o", str(tmp_path)])
    assert r.exit_code == 2
    r = CliRunner().invoke(cli, ["lower", str(src), "--abi", "c", "--stop-after", "MakeCAPI"])
    assert r.exit_code == 0 and '"tirc.c_api": True' in r.output
    r = CliRunner().invoke(cli, ["lower", str(src), "--stop-after", "MakeCAPI"])
    assert r.exit_code == 2 and "does not run with --abi packed" in r.output
    r = CliRunner().invoke(cli, ["passes"])
    assert "MakeCAPI (--abi c)" in r.output


@needs_cc
def test_cuda_c_abi_object_links_without_tvm_ffi(tmp_path):
    """A C-ABI host object that launches kernels needs no tvm-ffi symbol: a C program links
    it with libc, libdl and libpthread; NULL arguments fail before the driver is touched."""
    src = SAMPLES / "vector_add.tir"
    build(src.read_text(), "cuda -arch=sm_90", None, tmp_path, "vector_add", abi="c")
    h = (tmp_path / "vector_add.h").read_text()
    assert "int32_t vector_add(float* A, float* B, float* C, int64_t n);" in h
    (tmp_path / "app.c").write_text(
        '#include <stdio.h>\n#include "vector_add.h"\n'
        'int main(void) { float a[4] = {0}; int rc = vector_add(a, 0, a, 4);\n'
        ' printf("%d [%s]\\n", rc, vector_add_last_error()); return 0; }\n')
    subprocess.run(["cc", "-Wall", "-Werror", "-o", "app", "app.c", "vector_add.o", "-ldl",
                    "-lpthread"], check=True, cwd=tmp_path)
    out = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True, check=True)
    assert out.stdout == "-1 [ValueError: argument 'B' of vector_add is a NULL pointer]\n"
