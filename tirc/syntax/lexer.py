"""The token stream of :mod:`tirc.syntax.fast_parser`: the tokens Lark's LALR parser of
``grammar.lark`` receives, after its lexer and the indentation post-lexer.

Lark's basic lexer tries its terminals in a fixed order (the first that matches wins, not
the longest): ``FLOAT``, ``INT``, ``STRING``, ``NAME``, ``_NL``, ``LINE_CONT``,
``COMMENT``, white space, then the punctuation, two characters before one. A ``NAME``
spelling a keyword (``for``, ``True``) takes the keyword's terminal. ``_NL`` also matches a
comment, so ``COMMENT`` never does, and a comment ends its line's ``_NL`` token.

The post-lexer (``tirc.syntax.lalr_parser._TirIndenter``, Lark's ``Indenter``) drops ``_NL``
inside brackets, and after each other ``_NL`` emits an ``_INDENT`` or as many ``_DEDENT``
as levels closed, positioned as the ``_NL``; at the end of the text it closes the open
levels with ``_DEDENT`` tokens positioned as the last token.

Anything unusual (a character no terminal matches, a dedent to an unknown column,
unbalanced brackets) raises :class:`GiveUp`: Lark parses the text again and reports it.
"""
from __future__ import annotations

import re

from tirc.syntax.tree import Token


class GiveUp(Exception):
    """The fast parser does not take this text: Lark's parser decides (and reports)."""


# White space, then one terminal. Lark tries its terminals in the order of the module
# docstring; here the most frequent come first, which matches the same way, since two
# terminals can only both match where their first characters can be the same: digits
# (``FLOAT`` before ``INT``, as in Lark) and ``.`` (``FLOAT`` before ``DOT``, as in
# Lark). ``BAD``, any other character, is where Lark's lexer stops.
_TOKEN = re.compile(
    r"[\t \x0c]*(?:"
    r"(?P<NAME>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<OP>//|<<|>>|->|==|!=|<=|>=|[&@^:,={<(\[\-%|+}>)\]/*~])"
    r"|(?P<_NL>(?:\r?\n[\t ]*|#[^\n]*)++)"
    r"|(?P<FLOAT>(?:[0-9]+[eE][-+]?[0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?))"
    r"|(?P<INT>(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|[0-9]+))"
    r"|(?P<STRING>(?:\"(?:[^\"\\\n]|\\.)*+\"|'(?:[^'\\\n]|\\.)*+'))"
    r"|(?P<LINE_CONT>\\[\t ]*\r?\n)"
    r"|(?P<OP_DOT>\.)"
    r"|(?P<BAD>[\s\S]))")

KEYWORDS = {word: word.upper() for word in (
    "continue", "assert", "import", "lambda", "return", "break", "class", "while", "elif",
    "else", "from", "pass", "with", "and", "def", "for", "not", "as", "if", "in", "or")}
KEYWORDS.update({"True": "TRUE", "False": "FALSE", "None": "NONE"})

# Lark's names of the punctuation terminals (``__ANON_n``: the grammar names none)
OPERATORS = {
    "//": "DSLASH", "<<": "LSHIFT", ">>": "RSHIFT", "->": "__ANON_0", "==": "__ANON_1",
    "!=": "__ANON_2", "<=": "__ANON_3", ">=": "__ANON_4", "&": "AMP", "@": "AT",
    "^": "CARET", ":": "COLON", ",": "COMMA", ".": "DOT", "=": "EQUAL", "{": "LBRACE",
    "<": "LESSTHAN", "(": "LPAR", "[": "LSQB", "-": "MINUS", ">": "MORETHAN", "%": "PERCENT",
    "|": "PIPE", "+": "PLUS", "}": "RBRACE", ")": "RPAR", "]": "RSQB", "/": "SLASH",
    "*": "STAR", "~": "TILDE",
}
_OPEN = frozenset(("LPAR", "LSQB", "LBRACE"))
_CLOSE = frozenset(("RPAR", "RSQB", "RBRACE"))
# the terminals that are children in the tree: the grammar's named ones (not ``_NL``)
# and the comparison operators of ``!comp_op``; the others (keywords, brackets, ``:``,
# ``_INDENT``) are filtered out, and only their positions count (for ``meta``)
KEPT = frozenset(("NAME", "INT", "FLOAT", "STRING", "PLUS", "MINUS", "TILDE", "STAR",
                  "SLASH", "DSLASH", "PERCENT", "PIPE", "CARET", "AMP", "LSHIFT", "RSHIFT",
                  "__ANON_1", "__ANON_2", "__ANON_3", "__ANON_4", "LESSTHAN", "MORETHAN"))
