"""Front end: what each construct becomes in the IR, with source locations."""
from __future__ import annotations

import pytest

from tirc.diagnostics import Diagnostic
from tirc.ir import (AllocBuffer, AttrStmt, BinOp, BufferStore, Call, DeclBuffer, FloatImm,
                     For, GlobalVar, IntImm, LetStmt, IterVar)
from tirc.ir.equal import assert_structural_equal, structural_equal
from tirc.frontend.parse import parse
from tirc.target.kinds import parse_target

HEAD = '@T.prim_func\ndef f(A: T.Buffer((16,), "float32"), n: T.int32):\n'


def body(src: str):
    mod = parse(HEAD + src)
    return mod.functions["f"].body


def test_annotated_let_and_older_letstmt_are_the_same_let():
    a = body("    x: T.int32 = n * 2\n    A[x] = T.float32(1.0)\n")
    b = body("    x = T.int32()\n    with T.LetStmt(n * 2, var=x):\n        A[x] = T.float32(1.0)\n")
    assert isinstance(a, LetStmt) and isinstance(b, LetStmt)
    assert_structural_equal(a, b)


def test_reassigned_name_is_a_mutable_scalar():
    s = body("    acc: T.float32 = T.float32(0.0)\n    for i in range(16):\n"
             "        acc = acc + A[i]\n    A[0] = acc\n")
    assert isinstance(s, AllocBuffer)
    assert s.buffer.scope == "local" and [e.value for e in s.buffer.shape] == [1]
    first, loop, last = s.body.stmts
    assert isinstance(first, BufferStore) and first.buffer is s.buffer
    assert isinstance(loop.body, BufferStore) and loop.body.buffer is s.buffer


def test_let_bind_forms():
    a = body("    z: T.let[T.int32] = n + 1\n    A[z] = T.float32(0.0)\n")
    b = body("    z = T.bind(n + 1)\n    A[z] = T.float32(0.0)\n")
    assert isinstance(a, LetStmt) and a.form == "let"
    assert_structural_equal(a, b)


def test_operators_fold_constants_but_node_forms_do_not():
    folded = body("    A[0] = T.Cast(\"float32\", T.int64(2) + T.int64(3))\n")
    assert folded.value.value == IntImm(folded.value.value.dtype, 5)
    kept = body("    A[0] = T.Cast(\"float32\", T.Add(2, 3))\n")
    assert isinstance(kept.value.value, BinOp) and kept.value.value.op == "add"


def test_literals_adopt_the_other_operands_dtype():
    s = body("    A[0] = A[1] * 2\n")
    assert s.value.b == FloatImm(s.value.dtype, 2.0)
    s = body("    A[0] = T.Cast(\"float32\", T.int64(7) // 2)\n")
    assert str(s.value.value.dtype) == "int64"


def test_unary_minus_is_multiplication_by_minus_one_as_in_tvm():
    s = body("    A[0] = -A[1]\n")
    assert isinstance(s.value, BinOp) and s.value.op == "mul"
    assert s.value.b == FloatImm(s.value.dtype, -1.0)


def test_thread_bindings_and_launch_thread():
    loop = body('    for bx in T.thread_binding(4, thread="blockIdx.x"):\n        A[bx] = T.float32(0.0)\n')
    assert isinstance(loop, For) and loop.kind == "thread_binding" and loop.thread_tag == "blockIdx.x"
    attr = body('    tx = T.launch_thread("threadIdx.x", 16)\n    A[tx] = T.float32(0.0)\n')
    assert isinstance(attr, AttrStmt) and attr.key == "thread_extent"
    assert isinstance(attr.node, IterVar) and attr.node.thread_tag == "threadIdx.x"


def test_target_region_and_func_attr_target():
    mod = parse('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n'
                '    T.func_attr({"target": T.target({"kind": "llvm"})})\n'
                '    with T.attr(T.target({"kind": "cuda", "arch": "sm_90"}), "target", 0):\n'
                '        A[0] = T.float32(1.0)\n')
    f = mod.functions["f"]
    assert f.attrs["target"] == parse_target("llvm")
    assert isinstance(f.body, AttrStmt) and f.body.node == parse_target("cuda -arch=sm_90")


def test_older_allocate_and_buffer_declaration():
    s = body('    p = T.allocate([32], "float32", "shared")\n'
             '    S = T.decl_buffer((32,), "float32", data=p, scope="shared")\n'
             '    S[0] = A[0]\n')
    assert isinstance(s, AllocBuffer) and s.buffer.scope == "shared"
    assert isinstance(s.body, DeclBuffer) and s.body.buffer.data is s.buffer.data


def test_module_calls_resolve_in_any_order():
    mod = parse("@I.ir_module\nclass Module:\n"
                "    @T.prim_func\n    def main(A: T.Buffer((4,), \"int32\")):\n"
                "        A[0] = Module.helper(2)\n\n"
                "    @T.prim_func(private=True)\n    def helper(x: T.int32) -> T.int32:\n"
                "        return x + 1\n")
    store = mod.functions["main"].body
    assert isinstance(store.value, Call) and store.value.op == GlobalVar("helper")
    assert mod.functions["helper"].private


def test_spans_point_at_the_source():
    mod = parse(HEAD + "    for i in range(4):\n        A[i] = T.exp(A[i])\n", "x.tir")
    loop = mod.functions["f"].body
    assert (loop.span.file, loop.span.line, loop.span.col) == ("x.tir", 3, 5)
    call = loop.body.value
    assert (call.span.line, call.span.col) == (4, 16)


def test_structural_equality_is_up_to_renaming():
    a = parse(HEAD + "    for i in range(4):\n        A[i] = A[i] + T.float32(1.0)\n")
    b = parse(HEAD.replace("A:", "B:").replace("n:", "m:") + "    for j in range(4):\n        B[j] = B[j] + T.float32(1.0)\n")
    assert structural_equal(a, b)
    c = parse(HEAD + "    for i in range(4):\n        A[i] = A[i] - T.float32(1.0)\n")
    assert not structural_equal(a, c)


def test_text_is_parsed_not_evaluated(tmp_path):
    marker = tmp_path / "pwned"
    evil = f"__import__('os').system('touch {marker}')"
    for src in (f"    A[0] = {evil}\n", f"    T.evaluate({evil})\n"):
        with pytest.raises(Diagnostic):
            parse(HEAD + src)
    assert not marker.exists()


def test_string_escapes_are_decoded_by_hand():
    s = body('    T.call_extern("int32", "printf", "a\\tb\\n\\"q\\"")\n')
    assert s.value.args[1].value == 'a\tb\n"q"'


@pytest.mark.parametrize("src,message", [
    ("    A[0] = T.exp(A[1], A[2])\n", "T.exp takes 1 argument, got 2"),
    ("    A[0] = T.Cast(\"float99\", n)\n", "unknown dtype 'float99'"),
    ("    A[0] = T.nope(1)\n", "unknown name 'T.nope'"),
    ("    A[0] = n < 2 < 3\n", "chained comparisons"),
    ("    for i in T.grid(2, 3):\n        A[i] = T.float32(0.0)\n", "T.grid has 2 extents but 1 loop variables"),
    ("    x: T.let[T.int32]\n", "immutable and needs a value"),
])
def test_front_end_errors(src, message):
    with pytest.raises(Diagnostic, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(HEAD + src)
