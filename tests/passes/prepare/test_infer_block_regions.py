"""InferBlockRegions: blocks written without ``T.reads``/``T.writes`` (or with one of
them) get the regions TVM's parser infers. tests/corpus/block_regions/written.tir holds
such blocks (a reduction with an init, loops and an ``if``, ``T.where``, nested blocks
and the block's own allocation, a matched buffer, lets, ``tvm_access_ptr``, vectors, one
of the two given); tvm.tir is TVM 0.27's print of it (gen_block_regions.py)."""
from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from conftest import TESTS
from tirc.diagnostics import Diagnostic
from tirc.driver import cli
from tirc.frontend.parse import parse
from tirc.ir.attrs import DETECT_ACCESS
from tirc.ir.block import SBlock
from tirc.ir.equal import assert_structural_equal
from tirc.ir.printer import print_module
from tirc.ir.visitor import walk
from tirc.passes.prepare.infer_block_regions import infer_block_regions
from tirc.passes.prepare.verify import verify

DIR = TESTS / "corpus" / "block_regions"
HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def blocks(mod) -> dict[str, SBlock]:
    return {f"{fn}.{n.name_hint}": n for fn, f in mod.functions.items()
            for n in walk(f.body) if isinstance(n, SBlock) and n.name_hint != "root"}


def read(text: str):
    return infer_block_regions(verify(parse(HEAD + textwrap.dedent(text), "case.tir")))


def test_regions_as_tvm_infers_and_prints_them():
    written = parse((DIR / "written.tir").read_text(), "written.tir")
    marked = blocks(written)
    assert dict(marked["matmul.C"].annotations)[DETECT_ACCESS] == 3  # both left out
    assert dict(marked["reads_only_given.b"].annotations)[DETECT_ACCESS] == 2
    assert DETECT_ACCESS not in dict(marked["nested.copy"].annotations)  # written
    inferred = infer_block_regions(verify(written))
    tvm_text = (DIR / "tvm.tir").read_text()
    assert_structural_equal(inferred, parse(tvm_text, "tvm.tir"))
    expected = "".join(line for line in tvm_text.splitlines(keepends=True)
                       if "tvm.tirx.layout" not in line) + "\n"
    assert print_module(inferred) == expected
    assert all(DETECT_ACCESS not in dict(b.annotations) for b in blocks(inferred).values())


def test_tirc_print_writes_them():
    result = CliRunner().invoke(cli, ["print", str(DIR / "written.tir")])
    assert result.exit_code == 0, result.output
    assert "T.reads(A[vi, vk], B[vj, vk])\n" in result.output  # the reduction: C is not read
    assert DETECT_ACCESS not in result.output


def test_older_block_form_and_a_plain_function():
    """``T.block`` in a ``@T.prim_func`` without ``s_tir``, as tutorials write it."""
    mod = read("""
        @T.prim_func
        def main(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
            B = T.alloc_buffer((128, 128))
            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2.0)
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1.0)
        """)
    got = {n: ([r.buffer.name for r in b.reads], [r.buffer.name for r in b.writes])
           for n, b in blocks(mod).items()}
    assert got == {"main.B": (["A"], ["B"]), "main.C": (["B"], ["C"])}


def test_a_data_pointer_used_directly_is_a_located_error():
    with pytest.raises(Diagnostic, match="cannot infer the regions block 'b' reads and writes: "
                                         "it uses the data pointer of buffer 'A' directly") as e:
        read("""
            @T.prim_func(s_tir=True)
            def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
                for i in range(8):
                    with T.sblock("b"):
                        vi = T.axis.spatial(8, i)
                        T.evaluate(T.call_extern("int32", "f", A.data, vi))
                        B[vi] = T.float32(1.0)
            """)
    assert (e.value.span.line, e.value.span.col) == (7, 9)  # the block


def test_written_regions_are_kept_and_a_module_without_marks_is_unchanged():
    text = (DIR / "tvm.tir").read_text()
    mod = verify(parse(text, "tvm.tir"))
    assert infer_block_regions(mod) is mod


def test_a_module_with_inferred_regions_goes_through_the_pipeline():
    """InferBlockRegions runs right after Verify; the rest lowers the blocks."""
    from tirc.passes.pipeline import PassContext, pass_names, run_pipeline
    from tirc.target.kinds import parse_target
    text = (DIR / "written.tir").read_text()
    names = pass_names("packed")
    assert names[:3] == ["Verify", "InferBlockRegions", "BindTarget"]
    mod = run_pipeline(parse(text, "written.tir"), PassContext(parse_target("llvm")),
                       stop_after="InferBlockRegions")
    assert_structural_equal(mod, parse((DIR / "tvm.tir").read_text(), "tvm.tir"))
