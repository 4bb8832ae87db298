"""Statement walks without recursion (``tirc.ir.trampoline``, ``tirc.ir.visitor``): a
chain of statements far longer than Python's stack walks at the default recursion limit,
and a generator ``visit_*`` method behaves as the recursive method it replaces: values
come back from ``yield``, ``finally`` blocks and ``except`` clauses see the exceptions of
the statements under them, ``enter``/``leave`` bracket every node, ``intercept`` takes a
statement over, and ``expressions = False`` leaves expressions unvisited."""
from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from tirc.ir.dtype import INT32
from tirc.ir.expr import BinOp, IntImm, Var
from tirc.ir.stmt import AssertStmt, Evaluate, LetStmt, SeqStmt
from tirc.ir.trampoline import drive
from tirc.ir.visitor import Mutator, Visitor


def let_chain(n: int):
    """``x0 = 0; x1 = x0 + 1; ...; evaluate(x{n-1})``: ``n`` levels deep."""
    xs = [Var(f"x{i}", INT32) for i in range(n)]
    body = Evaluate(xs[-1])
    for i in reversed(range(n)):
        value = IntImm(INT32, 0) if i == 0 else BinOp("add", xs[i - 1], IntImm(INT32, 1), INT32)
        body = LetStmt(xs[i], value, body)
    return body, xs


@pytest.fixture
def default_limit():
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(before)


def test_a_chain_longer_than_the_stack_is_walked_and_rebuilt(default_limit):
    body, xs = let_chain(20000)

    class Count(Visitor):
        def __init__(self):
            self.lets = self.vars = 0

        def visit_LetStmt(self, s):  # a generator override
            self.lets += 1
            self.visit(s.value)
            yield s.body

        def visit_Var(self, v):
            self.vars += 1

    c = Count()
    c.visit(body)
    assert (c.lets, c.vars) == (20000, 20000)  # 19999 uses in values, one in the leaf

    class Rename(Mutator):  # no statement method: the generic walk, also in a loop
        def visit_Var(self, v):
            return Var(v.name + "_", v.dtype) if v is xs[-1] else v

    out = Rename().visit(body)
    assert out is not body
    node, depth = out, 0
    while isinstance(node, LetStmt):
        node, depth = node.body, depth + 1
    assert depth == 20000 and node.value.name == f"x{19999}_"
    assert Rename().visit(Evaluate(xs[0])).value is xs[0]  # unchanged: the same node


def test_values_and_order_are_those_of_the_recursive_walk():
    body, _ = let_chain(4)
    seen = []

    class Depths(Mutator):
        def __init__(self):
            self.depth = 0

        def visit_LetStmt(self, s):
            self.depth += 1
            seen.append(("in", s.var.name, self.depth))
            inner = yield s.body
            seen.append(("out", s.var.name, self.depth))
            self.depth -= 1
            return replace(s, body=inner)

        def visit_Evaluate(self, s):  # a plain method under generator ones
            seen.append(("leaf", self.depth))
            return Evaluate(IntImm(INT32, self.depth))

    out = Depths().visit(body)
    assert seen == [("in", "x0", 1), ("in", "x1", 2), ("in", "x2", 3), ("in", "x3", 4),
                    ("leaf", 4),
                    ("out", "x3", 4), ("out", "x2", 3), ("out", "x1", 2), ("out", "x0", 1)]
    leaf = out.body.body.body.body
    assert leaf.value.value == 4


def test_an_exception_passes_through_the_walks_above_it():
    body, _ = let_chain(5)
    cleaned = []

    class Fails(Visitor):
        def visit_LetStmt(self, s):
            try:
                yield s.body
            finally:
                cleaned.append(s.var.name)

        def visit_Evaluate(self, s):
            raise ValueError("deep")

    with pytest.raises(ValueError, match="deep"):
        Fails().visit(body)
    assert cleaned == ["x4", "x3", "x2", "x1", "x0"]  # innermost first, as in recursion

    class Recovers(Mutator):
        def visit_LetStmt(self, s):
            if s.var.name != "x2":
                return (yield from self.descend(s))
            try:
                return replace(s, body=(yield s.body))
            except ValueError:
                return Evaluate(IntImm(INT32, -1))

        def visit_Evaluate(self, s):
            raise ValueError("deep")

    out = Recovers().visit(body)
    assert out.body.body.value.value == -1  # x0, x1, then the replacement of x2's scope


def test_enter_and_leave_bracket_every_node_even_on_failure():
    x = Var("x", INT32)
    body = SeqStmt((AssertStmt(BinOp("lt", x, IntImm(INT32, 3), INT32), "ValueError", ("m",),
                               Evaluate(x)), Evaluate(IntImm(INT32, 1))))
    events = []

    class Hooks(Visitor):
        def enter(self, node):
            events.append(("enter", type(node).__name__))

        def leave(self, node):
            events.append(("leave", type(node).__name__))

    Hooks().visit(body)
    names = [n for e, n in events if e == "enter"]
    assert names == ["SeqStmt", "AssertStmt", "BinOp", "Var", "IntImm", "Evaluate", "Var",
                     "Evaluate", "IntImm"]
    depth = 0
    for e, _ in events:
        depth += 1 if e == "enter" else -1
        assert depth >= 0
    assert depth == 0

    events.clear()

    class FailsInside(Hooks):
        def visit_Evaluate(self, s):
            raise KeyError("x")

    with pytest.raises(KeyError):
        FailsInside().visit(body)
    assert events[-1] == ("leave", "SeqStmt") and sum(1 if e == "enter" else -1 for e, _ in events) == 0


def test_intercept_takes_a_statement_over():
    body, xs = let_chain(3)
    target = body.body  # the let of x1

    class Wrap(Mutator):
        def intercept(self, node):
            if node is not target:
                return None
            return self.wrapped(node)

        def wrapped(self, node):
            inner = yield from self.steps_of(node)  # the usual visit, not intercepted again
            return AssertStmt(IntImm(INT32, 1), "RuntimeError", ("wrapped",), inner)

        def visit_Var(self, v):
            return Var(v.name.upper(), v.dtype) if v is xs[2] else v

    out = Wrap().visit(body)
    assert isinstance(out.body, AssertStmt) and out.body.message == ("wrapped",)
    assert out.body.body.var is xs[1] and out.body.body.body.body.value.name == "X2"


def test_a_walker_may_leave_expressions_unvisited():
    body, _ = let_chain(3)
    seen = []

    class StatementsOnly(Visitor):
        expressions = False

        def visit_Var(self, v):
            seen.append(v)

        def visit_LetStmt(self, s):
            seen.append(s.var.name)
            yield from self.descend(s)

    StatementsOnly().visit(body)
    assert seen == ["x0", "x1", "x2"]


def test_drive_takes_results_its_begin_finished_itself():
    def steps():
        a = yield "plain"
        b = yield "nested"
        return a + b

    def nested():
        got = yield "plain"
        return got * 10

    def begin(item):
        return (nested(), None) if item == "nested" else (None, 1)

    assert drive(steps(), begin, lambda item, value: value + 1) == 1 + (10 + 1)
