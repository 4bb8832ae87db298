"""IR bases: immutable nodes, visitor and mutator, equality ignoring spans."""
from __future__ import annotations

import dataclasses

import pytest

from tirc.diagnostics import Span
from tirc.ir import FloatImm, IntImm, Var, INT32, parse_dtype
from tirc.ir.dtype import DataType
from tirc.ir.visitor import Mutator, Visitor, walk
from tirc.frontend.parse import parse

SRC = """@T.prim_func
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        B[i] = A[i] * T.float32(2.0)
    for j in range(4):
        B[j] = B[j] + T.float32(1.0)
"""


def test_nodes_are_immutable_and_span_free_in_equality():
    a = IntImm(INT32, 3, Span("a.tir", 1, 1))
    b = IntImm(INT32, 3, Span("b.tir", 9, 9))
    assert a == b
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.value = 4  # type: ignore[misc]


def test_variables_compare_by_identity():
    assert Var("i") != Var("i")
    v = Var("i")
    assert v == v


def test_visitor_reaches_every_store():
    class Stores(Visitor):
        def __init__(self):
            self.count = 0

        def visit_BufferStore(self, s):
            self.count += 1
            self.generic_visit(s)

    v = Stores()
    v.visit(parse(SRC).functions["f"].body)
    assert v.count == 2


def test_mutator_keeps_unchanged_subtrees_and_rebuilds_changed_ones():
    body = parse(SRC).functions["f"].body

    class Noop(Mutator):
        pass

    assert Noop().visit(body) is body

    class TwoToThree(Mutator):
        def visit_FloatImm(self, e):
            return FloatImm(e.dtype, 3.0) if e.value == 2.0 else e

    new = TwoToThree().visit(body)
    first, second = new.stmts
    assert first is not body.stmts[0]
    assert second is body.stmts[1]  # untouched loop is shared, not copied
    assert first.body.value.b.value == 3.0


def test_walk_is_preorder():
    body = parse(SRC).functions["f"].body
    kinds = [type(n).__name__ for n in walk(body)][:4]
    assert kinds == ["SeqStmt", "For", "Var", "IntImm"]


@pytest.mark.parametrize("name,bits,lanes", [
    ("bool", 1, 1), ("int8", 8, 1), ("uint64", 64, 1), ("bfloat16", 16, 1),
    ("float8_e4m3fn", 8, 1), ("float8_e5m2", 8, 1), ("float32x4", 32, 4), ("float4_e2m1fn", 4, 1),
])
def test_dtypes(name, bits, lanes):
    dt = parse_dtype(name)
    assert (dt.bits, dt.lanes, str(dt)) == (bits, lanes, name)


def test_unknown_dtype():
    with pytest.raises(ValueError, match="unknown dtype 'float31'"):
        parse_dtype("float31")
    assert DataType("int32") == INT32


def _holds_node(value) -> bool:
    from tirc.ir.buffer import Buffer
    from tirc.ir.visitor import is_node
    if is_node(value) or isinstance(value, Buffer):
        return True
    return isinstance(value, tuple) and any(_holds_node(v) for v in value)


def test_fields_the_walkers_skip_hold_no_nodes():
    """The visitors, mutators and ``walk`` skip the fields ``child_fields`` leaves out
    (plain-data names, and fields declared int, float, str, bool or tuple[str, ...]):
    none of them holds a node or a buffer anywhere in the samples and the TVM corpus,
    parsed and lowered."""
    from conftest import SAMPLES, TVM_CORPUS, modules_before_and_after
    from tirc.build.options import bind_target_from
    from tirc.ir.visitor import child_fields
    from tirc.passes.pipeline import PassContext
    ctx = PassContext(bind_target_from("cuda -arch=sm_90", "llvm"))
    checked = 0
    for path, mods in modules_before_and_after(SAMPLES + TVM_CORPUS, ctx):
        for m in mods:
            for func in m.functions.values():
                for node in walk(func.body):
                    kept = child_fields(type(node))
                    for f in dataclasses.fields(node):
                        if f.name not in kept:
                            assert not _holds_node(getattr(node, f.name)), (path.name, f.name)
                    checked += 1
    assert checked > 10000


def test_rebuild_is_dataclasses_replace():
    """The mutators rebuild a changed node with ``visitor.rebuild``, which must make what
    ``dataclasses.replace`` makes: checked on every node of the samples, each child
    field replaced by itself and by a copy."""
    import copy

    from conftest import SAMPLES
    from tirc.ir.equal import structural_equal
    from tirc.ir.visitor import child_fields, rebuild
    checked = 0
    for path in SAMPLES:
        for func in parse(path.read_text(), str(path)).functions.values():
            for node in walk(func.body):
                for name in child_fields(type(node)):
                    value = getattr(node, name)
                    for new in (value, copy.copy(value)):
                        a = rebuild(node, {name: new})
                        b = dataclasses.replace(node, **{name: new})
                        assert type(a) is type(b) and structural_equal(a, b)
                        assert all(getattr(a, f.name) is getattr(b, f.name)
                                   for f in dataclasses.fields(b)), (type(node), name)
                        checked += 1
    assert checked > 500


def test_walk_is_pre_order_left_to_right():
    """``walk`` (a loop over a stack) yields what a recursive pre-order walk over the
    child fields, tuples flattened in order, yields: on every function of the samples
    and the TVM corpus, parsed and lowered."""
    from conftest import SAMPLES, TVM_CORPUS, modules_before_and_after
    from tirc.build.options import bind_target_from
    from tirc.ir.visitor import child_fields, is_node
    from tirc.passes.pipeline import PassContext

    def reference(node, out):
        out.append(node)
        for name in child_fields(type(node)):
            flat(getattr(node, name), out)
        return out

    def flat(value, out):
        if is_node(value):
            reference(value, out)
        elif isinstance(value, tuple):
            for v in value:
                flat(v, out)

    ctx = PassContext(bind_target_from("cuda -arch=sm_90", "llvm"))
    checked = 0
    for path, mods in modules_before_and_after(SAMPLES + TVM_CORPUS, ctx):
        for m in mods:
            for func in m.functions.values():
                got, want = list(walk(func.body)), reference(func.body, [])
                assert len(got) == len(want) and all(a is b for a, b in zip(got, want)), path.name
                checked += len(got)
    assert checked > 10000
