"""PTX instructions of TVM's CUDA namespaces (``T.ptx_legacy.mma``, ``T.ptx_legacy.ldmatrix``,
``T.s_tir.cp_async_raw``, ``T.ptx.cp``, ``T.ptx.add``...): the PTX tirc writes for each is
the instruction TVM's CUDA code generator writes for the same call (``ptx.cc``,
``backend/cuda/cpp/asm.py``), ptxas accepts it for the module's arch (when ptxas is
installed), and misuse is a located error."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ptxas_check, TESTS
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.ir import ptx_ops
from tirc.ir.equal import structural_equal
from tirc.ir.expr import Call
from tirc.ir.printer import print_module
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse

CORPUS = TESTS / "corpus" / "tvm_tests"
INDEX = json.loads((CORPUS / "index.json").read_text())
PTX_MODULES = sorted(n for n in INDEX if n.startswith("test_tir_ptx_"))
HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"


def _build(text: str, tmp_path, target: str = "cuda -arch=sm_80", host: str = "llvm",
           filename: str = "t.tir"):
    out = tmp_path / "out"
    result = build(text, target=target, host=host, out_dir=out, name="m", filename=filename,
                   device_format="ptx")
    return {Path(p).name: Path(p).read_text() for p in result.images.values()}


def _ptx(text: str, tmp_path, target: str = "cuda -arch=sm_80") -> str:
    images = _build(HEAD + textwrap.dedent(text), tmp_path, target)
    assert len(images) == 1, images
    return next(iter(images.values()))


def filecheck(text: str, checks: str, tmp_path) -> None:
    check_file = tmp_path / "checks.txt"
    check_file.write_text(textwrap.dedent(checks))
    proc = subprocess.run([sys.executable, "-m", "filecheck", str(check_file)], input=text,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n--- PTX ---\n" + text


def _error(text: str, tmp_path, target: str = "cuda -arch=sm_80", host: str = "llvm") -> Diagnostic:
    with pytest.raises(Diagnostic) as info:
        _build(HEAD + textwrap.dedent(text), tmp_path, target, host)
    err = info.value
    assert err.span is not None and err.span.file == "t.tir", str(err)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    return err


def _line_of(text: str, needle: str) -> int:
    lines = (HEAD + textwrap.dedent(text)).splitlines()
    return next(i + 1 for i, line in enumerate(lines) if needle in line)


# -- the corpus modules ---------------------------------------------------------------------
def _corpus_ptx(name: str, tmp_path) -> str:
    entry = INDEX[name]
    path = CORPUS / name
    result = build(path.read_text(), target=entry["target"], host=entry["host"], out_dir=tmp_path,
                   name="m", filename=str(path), device_format="ptx")
    (image,) = result.images.values()
    return Path(image).read_text()


def _builds(name: str) -> bool:
    from test_tvm_test_corpus import EXPECTED_ERROR
    return name not in EXPECTED_ERROR


@pytest.mark.parametrize("name", [n for n in PTX_MODULES if _builds(n)])
def test_corpus_module_ptx_assembles(name, tmp_path):
    """Each PTX module of TVM's tests that tirc builds gives PTX ptxas accepts for the
    module's arch, holding the instruction the module calls."""
    ptx = _corpus_ptx(name, tmp_path)
    arch = INDEX[name]["target"].split("-arch=")[1].split()[0]
    kind = name[len("test_tir_ptx_"):].split("__")[0]
    assert {"mma": "mma.sync.aligned.", "ldmatrix": "ldmatrix.sync.aligned.", "cp_async": "cp.async.",
            "scalar_f32_math": "add.rn.f32"}[kind] in ptx
    if not ptxas_check(ptx, arch, tmp_path):
        pytest.skip("ptxas is not installed")


@pytest.mark.parametrize("name", [n for n in PTX_MODULES if _builds(n)])
def test_corpus_module_prints_back(name):
    """The calls print as TVM prints them and parse back to the same module."""
    mod = parse((CORPUS / name).read_text(), name)
    again = parse(print_module(mod), name)
    assert structural_equal(mod, again)


# -- the instruction of each call, as TVM writes it ----------------------------------------
MMA = """
@T.prim_func
def main(A: T.Buffer((256,), "float16"), B: T.Buffer((128,), "float16"), C: T.Buffer((128,), "float32")):
    with T.launch_thread("blockIdx.x", 1) as bx:
        Accum = T.alloc_local((4,), "float32")
        MultiA = T.alloc_local((8,), "float16")
        MultiB = T.alloc_local((4,), "float16")
        with T.launch_thread("threadIdx.x", 32) as tx:
            for i in range(8):
                MultiA[i] = A[tx * 8 + i]
            for i in range(4):
                MultiB[i] = B[tx * 4 + i]
                Accum[i] = T.float32(0.0)
            T.ptx_legacy.mma("m16n8k16", "row", "col", "float16", "float16", "float32", MultiA.data, 0, MultiB.data, 0, Accum.data, 0, T.bool(False))
            for i in range(4):
                C[tx * 4 + i] = Accum[i]
"""


