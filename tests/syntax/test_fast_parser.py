"""The fast parser (:mod:`tirc.syntax.fast_parser`) against Lark's LALR parser of the
same grammar (:mod:`tirc.syntax.lalr_parser`): on every ``.tir`` file of the repository and on
seeded mutations of small inputs, either both give the same tree (rule names, children,
tokens and every position Lark sets), or Lark rejects the text, the fast parser gives up
and :func:`tirc.frontend.parse.parse_tree` raises Lark's diagnostic. The fast parser never takes
a text Lark rejects, and a build never imports Lark's parser."""
from __future__ import annotations

import hashlib
import random
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from tirc.syntax import fast_parser
from tirc.syntax import grammar_parser
from tirc.syntax import lalr_parser
from tirc.syntax import tree as syntax_tree
from tirc.diagnostics import Diagnostic
from tirc.syntax.lexer import GiveUp
from tirc.syntax.read import parse_tree
from tirc.syntax.tree import Token, Tree

_META = ("empty", "line", "column", "start_pos", "end_line", "end_column", "end_pos",
         "container_line", "container_column", "container_start_pos", "container_end_line",
         "container_end_column", "container_end_pos")

# Every rule and alias of grammar.lark, and the lexer's corners (comments, line
# continuations, brackets across lines, blank and white-space-only lines, tabs).
CONSTRUCTS = [
    '''from tvm.script import tir as T
import numpy as np
import a.b as c
from x.y import z as w, v
N = 16
M = T.int32(4)  # comment
''',
    '''# from tvm.script import tir as T
@T.prim_func
def f(A: T.Buffer((16,), "float32"), n: T.int32,) -> None:
    T.func_attr({"global_symbol": "f", "tir.noalias": True})
    for i in range(16):
        A[i] = A[i] * 2.0 + 1e3 - .5

    for i, j in T.grid(4, 4):
        pass
    for (i, j,) in T.grid(4, 4): continue
    for (i) in x: pass
    for i, j, in T.grid(4, 4):
        break
    while n > 0 and not n == 1 or n != 2 and not not n:
        n = n - 1
    if n < 0:
        assert n >= 0, "msg"
    elif n <= 1:
        assert n
    elif n == 2: pass
    else:
        return
    with T.block("b") as (vi, vj):
        T.reads(A[0:4, ::2, 1:, :, ::, 1:2:3, :n])
    with T.block():
        x: T.int32 = 1
        y: T.int32
        a, b = T.f(), 1
        a, b = c
        a, b = c, d,
        g = lambda x, y: x + y
        h = lambda: 0
        d = {}
        d = {1: 2, "a": [1, 2,], }
        t = [(), (1,), (1, 2), (1, 2,), [], ~x, -x, +-x, x << 2 >> 1, x | y ^ z & w]
        s = "a" 'b' "c\\"d"
        T.evaluate(f(x, y=1, z,))
        v = a.b.c[1][2](3)(4).d
        q = x // y % z / w * v - 1 < 2 <= 3 > 4 >= 5 == 6 != 7
        r = T.int32(0x1F) + 0b101 + 0o17 + 1.5e-3 + 2E+4 + 7.
        return
    return T.int32(0)
''',
    '''@I.ir_module
class Module:
    @T.prim_func(private=True)
    def main(a: T.handle):
        T.evaluate(0)

    @T.prim_func
    def g():
        pass
    pass
''',
    '''@I.ir_module
class Module():

    pass
''',
    '''x = (1 +
     2)  # c
y = [
  1,
  2,
]
z = f(a, \\
      b)
w = {1:
  2}
''',
    "x = 1 \\\n  + 2\n",
    "\n   \n\t\n# only a comment\n",
    "\\\n",  # no token at all
    "@T.prim_func\ndef f():\n\tif x:\n\t\tpass\n\telse:\n\t  return\n",
    "@T.prim_func\ndef f():\n  pass\n  # trailing comment, no newline",
    "@T.prim_func\ndef f(): return 1\r\n",
    "@T.prim_func\ndef f():\n  with a as b, c: pass",
    "@T.prim_func\ndef f():\n\tpass\n        pass\n",
]