TAB_LEN = 8  # as tirc.syntax.lalr_parser._TirIndenter

# A token's positions, as Lark's lexer sets them on a Token: (start_pos, line, column,
# end_line, end_column, end_pos); end_column is the column just past the token.
Span = tuple


def tokenize(text: str) -> tuple[list[str], list[Span], list[Token | None]]:
    """The tokens Lark's parser receives for ``text``, ``$END`` excluded: their terminal
    names, their positions, and the :class:`Token` of each terminal in :data:`KEPT`
    (``None`` for the others: no tree holds them). :class:`GiveUp` where Lark's lexer or
    post-lexer would stop, or might behave in a way not written out here."""
    kinds: list[str] = []
    spans: list[Span] = []
    toks: list[Token | None] = []
    add_kind, add_span, add_tok = kinds.append, spans.append, toks.append
    keywords, operators, kept, new_str = KEYWORDS, OPERATORS, KEPT, str.__new__
    line, line_start = 1, 0
    paren = 0
    levels = [0]
    last = None  # the last token Lark's lexer produced: the final dedents' positions
    for m in _TOKEN.finditer(text):  # no gaps: BAD matches any character
        kind = m.lastgroup
        start, pos = m.span(kind)
        if kind == "_NL" or kind == "LINE_CONT":
            value = text[start:pos]
            first_line, column = line, start - line_start + 1
            newlines = value.count("\n")
            if newlines:
                line += newlines
                line_start = start + value.rindex("\n") + 1
            if kind == "LINE_CONT":
                continue
            last = span = (start, first_line, column, line, pos - line_start + 1, pos)
            if paren:
                continue
            if not newlines:
                raise GiveUp("a line end without a newline")
            add_kind("_NL")
            add_span(span)
            add_tok(None)
            indent_str = value[value.rindex("\n") + 1:]
            indent = indent_str.count(" ") + indent_str.count("\t") * TAB_LEN
            if indent > levels[-1]:
                levels.append(indent)
                add_kind("_INDENT")
                add_span(span)
                add_tok(None)
            else:
                while indent < levels[-1]:
                    levels.pop()
                    add_kind("_DEDENT")
                    add_span(span)
                    add_tok(None)
                if indent != levels[-1]:
                    raise GiveUp("a dedent to no enclosing level")
            continue
        if kind == "OP" or kind == "OP_DOT":
            kind = operators[text[start:pos]]
            if kind in _OPEN:
                paren += 1
            elif kind in _CLOSE:
                paren -= 1
                if paren < 0:
                    raise GiveUp("a closing bracket without an opening one")
        elif kind == "NAME":
            kind = keywords.get(text[start:pos], "NAME")
        elif kind == "BAD":
            raise GiveUp(f"no terminal matches at {start}")
        column = start - line_start + 1
        end_column = pos - line_start + 1
        last = span = (start, line, column, line, end_column, pos)
        add_kind(kind)
        add_span(span)
        if kind in kept:
            # Token(kind, value, start, line, column, line, end_column, pos), written
            # out: the call took a third of the tokenizer's time
            value = text[start:pos]
            tok = new_str(Token, value)
            tok.type = kind
            tok.value = value
            tok.start_pos = start
            tok.line = tok.end_line = line
            tok.column = column
            tok.end_column = end_column
            tok.end_pos = pos
            add_tok(tok)
        else:
            add_tok(None)
    if paren:
        raise GiveUp("an unclosed bracket")
    while len(levels) > 1:
        levels.pop()
        add_kind("_DEDENT")
        add_span(last)
        add_tok(None)
    return kinds, spans, toks
