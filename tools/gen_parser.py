"""Regenerate ``tirc/syntax/grammar_parser.py``, the stand-alone LALR parser of
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
:mod:`tirc.syntax.tree` instead (``_CUTS``), the classes :mod:`tirc.syntax.fast_parser` builds
too: the frontend's ``isinstance`` checks hold for trees from either parser, and it need
not import this module for the classes.

Lark's ``PropagatePositions`` stays as Lark wrote it: this parser runs only on text
:mod:`tirc.syntax.fast_parser` gives up on (a syntax error, or nesting past its recursion
limit), to report Lark's diagnostic, so its speed no longer matters to a build.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = ROOT / "tirc" / "grammar.lark"
MODULE = ROOT / "tirc" / "syntax" / "grammar_parser.py"
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

# (text of Lark's module, what replaces it)
_TRIMS = (
    ("import logging\n", ""),
    ('logger: logging.Logger = logging.getLogger("lark")\n'
     "logger.addHandler(logging.StreamHandler())\n", _QUIET_LOGGER),
    ("logger.setLevel(logging.CRITICAL)\n", ""),
    ("import pickle, zlib, base64\n", ""),
)


_SYNTAX_TREE_IMPORT = "from tirc.syntax.tree import Meta, Tree, Token\n"

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
    classes of :mod:`tirc.syntax.tree` (module docstring)."""
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
