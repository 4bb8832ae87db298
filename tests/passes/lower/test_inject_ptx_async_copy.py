"""InjectPTXAsyncCopy beyond TVM's own case (a before/after pair in
tests/passes/blocks/test_sblock_pass_pairs.py): scalar, vector and predicated copies
into shared memory become ``T.s_tir.cp_async_raw``; what it does not take stays a
store; in the pipeline it runs only with ``tirx.use_async_copy``."""
from __future__ import annotations

import pytest

from conftest import pass_checker
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.lower.inject_ptx_async_copy import inject_ptx_async_copy
from tirc.passes.pass_context import PassContext
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import tirx as T\n\n"
check = pass_checker(lambda mod: inject_ptx_async_copy(mod, force=True), header=HEADER)


def _kernel(store: str) -> str:
    return f'''
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float16")):
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.alloc_buffer((256,), scope="shared")
    H = T.alloc_buffer((256,), "float16", scope="shared")
{store}
'''


def test_a_scalar_copy_is_a_4_byte_cp_async():
    check(_kernel('''    with T.attr({"async_scope": 1}):
        S[tx] = A[tx * 2]'''), _kernel('''    T.s_tir.cp_async_raw("float32", S.data, tx, A.data, tx * 2, 4)'''))


def test_a_vector_copy_is_a_16_byte_cp_async():
    check(_kernel('''    with T.attr({"async_scope": 1}):
        S[T.Ramp(tx * 4, 1, 4)] = A[T.Ramp(tx * 4 + 128, 1, 4)]'''),
          _kernel('''    T.s_tir.cp_async_raw("float32", S.data, tx * 4, A.data, tx * 4 + 128, 16)'''))


def test_a_guarded_copy_with_zero_otherwise_is_predicated():
    check(_kernel('''    with T.attr({"async_scope": 1}):
        H[T.Ramp(tx * 8, 1, 8)] = T.if_then_else(tx < 16, B[T.Ramp(tx * 8, 1, 8)], T.Broadcast(T.float16(0.0), 8))'''),
          _kernel('''    T.s_tir.cp_async_raw("float16", H.data, tx * 8, B.data, tx * 8, 16, tx < 16)'''))


@pytest.mark.parametrize("store", [
    "        S[tx] = A[tx] + T.float32(1.0)",            # not a plain copy
    "        H[tx] = B[tx]",                              # 2 bytes: no cp.async of that size
    "        S[tx] = T.if_then_else(tx < 16, A[tx], T.float32(1.0))",  # nonzero otherwise
])
def test_what_it_does_not_take_stays_a_store(store):
    check(_kernel('    with T.attr({"async_scope": 1}):\n' + store), _kernel(store[4:]))


def test_nested_async_scopes_are_refused():
    text = HEADER + _kernel('''    with T.attr({"async_scope": 1}):
        with T.attr({"async_scope": 1}):
            S[tx] = A[tx]''')
    with pytest.raises(Diagnostic, match="nested async scopes") as err:
        inject_ptx_async_copy(parse(text, "a.tir"), force=True)
    assert err.value.span.line == 10


def test_without_the_option_the_pass_leaves_the_module_as_it_is():
    mod = parse(HEADER + _kernel('''    with T.attr({"async_scope": 1}):
        S[tx] = A[tx]'''), "a.tir")
    ctx = PassContext(parse_target("cuda -arch=sm_80", host="llvm"))
    assert inject_ptx_async_copy(mod, ctx) is mod
    on = PassContext(ctx.target, config=(("tirx.use_async_copy", True),))
    assert inject_ptx_async_copy(mod, on) is not mod
