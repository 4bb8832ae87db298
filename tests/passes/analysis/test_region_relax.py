"""Region relaxation (tirc/passes/analysis/region_relax.py, region_bounds.py): the intervals an
index covers while loop variables range over their domains, as TVM's EvalSet gives
them (bounds simplified into TVM's printed form)."""
from __future__ import annotations

from tirc.ir.block import Range
from tirc.ir.dtype import INT32
from tirc.ir.expr import BinOp, IntImm, Not
from tirc.ir.stmt import IfThenElse
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.analysis import region_bounds
from tirc.passes.analysis.region_bounds import may_constrain, predicate_refiner, solve_condition
from tirc.passes.analysis.region_relax import (IntervalSet, cover_range, eval_set, from_range,
                                      need_relax_thread, union)
from test_arith_simplify import i, j, k, text, x


def c(v):
    return IntImm(INT32, v)


def dom(**ranges):
    names = {"i": i, "j": j, "k": k}
    return {id(names[n].e): from_range(c(lo), c(hi - lo)) for n, (lo, hi) in ranges.items()}


def covered(expr, d, refine=None):
    s = eval_set(expr.e, d, refine)
    r = cover_range(s, Range(c(0), c(-1)))
    return text(r.min), text(r.extent)


def test_linear_index_relaxes_inner_loops_only():
    assert covered(i * 64 + j * 8 + k, dom(j=(0, 8), k=(0, 8))) == ("i * 64", "64")
    assert covered(i * 8 + j * 4 + k, dom(j=(0, 2), k=(0, 4))) == ("i * 8", "8")


def test_division_and_modulo():
    assert covered((i * 255 + j) // 255, dom(j=(0, 255))) == ("i", "1")
    assert covered((i * 255 + j) % 255 // 16, dom(j=(0, 255))) == ("0", "16")
    assert covered((j * 3 + k) % 4, dom(j=(0, 256), k=(0, 3))) == ("0", "4")


def test_unrelaxed_point_keeps_its_expression():
    e = i * 8 + 1
    s = eval_set(e.e, dom(j=(0, 4)))
    assert s.is_point and s.min is e.e


def test_unbounded_is_the_fallback():
    s = eval_set((i // j).e, dom(j=(1, 4)))
    fallback = Range(c(0), c(16))
    assert cover_range(s, fallback) is fallback


def test_union_simplifies_bounds():
    a = eval_set(j.e, dom(j=(0, 4)))
    b = eval_set(j.e, dom(j=(3, 5)))
    u = union([a, b, eval_set(j.e, dom(j=(6, 8)))])
    assert (text(u.min), text(u.max)) == ("0", "7")


def test_storage_scope_decides_thread_relaxation():
    assert need_relax_thread("threadIdx.x", "shared") and need_relax_thread("vthread", "shared")
    assert not need_relax_thread("blockIdx.x", "shared")
    assert need_relax_thread("blockIdx.x", "global") and need_relax_thread("threadIdx.y", "global")
    assert not need_relax_thread("threadIdx.x", "local")
    assert need_relax_thread("threadIdx.x", "warp") and not need_relax_thread("threadIdx.y", "warp")


def test_branch_conditions_narrow_relaxed_domains():
    d = dom(i=(0, 224), j=(0, 224))
    both = BinOp("and", BinOp("lt", i.e, c(112), INT32), BinOp("lt", j.e, c(112), INT32), INT32)
    solved = solve_condition(both, d)
    assert {text(s.max) for s in solved.values()} == {"111"}
    either = BinOp("or", BinOp("lt", i.e, c(112), INT32), BinOp("lt", j.e, c(112), INT32), INT32)
    assert solve_condition(either, d) is None  # left as a predicate
    solved = solve_condition(Not(either), d)
    assert [(text(s.min), text(s.max)) for s in solved.values()] == [("112", "223")] * 2
    assert solve_condition(BinOp("lt", (j * 8 + k).e, c(60), INT32), dom(j=(0, 8), k=(0, 8))) is None


def test_predicate_bounds_fused_inner_loops():
    d = dom(j=(0, 8), k=(0, 8))
    pred = BinOp("lt", (j * 8 + k).e, c(60), INT32)
    assert covered(i * 64 + j * 8 + k, d, predicate_refiner(pred, d)) == ("i * 64", "60")
    pred = BinOp("lt", ((j * 2 + k) * 4).e, c(200), INT32)  # not the index's form: unused
    assert covered(i * 64 + j * 8 + k, d, predicate_refiner(pred, d)) == ("i * 64", "64")
    d = dom(i=(0, 10))
    pred = BinOp("ne", i.e, c(0), INT32)
    assert covered(i, d, predicate_refiner(pred, d)) == ("1", "9")


def test_a_predicate_on_variables_not_relaxed_is_not_put_in_canonical_form(monkeypatch):
    d = dom(j=(0, 8), k=(0, 8))
    seen = []
    real = region_bounds._relaxed_terms
    monkeypatch.setattr(region_bounds, "_relaxed_terms",
                        lambda e, dom, ana: seen.append(e) or real(e, dom, ana))
    pred = BinOp("and", BinOp("lt", (i * 4).e, c(60), INT32),
                 BinOp("lt", (j * 8 + k).e, c(60), INT32), INT32)
    assert covered(i * 64 + j * 8 + k, d, predicate_refiner(pred, d)) == ("i * 64", "60")
    # the comparison of i alone bounds no relaxed loop: never put in canonical form
    compared = [e for e in seen if e.op == "sub"]  # the predicate's sides, a - b
    assert len(compared) == 1 and not any(n is i.e for n in walk(compared[0]))


def test_a_variable_fixed_to_a_point_of_relaxed_loops_is_looked_through():
    d = dom(j=(0, 8), k=(0, 8))
    d[id(x.e)] = IntervalSet.point((j * 8 + k).e)  # let x = j * 8 + k
    pred = BinOp("lt", x.e, c(60), INT32)
    assert covered(i * 64 + j * 8 + k, d, predicate_refiner(pred, d)) == ("i * 64", "60")


def _condition(text_of_if: str):
    mod = parse("""# from tvm.script import tirx as T
@T.prim_func
def f(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in range(64):
        if %s:
            A[i] = T.float32(0)
""" % text_of_if)
    return next(s for s in walk(mod.functions["f"].body) if isinstance(s, IfThenElse)).condition


def test_which_conditions_may_bound_a_loop():
    # a sort's comparison of loaded values: never a bound, and costly to simplify
    assert not may_constrain(_condition("A[i] <= A[63 - i]"))
    assert not may_constrain(_condition("not (A[i] < A[0] and A[1] > A[i])"))
    # integer comparisons, alone or beside data-dependent ones, and anything else may
    assert may_constrain(_condition("i < n"))
    assert may_constrain(_condition("A[i] < A[0] or i * 2 < n"))
    assert may_constrain(_condition("A[i] < T.float32(1) * T.Cast('float32', n)")) is False
    assert may_constrain(_condition("T.float32(1) < T.float32(2)"))
