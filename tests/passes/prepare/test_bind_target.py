"""BindTarget, stated as TIR before and after."""
from __future__ import annotations

import pytest

from conftest import pass_checker
from tirc.diagnostics import Diagnostic
from tirc.ir.visitor import walk
from tirc.ir.expr import Var
from tirc.frontend.parse import parse
from tirc.passes.prepare.bind_target import bind_target
from tirc.target.kinds import parse_target

CUDA = parse_target("cuda -arch=sm_90", host="llvm")
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
DEV = 'T.target({"arch": "sm_90", "kind": "cuda"})'
FULL = 'T.target({"arch": "sm_90", "host": {"kind": "llvm"}, "kind": "cuda"})'
HOST = 'T.target({"kind": "llvm"})'


check = pass_checker(lambda mod, target=CUDA: bind_target(mod, target))


def test_seed_000_helper_called_from_host_and_device():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        return a + b

    @T.prim_func
    def main(A: T.Buffer((128, 128), "int32"), B: T.Buffer((128, 128), "int32"), C: T.Buffer((128, 128), "int32")):
        length: T.int32 = Module.add(64, 64)
        for bx in T.thread_binding(length, thread="blockIdx.x"):
            for tx in T.thread_binding(length, thread="threadIdx.x"):
                C[bx, tx] = Module.add(A[bx, tx], B[bx, tx])
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {DEV}}})
        return a + b

    @T.prim_func(private=True)
    def add_host(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {HOST}}})
        return a + b

    @T.prim_func
    def main(A: T.Buffer((128, 128), "int32"), B: T.Buffer((128, 128), "int32"), C: T.Buffer((128, 128), "int32")):
        T.func_attr({{"target": {FULL}}})
        length: T.int32 = Module.add_host(64, 64)
        for bx in T.thread_binding(length, thread="blockIdx.x"):
            for tx in T.thread_binding(length, thread="threadIdx.x"):
                C[bx, tx] = Module.add(A[bx, tx], B[bx, tx])
"""
    after = check(before, expected)
    # The duplicate shares no variable or buffer with the original (SSA across the module).
    def defs(f):
        return {id(n) for n in walk(f.body) if isinstance(n, Var)} | {id(p) for p in f.params}
    assert not defs(after["add"]) & defs(after["add_host"])


def test_seed_000_host_temporary_bound_with_letstmt():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.float32, b: T.float32) -> T.float32:
        return a + b

    @T.prim_func
    def main(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
        temp_var = T.float32()
        with T.LetStmt(Module.add(T.float32(1), T.float32(2)), var=temp_var):
            for bx in T.thread_binding(1024, thread="blockIdx.x"):
                for tx in T.thread_binding(1024, thread="threadIdx.x"):
                    C[bx, tx] = Module.add(A[bx, tx], B[bx, tx]) + temp_var
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.float32, b: T.float32) -> T.float32:
        T.func_attr({{"target": {DEV}}})
        return a + b

    @T.prim_func(private=True)
    def add_host(a: T.float32, b: T.float32) -> T.float32:
        T.func_attr({{"target": {HOST}}})
        return a + b

    @T.prim_func
    def main(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
        T.func_attr({{"target": {FULL}}})
        temp_var: T.float32 = Module.add_host(T.float32(1.0), T.float32(2.0))
        for bx in T.thread_binding(1024, thread="blockIdx.x"):
            for tx in T.thread_binding(1024, thread="threadIdx.x"):
                C[bx, tx] = Module.add(A[bx, tx], B[bx, tx]) + temp_var
"""
    check(before, expected)


def test_transitive_chain_host_a_b_and_device_b():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def a(x: T.int32) -> T.int32:
        return Module.b(x) + 1

    @T.prim_func(private=True)
    def b(x: T.int32) -> T.int32:
        return x * 2

    @T.prim_func
    def main(A: T.Buffer((64,), "int32")):
        n: T.int32 = Module.a(32)
        for tx in T.thread_binding(n, thread="threadIdx.x"):
            A[tx] = Module.b(tx)
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def a(x: T.int32) -> T.int32:
        T.func_attr({{"target": {HOST}}})
        return Module.b_host(x) + 1

    @T.prim_func(private=True)
    def b(x: T.int32) -> T.int32:
        T.func_attr({{"target": {DEV}}})
        return x * 2

    @T.prim_func(private=True)
    def b_host(x: T.int32) -> T.int32:
        T.func_attr({{"target": {HOST}}})
        return x * 2

    @T.prim_func
    def main(A: T.Buffer((64,), "int32")):
        T.func_attr({{"target": {FULL}}})
        n: T.int32 = Module.a(32)
        for tx in T.thread_binding(n, thread="threadIdx.x"):
            A[tx] = Module.b(tx)
"""
    check(before, expected)


def test_device_callers_propagate_to_callees():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def outer(x: T.float32) -> T.float32:
        return Module.inner(x) * T.float32(2.0)

    @T.prim_func(private=True)
    def inner(x: T.float32) -> T.float32:
        return x + T.float32(1.0)

    @T.prim_func
    def main(A: T.Buffer((64,), "float32")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = Module.outer(A[tx])
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def inner(x: T.float32) -> T.float32:
        T.func_attr({{"target": {DEV}}})
        return x + T.float32(1.0)

    @T.prim_func(private=True)
    def outer(x: T.float32) -> T.float32:
        T.func_attr({{"target": {DEV}}})
        return Module.inner(x) * T.float32(2.0)

    @T.prim_func
    def main(A: T.Buffer((64,), "float32")):
        T.func_attr({{"target": {FULL}}})
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = Module.outer(A[tx])
"""
    check(before, expected)


