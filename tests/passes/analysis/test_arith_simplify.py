"""The canonical simplifier of the region analyses prints what TVM 0.27's
``arith.Analyzer().simplify`` prints (every expected string below is TVM's output for
the same expression)."""
from __future__ import annotations

import pytest

from tirc.ir.dtype import INT32
from tirc.ir.expr import BinOp, IntImm, Var
from tirc.ir.print_expr import ExprPrinter
from tirc.passes.analysis.arith_analyzer import Analyzer


class _Printer(ExprPrinter):
    scalars: set = set()
    module_name = None

    def var(self, v):
        return v.name


def text(e) -> str:
    return _Printer().expr(e)


class E:
    """Python operators building tirc expressions (``//`` and ``%`` floor)."""

    def __init__(self, e):
        self.e = e


def _wrap(x):
    return x if isinstance(x, E) else E(IntImm(INT32, x))


for _name, _op in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("floordiv", "floordiv"),
                   ("mod", "floormod")):
    setattr(E, f"__{_name}__", (lambda op: lambda a, b: E(BinOp(op, a.e, _wrap(b).e, INT32)))(_op))
    setattr(E, f"__r{_name}__", (lambda op: lambda a, b: E(BinOp(op, _wrap(b).e, a.e, INT32)))(_op))


def tmax(a, b):
    return E(BinOp("max", _wrap(a).e, _wrap(b).e, INT32))


def tmin(a, b):
    return E(BinOp("min", _wrap(a).e, _wrap(b).e, INT32))


i, j, k, x = (E(Var(n, INT32)) for n in "ijkx")

FREE = [
    (j * 4 + i * 8 + 3, "i * 8 + j * 4 + 3"),
    ((i * 8 + 7) + 1 - i * 8, "8"),
    (j * 4 + i * 4 + 3 - 5, "j * 4 + i * 4 - 2"),
    (tmax(0, i * 8 - 1), "T.max(0, i * 8 - 1)"),
    ((k * 2 + (1 + j)) // 255 // 12, "(k * 2 + j + 1) // 3060"),
    ((((j - k) // 2) // 6 - (j + (64 + (i + 1)))) % 8, "((j - k) // 12 + 7 - j - i) % 8"),
    ((i * 255 + 254) // 255, "i"),
    (((i * 255 + j) // 255), "j // 255 + i"),
    (k + tmax(i % 6 % 6, tmax(-3 // 4, k // 12)), "T.max(i % 6, T.max(-1, k // 12)) + k"),
    (tmin(i + j, k) + tmin(i + j, k), "T.min(i + j, k) * 2"),
]


@pytest.mark.parametrize("expr,expected", FREE, ids=[t for _, t in FREE])
def test_simplify_like_tvm(expr, expected):
    assert text(Analyzer().simplify(expr.e)) == expected


BOUND = [  # i in [0, 16), j in [0, 8), k in [0, 4)
    ((k // 4 + k - 4) // 8, "(k - 4) // 8"),
    (tmax(0, i * 8), "i * 8"),
    (tmax(0, i * 8 - 1), "T.max(0, i * 8 - 1)"),
    ((j * 8 + k) // 8, "j"),
    ((j * 8 + k) % 8, "k"),
    # TVM's rules for (x * c1 + y) // c2 and % c2, c2 a multiple of c1, 0 <= y < c1
    ((x * 4 + k) // 16, "x // 4"),
    ((x * 4 + k) % 16, "x % 4 * 4 + k"),
    ((k + x * 4) // 8, "x // 2"),
    ((k + x * 4) % 8, "x % 2 * 4 + k"),
    ((x * 4 + j) // 16, "(x * 4 + j) // 16"),  # j reaches 7: not below 4
    ((x * 8) // 32, "x // 4"),
    ((x * 8) % 32, "x % 4 * 8"),
    ((x * 4 + k + 1) // 16, "(x * 4 + k + 1) // 16"),
    ((x * 16 + i) // 128 - x // 8, "0"),
    (tmin((x * 16 + i) // 128, x // 8), "x // 8"),
]


@pytest.mark.parametrize("expr,expected", BOUND, ids=[t for _, t in BOUND])
def test_simplify_with_loop_ranges_like_tvm(expr, expected):
    ana = Analyzer()
    for v, n in ((i, 16), (j, 8), (k, 4)):
        ana.bind_range(v.e, IntImm(INT32, 0), IntImm(INT32, n))
    assert text(ana.simplify(expr.e)) == expected


def test_unit_range_binds_the_value():
    ana = Analyzer()
    ana.bind_range(i.e, IntImm(INT32, 0), IntImm(INT32, 1))
    assert text(ana.simplify((tmin(0, i * 1000)).e)) == "0"


def test_nested_min_max_simplify_each_node_a_bounded_number_of_times(monkeypatch):
    """``T.min(T.min(T.min(a0, a1), a2), ...)``, as region unions build them: every level
    simplifies its operands, then their difference; without reusing what was simplified
    within the call the work doubles per level (2**depth)."""
    calls = []
    original = Analyzer._rewrite
    monkeypatch.setattr(Analyzer, "_rewrite", lambda self, e: calls.append(e) or original(self, e))
    terms = [E(Var(f"a{n}", INT32)) * (n + 1) + i // (n + 2) for n in range(9)]
    chain = terms[0]
    for n, t in enumerate(terms[1:]):
        chain = tmin(chain, t) if n % 2 else tmax(chain, t)
    out = Analyzer().simplify(chain.e)
    assert "a8 * 9" in text(out)
    assert len(calls) < 20 * 9  # linear in the depth (about 120,000 before)
