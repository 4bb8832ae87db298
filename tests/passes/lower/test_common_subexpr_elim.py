"""CommonSubexprElim (tirc/passes/lower/common_subexpr_elim.py). TVM's own cases are in
test_sblock_pass_pairs.py; here: TVM's case whose statements are shared objects, the
pipeline's output on the block-level corpus (well-formed, bindings before their uses),
and a tree that reuses a variable in two scopes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tirc.ir.equal import assert_structural_equal
from tirc.ir.stmt import For, LetStmt, SeqStmt
from tirc.ir.visitor import walk
from tirc.frontend.parse import parse
from tirc.passes.lower.common_subexpr_elim import common_subexpr_elim
from tirc.passes.pipeline import Instrument, PassContext, VerifyEach, run_pipeline
from tirc.passes.prepare.verify import verify
from tirc.target.kinds import parse_target
from tirc.testing.evaluate import run
from conftest import TESTS

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
TESTS = TESTS / "corpus"


def _cse_vars(mod) -> list[str]:
    return [n.var.name for n in walk(mod["main"].body)
            if isinstance(n, LetStmt) and n.var.name.startswith("cse_v")]


def test_shared_statements_bind_fresh_variables():
    """TVM's shared_subtree_stays_ssa: statements 3 and 4 are statements 1 and 2 again
    (the same objects, as loop unrolling leaves them); its printed input reads back as
    four distinct statements, so the sharing is rebuilt here. The second copy binds
    fresh variables, and TVM's result is matched exactly."""
    pairs = TESTS / "sblock_passes" / "CommonSubexprElim"
    mod = parse((pairs / "shared_subtree_stays_ssa.before.tir").read_text())
    s = mod["main"].body.stmts
    shared = mod.with_function("main", mod["main"].with_body(SeqStmt((s[0], s[1], s[0], s[1]))))
    out = verify(common_subexpr_elim(shared))
    assert_structural_equal(out, parse((pairs / "shared_subtree_stays_ssa.after.tir").read_text()))


def test_variable_reused_in_two_scopes_is_not_bound_outside_them():
    """Two loops with the same variable object (not SSA): i * 4 in both is one expression,
    whose uses' common scope is the function, where i is not defined. It is not bound
    there (TVM's planner would); inside each loop it is used once."""
    mod = parse(HEADER + """
@T.prim_func
def main(A: T.Buffer((64,), "int32")):
    for i in range(8):
        A[i * 4] = 1
    for j in range(8):
        A[j * 4 + 1] = 2
""", "t.tir")
    first, second = mod["main"].body.stmts
    i = first.loop_var
    from tirc.ir.renew import substitute
    second = substitute(second, {id(second.loop_var): i})
    second = second.__class__(i, second.min, second.extent, second.kind, second.body)
    reused = mod.with_function("main", mod["main"].with_body(SeqStmt((first, second))))
    out = common_subexpr_elim(reused)
    assert _cse_vars(out) == []
    a, b = np.zeros(64, "int32"), np.zeros(64, "int32")
    run(reused, "main", [a])
    run(out, "main", [b])
    assert (a == b).all()


def test_binding_inside_the_loop_and_values():
    mod = verify(parse(HEADER + """
@T.prim_func
def main(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"), n: T.int32):
    for i in range(8):
        A[i * 8 + n] = B[i * 8 + n] + (n + 1) * (n + 1)
        A[i * 8 + n + 1] = (n + 1) * (n + 1)
""", "t.tir"))
    out = verify(common_subexpr_elim(mod))
    loop = out["main"].body
    assert isinstance(loop, For) and isinstance(loop.body, LetStmt)
    # i * 8 + n (three uses) and the square (two); i * 8 has a single use outside
    # i * 8 + n, and n + 1 adds a constant (left for the backend, see below)
    assert _cse_vars(out) == ["cse_v1", "cse_v2"]
    for n in (0, 3):
        a, b = np.zeros(64, "int32"), np.zeros(64, "int32")
        src = np.arange(64, dtype="int32")
        run(mod, "main", [a, src, n])
        run(out, "main", [b, src, n])
        assert (a == b).all()


def test_constant_offsets_stay_visible():
    """Rows of a register tile, (i + r) * 512 + j: binding each row's index would hide its
    constant offset from the CPU backend, which splits it off so LLVM sees the rows apart
    and keeps the tile in registers (bench/scheduled/cpu/sch_matmul_acc.tir lost that:
    8 more loads and stores per k step; tests/backends/cpu/test_cpu_alias_scopes.py)."""
    mod = verify(parse(HEADER + """
@T.prim_func
def main(C: T.Buffer((4096,), "float32"), A: T.Buffer((4096,), "float32"), i: T.int32, j: T.int32):
    for k in range(8):
        C[i * 512 + j] = C[i * 512 + j] + A[k]
        C[(i + 1) * 512 + j] = C[(i + 1) * 512 + j] + A[k]
""", "t.tir"))
    out = verify(common_subexpr_elim(mod))
    bound = [n.value for n in walk(out["main"].body) if isinstance(n, LetStmt)]
    first_row = mod["main"].body.body.stmts[0].indices[0]
    second_row = mod["main"].body.body.stmts[1].indices[0]
    assert bound == [first_row]  # i * 512 + j, twice; the second row stays as written
    assert sum(1 for n in walk(out["main"].body) if n == second_row) == 2


ENTRIES = json.loads((TESTS / "sblock" / "index.json").read_text())


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_pipeline_output_verifies(entry):
    """Every corpus module, verified after each pass up to and including CSE: each
    binding is in scope wherever its variable is used."""
    name = entry["name"]
    cpu = entry["target"] == "llvm"
    target = parse_target("llvm") if cpu else parse_target(
        f"cuda -arch={entry['target_json']['arch']}", host="llvm")
    text = (TESTS / "sblock" / f"{name}.tir").read_text()

    class Ran(Instrument):
        def __init__(self):
            self.names: list[str] = []

        def after(self, p, mod):
            self.names.append(p.name)
    ran = Ran()
    run_pipeline(parse(text, name), PassContext(target), stop_after="CommonSubexprElim",
                 instruments=(VerifyEach(), ran))
    assert ran.names[-1] == "CommonSubexprElim"  # VerifyEach checked CSE's output too


def test_binding_for_uses_inside_and_after_a_declaration_goes_before_it():
    """A declaration followed by other statements is a scope: ``i * 4 + j``, used inside
    its body and after it, is bound before the declaration, where both uses see it."""
    mod = parse(HEADER + """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), i: T.int32, j: T.int32):
    with T.decl_buffer((64,), "float32", data=A.data) as B:
        B[i * 4 + j] = T.float32(1.0)
    A[i * 4 + j + 1] = T.float32(2.0)
""", "t.tir")
    out = verify(common_subexpr_elim(mod))
    body = out["main"].body
    assert isinstance(body, LetStmt) and body.var.name == "cse_v1"
    assert isinstance(body.body, SeqStmt)


TENSOR_CORE = sorted((TESTS / "tensor_core").glob("*.tir"))


@pytest.mark.parametrize("path", TENSOR_CORE, ids=[p.stem for p in TENSOR_CORE])
def test_tensor_core_pipeline_output_verifies(path):
    """The tensor-core corpus (declarations of shared memory views followed by other
    statements), verified after each pass up to and including CSE."""
    target = parse_target("cuda -arch=sm_80", host="llvm")
    run_pipeline(parse(path.read_text(), path.name), PassContext(target),
                 stop_after="CommonSubexprElim", instruments=(VerifyEach(),))
