"""T.vscale() and scalable vectors (AArch64 SVE, RISC-V V) as TVM 0.27 prints them:
parsed and printed back in TVM's spelling, lowered to LLVM's ``<vscale x N x T>``
(checked on the IR with FileCheck patterns), objects emitted for aarch64+sve and
riscv64+v, and a located error wherever the target has no scalable vectors or the code
would need a scalable vector's lanes one by one. tests/language/test_scalable_vectors_run.py runs
the code; tests/corpus/sve_tests holds what TVM's own SVE tests build."""
from __future__ import annotations

import json
import re
import struct
import textwrap

import pytest

from conftest import ROOT
from test_backend_llvm_ir import filecheck, llvm_ir
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.printer import print_module
from tirc.frontend.parse import parse, parse_file
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target, vscale_range

HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
SVE = "llvm -mtriple=aarch64-linux-gnu -mattr=+sve"
RVV = "llvm -mcpu=generic-rv64 -mtriple=riscv64-linux-gnu -mattr=+64bit,+m,+a,+f,+d,+c,+v"
MODULE = ROOT / "tests" / "tir" / "scalable_vectors.tir"
CORPUS = ROOT / "tests" / "corpus" / "sve_tests"
INDEX = json.loads((CORPUS / "index.json").read_text())
EM_AARCH64, EM_RISCV = 183, 243

# modules of the SVE corpus tirc refuses, with the error each must give
REFUSED = {
    # TVM's test_get_active_lane_mask stores the mask into an int1 buffer (8 elements to
    # a byte) at index i, vscale * 4 lanes: a part of a byte, lane by lane
    "test_target_codegen_llvm_vla__7.tir":
        "a scalable vector access (int1xvscalex4) of sub-byte buffer 'A_1' (int1) is not supported",
    "test_target_codegen_llvm_vla__8.tir":
        "a scalable vector access (int1xvscalex4) of sub-byte buffer 'A_1' (int1) is not supported",
}


def func(body: str, params: str = 'A: T.Buffer((64,), "float32")') -> str:
    return HEAD + "@T.prim_func\ndef f(" + params + "):\n" + textwrap.indent(textwrap.dedent(body), "    ")


# -- types and targets ------------------------------------------------------------------
def test_scalable_dtypes_read_and_print_as_tvm_spells_them():
    d = parse_dtype("float32xvscalex4")
    assert d == DataType("float32", 4, True) and str(d) == "float32xvscalex4"
    assert d != parse_dtype("float32x4") and not d.is_scalar and d.element() == parse_dtype("float32")
    assert parse_dtype("uint1xvscalex4") == parse_dtype("boolxvscalex4")  # TVM's mask type
    assert parse_dtype("uint1x4") == parse_dtype("boolx4")


@pytest.mark.parametrize("target, expected", [
    (SVE, (1, 16)), ("llvm -mtriple=aarch64-linux-gnu -mattr=+sve2", (1, 16)),
    (RVV, (2, 1024)), ("llvm -mtriple=aarch64-linux-gnu", None),
    ("llvm -mtriple=aarch64-linux-gnu -mattr=+sve,-sve", None),
    ("llvm -mtriple=x86_64-linux-gnu -mattr=+avx2", None), ("llvm", None),
    ("cuda -arch=sm_80", None),
])
def test_which_targets_have_scalable_vectors(target, expected):
    assert vscale_range(parse_target(target)) == expected


def test_the_module_prints_back_as_written():
    mod = parse_file(str(MODULE))
    text = print_module(mod)
    for line in MODULE.read_text().splitlines():
        if line.startswith("        ") and ("T.Ramp" in line or "T.Broadcast" in line):
            assert line.strip() in text, line


# -- LLVM IR ----------------------------------------------------------------------------
@pytest.mark.parametrize("target", [SVE, RVV])
def test_vscale_is_llvm_vscale(target, tmp_path):
    filecheck(llvm_ir(func("""
        for i in range(T.vscale() * 4):
            A[i] = T.Cast("float32", T.vscale())
        """), target), """
        CHECK: call i32 @"llvm.vscale.i32"()
        CHECK: sitofp i32
        """, tmp_path)


def function_ir(ir_text: str, name: str) -> str:
    """The definition of LLVM function ``name`` in ``ir_text``, followed by those of the
    loops outlined from it (``name.loopN``, tirc.backends.cpu.outline)."""
    parts = []
    for m in re.finditer(r'^define [^@]*@"?%s(\.loop\d+)?"?\(' % re.escape(name), ir_text, re.M):
        parts.append(ir_text[m.start():ir_text.index("\n}", m.start())])
    assert parts, name
    return "\n".join(parts)


