"""The parse tree's classes: :class:`Tree`, :class:`Token` and :class:`Meta`.

Both parsers build trees of these classes: :mod:`tirc.syntax.fast_parser` (the common case) and
:mod:`tirc.syntax.grammar_parser`, Lark's stand-alone LALR parser, whose own copies of the
classes ``tools/gen_parser.py`` replaces by an import of this module. So the frontend's
``isinstance`` checks hold for a tree from either parser, and the frontend imports the
classes without importing Lark's 3,600-line module.

They are Lark's classes (``lark/tree.py``, ``lark/lexer.py``, MIT licence) less what
neither parser nor the frontend uses (pretty printing to ``rich``, the deprecated
``type_`` keyword), with the same attributes, equality and hashing.
"""
from __future__ import annotations

from typing import Any, Iterator


class Meta:
    """A tree's source positions: ``line``, ``column``, ``start_pos``, ``end_line``,
    ``end_column``, ``end_pos`` and Lark's ``container_*`` copies of them, set by the
    parser; ``empty`` while none is (the others are then unset, as in Lark's ``Meta``).
    Slots: the fast parser sets thirteen of them on every tree, four times faster than
    in a ``__dict__``."""

    __slots__ = ("empty", "line", "column", "start_pos", "end_line", "end_column", "end_pos",
                 "container_line", "container_column", "container_start_pos",
                 "container_end_line", "container_end_column", "container_end_pos")

    def __init__(self) -> None:
        self.empty = True


class Tree:
    """A rule's node: ``data`` (the rule or alias name), ``children`` (trees, tokens and
    ``None`` for an absent ``[optional]`` part) and ``meta`` (positions)."""

    __slots__ = ("data", "children", "_meta")
    __match_args__ = ("data", "children")

    def __init__(self, data: str, children: list, meta: Meta | None = None) -> None:
        self.data = data
        self.children = children
        self._meta = meta

    def __class_getitem__(cls, item):
        """``Tree[...]``, written in the annotations of Lark's module, is ``Tree``."""
        return cls

    @property
    def meta(self) -> Meta:
        if self._meta is None:
            self._meta = Meta()
        return self._meta

    def __repr__(self) -> str:
        return "Tree(%r, %r)" % (self.data, self.children)

    def __eq__(self, other) -> bool:
        try:
            return self.data == other.data and self.children == other.children
        except AttributeError:
            return False

    def __ne__(self, other) -> bool:
        return not (self == other)

    def __hash__(self) -> int:
        return hash((self.data, tuple(self.children)))

    def _pretty(self, level: int, indent_str: str) -> Iterator[str]:
        yield f"{indent_str * level}{self.data}"
        if len(self.children) == 1 and not isinstance(self.children[0], Tree):
            yield f"\t{self.children[0]}\n"
        else:
            yield "\n"
            for n in self.children:
                if isinstance(n, Tree):
                    yield from n._pretty(level + 1, indent_str)
                else:
                    yield f"{indent_str * (level + 1)}{n}\n"

    def pretty(self, indent_str: str = "  ") -> str:
        """The tree as indented text, one node a line."""
        return "".join(self._pretty(0, indent_str))

    def iter_subtrees(self) -> Iterator[Tree]:
        """Every subtree once, children before their parents."""
        queue = [self]
        subtrees = {}
        for subtree in queue:
            subtrees[id(subtree)] = subtree
            queue += [c for c in reversed(subtree.children)
                      if isinstance(c, Tree) and id(c) not in subtrees]
        del queue
        return reversed(list(subtrees.values()))

    def iter_subtrees_topdown(self) -> Iterator[Tree]:
        """Every subtree, parents first, children left to right."""
        stack = [self]
        while stack:
            node = stack.pop()
            if not isinstance(node, Tree):
                continue
            yield node
            stack.extend(reversed(node.children))

    def find_pred(self, pred) -> Iterator[Tree]:
        return filter(pred, self.iter_subtrees())

    def find_data(self, data: str) -> Iterator[Tree]:
        return self.find_pred(lambda t: t.data == data)


class Token(str):
    """A terminal: the matched text (the ``str`` itself and ``value``), its terminal
    name ``type`` and its positions (``end_column``: the column just past it)."""

    __slots__ = ("type", "start_pos", "value", "line", "column", "end_line", "end_column",
                 "end_pos")
    __match_args__ = ("type", "value")

    def __new__(cls, type: str, value: Any, start_pos: int | None = None,
                line: int | None = None, column: int | None = None,
                end_line: int | None = None, end_column: int | None = None,
                end_pos: int | None = None) -> Token:
        inst = str.__new__(cls, value)
        inst.type = type
        inst.start_pos = start_pos
        inst.value = value
        inst.line = line
        inst.column = column
        inst.end_line = end_line
        inst.end_column = end_column
        inst.end_pos = end_pos
        return inst

    def update(self, type: str | None = None, value: Any = None) -> Token:
        return Token.new_borrow_pos(type if type is not None else self.type,
                                    value if value is not None else self.value, self)

    @classmethod
    def new_borrow_pos(cls, type_: str, value: Any, borrow_t: Token) -> Token:
        return cls(type_, value, borrow_t.start_pos, borrow_t.line, borrow_t.column,
                   borrow_t.end_line, borrow_t.end_column, borrow_t.end_pos)

    def __reduce__(self):
        return (self.__class__, (self.type, self.value, self.start_pos, self.line, self.column))

    def __repr__(self) -> str:
        return "Token(%r, %r)" % (self.type, self.value)

    def __deepcopy__(self, memo):
        return Token(self.type, self.value, self.start_pos, self.line, self.column)

    def __eq__(self, other) -> bool:
        if isinstance(other, Token) and self.type != other.type:
            return False
        return str.__eq__(self, other)

    __hash__ = str.__hash__
