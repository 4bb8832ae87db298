"""Text to IR: the parse tree of TVMScript text (:mod:`tirc.syntax.read`), then the
frontend (:mod:`tirc.frontend.builder`) walks it. The text is parsed, never evaluated.
"""
from __future__ import annotations

from tirc.frontend.builder import build_module
from tirc.ir.function import IRModule
from tirc.syntax.read import parse_tree


def parse(text: str, filename: str = "<string>") -> IRModule:
    """Parse TVMScript text into an :class:`IRModule`."""
    tree = parse_tree(text, filename)
    return build_module(tree, filename)


def parse_file(path: str) -> IRModule:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return parse(text, path)
