"""HoistIfThenElse, stated as TIR before and after (TVM's own 25 cases are in
tests/passes/blocks/test_sblock_pass_pairs.py). Unless a test says otherwise, the expected text is what
TVM 0.27's ``s_tir.transform.HoistIfThenElse`` prints for the same input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import tirc.passes.lower.hoist_if_then_else as hoist_module
from conftest import pass_checker, TESTS
from tirc.ir.equal import assert_structural_equal
from tirc.ir.expr import BinOp
from tirc.ir.stmt import For
from tirc.ir.visitor import Mutator, walk
from tirc.frontend.parse import parse
from tirc.passes.lower.hoist_if_then_else import hoist_if_then_else

HEADER = "# from tvm.script import tirx as T\n\n"
PAIRS = TESTS / "corpus" / "sblock_passes"


def _loop_vars_defined_once(after) -> None:
    loop_vars = [id(n.loop_var) for n in walk(after["main"].body) if isinstance(n, For)]
    assert len(loop_vars) == len(set(loop_vars)), "a loop variable is defined twice"


check = pass_checker(hoist_if_then_else, header=HEADER, post=_loop_vars_defined_once)


def test_a_condition_moves_above_the_loops_it_does_not_use_with_an_else_copy():
    check("""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in range(8):
        for j in range(8):
            if n < 4:
                A[i * 8 + j] = T.float32(1)
            else:
                for k in range(2):
                    A[i * 8 + j] = A[i * 8 + j] + T.float32(2)
""", """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    if n < 4:
        for i, j in T.grid(8, 8):
            A[i * 8 + j] = T.float32(1.0)
    else:
        for i, j, k in T.grid(8, 8, 2):
            A[i * 8 + j] = A[i * 8 + j] + T.float32(2.0)
""")


def test_the_negated_condition_is_decided_too():
    check("""
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in range(8):
        if n < 4:
            for j in range(8):
                if not (n < 4):
                    A[i * 8 + j] = T.float32(1)
                else:
                    A[i * 8 + j] = T.float32(2)
""", """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    if n < 4:
        for i, j in T.grid(8, 8):
            A[i * 8 + j] = T.float32(2.0)
""")


def test_an_if_without_else_inside_another_branch_gets_an_else_copy():
    """Not TVM's output: TVM 0.27 wraps the loop in ``if c2 < 3`` without an else, so
    where ``c1 < 3`` holds and ``c2 < 3`` does not, ``A[i] = 1`` is never stored."""
    check("""
@T.prim_func
def main(A: T.Buffer((16,), "int32"), c1: T.int32, c2: T.int32):
    for i in range(16):
        if c1 < 3:
            A[i] = 1
        else:
            if c2 < 3:
                A[i] = 2
""", """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), c1: T.int32, c2: T.int32):
    if c1 < 3:
        if c2 < 3:
            for i in range(16):
                A[i] = 1
        else:
            for i in range(16):
                A[i] = 1
    else:
        if c2 < 3:
            for i in range(16):
                A[i] = 2
""")


@pytest.mark.parametrize("prologue", [
    'B = T.alloc_buffer((4,), "int32", scope="local")',  # TVM 0.27: a statement of its own
    'x: T.let[T.int32] = T.call_extern("int32", "f")',  # not TVM: it would skip the call
])
def test_a_statement_before_the_if_keeps_it_in_the_loop(prologue):
    text = f"""
@T.prim_func
def main(A: T.Buffer((16,), "int32"), c: T.int32):
    for i in range(16):
        {prologue}
        if c < 3:
            A[i] = 1
"""
    check(text, text)


def test_a_condition_on_a_let_bound_variable_stays():
    """Not TVM's printed output, which also substitutes ``m`` (its StmtSimplify)."""
    text = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in range(64):
        m: T.let[T.int32] = n + 1
        if m < 4:
            A[i] = T.float32(1)
"""
    check(text, text)


def test_conditions_on_thread_axes_move_only_with_block_scope_hoisting():
    text = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    tx = T.launch_thread("threadIdx.x", 32)
    for i in range(2):
        if tx < n:
            A[i * 32 + tx] = T.float32(1.0)
"""
    check(text, text)
    check(text, """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    tx = T.launch_thread("threadIdx.x", 32)
    if tx < n:
        for i in range(2):
            A[i * 32 + tx] = T.float32(1.0)
""", support_block_scope_hoisting=True)


