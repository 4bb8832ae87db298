"""Printer and parser are inverses: parse(print(m)) is structurally equal to m for
every sample, every module of the TVM corpus and every test module."""
from __future__ import annotations

import pytest

from conftest import ALL_TIR, ids
from tirc.ir.equal import assert_structural_equal
from tirc.ir.printer import print_module
from tirc.frontend.parse import parse, parse_file
from tirc.passes.prepare.verify import verify


@pytest.mark.parametrize("path", ALL_TIR, ids=ids(ALL_TIR))
def test_parse_print_parse(path):
    mod = parse_file(str(path))
    verify(mod)
    text = print_module(mod)
    again = parse(text, "printed.tir")
    assert_structural_equal(mod, again)
    # Printing is deterministic and a fixed point after one round.
    assert print_module(again) == text


def test_there_are_modules_to_round_trip():
    assert len(ALL_TIR) >= 60