# Texts Lark rejects next to ones it takes: each decision of the fast parser (trailing
# commas, optional parts, where ``not`` and ``lambda`` may stand, keywords as names,
# indentation, brackets). Statements go in a function's body (``_in_function``).
REJECTED_STATEMENTS = [
    "for i, in x: pass", "for (i,,) in x: pass", "for () in x: pass", "for i j in x: pass",
    "a, = 1", "a, b = c,", "a, b, = c", "a, b = c,, d", "a.b, c = 1", "x = f(,)", "x = [,]",
    "x = (1,,)", "x = (,)", "x = {,}", "x = {1}", "x = lambda a,: 1", "x = lambda (a): 1",
    "x = a < not b", "x = a + not b", "x = not", "x = -not a", "x = a + lambda: 1",
    "x = a if b else c", "x = a[]", "x = a[1:2:3:4]", "x = a[,]", "x = f(a=)", "x = f(a.b=1)",
    "x = a.1", "x = 1 2", "x = a = b", "x = a == = b", "x = a <> b", "x = True.x.in",
    "in = 1", "x = a ! b", "x = 'a", "x = $", "return 1, 2", "assert a, b, c", "assert",
    "pass pass", "break 1", "if a: pass\n    elif: pass", "else: pass",
    "while a: pass\n    else: pass", "if a: if b: pass", "with a as b.c: pass",
    "with a as (b, c: pass", "with: pass", "x: = 1", "x: int = ", "for i in x:\n    pass",
    "x = 1\n  y = 2", "x = 1\n      y = 2", "x = (1\n", "x = 1)", "x = [1)", "x = {1: 2]",
    "def g(): pass", "@d\n    x = 1", "import a", "x = a.\\\n",
]
REJECTED_MODULES = [
    "import a,", "from a import (b)", "from a import b,", "import a as b.c", "x: int = 1",
    "def f(a: int,,): pass", "def f(a): pass", "def f(*a: int): pass", "class C: pass",
    "@d\nx = 1", "@d(\ndef f(): pass", "@d()\nclass C:\n  x = 1", "x = 1\n  y = 2",
    "@I.ir_module\nclass M:\n  x = 1", "@I.ir_module\nclass M(A):\n  pass", "for i in x: pass",
    "@T.prim_func\ndef f() -> : pass", "@T.prim_func\ndef f(a: int b: int): pass", "pass",
]


def _in_function(statement: str) -> str:
    return "@T.prim_func\ndef f():\n    " + statement + "\n"


_TOKEN = re.compile(r"\w+|\"[^\"\n]*\"|'[^'\n]*'|\n[ \t]*|[^\w\s]{1,2}|\s")
_VOCABULARY = [
    "for", "in", "if", "elif", "else", "while", "with", "as", "lambda", "not", "and", "or",
    "def", "class", "return", "pass", "break", "continue", "assert", "from", "import", "True",
    "None", "(", ")", "[", "]", "{", "}", ":", ",", ".", "=", "==", "->", "<", ">=", "+", "-",
    "*", "//", "%", "~", "|", "^", "&", "<<", "x", "T", "1", "1.5", "2e3", ".5", "0x1f", "1.",
    "'s'", '"t"', "\n", "\n    ", "\n  ", "\n\t", "\\\n", "#c\n", "\t", "\r\n", "\r", "$", "@",
    " ", ";", "!", "\f"]


def _shape(node):
    """A tree as nested tuples: names, token types and text, and every position."""
    if node is None:
        return None
    if isinstance(node, Token):
        return ("token", node.type, str(node), node.value, node.start_pos, node.line,
                node.column, node.end_line, node.end_column, node.end_pos)
    assert isinstance(node, Tree), type(node)
    return (node.data, tuple(getattr(node.meta, f, "unset") for f in _META),
            tuple(_shape(c) for c in node.children))


def _outcome(text: str):
    """Lark's tree and the fast parser's for ``text`` (ending in a newline); ``None``
    for a rejection. Lark's rejection or the fast parser's giving up is checked here."""
    try:
        lark_tree = lalr_parser.parser().parse(text)
    except (grammar_parser.LarkError, lalr_parser._BadDedent):
        lark_tree = None
    try:
        fast_tree = fast_parser.parse(text)
    except (GiveUp, RecursionError):
        fast_tree = None
    return lark_tree, fast_tree


def _check(text: str, where: str, *, must_take: bool = False) -> str:
    """Same tree, or both reject and the diagnostic is Lark's; ``must_take``: a text Lark
    accepts must not make the fast parser give up."""
    if not text.endswith("\n"):
        text += "\n"
    lark_tree, fast_tree = _outcome(text)
    if lark_tree is None:
        assert fast_tree is None, f"{where}: the fast parser takes what Lark rejects"
        return "rejected"
    if fast_tree is None:
        assert not must_take, f"{where}: the fast parser gave up on a text Lark takes"
        return "gave up"
    assert _shape(fast_tree) == _shape(lark_tree), f"{where}: another tree"
    return "same"


def _same_diagnostic(text: str, where: str) -> None:
    with pytest.raises(Diagnostic) as fast_path:
        parse_tree(text, "m.tir")
    with pytest.raises(Diagnostic) as lark_only:
        lalr_parser.parse_tree(text if text.endswith("\n") else text + "\n", "m.tir")
    assert (str(fast_path.value), fast_path.value.span) == \
        (str(lark_only.value), lark_only.value.span), where


