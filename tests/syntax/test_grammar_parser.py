"""The stand-alone parser ``tirc/syntax/grammar_parser.py`` (no Lark import and no
grammar cache at build time) is the grammar's: not stale, and it gives the trees Lark
builds from ``tirc/grammar.lark`` with the same options, on every sample and corpus file."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lark
from lark.indenter import Indenter as LarkIndenter
import pytest

from conftest import ROOT
from tirc.syntax import lalr_parser
from tirc.frontend import parse as tirc_parser

FILES = sorted([*ROOT.glob("samples/*.tir"), *ROOT.glob("tests/corpus/**/*.tir")])


def test_the_generated_parser_is_not_stale():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_parser.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def lark_parser():
    grammar = (ROOT / "tirc" / "grammar.lark").read_text(encoding="utf-8")

    class Indenter(LarkIndenter):  # the same postlexer, on Lark's classes
        NL_type, INDENT_type, DEDENT_type, tab_len = "_NL", "_INDENT", "_DEDENT", 8
        OPEN_PAREN_types = lalr_parser._TirIndenter.OPEN_PAREN_types
        CLOSE_PAREN_types = lalr_parser._TirIndenter.CLOSE_PAREN_types
        handle_NL = lalr_parser._TirIndenter.handle_NL

    return lark.Lark(grammar, parser="lalr", postlex=Indenter(), propagate_positions=True,
                     maybe_placeholders=True, lexer="basic")


def _shape(tree):
    """A tree as nested tuples: rule names, token types, text and positions."""
    if isinstance(tree, str):  # a token (both Token classes are str)
        return (tree.type, str(tree), tree.line, tree.column)
    if tree is None:
        return None
    return (str(tree.data), tree.meta.line if not tree.meta.empty else None,
            tuple(_shape(c) for c in tree.children))


def test_same_trees_as_lark(lark_parser):
    assert len(FILES) > 300
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        text += "" if text.endswith("\n") else "\n"
        assert _shape(lalr_parser.parser().parse(text)) == _shape(lark_parser.parse(text)), path


def test_a_build_imports_no_lark(tmp_path):
    code = ("import sys; from tirc.build.stages import build; "
            f"build(open({str(ROOT / 'samples' / 'vector_add.tir')!r}).read(), "
            f"'cuda -arch=sm_90', None, {str(tmp_path)!r}, 'va'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'lark'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
    assert (tmp_path / "va.ptx").exists()


def test_syntax_errors_still_located():
    from tirc.diagnostics import Diagnostic
    with pytest.raises(Diagnostic) as e:
        tirc_parser.parse("# from tvm.script import tirx as T\n@T.prim_func\ndef f(:\n", "bad.tir")
    assert (e.value.span.file, e.value.span.line) == ("bad.tir", 3)
    assert e.value.message.startswith("unexpected ")


def test_unexpected_character():
    from tirc.diagnostics import Diagnostic
    with pytest.raises(Diagnostic, match="unexpected character '\\$'"):
        tirc_parser.parse("x = $\n", Path("c.tir").name)
