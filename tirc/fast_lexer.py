"""The token stream of :mod:`tirc.fast_parser`: the tokens Lark's LALR parser of
``grammar.lark`` receives, after its lexer and the indentation post-lexer.

Lark's basic lexer tries its terminals in a fixed order (the first that matches wins, not
the longest): ``FLOAT``, ``INT``, ``STRING``, ``NAME``, ``_NL``, ``LINE_CONT``,
``COMMENT``, white space, then the punctuation, two characters before one. A ``NAME``
spelling a keyword (``for``, ``True``) takes the keyword's terminal. ``_NL`` also matches a
comment, so ``COMMENT`` never does, and a comment ends its line's ``_NL`` token.

The post-lexer (``tirc.lalr_parser._TirIndenter``, Lark's ``Indenter``) drops ``_NL``
inside brackets, and after each other ``_NL`` emits an ``_INDENT`` or as many ``_DEDENT``
as levels closed, positioned as the ``_NL``; at the end of the text it closes the open
levels with ``_DEDENT`` tokens positioned as the last token.

Anything unusual (a character no terminal matches, a dedent to an unknown column,
unbalanced brackets) raises :class:`GiveUp`: Lark parses the text again and reports it.
"""
from __future__ import annotations

import re

from tirc.syntax_tree import Token


class GiveUp(Exception):
    """The fast parser does not take this text: Lark's parser decides (and reports)."""


# White space first (possessive: it never gives back), then one terminal, in Lark's order.
_TOKEN = re.compile(
    r"[\t \x0c]*+(?:"
    r"(?P<FLOAT>(?:[0-9]+[eE][-+]?[0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?))"
    r"|(?P<INT>(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|[0-9]+))"
    r"|(?P<STRING>(?:\"(?:[^\"\\\n]|\\.)*+\"|'(?:[^'\\\n]|\\.)*+'))"
    r"|(?P<NAME>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<_NL>(?:\r?\n[\t ]*|#[^\n]*)++)"
    r"|(?P<LINE_CONT>\\[\t ]*\r?\n)"
    r"|(?P<OP>//|<<|>>|->|==|!=|<=|>=|[&@^:,.={<(\[\-%|+}>)\]/*~]))")

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
TAB_LEN = 8  # as tirc.lalr_parser._TirIndenter


def tokenize(text: str) -> tuple[list[str], list[Token]]:
    """The terminal names and the tokens (positions as Lark's lexer sets them) that Lark's
    parser receives for ``text``, ``$END`` excluded. :class:`GiveUp` where Lark's lexer or
    post-lexer would stop, or might behave in a way not written out here."""
    kinds: list[str] = []
    toks: list[Token] = []
    add_kind, add_tok = kinds.append, toks.append
    keywords, operators, new_str = KEYWORDS, OPERATORS, str.__new__
    line, line_start, pos = 1, 0, 0
    paren = 0
    levels = [0]
    last = None  # the last token Lark's lexer produced (the final dedents' position)
    match = _TOKEN.match
    size = len(text)
    while pos < size:
        m = match(text, pos)
        if m is None:
            raise GiveUp(f"no terminal matches at {pos}")
        kind = m.lastgroup
        start, pos = m.span(kind)
        value = text[start:pos]
        if kind == "_NL" or kind == "LINE_CONT":
            column = start - line_start + 1
            newlines = value.count("\n")
            if newlines:
                line += newlines
                line_start = start + value.rindex("\n") + 1
            if kind == "LINE_CONT":
                continue
            tok = Token("_NL", value, start, line - newlines, column, line,
                        pos - line_start + 1, pos)
            last = tok
            if paren:
                continue
            add_kind("_NL")
            add_tok(tok)
            if not newlines:
                raise GiveUp("a line end without a newline")
            indent_str = value[value.rindex("\n") + 1:]
            indent = indent_str.count(" ") + indent_str.count("\t") * TAB_LEN
            if indent > levels[-1]:
                levels.append(indent)
                add_kind("_INDENT")
                add_tok(Token.new_borrow_pos("_INDENT", indent_str, tok))
            else:
                while indent < levels[-1]:
                    levels.pop()
                    add_kind("_DEDENT")
                    add_tok(Token.new_borrow_pos("_DEDENT", indent_str, tok))
                if indent != levels[-1]:
                    raise GiveUp("a dedent to no enclosing level")
            continue
        if kind == "OP":
            kind = operators[value]
            if kind in _OPEN:
                paren += 1
            elif kind in _CLOSE:
                paren -= 1
                if paren < 0:
                    raise GiveUp("a closing bracket without an opening one")
        elif kind == "NAME":
            kind = keywords.get(value, "NAME")
        # Token(kind, value, start, line, column, line, column + pos - start, pos),
        # written out: a third of the tokenizer's time went to the call
        last = tok = new_str(Token, value)
        tok.type = kind
        tok.value = value
        tok.start_pos = start
        tok.line = tok.end_line = line
        tok.column = start - line_start + 1
        tok.end_column = pos - line_start + 1
        tok.end_pos = pos
        add_kind(kind)
        add_tok(tok)
    if paren:
        raise GiveUp("an unclosed bracket")
    while len(levels) > 1:
        levels.pop()
        add_kind("_DEDENT")
        add_tok(Token.new_borrow_pos("_DEDENT", "", last) if last is not None
                else Token("_DEDENT", "", 0, 0, 0, 0, 0, 0))
    return kinds, toks
