"""Walkers of statements only (``expressions = False``: their expressions are left as
they are, unvisited) make what they make when they visit every expression."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

from conftest import ROOT, SAMPLES, TVM_CORPUS, lowered_texts, parsed_modules
from tirc.build.options import bind_target_from
from tirc.ir import expr
from tirc.ir.visitor import _Walk
from tirc.passes.pass_context import PassContext

_EXPRESSIONS = {n for n, c in vars(expr).items()
                if inspect.isclass(c) and issubclass(c, expr.PrimExpr)}


def _statement_walkers() -> list[type]:
    import tirc.passes
    out = []
    for m in pkgutil.walk_packages(tirc.passes.__path__, "tirc.passes."):
        mod = importlib.import_module(m.name)
        for c in vars(mod).values():
            if (inspect.isclass(c) and issubclass(c, _Walk) and c.__module__ == mod.__name__
                    and not c.expressions):
                out.append(c)
    return out


def test_statement_walkers_have_no_expression_methods():
    walkers = _statement_walkers()
    assert len(walkers) > 15
    for c in walkers:
        methods = {k[6:] for k in dir(c) if k.startswith("visit_")}
        assert not methods & _EXPRESSIONS, c
        assert c.visit is _Walk.visit and getattr(c, "intercept", None) is None, c


def test_statement_walkers_make_what_full_walks_make(monkeypatch):
    """The pipeline with every statement walker visiting expressions too (the general
    walk) prints the same modules (or the same error), on the samples and the TVM,
    S-TIR block and SIMT corpora."""
    ctx = PassContext(bind_target_from("cuda -arch=sm_90", "llvm"))
    corpora = [sorted((ROOT / "tests" / "corpus" / c).glob("*.tir")) for c in ("sblock", "simt")]
    mods = parsed_modules(SAMPLES + TVM_CORPUS + corpora[0] + corpora[1])

    def lowered():
        return lowered_texts(mods, ctx)

    fast = lowered()
    walkers = _statement_walkers()
    assert len(walkers) > 15
    for c in walkers:
        monkeypatch.setattr(c, "expressions", True)
        monkeypatch.setattr(c, "_table", {})
    general = lowered()
    assert sum(not v.startswith("error") for v in fast.values()) > 100
    assert fast == general


def test_walk_statements_yields_the_statements_walk_yields():
    """``walk_statements`` skips expressions only: the statements of every function of
    the samples and the TVM and S-TIR block corpora, in ``walk``'s order."""
    from tirc.ir.stmt import Stmt
    from tirc.ir.visitor import walk, walk_statements
    files = SAMPLES + TVM_CORPUS + sorted((ROOT / "tests" / "corpus" / "sblock").glob("*.tir"))
    seen = 0
    for _, mod in parsed_modules(files):
        for func in mod.functions.values():
            want = [n for n in walk(func.body) if isinstance(n, Stmt)]
            assert list(walk_statements(func.body)) == want
            seen += len(want)
    assert seen > 4_000