_FUNCTION_CHECKS = {
    "copy": """
        CHECK: load <vscale x 4 x float>, ptr
        CHECK: store <vscale x 4 x float>
        """,
    "fill": """
        CHECK: store <vscale x 4 x float> splat (float 0x3ff0000000000000)
        """,
    "iota": """
        CHECK: call <vscale x 4 x i32> @"llvm.stepvector.nxv4i32"()
        CHECK: sitofp <vscale x 4 x i32> {{.*}} to <vscale x 4 x float>
        CHECK: fcmp olt <vscale x 4 x float>
        CHECK: select <vscale x 4 x i1>
        CHECK: @"llvm.get.active.lane.mask.nxv4i1.i32"(i32
        CHECK: call void @"llvm.masked.store.nxv4f32.p0"(<vscale x 4 x float>
        """,
    "pred": """
        CHECK: @"llvm.masked.load.nxv4f32.p0"(ptr
        CHECK: fadd {{.*}}<vscale x 4 x float>
        CHECK: @"llvm.masked.store.nxv4f32.p0"
        """,
}


@pytest.mark.parametrize("target", [SVE, RVV])
@pytest.mark.parametrize("name", sorted(_FUNCTION_CHECKS))
def test_scalable_loads_stores_ramps_and_masks(target, name, tmp_path):
    text = MODULE.read_text().split("# from tvm.script import tirx as T\n", 1)[1]
    filecheck(function_ir(llvm_ir(text, target), f"__tvm_ffi_{name}"), _FUNCTION_CHECKS[name], tmp_path)


def test_fixed_length_masked_access(tmp_path):
    filecheck(llvm_ir(func("""
        for i in range(47):
            T.masked_store(A, T.masked_load("float32x4", A, T.Ramp(i * 4, 1, 4), T.get_active_lane_mask("uint1x4", i * 4, 185)) * T.Broadcast(T.float32(2.0), 4), T.Ramp(i * 4, 1, 4), T.get_active_lane_mask("uint1x4", i * 4, 185))
        """, 'A: T.Buffer((185,), "float32")')), """
        CHECK: call <4 x i1> @"llvm.get.active.lane.mask.v4i1.i32"(i32 {{.*}}, i32 185)
        CHECK: call <4 x float> @"llvm.masked.load.v4f32.p0"(ptr
        CHECK: call void @"llvm.masked.store.v4f32.p0"(<4 x float>
        """, tmp_path)


@pytest.mark.parametrize("target, machine", [(SVE, EM_AARCH64), (RVV, EM_RISCV)])
def test_objects_for_aarch64_sve_and_riscv64_v(target, machine, tmp_path):
    build(MODULE.read_text(), target, None, tmp_path, "m", filename=str(MODULE))
    data = (tmp_path / "m.o").read_bytes()
    assert data[:4] == b"\x7fELF" and struct.unpack_from("<H", data, 18)[0] == machine


# -- errors -----------------------------------------------------------------------------
@pytest.mark.parametrize("target, where", [
    ("llvm", "'x86_64-unknown-linux-gnu' has none"),
    ("llvm -mtriple=aarch64-linux-gnu", "'aarch64-linux-gnu' has none"),
    ("llvm -mtriple=aarch64-linux-gnu -mattr=+neon", "with +neon has none"),
    ("llvm -mtriple=riscv64-linux-gnu -mattr=+m", "with +m has none"),
])
def test_vscale_without_scalable_vectors_is_a_located_error(target, where, tmp_path):
    text = func("""
        for i in range(4):
            A[i] = T.Cast("float32", T.vscale())
        """)
    with pytest.raises(Diagnostic) as e:
        build(text, target, None, tmp_path, "m", filename="v.tir")
    assert "T.vscale() needs a target with scalable vectors" in e.value.message
    assert where in e.value.message, e.value.message
    assert (e.value.span.file, e.value.span.line, e.value.span.col) == ("v.tir", 7, 34)
    assert not list(tmp_path.iterdir())


def test_vscale_in_c_source_is_a_located_error(tmp_path):
    with pytest.raises(Diagnostic, match="T.vscale is not supported by the c target") as e:
        build(func("A[0] = T.Cast(\"float32\", T.vscale())\n"), "c", None, tmp_path, "m", filename="v.tir")
    assert e.value.span.line == 5