def test_mma_m16n8k16_f16_f32(tmp_path):
    # TVM (ptx.cc): "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" "{%0, %1, %2, %3},
    # {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};": D and C four f32 registers, A
    # four and B two 32-bit registers of f16 pairs
    ptx = _ptx(MMA, tmp_path)
    filecheck(ptx, r"""
        CHECK: .version 7.0
        CHECK: .target sm_80
        CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {[[D0:%r[0-9]+]], [[D1:%r[0-9]+]], [[D2:%r[0-9]+]], [[D3:%r[0-9]+]]}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
        CHECK: st.global.{{.*}}[[D0]]
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


def test_mma_offsets_count_elements_of_the_pointer_type(tmp_path):
    """An mma operand's offset counts elements of its buffer's dtype (C's pointer
    arithmetic in TVM's code): offset 2 of a float16x4 buffer is 16 bytes on."""
    text = MMA.replace('MultiA = T.alloc_local((8,), "float16")', 'MultiA = T.alloc_local((4,), "float16x4")')
    text = text.replace("MultiA[i] = A[tx * 8 + i]", "MultiA[i // 4] = T.Broadcast(A[tx * 8 + i], 4)")
    text = text.replace("MultiA.data, 0,", "MultiA.data, 2,")
    ptx = _ptx(text, tmp_path)
    assert "mma.sync.aligned.m16n8k16" in ptx
    mod = parse(HEAD + textwrap.dedent(text), "t.tir")
    (call,) = [n for n in walk(mod.functions["main"].body) if isinstance(n, Call) and ptx_ops.is_ptx(n.op)]
    d = ptx_ops.decode(call)
    assert ptx_ops.elem_bytes(d.a.pointer) == 8 and d.a.count == 4


LDMATRIX = """
@T.prim_func
def main(A: T.Buffer((256,), "float16"), B: T.Buffer((256,), "float16")):
    with T.launch_thread("blockIdx.x", 1) as bx:
        A_shared = T.alloc_shared((256,), "float16")
        A_local = T.alloc_local((8,), "float16")
        with T.launch_thread("threadIdx.x", 32) as tx:
            for i in range(8):
                A_shared[i * 32 + tx] = A[i * 32 + tx]
            T.ptx_legacy.ldmatrix(T.bool(True), 4, ".b16", A_local.data, 0, A_shared.data, tx * 8)
            for i in range(8):
                B[tx * 8 + i] = A_local[i]
"""


def test_ldmatrix_x4_trans(tmp_path):
    # TVM (ptx.cc): "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" "{%0, %1, %2, %3}, [%4];"
    # with the address __cvta_generic_to_shared(smem + offset) in a 32-bit register
    ptx = _ptx(LDMATRIX, tmp_path)
    filecheck(ptx, r"""
        CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%r{{[0-9]+}}];
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


def test_ldmatrix_on_sm75_gets_ptx_65(tmp_path):
    """ldmatrix came with PTX ISA 6.5; sm_75's own version is 6.3, so the module says 6.5."""
    ptx = _ptx(LDMATRIX, tmp_path, "cuda -arch=sm_75")
    assert ".version 6.5" in ptx and ".target sm_75" in ptx
    ptxas_check(ptx, "sm_75", tmp_path)


CP_ASYNC = """
@T.prim_func
def main(A: T.Buffer((4096,), "float16"), B: T.Buffer((4096,), "float16")):
    with T.launch_thread("blockIdx.x", 1) as bx:
        A_shared = T.alloc_shared((4096,), "float16")
        with T.launch_thread("threadIdx.x", 32) as tx:
            for i in range(16):
                T.s_tir.cp_async_raw("float16", T.tvm_access_ptr(T.type_annotation("float16"), A_shared.data, tx * 128 + i * 8, 1, 1), 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 128 + i * 8, 1, 1), 0, SIZE)
            T.ptx.cp("async", "commit_group", "")
            T.ptx.cp(0, "async", "wait_group", "")
            for i in range(128):
                B[tx * 128 + i] = A_shared[tx * 128 + i]
"""


def test_cp_async_16_bytes(tmp_path):
    # TVM (asm.py, ptx_cp_async_legacy_cg_16_1_1): asm volatile("cp.async.cg.shared.global
    # [%0], [%1], %2;" :: "r"(dst_addr), "l"(src_p), "n"(16)), then "cp.async.commit_group;"
    # and "cp.async.wait_group 0;"
    ptx = _ptx(CP_ASYNC.replace("SIZE", "16"), tmp_path)
    filecheck(ptx, r"""
        CHECK: cp.async.cg.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16;
        CHECK: cp.async.commit_group;
        CHECK: cp.async.wait_group 0;
        CHECK: ld.shared
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


def test_cp_async_4_bytes_uses_ca(tmp_path):
    ptx = _ptx(CP_ASYNC.replace("SIZE", "4").replace("i * 8", "i * 2"), tmp_path)
    assert "cp.async.ca.shared.global [%r" in ptx and "], 4;" in ptx
    ptxas_check(ptx, "sm_80", tmp_path)


def test_cp_async_with_predicate_zero_fills(tmp_path):
    # TVM's predicated helper: the copy under @p, a zero store under @!p
    text = CP_ASYNC.replace("SIZE)", "16, tx < 16)")
    ptx = _ptx(text, tmp_path)
    filecheck(ptx, r"""
        CHECK: @p cp.async.cg.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16;
        CHECK-SAME: @!p st.shared.v4.u32 [%r{{[0-9]+}}], {[[Z:%r[0-9]+]], [[Z]], [[Z]], [[Z]]};
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


def test_scalar_float_instructions(tmp_path):
    text = """
    @T.prim_func
    def main(A: T.Buffer((32,), "float64"), B: T.Buffer((32,), "float64"), C: T.Buffer((32,), "float64")):
        with T.launch_thread("blockIdx.x", 1) as bx:
            tx = T.launch_thread("threadIdx.x", 32)
            T.ptx.sub(C[tx], A[tx], B[tx], "rz", "", "", "f64", "", "")
            T.ptx.min(C[tx], C[tx], B[tx], "", "", "", "", "", "f64", "")
    """
    ptx = _ptx(text, tmp_path)
    filecheck(ptx, r"""
        CHECK: sub.rz.f64 [[D:%(rd|fd)[0-9]+]], %{{(rd|fd)[0-9]+}}, %{{(rd|fd)[0-9]+}};
        CHECK: st.global.b64 {{.*}}[[D]]
        CHECK: min.f64 %{{(rd|fd)[0-9]+}}, [[D]], %{{(rd|fd)[0-9]+}};
        """, tmp_path)
    ptxas_check(ptx, "sm_80", tmp_path)


# -- misuse: located errors -----------------------------------------------------------------
def test_ldmatrix_needs_sm75(tmp_path):
    err = _error(LDMATRIX, tmp_path, "cuda -arch=sm_70")
    assert "T.ptx_legacy.ldmatrix (ldmatrix) needs sm_75 or newer, and the target's arch is sm_70" in err.message
    assert err.span.line == _line_of(LDMATRIX, "T.ptx_legacy.ldmatrix")


def test_cp_async_needs_sm80_on_every_arch_of_the_target(tmp_path):
    err = _error(CP_ASYNC.replace("SIZE", "16"), tmp_path, "cuda -arch=sm_75,sm_80")
    assert "T.s_tir.cp_async_raw (cp.async) needs sm_80 or newer, and the target's arch is sm_75" in err.message


def test_mma_shape_needs_its_arch(tmp_path):
    err = _error(MMA, tmp_path, "cuda -arch=sm_75")
    assert "(mma.m16n8k16.f16) needs sm_80 or newer" in err.message
    assert err.span.line == _line_of(MMA, "T.ptx_legacy.mma")


def test_ptx_call_on_a_cpu_target(tmp_path):
    text = """
    @T.prim_func
    def main(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
        for i in range(32):
            T.ptx.add(B[i], A[i], A[i], "rn", "", "", "f32", "", "")
    """
    err = _error(text, tmp_path, target="llvm", host=None)
    assert "T.ptx.add is a PTX instruction of CUDA device code and cannot run in 'main', compiled for target llvm" in err.message
    assert err.span.line == _line_of(text, "T.ptx.add")


def test_ptx_call_in_the_host_code_of_a_cuda_function(tmp_path):
    text = """
    @T.prim_func
    def main(A: T.Buffer((32,), "float32")):
        T.ptx.cp("async", "commit_group", "")
        with T.launch_thread("blockIdx.x", 1) as bx:
            tx = T.launch_thread("threadIdx.x", 32)
            A[tx] = T.float32(1.0)
    """
    err = _error(text, tmp_path)
    assert "cannot run in the host code of 'main' (outside its thread launches)" in err.message


@pytest.mark.parametrize("call, message", [
    ('T.ptx_legacy.mma("m16n8k16", "row", "col", "float16", "float16", "float32", MultiA.data, 0, MultiB.data, 0, Accum.data, 0)',
     "T.ptx_legacy.mma takes 13 to 14 arguments, got 12"),
    ('T.ptx_legacy.mma("m16n8k4", "row", "col", "float16", "float16", "float32", MultiA.data, 0, MultiB.data, 0, Accum.data, 0, T.bool(False))',
     "no mma of shape m16n8k4 for .f16 multiplicands (shapes: m8n8k4, m16n8k8, m16n8k16)"),
    ('T.ptx_legacy.mma("m16n8k16", "row", "row", "float16", "float16", "float32", MultiA.data, 0, MultiB.data, 0, Accum.data, 0, T.bool(False))',
     "only the f16 m8n8k4 mma takes layouts other than row,col"),
    ('T.ptx_legacy.mma("m16n8k16", "row", "col", "float16", "float16", "int32", MultiA.data, 0, MultiB.data, 0, Accum.data, 0, T.bool(False))',
     "for multiplicands .f16 the accumulator is f16/f32, not .s32"),
    ('T.ptx_legacy.mma("m16n8k16", "row", "col", "float16", "float16", "float32", MultiA.data, 0, MultiB.data, 0, Accum[0], 0, T.bool(False))',
     "argument 11 of T.ptx_legacy.mma (C's pointer) must be a pointer (a buffer's .data), not float32"),
    # was an internal error (the string lowered as a global of the wrong address space)
    ('T.ptx_legacy.mma("m16n8k16", "row", "col", "float16", "float16", "float32", "float32", 0, MultiB.data, 0, Accum.data, 0, T.bool(False))',
     "argument 7 of T.ptx_legacy.mma (A's pointer) must be a pointer (a buffer's .data), not a string"),
    ('T.ptx_legacy.mma("m16n8k16", "row", "col", "float16", "float16", "float32", MultiA.data, 0, MultiB.data, 0, Accum.data, 0, T.bool(False), "xor")',
     "a 1-bit operation (xor/and) goes with .b1 multiplicands and only with them"),
    ('T.ptx_legacy.ldmatrix(T.bool(False), 3, ".b16", MultiA.data, 0, MultiB.data, 0)',
     "T.ptx_legacy.ldmatrix loads 1, 2 or 4 matrices, not 3"),
    ('T.s_tir.cp_async_raw("float16", MultiA.data, 0, MultiB.data, 0, 12)',
     "T.s_tir.cp_async_raw copies 4, 8 or 16 bytes, not 12"),
    ('T.ptx.cp(8, "async", "wait_group", "")', "cp.async.wait_group takes 0 to 7, not 8"),
    ('T.ptx.cp("async", "commit_group", "pred")', "predicated or flagged forms ('pred') are not supported"),
    ('T.ptx.add(Accum[0], Accum[1], Accum[2], "rn", "", "", "f16", "", "")',
     "tirc builds the .f32 and .f64 forms only, not 'f16'"),
    ('T.ptx.add(Accum[0], Accum[1], Accum[2], "rn", "", "", "f64", "", "")',
     "T.ptx.add: the destination is float32, not float64 (.f64)"),
    ('T.ptx.mul(Accum[0], Accum[1], Accum[2], "rn", "", "", "f32", "", "")',
     "T.ptx.mul takes 8 arguments, got 9"),
    ('T.ptx.frobnicate(Accum[0])', "has no attribute 'frobnicate'"),
])
def test_misuse_is_a_located_error(call, message, tmp_path):
    text = MMA.replace(
        'T.ptx_legacy.mma("m16n8k16", "row", "col", "float16", "float16", "float32", MultiA.data, 0, MultiB.data, 0, Accum.data, 0, T.bool(False))',
        call)
    err = _error(text, tmp_path)
    assert message in err.message, err.message
    assert err.span.line == _line_of(text, call)


@pytest.mark.parametrize("dtype", ["int3", "uint5x8", "int7"])
def test_sub_byte_dtypes_tirc_does_not_pack_are_refused_at_their_use(dtype, tmp_path):
    """int1/int2/int4 (and uint2/uint4) are packed as DLPack packs them
    (tests/language/test_subbyte.py); widths that do not divide a byte are refused where the dtype
    is written."""
    text = f"""
    @T.prim_func
    def main(A: T.Buffer((32,), "int32")):
        with T.launch_thread("blockIdx.x", 1) as bx:
            Frag = T.alloc_local((4,), "{dtype}")
            tx = T.launch_thread("threadIdx.x", 32)
            A[tx] = 0
    """
    err = _error(text, tmp_path)
    assert f"sub-byte integer dtype '{dtype}' is not supported" in err.message
    assert err.span.line == _line_of(text, "Frag =")
