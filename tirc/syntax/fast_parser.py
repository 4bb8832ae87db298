"""A recursive-descent parser of ``grammar.lark`` that builds the tree Lark's LALR parser
builds, without Lark (whose parser took 0.62 s of the 500-kernel benchmark module's build,
and importing and building it 13 ms of every build).

The same tree means: the same rule and alias names (a ``?rule`` with one child is that
child), the same children (no anonymous or ``_``-named tokens except in ``!comp_op``; a
``None`` for each absent ``[optional]`` item that would have given a child), the same
tokens, and the positions Lark's ``PropagatePositions`` sets. Those are the first and the
last token of the rule's match, filtered tokens (brackets, ``_NL``, ``_DEDENT``)
included, since every tree holds at least one token: ``meta`` of a node is the start of
its first token and the end of its last (``_Parser.node``).

The parser only takes texts it is sure of: any token it does not expect raises
:class:`~tirc.syntax.lexer.GiveUp`, and :func:`tirc.frontend.parse.parse_tree` then runs Lark's
parser, which gives the diagnostics. ``tests/syntax/test_fast_parser.py`` compares the two on
every ``.tir`` file of the repository and on mutations of them.

Expressions are parsed by precedence climbing over the grammar's levels (``_LEVEL``),
each level's run of operators one flat node, as Lark's ``x (op x)+`` rules give, and an
operand with no operator after it costs one dictionary look-up, not a call per level.
"""
from __future__ import annotations

from tirc.syntax.lexer import GiveUp, tokenize
from tirc.syntax.tree import Meta, Token, Tree

# sha256 of the grammar.lark this module implements: a test fails when the grammar changes
GRAMMAR_SHA256 = "9fe70c5637b9f00c0c32d5e6e90c189b8d3c85b0e30ddc8261512019f113ba85"

# binary operators: terminal -> precedence level; and per level: (node name, whether
# the operator token is a child). Level 3 is the prefix ``not``.
_LEVEL = {"OR": 1, "AND": 2,
          "__ANON_1": 4, "__ANON_2": 4, "__ANON_3": 4, "__ANON_4": 4, "LESSTHAN": 4,
          "MORETHAN": 4, "PIPE": 5, "CARET": 6, "AMP": 7, "LSHIFT": 8, "RSHIFT": 8,
          "PLUS": 9, "MINUS": 9, "STAR": 10, "SLASH": 10, "DSLASH": 10, "PERCENT": 10}
_NODE = {1: ("or_expr", False), 2: ("and_expr", False), 4: ("compare", True),
         5: ("binary", True), 6: ("binary", True), 7: ("binary", True),
         8: ("binary", True), 9: ("binary", True), 10: ("binary", True)}
_UNARY = frozenset(("PLUS", "MINUS", "TILDE"))
_LITERAL = {"NAME": "name", "INT": "int_lit", "FLOAT": "float_lit", "TRUE": "true_lit",
            "FALSE": "false_lit", "NONE": "none_lit"}
_VALUED = frozenset(("NAME", "INT", "FLOAT"))  # literals with their token as the child
_TEST_START = frozenset(("NAME", "INT", "FLOAT", "STRING", "TRUE", "FALSE", "NONE", "LPAR",
                         "LSQB", "LBRACE", "PLUS", "MINUS", "TILDE", "NOT", "LAMBDA"))
_KEYWORD_STMT = {"PASS": "pass_stmt", "BREAK": "break_stmt", "CONTINUE": "continue_stmt"}


def parse(text: str) -> Tree:
    """The tree Lark's parser gives for ``text`` (ending in a newline), or :class:`GiveUp`."""
    return _Parser(*tokenize(text)).start()


_new_meta = Meta.__new__  # Meta() and Tree() without their __init__ (node())
_new_tree = Tree.__new__


