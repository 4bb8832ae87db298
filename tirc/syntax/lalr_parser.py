"""Lark's LALR parser of ``grammar.lark`` (:mod:`tirc.syntax.grammar_parser`, which Lark's
stand-alone generator made from the grammar: ``python tools/gen_parser.py`` after changing
it; a test checks it is not stale), and the mapping of its syntax errors to diagnostics.

:func:`tirc.frontend.parse.parse_tree` runs it only where :mod:`tirc.syntax.fast_parser` gives up (a
syntax error, or a text the fast parser does not take), so that its diagnostics are the
ones users see; importing the module (7 ms) and building the parser (6 ms) are then paid.
"""
from __future__ import annotations

from functools import lru_cache

from tirc.syntax import grammar_parser as lark

from tirc.diagnostics import Diagnostic, Span
from tirc.syntax.tree import Tree


class _TirIndenter(lark.Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def handle_NL(self, token):  # noqa: N802 (lark's hook name)
        if self.paren_level > 0:
            return
        yield token
        indent_str = token.rsplit("\n", 1)[1]
        indent = indent_str.count(" ") + indent_str.count("\t") * self.tab_len
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            yield lark.Token.new_borrow_pos(self.INDENT_type, indent_str, token)
        else:
            while indent < self.indent_level[-1]:
                self.indent_level.pop()
                yield lark.Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
            if indent != self.indent_level[-1]:
                raise _BadDedent(token.end_line or token.line, indent + 1)


class _BadDedent(Exception):
    def __init__(self, line: int, col: int):
        super().__init__("unindent does not match any outer indentation level")
        self.line = line
        self.col = col


@lru_cache(maxsize=1)
def parser() -> lark.Lark:
    return lark.Lark_StandAlone(postlex=_TirIndenter())


_TOKEN_NAMES = {
    "_NL": "end of line", "_INDENT": "indentation", "_DEDENT": "end of block",
    "$END": "end of file", "NAME": "a name", "INT": "an integer", "FLOAT": "a number",
    "STRING": "a string", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "LBRACE": "'{'", "RBRACE": "'}'", "COLON": "':'", "COMMA": "','", "EQUAL": "'='",
    "DOT": "'.'", "AT": "'@'", "RARROW": "'->'",
}


def _describe(token: lark.Token) -> str:
    if token.type in ("_NL", "_INDENT", "_DEDENT", "$END"):
        return _TOKEN_NAMES[token.type]
    return f"'{token}'"


def _expected(names: set[str]) -> str:
    shown = sorted({_TOKEN_NAMES.get(n, n.lower().replace("_", " ")) for n in names
                    if not n.startswith("__")})
    if not shown or len(shown) > 8:
        return ""
    return "; expected " + ", ".join(shown)


def _syntax_error(e: Exception, filename: str, text: str) -> Diagnostic:
    if isinstance(e, _BadDedent):
        return Diagnostic(str(e), Span(filename, e.line, e.col))
    if isinstance(e, lark.UnexpectedCharacters):
        char = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
        return Diagnostic(f"unexpected character {char!r}", Span(filename, e.line, e.column))
    if isinstance(e, lark.UnexpectedToken):
        tok = e.token
        line, col = tok.line, tok.column
        if tok.type == "$END" or line is None:
            line, col = _end_position(text)
        elif tok.type in ("_NL", "_DEDENT", "_INDENT") and tok.type != "_INDENT":
            line, col = _line_end(text, line)
        if tok.type == "_INDENT":
            line = (tok.end_line or line)
            col = (tok.end_column or 1)
            return Diagnostic("unexpected indentation", Span(filename, line, col))
        return Diagnostic(f"unexpected {_describe(tok)}{_expected(e.expected)}",
                          Span(filename, line, col))
    if isinstance(e, lark.UnexpectedEOF):
        line, col = _end_position(text)
        return Diagnostic("unexpected end of file", Span(filename, line, col))
    line, col = _end_position(text)
    return Diagnostic(f"syntax error: {e}", Span(filename, line, col))


def _end_position(text: str) -> tuple[int, int]:
    lines = text.splitlines() or [""]
    return len(lines), len(lines[-1]) + 1


def _line_end(text: str, line: int) -> tuple[int, int]:
    lines = text.splitlines()
    if 1 <= line <= len(lines):
        return line, len(lines[line - 1]) + 1
    return _end_position(text)


def parse_tree(text: str, filename: str) -> Tree:
    """The parse tree of ``text`` (ending in a newline); syntax errors raise
    :class:`Diagnostic`."""
    try:
        return parser().parse(text)
    except (lark.LarkError, _BadDedent) as e:
        raise _syntax_error(e, filename, text) from None
