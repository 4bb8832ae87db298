"""SplitHostDevice: device regions become kernels whose parameters are what they use
(three bugs TVM's split had each have a test)."""
from __future__ import annotations

from split_helpers import DEV, FULL, HOST, check, run
from tirc.ir.equal import assert_structural_equal
from tirc.ir.expr import Var
from tirc.ir.visitor import walk
from tirc.passes.split.split_host_device import split_host_device

KERNEL = '"calling_conv": 2, "target": {dev}, "tirx.is_global_func": True'.format(dev=DEV)


def test_region_becomes_a_kernel_with_exactly_the_inputs_it_uses():
    before = f"""
@T.prim_func
def vadd(A: T.Buffer(("n",), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((16,), "float32")):
    n = T.int32()
    T.func_attr({{"target": {FULL}}})
    with T.attr({DEV}, "target", 0):
        bx = T.launch_thread("blockIdx.x", (n + 255) // 256)
        tx = T.launch_thread("threadIdx.x", 256)
        if bx * 256 + tx < n:
            B[bx * 256 + tx] = A[bx * 256 + tx] * T.float32(2.0)
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func
    def vadd(A: T.Buffer(("n",), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((16,), "float32")):
        n = T.int32()
        T.func_attr({{"target": {FULL}}})
        Module.vadd_kernel(A.data, B.data, n)

    @T.prim_func
    def vadd_kernel(A_ptr: T.handle("float32"), B_ptr: T.handle("float32"), n: T.int32):
        T.func_attr({{{KERNEL}}})
        B = T.decl_buffer((n,), "float32", data=B_ptr)
        A = T.decl_buffer((n,), "float32", data=A_ptr)
        bx = T.launch_thread("blockIdx.x", (n + 255) // 256)
        tx = T.launch_thread("threadIdx.x", 256)
        if bx * 256 + tx < n:
            B[bx * 256 + tx] = A[bx * 256 + tx] * T.float32(2.0)
"""
    after = check([split_host_device], before.replace("@T.prim_func\ndef vadd", "@T.prim_func\ndef vadd", 1), expected)
    host_vars = {id(n) for n in walk(after["vadd"].body) if isinstance(n, Var)}
    kernel_vars = {id(n) for n in walk(after["vadd_kernel"].body) if isinstance(n, Var)}
    assert not host_vars & kernel_vars


def test_sibling_regions_get_fresh_kernel_names_and_device_calls_stay_direct():
    before = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def twice(x: T.float32) -> T.float32:
        T.func_attr({{"target": {DEV}}})
        return x * T.float32(2.0)

    @T.prim_func
    def f(A: T.Buffer((64,), "float32")):
        T.func_attr({{"target": {FULL}}})
        with T.attr({DEV}, "target", 0):
            tx = T.launch_thread("threadIdx.x", 64)
            A[tx] = Module.twice(A[tx])
        with T.attr({DEV}, "target", 0):
            tx_1 = T.launch_thread("threadIdx.x", 32)
            A[tx_1] = T.float32(0.0)
"""
    expected = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def twice(x: T.float32) -> T.float32:
        T.func_attr({{"target": {DEV}}})
        return x * T.float32(2.0)

    @T.prim_func
    def f(A: T.Buffer((64,), "float32")):
        T.func_attr({{"target": {FULL}}})
        Module.f_kernel(A.data)
        Module.f_kernel_1(A.data)

    @T.prim_func
    def f_kernel(A_ptr: T.handle("float32")):
        T.func_attr({{{KERNEL}}})
        A = T.decl_buffer((64,), "float32", data=A_ptr)
        tx = T.launch_thread("threadIdx.x", 64)
        A[tx] = Module.twice(A[tx])

    @T.prim_func
    def f_kernel_1(A_ptr: T.handle("float32")):
        T.func_attr({{{KERNEL}}})
        A = T.decl_buffer((64,), "float32", data=A_ptr)
        tx_1 = T.launch_thread("threadIdx.x", 32)
        A[tx_1] = T.float32(0.0)
"""
    check([split_host_device], before, expected)


