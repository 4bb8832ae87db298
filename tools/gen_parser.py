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


def generate() -> str:
    code = subprocess.run([sys.executable, "-m", "lark.tools.standalone", *OPTIONS,
                           str(GRAMMAR)], check=True, capture_output=True, text=True).stdout
    return (f"# Generated from tirc/grammar.lark (sha256 {grammar_hash()}) by\n"
            "# tools/gen_parser.py with Lark's stand-alone generator; do not edit.\n" + code)


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
