"""TVM 0.27 reads back what ``tirc print`` writes: for every module of the
block-level corpus (tests/corpus/sblock: the ``.tir`` TVM printed and TVM's own
``.lowered.tir``) and of TVM's S-TIR pass pairs (tests/corpus/sblock_passes), the text
tirc prints parses in TVM to a module structurally equal to TVM's parse of the original.

Skipped without TVM (CI has none). Run it where apache-tvm==0.27.0.post1 is installed:

    python -m pytest tests/corpora/test_tvm_readback.py

Files tirc refuses to read are listed with the reason (a strict xfail: each must still
be refused, so the list stays true); so are the modules whose read-back still differs
(none at present) and the ones TVM and tirc both find not well-formed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TESTS

from tirc.diagnostics import Diagnostic
from tirc.ir.printer import print_module
from tirc.frontend.parse import parse
from tirc.passes.prepare.infer_block_regions import infer_block_regions
from tirc.passes.prepare.verify import verify

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install '.[tvm]')")
pytestmark = pytest.mark.tvm

CORPUS = TESTS / "corpus"
SBLOCK = CORPUS / "sblock"
PASSES = CORPUS / "sblock_passes"


def _files() -> list[Path]:
    out: list[Path] = []
    for entry in json.loads((SBLOCK / "index.json").read_text()):
        out += [SBLOCK / f"{entry['name']}.tir", SBLOCK / f"{entry['name']}.lowered.tir"]
    out += sorted(PASSES.glob("*/*.tir"))
    out.append(CORPUS / "block_regions" / "written.tir")  # regions left out: inferred
    return out


FILES = _files()
IDS = [str(p.relative_to(CORPUS)) for p in FILES]


# Files tirc refuses to read, with the reason (a strict xfail): the list of
# tests/language/test_tvm_text_forms.py, which checks the same corpora without TVM.
from test_tvm_text_forms import REFUSED  # noqa: E402

# TVM's own well-formedness check rejects these (index.json: not_well_formed), and so
# does tirc's verifier, so `tirc print` gives a located error for them; the printer's
# text is still compared.
NOT_WELL_FORMED = {
    "sblock_passes/ConvertBlocksToOpaque/error_if_predicate_uses_block_variables.error.tir",
    "sblock_passes/RemoveNoOp/remove_no_op_2.after.tir",
    "sblock_passes/RemoveNoOp/remove_no_op_2.before.tir",
    # two functions export the symbol 'main' (TVM's test module; tirc refuses to build it)
    "sblock_passes/DefaultGPUSchedule/matmul.after.tir",
    "sblock_passes/DefaultGPUSchedule/matmul.before.tir",
}

# Modules whose read-back differs, with the reason (a strict xfail).
_INT64_AXIS = ("TVM keeps the domain of `vi = T.axis.spatial(1, T.int64(0))` int32 beside its "
               "int64 binding; tirc's reader gives the domain the binding's type and prints "
               "`T.axis.spatial(T.int64(1), T.int64(0))`")
DIFFERS: dict[str, str] = {
    "sblock_passes/DefaultGPUSchedule/scalar_add.after.tir": _INT64_AXIS,
    "sblock_passes/DefaultGPUSchedule/scalar_add.before.tir": _INT64_AXIS,
    "sblock_passes/InjectPTXAsyncCopy/multiplication_nodes_are_inlined.after.tir": (
        "TVM's `A_flattened = A.view(4096)` shares A's data variable, so `A_flattened.data` "
        "in a call is A.data; tirc prints the view as `T.decl_buffer((4096,), data=A.data)`, "
        "from which TVM 0.27 reads `A_flattened.data` as a variable of its own"),
}


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_tvm_reads_tirc_print_as_the_original(path: Path):
    key = str(path.relative_to(CORPUS))
    text = path.read_text()
    if key in REFUSED:
        with pytest.raises(Diagnostic):
            parse(text, str(path))
        pytest.xfail(REFUSED[key])
    mod = parse(text, str(path))
    # what `tirc print` does: parse, verify (any storage scope TVM knows), infer the
    # regions a block leaves out, print
    if key in NOT_WELL_FORMED:
        with pytest.raises(Diagnostic):
            verify(mod, buildable_scopes=False)
    else:
        mod = infer_block_regions(verify(mod, buildable_scopes=False))
    printed = print_module(mod)
    # Some of TVM's own texts are not well-formed (README: not_well_formed); that is not
    # what is compared here.
    theirs = tvm.script.from_source(text, check_well_formed=False)
    if key in DIFFERS:
        with pytest.raises(Exception):
            ours = tvm.script.from_source(printed, check_well_formed=False)
            tvm.ir.assert_structural_equal(theirs, ours, map_free_vars=True)
        pytest.xfail(DIFFERS[key])
    ours = tvm.script.from_source(printed, check_well_formed=False)
    tvm.ir.assert_structural_equal(theirs, ours, map_free_vars=True)


def test_the_corpus_is_all_there():
    assert len(FILES) >= 142 + 520