SEED_001 = f"""
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def host_helper(a: T.int32, b: T.int32) -> T.int32:
        T.func_attr({{"target": {HOST}}})
        return a + b

    @T.prim_func(private=True)
    def other_host(a: T.int32) -> T.int32:
        T.func_attr({{"target": T.target({{"kind": "llvm", "mcpu": "znver3"}})}})
        return a * 2

    @T.prim_func
    def main(A: T.Buffer((64,), "int32")):
        T.func_attr({{"target": {FULL}}})
        n: T.int32 = Module.host_helper(Module.other_host(16), 32)
        with T.attr({DEV}, "target", 0):
            tx = T.launch_thread("threadIdx.x", 64)
            A[tx] = n
"""


def test_seed_001_host_caller_with_a_cuda_target_is_still_a_host_caller():
    after = run([split_host_device], SEED_001)
    assert set(after.functions) == {"host_helper", "other_host", "main", "main_kernel"}
    # the helper calls stayed in main's host code, as plain calls
    calls = [n for n in walk(after["main"].body) if getattr(n, "op", None) is not None
             and getattr(getattr(n, "op"), "name", None) in ("host_helper", "other_host")]
    assert len(calls) == 2


def test_seed_001_value_returning_host_helper_is_never_a_kernel():
    before = run([], SEED_001)
    after = run([split_host_device], SEED_001)
    # the only kernel is main's device region; no helper was turned into (or split off as)
    # a kernel of its own
    kernels = {name for name, f in after.functions.items() if f.attrs.get("calling_conv") == 2}
    assert kernels == {"main_kernel"}
    for name in ("host_helper", "other_host"):
        helper = after[name]
        assert "calling_conv" not in helper.attrs and "tirx.is_global_func" not in helper.attrs
        assert helper.attrs["target"].kind == "llvm" and str(helper.ret_type) == "int32"
        assert_structural_equal(helper, before[name])  # exactly as written, return included


def test_seed_001_host_to_host_calls_between_host_targets_are_plain_calls():
    from tirc.passes.split.lower_device_kernel_launch import lower_device_kernel_launch
    after = run([split_host_device, lower_device_kernel_launch], SEED_001)
    launches = [n for n in walk(after["main"].body) if getattr(n, "op", None) == "call_ffi_kernel"]
    assert len(launches) == 1 and launches[0].args[0].value == "main_kernel"
    from tirc.ir.printer import print_module
    text = print_module(after)
    assert "Module.host_helper(Module.other_host(16), 32)" in text


def test_renew_defs_with_a_substitution_is_substitute_then_renew():
    """``renew_defs(f, var_map)`` (one walk, as SplitHostDevice makes its kernels) gives
    the function that ``substitute`` of the body then ``renew_defs`` gives, on every
    function of the samples and the TVM corpus, each handle variable its body uses
    (buffer data included) replaced by a new pointer variable."""
    import dataclasses

    from conftest import SAMPLES, TVM_CORPUS
    from tirc.diagnostics import Diagnostic
    from tirc.ir.dtype import HANDLE
    from tirc.ir.freevars import region_uses
    from tirc.ir.renew import renew_defs, substitute
    from tirc.ir.printer import print_func
    from tirc.frontend.parse import parse
    checked = 0
    for path in SAMPLES + TVM_CORPUS:
        try:
            mod = parse(path.read_text(), str(path))
        except Diagnostic:
            continue
        for func in mod.functions.values():
            uses = region_uses(func.body)
            handles = [b.data for b in uses.buffers] + [v for v in uses.vars if v.dtype == HANDLE]
            var_map = {id(v): Var(f"{v.name}_ptr", HANDLE, v.ptr, v.span) for v in handles}
            if not var_map:
                continue
            kernel = dataclasses.replace(func, buffer_map=())
            one = renew_defs(kernel, var_map)
            two = renew_defs(dataclasses.replace(kernel, body=substitute(kernel.body, var_map)))
            assert_structural_equal(one, two)
            assert print_func(one) == print_func(two)
            checked += 1
    assert checked > 50
