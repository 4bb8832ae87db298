"""The parameters each function may write (``tirc.passes.analysis.written_params``), as
MakePackedAPI/MakeCAPI record them in the facts and the manifest (``"written"``), and
``tirc run`` reports as outputs: stores, aliases of a parameter, calls of module
functions, kernel launches after the split, extern calls and access pointers."""
from __future__ import annotations

import textwrap

import pytest

from tirc.frontend.parse import parse
from tirc.passes.analysis.written_params import written_params
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def module(body: str):
    return parse(HEADER + textwrap.dedent(body))


def written(body: str) -> dict[str, list[int]]:
    return {n: sorted(ix) for n, ix in written_params(module(body)).items()}


def exported(text: str, target: str = "llvm", abi: str = "packed") -> dict[str, list[str]]:
    t = parse_target(target, host="llvm") if target.startswith("cuda") else parse_target(target)
    mod = run_pipeline(module(text), PassContext(t, abi))
    return {f.name: [p.name for p in f.params if p.written] for f in mod.facts.functions}


def test_stores_and_reads():
    assert written('''
        @T.prim_func
        def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), n: T.int32):
            for i in range(8):
                B[i] = A[i] * T.float32(2)
    ''') == {"f": [1]}


def test_a_buffer_declared_over_a_parameter_and_an_alias():
    assert written('''
        @T.prim_func
        def f(a: T.handle("float32"), b: T.handle("float32"), c: T.handle("float32")):
            A = T.decl_buffer((8,), "float32", data=a)
            p: T.handle("float32") = T.handle_add_byte_offset(b, 16)
            P = T.decl_buffer((4,), "float32", data=p)
            C = T.decl_buffer((8,), "float32", data=c)
            P[0] = A[0] + C[0]
    ''') == {"f": [1]}


def test_calls_of_module_functions_follow_the_callee():
    assert written('''
        @I.ir_module
        class Module:
            @T.prim_func(private=True)
            def copy(X: T.Buffer((8,), "float32"), Y: T.Buffer((8,), "float32")):
                for i in range(8):
                    Y[i] = X[i]

            @T.prim_func
            def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
                Module.copy(B, A)
    ''') == {"copy": [1], "main": [0]}


def test_extern_calls_may_write_what_they_are_given():
    assert written('''
        @T.prim_func
        def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
            T.evaluate(T.call_extern("int32", "fill", T.address_of(A[0])))
            T.evaluate(T.call_pure_extern("float32", "peek", B.data))
            T.evaluate(T.exp(C[0]))
    ''') == {"f": [0]}


@pytest.mark.parametrize("mask,expected", [(1, []), (2, [0]), (3, [0])])
def test_access_pointer_by_its_mask(mask, expected):
    assert written(f'''
        @T.prim_func
        def f(A: T.Buffer((8,), "float32")):
            T.evaluate(T.call_extern("int32", "use", T.tvm_access_ptr(T.type_annotation("float32"), A.data, 0, 8, {mask})))
    ''') == {"f": [0] if mask & 2 else []}


def test_recursion_assumes_every_pointer_written():
    assert written('''
        @I.ir_module
        class Module:
            @T.prim_func(private=True)
            def g(X: T.Buffer((8,), "float32"), k: T.int32):
                if k > 0:
                    Module.g(X, k - 1)
    ''') == {"g": [0]}


def test_kernel_launches_after_the_split():
    """The host function of a CUDA module stores nothing itself: what it writes is what
    its kernels write through the pointers it passes."""
    assert exported('''
        @T.prim_func
        def vadd(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32"), C: T.Buffer((256,), "float32")):
            for tx in T.thread_binding(256, thread="threadIdx.x"):
                C[tx] = A[tx] + B[tx]
    ''', "cuda -arch=sm_90") == {"vadd": ["C"]}


@pytest.mark.parametrize("abi", ["packed", "c"])
def test_the_record_and_the_manifest(tmp_path, abi):
    from tirc.build.stages import build
    text = HEADER + textwrap.dedent('''
        @T.prim_func
        def scale(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), s: T.float32):
            for i in range(8):
                A[i] = B[i] * s
    ''')
    result = build(text, "llvm", None, tmp_path, "m", abi=abi)
    params = result.manifest["functions"][0]["params"]
    assert [(p["name"], p.get("written")) for p in params] == [
        ("A", True), ("B", False), ("s", None)]