def test_host_name_collision_gets_a_fresh_name():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        return a + b

    @T.prim_func(private=True)
    def add_host(a: T.int32) -> T.int32:
        return a

    @T.prim_func
    def main(A: T.Buffer((64,), "int32")):
        n: T.int32 = Module.add(Module.add_host(30), 2)
        for tx in T.thread_binding(n, thread="threadIdx.x"):
            A[tx] = Module.add(tx, 1)
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {DEV}}})
        return a + b

    @T.prim_func(private=True)
    def add_host(a: T.int32) -> T.int32:
        T.func_attr({{"target": {HOST}}})
        return a

    @T.prim_func(private=True)
    def add_host_1(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {HOST}}})
        return a + b

    @T.prim_func
    def main(A: T.Buffer((64,), "int32")):
        T.func_attr({{"target": {FULL}}})
        n: T.int32 = Module.add_host_1(Module.add_host(30), 2)
        for tx in T.thread_binding(n, thread="threadIdx.x"):
            A[tx] = Module.add(tx, 1)
"""
    check(before, expected)


def test_explicit_targets_are_never_overwritten():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def helper(x: T.float32) -> T.float32:
        T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
        return x * T.float32(3.0)

    @T.prim_func
    def main(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = Module.helper(A[tx])
"""
    expected = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def helper(x: T.float32) -> T.float32:
        T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
        return x * T.float32(3.0)

    @T.prim_func
    def main(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80", "host": {"kind": "llvm"}})})
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = Module.helper(A[tx])
"""
    check(before, expected)


def test_mixed_module_two_cuda_architectures_and_llvm_keeps_every_target():
    from conftest import ROOT
    mod = parse((ROOT / "samples" / "multi_target.tir").read_text())
    after = bind_target(mod, CUDA)
    assert after["scale_sm80"].attrs["target"] == parse_target("cuda -arch=sm_80", host="llvm")
    assert after["scale_sm90"].attrs["target"] == parse_target("cuda -arch=sm_90", host="llvm")
    # an explicit CPU target keeps its kind and gets the bind target's host, as in TVM
    assert after["scale_cpu"].attrs["target"] == parse_target("llvm", host="llvm")
    assert set(after.functions) == set(mod.functions)


def test_uncalled_private_function_gets_the_device_target_without_host():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def unused(x: T.int32) -> T.int32:
        return x

    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        A[0] = 1
"""
    after = bind_target(parse(HEADER + before), CUDA)
    assert after["unused"].attrs["target"] == parse_target("cuda -arch=sm_90")


def test_host_called_private_function_with_kernels_gets_the_full_target():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def launch(A: T.Buffer((64,), "float32")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = T.float32(0.0)

    @T.prim_func
    def main(A: T.Buffer((64,), "float32")):
        Module.launch(A)
"""
    after = bind_target(parse(HEADER + before), CUDA)
    assert after["launch"].attrs["target"] == CUDA


def test_explicit_cpu_function_called_from_a_kernel_is_an_error():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def cpu_only(x: T.float32) -> T.float32:
        T.func_attr({"target": T.target({"kind": "llvm"})})
        return x

    @T.prim_func
    def main(A: T.Buffer((64,), "float32")):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = Module.cpu_only(A[tx])
"""
    with pytest.raises(Diagnostic) as info:
        bind_target(parse(HEADER + before, "m.tir"), CUDA)
    d = info.value
    assert "'cpu_only' has the CPU target 'llvm' but is called from device code" in d.message
    assert (d.span.file, d.span.line, d.span.col) == ("m.tir", 15, 21)


def test_target_region_makes_device_context():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def f(x: T.int32) -> T.int32:
        return x + 1

    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        with T.attr(T.target({"kind": "cuda", "arch": "sm_90"}), "target", 0):
            A[0] = Module.f(1)
"""
    after = bind_target(parse(HEADER + before), CUDA)
    assert after["f"].attrs["target"] == parse_target("cuda -arch=sm_90")
    assert "f_host" not in after


def test_cpu_only_build_binds_llvm_everywhere_without_duplicates():
    before = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.int32, b: T.int32) -> T.int32:
        return a + b

    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        for i in range(4):
            A[i] = Module.add(i, 1)
"""
    llvm = parse_target("llvm")
    after = bind_target(parse(HEADER + before), llvm)
    assert set(after.functions) == {"add", "main"}
    assert all(f.attrs["target"] == llvm for f in after.functions.values())


def test_explicit_device_entry_point_gets_the_cpu_bind_target_as_host():
    """A public function whose own target is `cuda` without host gets a host also when
    the bind target is a CPU one (`tirc build` without --target binds `llvm`): before,
    it kept its host-less target, the split made no kernel of it, and the build wrote
    nothing for it and exited 0 (found with the TVM corpus's cuda_intrinsics_sync.tir)."""
    before = """
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target({"arch": "sm_90", "kind": "cuda"})})
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = T.float32(1.0)
"""
    expected = """
@I.ir_module
class Module:
    @T.prim_func
    def k(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target({"arch": "sm_90", "host": {"kind": "llvm"}, "kind": "cuda"})})
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[tx] = T.float32(1.0)
"""
    check(before, expected, target=parse_target("llvm"))