class _Parser:
    """One parse: the terminal names ``k`` (ending in ``$END``), their positions ``s``
    and tokens ``t`` (:func:`~tirc.syntax.lexer.tokenize`), and the index ``i`` of the next
    token. Each method parses one rule from ``i``."""

    def __init__(self, kinds: list[str], spans: list[tuple], toks: list[Token | None]):
        self.k = kinds + ["$END"]
        self.s = spans
        self.t = toks
        self.i = 0

    def node(self, data: str, children: list, first: int) -> Tree:
        """A tree of the tokens from ``first`` to the last one taken: its positions are
        the start of the first and the end of the last, as Lark sets them (Lark's
        ``container_*`` copies included). Written out, not ``Tree(data, children,
        meta)``: it builds every tree."""
        spans = self.s
        a, b = spans[first], spans[self.i - 1]  # (start_pos, line, column, end_...)
        meta = _new_meta(Meta)
        meta.empty = False
        meta.start_pos = meta.container_start_pos = a[0]
        meta.line = meta.container_line = a[1]
        meta.column = meta.container_column = a[2]
        meta.end_line = meta.container_end_line = b[3]
        meta.end_column = meta.container_end_column = b[4]
        meta.end_pos = meta.container_end_pos = b[5]
        tree = _new_tree(Tree)
        tree.data = data
        tree.children = children
        tree._meta = meta
        return tree

    def expect(self, kind: str) -> Token | None:
        """The next token, of terminal ``kind`` (``None`` for one no tree holds)."""
        i = self.i
        if self.k[i] != kind:
            raise GiveUp(f"{kind} expected at token {i}")
        self.i = i + 1
        return self.t[i]

    # -- module level ----------------------------------------------------------------
    def start(self) -> Tree:
        k = self.k
        children = []
        while True:
            kind = k[self.i]
            if kind == "_NL":
                self.i += 1
            elif kind == "AT":
                children.append(self.decorated())
            elif kind == "NAME":
                children.append(self.toplevel_assign())
            elif kind == "FROM" or kind == "IMPORT":
                children.append(self.import_stmt())
            elif kind == "$END":
                break
            else:
                raise GiveUp(f"{kind} at module level")
        if not self.t:
            return Tree("start", children)
        return self.node("start", children, 0)

    def toplevel_assign(self) -> Tree:
        first = self.i
        name = self.expect("NAME")
        self.expect("EQUAL")
        value = self.test()
        self.expect("_NL")
        return self.node("toplevel_assign", [name, value], first)

    def import_stmt(self) -> Tree:
        first = self.i
        if self.k[first] == "FROM":
            self.i += 1
            children = [self.dotted()]
            self.expect("IMPORT")
            names_first = self.i
            names = [self.import_name()]
            while self.k[self.i] == "COMMA":
                self.i += 1
                names.append(self.import_name())
            children.append(self.node("import_names", names, names_first))
        else:
            self.expect("IMPORT")
            children = [self.dotted()]
            if self.k[self.i] == "AS":
                self.i += 1
                children.append(self.expect("NAME"))
        self.expect("_NL")
        return self.node("import_stmt", children, first)

    def import_name(self) -> Tree:
        first = self.i
        children = [self.expect("NAME")]
        if self.k[self.i] == "AS":
            self.i += 1
            children.append(self.expect("NAME"))
        return self.node("import_name", children, first)

    def dotted(self) -> Tree:
        first = self.i
        names = [self.expect("NAME")]
        while self.k[self.i] == "DOT":
            self.i += 1
            names.append(self.expect("NAME"))
        return self.node("dotted", names, first)

    def decorated(self) -> Tree:
        first = self.i
        children = []
        while self.k[self.i] == "AT":
            children.append(self.decorator())
        kind = self.k[self.i]
        if kind == "DEF":
            children.append(self.funcdef())
        elif kind == "CLASS":
            children.append(self.classdef())
        else:
            raise GiveUp(f"{kind} after a decorator")
        return self.node("decorated", children, first)

    def decorator(self) -> Tree:
        first = self.i
        self.expect("AT")
        name = self.dotted()
        if self.k[self.i] == "_NL":
            self.i += 1
            return self.node("decorator_plain", [name], first)
        self.expect("LPAR")
        args = None if self.k[self.i] == "RPAR" else self.arglist()
        self.expect("RPAR")
        self.expect("_NL")
        return self.node("decorator_call", [name, args], first)

    def classdef(self) -> Tree:
        first = self.i
        self.expect("CLASS")
        children = [self.expect("NAME")]
        if self.k[self.i] == "LPAR":
            self.i += 1
            self.expect("RPAR")
        self.expect("COLON")
        self.expect("_NL")
        self.expect("_INDENT")
        k = self.k
        items = 0
        while k[self.i] != "_DEDENT":
            kind = k[self.i]
            if kind == "AT":
                children.append(self.decorated())
            elif kind == "PASS":
                self.i += 1
                children.append(self.node("pass_stmt", [], self.i - 1))
                self.expect("_NL")
            elif kind == "_NL":
                self.i += 1
            else:
                raise GiveUp(f"{kind} in a class body")
            items += 1
        if not items:
            raise GiveUp("an empty class body")
        self.i += 1
        return self.node("classdef", children, first)

    def funcdef(self) -> Tree:
        first = self.i
        self.expect("DEF")
        name = self.expect("NAME")
        self.expect("LPAR")
        params = None if self.k[self.i] == "RPAR" else self.parameters()
        self.expect("RPAR")
        returns = None
        if self.k[self.i] == "__ANON_0":  # ->
            self.i += 1
            returns = self.test()
        self.expect("COLON")
        body = self.suite()
        return self.node("funcdef", [name, params, returns, body], first)

    def parameters(self) -> Tree:
        first = self.i
        params = [self.param()]
        while self.k[self.i] == "COMMA":
            self.i += 1
            if self.k[self.i] == "RPAR":
                break
            params.append(self.param())
        return self.node("parameters", params, first)

    def param(self) -> Tree:
        first = self.i
        name = self.expect("NAME")
        self.expect("COLON")
        return self.node("param", [name, self.test()], first)

    # -- statements ------------------------------------------------------------------
    def suite(self) -> Tree:
        first = self.i
        if self.k[first] != "_NL":
            return self.node("inline_suite", [self.simple_stmt()], first)
        self.i += 1
        self.expect("_INDENT")
        k = self.k
        stmts = [self.stmt()]
        while k[self.i] != "_DEDENT":
            stmts.append(self.stmt())
        self.i += 1
        return self.node("suite", stmts, first)

    def stmt(self) -> Tree:
        kind = self.k[self.i]
        if kind == "FOR":
            return self.for_stmt()
        if kind == "IF":
            return self.if_stmt()
        if kind == "WITH":
            return self.with_stmt()
        if kind == "WHILE":
            return self.while_stmt()
        return self.simple_stmt()

    def simple_stmt(self) -> Tree:
        first = self.i
        small = self.small_stmt()
        self.expect("_NL")
        return self.node("simple_stmt", [small], first)

    def small_stmt(self) -> Tree:
        first = self.i
        k = self.k
        kind = k[first]
        if kind == "NAME" and k[first + 1] == "COMMA":
            return self.name_list_assign()
        if kind in _TEST_START:
            target = self.test()
            kind = k[self.i]
            if kind == "EQUAL":
                self.i += 1
                return self.node("assign_stmt", [target, self.test()], first)
            if kind == "COLON":
                self.i += 1
                annotation = self.test()
                value = None
                if k[self.i] == "EQUAL":
                    self.i += 1
                    value = self.test()
                return self.node("annassign_stmt", [target, annotation, value], first)
            return self.node("expr_stmt", [target], first)
        if kind == "RETURN":
            self.i += 1
            value = self.test() if k[self.i] in _TEST_START else None
            return self.node("return_stmt", [value], first)
        if kind == "ASSERT":
            self.i += 1
            children = [self.test(), None]
            if k[self.i] == "COMMA":
                self.i += 1
                children[1] = self.test()
            return self.node("assert_stmt", children, first)
        data = _KEYWORD_STMT.get(kind)
        if data is not None:
            self.i += 1
            return self.node(data, [], first)
        raise GiveUp(f"{kind} at the start of a statement")

    def name_list_assign(self) -> Tree:
        """``a, b = x`` (``tuple_assign``) or ``a, b = x, y`` (``multi_assign``)."""
        first = self.i
        k = self.k
        names = [self.expect("NAME")]
        while k[self.i] == "COMMA":
            self.i += 1
            names.append(self.expect("NAME"))
        name_list = self.node("name_list", names, first)
        self.expect("EQUAL")
        values = [self.test()]
        while k[self.i] == "COMMA":
            self.i += 1
            if k[self.i] not in _TEST_START and len(values) > 1:
                break  # a trailing comma after two values or more
            values.append(self.test())
        if len(values) == 1:
            return self.node("tuple_assign", [name_list, values[0]], first)
        return self.node("multi_assign", [name_list, *values], first)

    def for_stmt(self) -> Tree:
        first = self.i
        self.expect("FOR")
        target = self.for_target()
        self.expect("IN")
        iterable = self.test()
        self.expect("COLON")
        return self.node("for_stmt", [target, iterable, self.suite()], first)

    def for_target(self) -> Token | Tree:
        first = self.i
        k = self.k
        if k[first] == "LPAR":
            self.i += 1
            names = [self.expect("NAME")]
            while k[self.i] == "COMMA":
                self.i += 1
                if k[self.i] == "RPAR":
                    break
                names.append(self.expect("NAME"))
            self.expect("RPAR")
            return self.node("name_tuple", names, first)
        name = self.expect("NAME")
        if k[self.i] != "COMMA":
            return name
        names = [name]
        while k[self.i] == "COMMA":
            self.i += 1
            if k[self.i] != "NAME" and len(names) > 1:
                break  # a trailing comma after two names or more
            names.append(self.expect("NAME"))
        return self.node("name_tuple", names, first)

    def while_stmt(self) -> Tree:
        first = self.i
        self.expect("WHILE")
        cond = self.test()
        self.expect("COLON")
        return self.node("while_stmt", [cond, self.suite()], first)

    def if_stmt(self) -> Tree:
        first = self.i
        k = self.k
        self.expect("IF")
        children = [self.test()]
        self.expect("COLON")
        children.append(self.suite())
        while k[self.i] == "ELIF":
            clause = self.i
            self.i += 1
            cond = self.test()
            self.expect("COLON")
            children.append(self.node("elif_clause", [cond, self.suite()], clause))
        orelse = None
        if k[self.i] == "ELSE":
            clause = self.i
            self.i += 1
            self.expect("COLON")
            orelse = self.node("else_clause", [self.suite()], clause)
        children.append(orelse)
        return self.node("if_stmt", children, first)

    def with_stmt(self) -> Tree:
        first = self.i
        self.expect("WITH")
        context = self.test()
        target = None
        if self.k[self.i] == "AS":
            self.i += 1
            target = self.for_target()
        self.expect("COLON")
        return self.node("with_stmt", [context, target, self.suite()], first)

    # -- expressions -----------------------------------------------------------------
    def test(self) -> Tree:
        if self.k[self.i] != "LAMBDA":
            return self.expr(1)
        first = self.i
        k = self.k
        self.i += 1
        params = None
        if k[self.i] == "NAME":
            params_first = self.i
            names = [self.expect("NAME")]
            while k[self.i] == "COMMA":
                self.i += 1
                names.append(self.expect("NAME"))
            params = self.node("lambda_params", names, params_first)
        self.expect("COLON")
        return self.node("lambda_expr", [params, self.test()], first)

    def expr(self, min_level: int) -> Tree:
        """An expression whose binary operators have levels ``min_level`` and up (1: a
        whole ``or_test``)."""
        first = self.i
        k = self.k
        if k[first] == "NOT":
            if min_level > 3:
                raise GiveUp("'not' as an operand of a binary operator")
            self.i += 1
            left = self.node("not_expr", [self.expr(3)], first)
        elif k[first] in _UNARY:
            left = self.factor()
        else:
            left = self.atom_expr()
        level = _LEVEL.get(k[self.i])
        while level is not None and level >= min_level:
            name, keep = _NODE[level]
            children = [left]
            while _LEVEL.get(k[self.i]) == level:
                op = self.t[self.i]
                self.i += 1
                if level == 4:
                    children.append(self.node("comp_op", [op], self.i - 1))
                elif keep:
                    children.append(op)
                children.append(self.expr(level + 1))
            left = self.node(name, children, first)
            level = _LEVEL.get(k[self.i])
        return left

    def factor(self) -> Tree:
        first = self.i
        if self.k[first] in _UNARY:
            op = self.t[first]
            self.i += 1
            return self.node("unary", [op, self.factor()], first)
        return self.atom_expr()

    def atom_expr(self) -> Tree:
        first = self.i
        k = self.k
        kind = k[first]
        data = _LITERAL.get(kind)
        if data is not None:  # atom()'s most common case, written out
            self.i = first + 1
            node = self.node(data, [self.t[first]] if kind in _VALUED else [], first)
        else:
            node = self.atom()
        while True:
            kind = k[self.i]
            if kind == "DOT":
                self.i += 1
                node = self.node("getattr", [node, self.expect("NAME")], first)
            elif kind == "LPAR":
                self.i += 1
                args = None if k[self.i] == "RPAR" else self.arglist()
                self.expect("RPAR")
                node = self.node("call", [node, args], first)
            elif kind == "LSQB":
                self.i += 1
                items = self.subscripts()
                self.expect("RSQB")
                node = self.node("subscript", [node, items], first)
            else:
                return node

    def atom(self) -> Tree:
        first = self.i
        k = self.k
        kind = k[first]
        data = _LITERAL.get(kind)
        if data is not None:
            self.i = first + 1
            return self.node(data, [self.t[first]] if kind in _VALUED else [], first)
        if kind == "STRING":
            i = first
            while k[i] == "STRING":
                i += 1
            self.i = i
            return self.node("string_lit", self.t[first:i], first)
        if kind == "LPAR":
            return self.parenthesized()
        if kind == "LSQB":
            self.i += 1
            if k[self.i] == "RSQB":
                self.i += 1
                return self.node("list_lit", [None], first)
            items = [self.test()]
            while k[self.i] == "COMMA":
                self.i += 1
                if k[self.i] == "RSQB":
                    break
                items.append(self.test())
            self.expect("RSQB")
            return self.node("list_lit", items, first)
        if kind == "LBRACE":
            self.i += 1
            if k[self.i] == "RBRACE":
                self.i += 1
                return self.node("dict_lit", [None], first)
            items = [self.dict_item()]
            while k[self.i] == "COMMA":
                self.i += 1
                if k[self.i] == "RBRACE":
                    break
                items.append(self.dict_item())
            self.expect("RBRACE")
            return self.node("dict_lit", items, first)
        raise GiveUp(f"{kind} where an expression starts")

    def parenthesized(self) -> Tree:
        """``(x)`` (``paren``), or a tuple: ``()``, ``(x,)``, ``(x, y)``, ``(x, y,)``."""
        first = self.i
        k = self.k
        self.expect("LPAR")
        if k[self.i] == "RPAR":
            self.i += 1
            return self.node("tuple_lit", [], first)
        items = [self.test()]
        if k[self.i] == "RPAR":
            self.i += 1
            return self.node("paren", items, first)
        while k[self.i] == "COMMA":
            self.i += 1
            if k[self.i] == "RPAR":
                break
            items.append(self.test())
        self.expect("RPAR")
        return self.node("tuple_lit", items, first)

    def dict_item(self) -> Tree:
        first = self.i
        key = self.test()
        self.expect("COLON")
        return self.node("dict_item", [key, self.test()], first)

    def arglist(self) -> Tree:
        first = self.i
        k = self.k
        args = [self.argument()]
        while k[self.i] == "COMMA":
            self.i += 1
            if k[self.i] == "RPAR":
                break
            args.append(self.argument())
        return self.node("arglist", args, first)

    def argument(self) -> Tree:
        first = self.i
        if self.k[first] == "NAME" and self.k[first + 1] == "EQUAL":
            self.i += 2
            return self.node("kwarg", [self.t[first], self.test()], first)
        return self.test()

    def subscripts(self) -> Tree:
        first = self.i
        k = self.k
        items = [self.subscript_item()]
        while k[self.i] == "COMMA":
            self.i += 1
            if k[self.i] == "RSQB":
                break
            items.append(self.subscript_item())
        return self.node("subscripts", items, first)

    def subscript_item(self) -> Tree:
        """An index, or a slice ``[lower] : [upper] [: [step]]`` (three children, each
        ``None`` where absent)."""
        first = self.i
        k = self.k
        lower = None
        if k[first] != "COLON":
            lower = self.test()
            if k[self.i] != "COLON":
                return lower
        self.i += 1
        upper = self.test() if k[self.i] in _TEST_START else None
        step = None
        if k[self.i] == "COLON":
            self.i += 1
            step = self.test() if k[self.i] in _TEST_START else None
        return self.node("slice", [lower, upper, step], first)
