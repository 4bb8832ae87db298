"""TVMScript text -> its parse tree: :mod:`tirc.syntax.fast_parser` builds it for the
texts it takes (every well-formed one written the usual way), without importing Lark's
parser; for any other, among them every text with a syntax error,
:mod:`tirc.syntax.lalr_parser`, Lark's LALR parser of ``grammar.lark``, builds the same
tree or raises the diagnostic.
"""
from __future__ import annotations

from tirc import diagnostics
from tirc.syntax import fast_parser
from tirc.syntax.tree import Tree


def parse_tree(text: str, filename: str = "<string>") -> Tree:
    """The parse tree of ``text``; syntax errors raise
    :class:`~tirc.diagnostics.Diagnostic`."""
    if len(text) > diagnostics.MAX_SOURCE_BYTES:  # characters: a text given as a string
        raise diagnostics.too_large(filename)
    if not text.endswith("\n"):
        text += "\n"
    try:
        return fast_parser.parse(text)
    except (fast_parser.GiveUp, RecursionError):
        pass  # Lark's parser decides, and reports the syntax error if there is one
    from tirc.syntax import lalr_parser
    return lalr_parser.parse_tree(text, filename)