def _repository_files() -> list:
    listed = subprocess.run(["git", "ls-files", "*.tir"], cwd=ROOT, capture_output=True,
                            text=True)
    if listed.returncode == 0 and listed.stdout.strip():
        return [ROOT / p for p in listed.stdout.split()]
    return [p for p in ROOT.rglob("*.tir") if not any(s.startswith(".") for s in p.parts)]


def test_written_for_this_grammar():
    """A change to grammar.lark needs the same change in tirc/syntax/fast_parser.py (and
    tirc/syntax/lexer.py for terminals), then this hash."""
    digest = hashlib.sha256((ROOT / "tirc" / "grammar.lark").read_bytes()).hexdigest()
    assert fast_parser.GRAMMAR_SHA256 == digest


def test_both_parsers_build_the_same_classes():
    assert grammar_parser.Tree is syntax_tree.Tree
    assert grammar_parser.Token is syntax_tree.Token
    assert grammar_parser.Meta is syntax_tree.Meta


@pytest.mark.parametrize("index", range(len(CONSTRUCTS)))
def test_every_construct_is_taken(index):
    assert _check(CONSTRUCTS[index], f"construct {index}", must_take=True) == "same"


@pytest.mark.parametrize("text", REJECTED_MODULES + [_in_function(s) for s in REJECTED_STATEMENTS])
def test_near_misses_are_rejected(text):
    assert _check(text, repr(text)) == "rejected"
    _same_diagnostic(text, repr(text))


def test_every_repository_file():
    files = _repository_files()
    assert len(files) > 1000
    seen = {"same": 0, "rejected": 0}
    for path in files:
        text = path.read_text(encoding="utf-8")
        outcome = _check(text, str(path), must_take=True)
        seen[outcome] += 1
        if outcome == "rejected":
            _same_diagnostic(text, str(path))
    assert seen["same"] > 1000


def _mutant(text: str, rng: random.Random) -> str:
    """``text`` with one to three tokens deleted, duplicated, swapped, inserted or
    replaced, or one character deleted, or one line's indentation changed."""
    kind = rng.randrange(8)
    if kind == 6:
        at = rng.randrange(len(text))
        return text[:at] + text[at + 1:]
    if kind == 7:
        lines = text.split("\n")
        k = rng.randrange(len(lines))
        lines[k] = rng.choice((" ", "  ", "\t", "")) + lines[k][rng.choice((0, 0, 1, 2, 4)):]
        return "\n".join(lines)
    toks = _TOKEN.findall(text)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if not toks:
            break
        i = rng.randrange(len(toks))
        if kind == 0:
            del toks[i]
        elif kind == 1:
            toks.insert(i, toks[i])
        elif kind == 2:
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == 3:
            toks.insert(i, rng.choice(_VOCABULARY))
        else:
            toks[i] = rng.choice(_VOCABULARY)
    return "".join(toks)


def test_mutations():
    """Seeded mutations of the constructs and of small repository files: never a text
    Lark rejects, never another tree."""
    small = sorted((p.read_text(encoding="utf-8") for p in _repository_files()), key=len)
    seeds = CONSTRUCTS + [t for t in small if len(t) < 1500][::4][:30]
    rng = random.Random(17)
    seen = {"same": 0, "rejected": 0, "gave up": 0}
    for n in range(2500):
        text = _mutant(rng.choice(seeds), rng)
        outcome = _check(text, f"mutant {n}: {text!r}")
        seen[outcome] += 1
        if outcome == "rejected" and n % 10 == 0:
            _same_diagnostic(text, f"mutant {n}: {text!r}")
    assert seen["same"] > 500 and seen["rejected"] > 500


def test_deep_nesting_falls_back_to_lark():
    """Brackets nested past Python's recursion limit: Lark's parser builds the tree."""
    text = "x = " + "(" * 400 + "1" + ")" * 400 + "\n"
    with pytest.raises(RecursionError):
        fast_parser.parse(text)
    assert _shape(parse_tree(text)) == _shape(lalr_parser.parser().parse(text))


def test_a_build_imports_no_lark_parser(tmp_path):
    code = ("import sys; from tirc.build.stages import build; "
            f"build(open({str(ROOT / 'samples' / 'vector_add.tir')!r}).read(), "
            f"'cuda -arch=sm_90', None, {str(tmp_path)!r}, 'va'); "
            "print(sorted(m for m in sys.modules if m in "
            "('tirc.syntax.grammar_parser', 'tirc.syntax.lalr_parser')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
    assert (tmp_path / "va.ptx").exists()