@pytest.mark.parametrize("body, message, line", [
    # lanes
    ("A[T.Ramp(0, 1, T.vscale() * 2)] = T.Broadcast(T.float32(0), T.vscale() * 1)\n",
     "lanes must be a positive integer constant or T.vscale() * k", 5),  # (T.vscale() * 1 folds)
    ("A[T.Ramp(0, 1, T.vscale() + 4)] = T.Broadcast(T.float32(0), 4)\n",
     "lanes must be a positive integer constant or T.vscale() * k", 5),
    # scalable and fixed vectors do not mix
    ("A[T.Ramp(0, 1, T.vscale() * 4)] = A[T.Ramp(0, 1, 4)]\n",
     "cannot store a float32x4 value", 5),
    ("A[T.Ramp(0, 1, 4)] = A[T.Ramp(0, 1, T.vscale() * 4)] + A[T.Ramp(0, 1, 4)]\n",
     "mix a scalable and a fixed vector", 5),
    # masked access: types agree
    ('T.masked_store(A, A[T.Ramp(0, 1, 4)], T.Ramp(0, 1, 4), T.get_active_lane_mask("uint1x8", 0, 3))\n',
     "the mask of T.masked_store must be a bool vector of 4 lanes, got boolx8", 5),
    ('A[T.Ramp(0, 1, 4)] = T.masked_load("float32x8", A, T.Ramp(0, 1, 4), T.get_active_lane_mask("uint1x4", 0, 3))\n',
     "T.masked_load of float32x8 reads float32x4", 5),
    ('A[0] = T.get_active_lane_mask("float32x4", 0, 3)\n',
     "T.get_active_lane_mask makes a bool vector, not float32x4", 5),
])
def test_malformed_scalable_code_is_a_located_error(body, message, line):
    with pytest.raises(Diagnostic) as e:
        verify(parse(func(body), "s.tir"))
    assert message in e.value.message, e.value.message
    assert e.value.span.line == line


@pytest.mark.parametrize("body, message", [
    # LLVM has no scalable gather here, and a lane-by-lane one needs the lane count
    ("A[T.Ramp(0, 1, T.vscale() * 4)] = A[T.Ramp(0, 2, T.vscale() * 4)]\n",
     "'BufferLoad' of scalable vectors (float32xvscalex4) is not supported"),
    ("A[T.Ramp(0, 2, T.vscale() * 4)] = T.Broadcast(T.float32(0), T.vscale() * 4)\n",
     "a store of scalable vectors (float32xvscalex4) to elements that are not consecutive"),
    # a C math function is called lane by lane
    ("A[T.Ramp(0, 1, T.vscale() * 4)] = T.tanh(A[T.Ramp(0, 1, T.vscale() * 4)])\n",
     "'tanh' of scalable vectors (float32xvscalex4) is not supported"),
    ('T.masked_store(A, A[T.Ramp(0, 1, 4)], T.Ramp(0, 2, 4), T.get_active_lane_mask("uint1x4", 0, 3))\n',
     "T.masked_store of elements that are not consecutive"),
])
def test_what_needs_the_lanes_one_by_one_is_a_located_error(body, message, tmp_path):
    with pytest.raises(Diagnostic) as e:
        build(func(body), SVE, None, tmp_path, "m", filename="s.tir")
    assert message in e.value.message, e.value.message
    assert e.value.span is not None and e.value.span.line == 5
    assert not list(tmp_path.iterdir())


def test_scalable_integer_division_is_a_located_error(tmp_path):
    text = func("""
        B[T.Ramp(0, 1, T.vscale() * 4)] = B[T.Ramp(0, 1, T.vscale() * 4)] // B[T.Ramp(64, 1, T.vscale() * 4)]
        """, 'B: T.Buffer((128,), "int32")')
    with pytest.raises(Diagnostic, match="'floordiv' of scalable vectors"):
        build(text, SVE, None, tmp_path, "m", filename="s.tir")


# -- TVM's SVE tests --------------------------------------------------------------------
def test_corpus_index_matches_files():
    assert {p.name for p in CORPUS.glob("*.tir")} == set(INDEX)
    assert set(REFUSED) <= set(INDEX)
    assert sum("vscale" in (CORPUS / n).read_text() for n in INDEX) >= 8


@pytest.mark.parametrize("name", sorted(INDEX))
def test_sve_corpus_module_builds(name, tmp_path):
    entry, path = INDEX[name], CORPUS / name
    text = path.read_text()
    if name in REFUSED:
        with pytest.raises(Diagnostic) as e:
            build(text, entry["target"], entry["host"], tmp_path, "m", filename=str(path))
        assert REFUSED[name] in e.value.message and e.value.span.line > 1
        return
    mod = parse(text, str(path))
    assert print_module(parse(print_module(mod), "again.tir")) == print_module(mod)
    build(text, entry["target"], entry["host"], tmp_path, "m", filename=str(path))
    assert (tmp_path / "m.o").is_file()


def test_scalable_vectors_in_c_source_are_a_located_error(tmp_path):
    text = func('A[T.Ramp(0, 1, T.vscale() * 4)] = T.float32xvscalex4(1.5)\n')
    with pytest.raises(Diagnostic, match="scalable vectors .float32xvscalex4. are not supported "
                                         "by the c target") as e:
        build(text, "c", None, tmp_path, "m", filename="s.tir")
    assert e.value.span.line == 5


def test_a_scalable_dtype_literal_is_a_scalable_broadcast(tmp_path):
    filecheck(llvm_ir(func('A[T.Ramp(0, 1, T.vscale() * 4)] = T.float32xvscalex4(1.5)\n'), SVE), """
        CHECK: store <vscale x 4 x float> splat (float 0x3ff8000000000000)
        """, tmp_path)
