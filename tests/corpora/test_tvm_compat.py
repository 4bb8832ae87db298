"""Compatibility with TVM's own parser: TVM reads what tirc prints, and what it reads is
structurally equal to what it reads from the original text. Skipped without TVM."""
from __future__ import annotations

import pytest

from conftest import ALL_TIR, ids
from tirc.ir.printer import print_module
from tirc.frontend.parse import parse_file

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install '.[tvm]')")
pytestmark = pytest.mark.tvm

# Text whose original TVM 0.27 reads differently or not at all — older TVMScript
# (T.LetStmt), and region arguments of module calls (`Module.f(A[0:64])`, which tirc
# passes by reference as a declared view); for these only tirc's printed text
# is checked against TVM.
OLDER_FORMS = {"device_call_let.tir", "let_stmt_forms.tir", "region_calls.tir"}


@pytest.mark.parametrize("path", ALL_TIR, ids=ids(ALL_TIR))
def test_tvm_reads_tirc_output_as_it_reads_the_original(path):
    printed = print_module(parse_file(str(path)))
    theirs_of_ours = tvm.script.from_source(printed)
    if path.name in OLDER_FORMS:
        return
    theirs = tvm.script.from_source(path.read_text())
    tvm.ir.assert_structural_equal(theirs, theirs_of_ours, map_free_vars=True)
