"""Text to IR: the parse tree of TVMScript text, then the frontend.

The text is parsed, never evaluated: :mod:`tirc.frontend.builder` walks the parse tree
of ``grammar.lark``. :mod:`tirc.fast_parser` builds it for the texts it takes (every
well-formed one written the usual way), without importing Lark's parser; for any other,
among them every text with a syntax error, :mod:`tirc.lalr_parser`, Lark's LALR parser
of the grammar, builds the same tree or raises the diagnostic.
"""
from __future__ import annotations

from tirc import fast_parser
from tirc.ir.function import IRModule
from tirc.syntax_tree import Tree


def parse_tree(text: str, filename: str = "<string>") -> Tree:
    """The parse tree of ``text``; syntax errors raise
    :class:`~tirc.diagnostics.Diagnostic`."""
    from tirc.diagnostics import MAX_SOURCE_BYTES, too_large
    if len(text) > MAX_SOURCE_BYTES:  # characters: a text given as a string
        raise too_large(filename)
    if not text.endswith("\n"):
        text += "\n"
    try:
        return fast_parser.parse(text)
    except (fast_parser.GiveUp, RecursionError):
        pass  # Lark's parser decides, and reports the syntax error if there is one
    from tirc import lalr_parser
    return lalr_parser.parse_tree(text, filename)


def parse(text: str, filename: str = "<string>") -> IRModule:
    """Parse TVMScript text into an :class:`IRModule`."""
    from tirc.frontend.builder import build_module

    tree = parse_tree(text, filename)
    return build_module(tree, filename)


def parse_file(path: str) -> IRModule:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return parse(text, path)