def test_if_then_else_expressions_move_in_functions_marked_for_it():
    """dlight's low-batch GEMV marks its functions ``tirx.HoistIfThenElseExprWithBlock``;
    there the conditions of ``T.if_then_else`` move, across thread axes too."""
    before = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), n: T.int32):
    {attr}
    tx = T.launch_thread("threadIdx.x", 32)
    for i in range(2):
        B[i * 32 + tx] = T.if_then_else(n < 4, A[i * 32 + tx], T.float32(0))
"""
    check(before.format(attr=""), before.format(attr=""))
    check(before.format(attr='T.func_attr({"tirx.HoistIfThenElseExprWithBlock": 1})'), """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), n: T.int32):
    T.func_attr({"tirx.HoistIfThenElseExprWithBlock": 1})
    tx = T.env_thread("threadIdx.x")
    if n < 4:
        T.launch_thread(tx, 32)
        for i in range(2):
            B[i * 32 + tx] = A[i * 32 + tx]
    else:
        T.launch_thread(tx, 32)
        for i in range(2):
            B[i * 32 + tx] = T.float32(0.0)
""")


def test_a_copy_over_the_size_limit_is_not_made(monkeypatch):
    monkeypatch.setattr(hoist_module, "MAX_COPY_STATEMENTS", 2)
    text = """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), c: T.int32):
    for i in range(16):
        if c < 3:
            A[i] = 1
        else:
            A[i] = 2
            A[0] = 3
"""
    check(text, text)


class _LessThan(Mutator):
    """``a >= b`` as ``b <= a`` and ``a > b`` as ``b < a``: TVM's canonical comparisons."""

    def visit_BinOp(self, e: BinOp):
        e = self.generic_visit(e)
        swap = {"ge": "le", "gt": "lt"}.get(e.op)
        return BinOp(swap, e.b, e.a, e.dtype, e.span) if swap else e


@pytest.mark.parametrize("case", ["attr_stmt", "if_block", "nested_for"])
def test_tvm_cases_differ_only_in_the_comparisons_tvm_rewrites(case):
    """The pair test lists these as known differences: TVM's pass ends with its
    StmtSimplify, which writes ``i >= 3`` as ``3 <= i``."""
    index = {c["case"]: c for c in json.loads((PAIRS / "index.json").read_text())
             if c["pass"] == "HoistIfThenElse"}
    before = parse((PAIRS / index[case]["before"]).read_text())
    expected = parse((PAIRS / index[case]["after"]).read_text())
    assert_structural_equal(_LessThan().visit(hoist_if_then_else(before)["main"].body),
                            expected["main"].body)


def test_a_condition_that_divides_by_a_variable_stays():
    """Not TVM's output (TVM 0.27 moves it): with ``n == 0`` the loop never runs and
    ``m // n`` is never evaluated; above the loop it would divide by zero."""
    text = """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), m: T.int32, n: T.int32):
    for i in range(n):
        if m // n < 3:
            A[i] = 1
"""
    check(text, text)
    check(text.replace("m // n", "m // 4"), """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), m: T.int32, n: T.int32):
    if m // 4 < 3:
        for i in range(n):
            A[i] = 1
""")


def test_built_code_stores_what_the_nested_ifs_say(tmp_path):
    """The whole pipeline on the case TVM 0.27 gets wrong, run for every pair of
    conditions against NumPy."""
    import shutil

    np = pytest.importorskip("numpy")
    tvm_ffi = pytest.importorskip("tvm_ffi")
    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler")
    from tirc.build.stages import build

    build(HEADER + """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), c1: T.int32, c2: T.int32):
    for i in range(16):
        if c1 < 3:
            A[i] = 1
        else:
            if c2 < 3:
                A[i] = 2
""", "llvm", None, tmp_path, "m", shared=True)
    main = tvm_ffi.load_module(str(tmp_path / "m.so"))["main"]
    for c1 in (0, 5):
        for c2 in (0, 5):
            a = np.zeros(16, "int32")
            main(a, c1, c2)
            assert (a == (1 if c1 < 3 else 2 if c2 < 3 else 0)).all(), (c1, c2)
