"""Regenerate ``tirc/grammar_parser.py``, the stand-alone LALR parser of
``tirc/grammar.lark`` (Lark's stand-alone generator: the parser's code and tables in one
module, so a build imports neither Lark nor a grammar cache):

    python tools/gen_parser.py          # after every change to tirc/grammar.lark
    python tools/gen_parser.py --check  # exit 1 when the module is stale (a test runs it)

Lark's generator does not give the same bytes twice (its tables come out in another
order), so staleness is the grammar's sha256, recorded in the module's first line.

The options are those the parser needs: the basic lexer, positions on every tree node
(for diagnostics), and ``None`` for absent optional parts (``[x]``). The tables stay a
Python literal (no ``-c``: that would store them pickled and compressed, an opaque blob
loaded with ``pickle``, for no gain in import time).

Lark's module imports two things the parser never uses at run time, and they are left
out (``trim``; 3 ms of every build): ``logging``, for a logger it sets to CRITICAL, so
that nothing it logs is ever printed (a logger that drops everything stands in), and
``pickle``, ``zlib`` and ``base64``, for the grammar cache and compressed tables.

Lark's ``Meta``, ``Tree`` and ``Token`` classes are cut out and imported from
:mod:`tirc.syntax_tree` instead (``_CUTS``), the classes :mod:`tirc.fast_parser` builds
too: the frontend's ``isinstance`` checks hold for trees from either parser, and it need
not import this module for the classes.

Lark's ``PropagatePositions`` runs at every reduction (264,000 for the 500-kernel module
of ``bench/compile.py``), looking each child's position up through ``getattr`` with
defaults, even where a rule passes one child up unchanged (most reductions: the
expression precedence levels), which leaves its positions as they are. The case tirc
uses (no node filter) is written out here with the same results, and Lark's code stays
for a filter (``_POSITIONS``; the trees and positions of every ``.tir`` file in the
repository compared equal): Lark's parse of the 500-kernel module 0.79 -> 0.61 s of CPU
time.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = ROOT / "tirc" / "grammar.lark"
MODULE = ROOT / "tirc" / "grammar_parser.py"
OPTIONS = ["-l", "basic", "--propagate_positions", "--maybe_placeholders"]


def grammar_hash() -> str:
    return hashlib.sha256(GRAMMAR.read_bytes()).hexdigest()


_QUIET_LOGGER = '''class _QuietLogger:
    """Lark's logger, set to CRITICAL: what the parser logs is never printed."""

    def _drop(self, *args, **kwargs):
        pass

    debug = info = warning = error = exception = _drop


logger = _QuietLogger()
'''

_POSITIONS_KEY = '''class PropagatePositions:
    def __init__(self, node_builder, node_filter=None):
        self.node_builder = node_builder
        self.node_filter = node_filter

    def __call__(self, children):
'''

_POSITIONS = r'''class PropagatePositions:
    """Lark's, with the unfiltered case (tirc's) written out: tools/gen_parser.py."""

    def __init__(self, node_builder, node_filter=None):
        self.node_builder = node_builder
        self.node_filter = node_filter

    def __call__(self, children):
        if self.node_filter is not None:
            return self._filtered(children)
        res = self.node_builder(children)
        if not isinstance(res, Tree) or (len(children) == 1 and res is children[0]):
            return res  # a tree passed up alone keeps the positions it has
        res_meta = res.meta
        for c in children:
            if isinstance(c, Tree):
                m = c.meta
                if not m.empty:
                    line, column, start = m.container_line, m.container_column, m.container_start_pos
                    break
            elif isinstance(c, Token):
                line, column, start = c.line, c.column, c.start_pos
                break
            elif hasattr(c, '__lark_meta__'):
                m = c.__lark_meta__()
                line = getattr(m, 'container_line', m.line)
                column = getattr(m, 'container_column', m.column)
                start = getattr(m, 'container_start_pos', m.start_pos)
                break
        else:
            return res  # no child has a position
        rm = res_meta  # attributes, not its __dict__: tirc's Meta has slots
        if not hasattr(rm, 'line'):
            rm.line, rm.column, rm.start_pos, rm.empty = line, column, start, False
        rm.container_line, rm.container_column, rm.container_start_pos = line, column, start
        for c in reversed(children):
            if isinstance(c, Tree):
                m = c.meta
                if not m.empty:
                    line, column, end = m.container_end_line, m.container_end_column, m.container_end_pos
                    break
            elif isinstance(c, Token):
                line, column, end = c.end_line, c.end_column, c.end_pos
                break
            elif hasattr(c, '__lark_meta__'):
                m = c.__lark_meta__()
                line = getattr(m, 'container_end_line', m.end_line)
                column = getattr(m, 'container_end_column', m.end_column)
                end = getattr(m, 'container_end_pos', m.end_pos)
                break
        if not hasattr(rm, 'end_line'):
            rm.end_line, rm.end_column, rm.end_pos, rm.empty = line, column, end, False
        rm.container_end_line, rm.container_end_column, rm.container_end_pos = line, column, end
        return res

    def _filtered(self, children):
'''

# (text of Lark's module, what replaces it)
_TRIMS = (
    ("import logging\n", ""),
    ('logger: logging.Logger = logging.getLogger("lark")\n'
     "logger.addHandler(logging.StreamHandler())\n", _QUIET_LOGGER),
    ("logger.setLevel(logging.CRITICAL)\n", ""),
    ("import pickle, zlib, base64\n", ""),
    (_POSITIONS_KEY, _POSITIONS),
)


_SYNTAX_TREE_IMPORT = "from tirc.syntax_tree import Meta, Tree, Token\n"

# (first line of a class of Lark's module, the line just past its end, what replaces it)
_CUTS = (
    ("class Meta:\n", "_Leaf_T = TypeVar(\"_Leaf_T\")\n", _SYNTAX_TREE_IMPORT),
    ("class Tree(Generic[_Leaf_T]):\n", "from functools import wraps, update_wrapper\n", ""),
    ("class Token(str):\n", "class LineCounter:\n", ""),
)


def _once(code: str, text: str) -> int:
    if code.count(text) != 1:
        raise SystemExit(f"gen_parser: Lark's module changed: {text!r} is not in it once")
    return code.index(text)


def trim(code: str) -> str:
    """Lark's module without the imports the parser does not use, and with the tree
    classes of :mod:`tirc.syntax_tree` (module docstring)."""
    for text, replacement in _TRIMS:
        _once(code, text)
        code = code.replace(text, replacement)
    for first, past, replacement in _CUTS:
        start = _once(code, first)
        end = _once(code, past)
        if end < start:
            raise SystemExit(f"gen_parser: Lark's module changed: {past!r} before {first!r}")
        code = code[:start] + replacement + "\n\n" + code[end:]
    return code


def generate() -> str:
    code = subprocess.run([sys.executable, "-m", "lark.tools.standalone", *OPTIONS,
                           str(GRAMMAR)], check=True, capture_output=True, text=True).stdout
    return (f"# Generated from tirc/grammar.lark (sha256 {grammar_hash()}) by\n"
            "# tools/gen_parser.py with Lark's stand-alone generator; do not edit.\n"
            + trim(code))


def main(argv: list[str]) -> int:
    if "--check" in argv:
        current = MODULE.read_text(encoding="utf-8") if MODULE.exists() else ""
        if f"(sha256 {grammar_hash()})" not in current.partition("\n")[0]:
            print(f"{MODULE.relative_to(ROOT)} is stale: run python tools/gen_parser.py",
                  file=sys.stderr)
            return 1
        return 0
    MODULE.write_text(generate(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
