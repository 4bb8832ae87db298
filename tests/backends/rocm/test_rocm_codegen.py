"""The AMDGPU device code (``tirc/backends/rocm/amdgpu.py``, ``warp.py``) and the rocm target
kind: the LLVM IR before optimisation, checked with FileCheck — kernel calling convention
and argument address space, LDS as address space 3, private allocations in address space
5, work-item intrinsics, ``s_barrier`` between workgroup fences, the wavefront shuffles
LowerThreadAllreduce asks for at warp size 64 (and 32 on RDNA), math through intrinsics
or our expansions, extern C math names — and the located errors naming the target."""
from __future__ import annotations

import textwrap

import pytest

from conftest import ROOT
from test_cuda_launch import filecheck
from tirc.backends.rocm import amdgpu
from tirc.build.options import bind_target_from
from tirc.build.stages import build, split_module
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import TargetError, parse_target

SAMPLES = ROOT / "samples"
HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def device_ir(text: str, target: str = "rocm -mcpu=gfx90a") -> str:
    bind = bind_target_from(target, None)
    mod = run_pipeline(parse(text, "t.tir"), PassContext(bind))
    _, devices = split_module(mod)
    (t, m), = devices.items()
    return amdgpu.lower_to_llvm(m, t, "t")[0]


KERNEL = HEAD + textwrap.dedent("""
    @T.prim_func
    def k(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        for bx in T.thread_binding(8, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                tile = T.alloc_buffer((128,), scope="shared")
                acc = T.alloc_buffer((4,), scope="local")
                tile[tx] = A[bx * 128 + tx]
                T.tvm_storage_sync("shared")
                for i in range(4):
                    acc[i] = tile[(tx + i) % 128] * T.float32(2)
                B[bx * 128 + tx] = acc[0] + acc[1] + acc[2] + acc[3]
""")


def test_kernel_lds_private_memory_work_items_and_barrier(tmp_path):
    filecheck(device_ir(KERNEL), r"""
        CHECK: target triple = "amdgcn-amd-amdhsa"
        CHECK: define external amdgpu_kernel void @"k_kernel"(ptr addrspace(1) %"A_ptr", ptr addrspace(1) %"B_ptr") nounwind "amdgpu-flat-work-group-size"="1,128"
        CHECK: %"acc" = alloca float, i64 4, align 16, addrspace(5)
        CHECK-NEXT: %"acc.flat" = addrspacecast ptr addrspace(5) %"acc" to ptr
        CHECK: call i32 @"llvm.amdgcn.workgroup.id.x"()
        CHECK: call i32 @"llvm.amdgcn.workitem.id.x"()
        CHECK: store float {{.*}}, ptr addrspace(3)
        CHECK: fence syncscope("workgroup") release
        CHECK-NEXT: call void @"llvm.amdgcn.s.barrier"()
        CHECK-NEXT: fence syncscope("workgroup") acquire
        CHECK: @"k_kernel_tile" = internal addrspace(3) global [128 x float] undef, align 16
    """, tmp_path)


def test_a_device_subroutine_is_an_internal_function_the_kernel_calls(tmp_path):
    filecheck(device_ir((SAMPLES / "device_call_let.tir").read_text(),
                        "rocm -max_num_threads=1024"), r"""
        CHECK: define internal float @"add"(float %"a", float %"b") noinline nounwind
        CHECK: define external amdgpu_kernel void @"main_kernel"(ptr addrspace(1)
        CHECK: call float @"add"(float
    """, tmp_path)


def _reduction(threads: int, dtype: str = "float32") -> str:
    return HEAD + textwrap.dedent(f"""
        @T.prim_func(s_tir=True)
        def main(A: T.Buffer((8, {2 * threads}), "{dtype}"), B: T.Buffer((8,), "{dtype}")):
            T.func_attr({{"tirx.noalias": True}})
            for i in T.thread_binding(8, thread="blockIdx.x"):
                for k_0 in range(2):
                    for k_1 in T.thread_binding({threads}, thread="threadIdx.x"):
                        with T.sblock("B"):
                            v_i = T.axis.spatial(8, i)
                            v_k = T.axis.reduce({2 * threads}, k_0 * {threads} + k_1)
                            T.reads(A[v_i, v_k])
                            T.writes(B[v_i])
                            with T.init():
                                B[v_i] = T.{dtype}(0)
                            B[v_i] = B[v_i] + A[v_i, v_k]
    """)


@pytest.mark.parametrize("threads,dtype,target,shuffles", [
    (64, "float32", "rocm -mcpu=gfx90a", True),   # one wavefront of 64
    (32, "float32", "rocm -mcpu=gfx90a", False),  # half a wavefront: TVM's rule, the tree
    (128, "float32", "rocm -mcpu=gfx90a", False),  # two wavefronts: the tree
    (64, "float64", "rocm -mcpu=gfx90a", False),  # not 32-bit: the tree
    (32, "float32", "rocm -mcpu=gfx1100", True),  # RDNA: a wavefront of 32
    (64, "float32", "rocm -mcpu=gfx1100 -thread_warp_size=64", True),
])
def test_thread_allreduce_uses_the_wavefront_as_tvm_rules_it(threads, dtype, target, shuffles):
    text = device_ir(_reduction(threads, dtype), target)
    assert ("llvm.amdgcn.ds.bpermute" in text) == shuffles
    assert ("llvm.amdgcn.s.barrier" in text) != shuffles
    if shuffles:
        assert "llvm.amdgcn.mbcnt.lo" in text and "llvm.amdgcn.mbcnt.hi" in text


def test_wave64_on_rdna_compiles_with_the_feature():
    from tirc.target.kinds import rocm_features
    assert rocm_features(parse_target("rocm -mcpu=gfx1100 -thread_warp_size=64")) == \
        "+wavefrontsize64"
    assert rocm_features(parse_target("rocm -mcpu=gfx90a -mattr=+xnack")) == "+xnack"


def test_shuffles_in_the_code_object(tmp_path):
    r = build(_reduction(64), "rocm -mcpu=gfx90a", out_dir=tmp_path, name="r", device_only=True)
    assert r.manifest["kernels"][0]["rocm"]["wavefront_size"] == 64
    r = build(_reduction(32), "rocm -mcpu=gfx1100", out_dir=tmp_path, name="s", device_only=True)
    assert r.manifest["kernels"][0]["rocm"]["wavefront_size"] == 32


MATH = HEAD + textwrap.dedent("""
    @T.prim_func
    def m(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            B[tx] = (T.exp(A[tx]) + T.tanh(A[tx]) + T.erf(A[tx]) + T.sqrt(A[tx])
                     + T.call_pure_extern("float32", "__expf", A[tx])
                     + T.call_pure_extern("float32", "powf", A[tx], A[tx]))
""")


def test_math_through_intrinsics_and_expansions(tmp_path):
    text = device_ir(MATH)
    assert "llvm.exp.f32" in text and "llvm.sqrt.f32" in text and "llvm.pow.f32" in text
    assert "llvm.copysign.f32" in text  # erf's sign
    assert "tanh" not in text and "erf" not in text  # expanded: no calls
    assert "__expf" not in text and "powf" not in text
    r = build(MATH, "rocm", out_dir=tmp_path, name="m")
    assert r.manifest["kernels"][0]["rocm"]["kernarg_bytes"] >= 16


@pytest.mark.parametrize("body,message", [
    ('B[tx] = T.sin(A[tx])', "T.sin of float64 is not available on target rocm"),
    ('B[tx] = T.pow(A[tx], A[tx])', "T.pow of float64 is not available on target rocm"),
    ('B[tx] = T.call_pure_extern("float64", "j0", A[tx])',
     "unknown extern function 'j0' on target rocm"),
    ('T.evaluate(T.tvm_storage_sync("global"))',
     'T.tvm_storage_sync("global") is not supported on target rocm'),
])
def test_unsupported_constructs_are_located_errors_naming_the_target(tmp_path, body, message):
    text = HEAD + textwrap.dedent(f"""
        @T.prim_func
        def f(A: T.Buffer((64,), "float64"), B: T.Buffer((64,), "float64")):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                {body}
    """)
    with pytest.raises(Diagnostic) as e:
        build(text, "rocm", out_dir=tmp_path, name="f")
    assert message in e.value.message and "rocm" in e.value.message
    assert e.value.span is not None and e.value.span.line == 7


@pytest.mark.parametrize("spec,message", [
    ("rocm -mcpu=gfx90a -thread_warp_size=32", "gfx90a runs wavefronts of 64 work-items"),
    ("rocm -mcpu=gfx1100 -thread_warp_size=16", "gfx1100 runs wavefronts of 32 or 64"),
    ("rocm -mcpu=sm_80", "invalid value 'sm_80' for option 'mcpu' of 'rocm'"),
    ("rocm -mtriple=nvptx64-nvidia-cuda", "option 'mtriple' of 'rocm'"),
    ("rocm -mattr=xnack", "a feature is '.name' to enable it"),
    ("rocm -mattr=+nonesuch", "not a feature LLVM knows for AMDGPU"),
])
def test_bad_options_name_the_target_kind(spec, message):
    with pytest.raises(TargetError, match=message):
        parse_target(spec)


def test_tvm_defaults_and_derived_options():
    t = parse_target("rocm")
    assert (t.get("mcpu"), t.get("max_num_threads"), t.get("max_threads_per_block"),
            t.get("thread_warp_size"), t.get("max_shared_memory_per_block")) == \
        ("gfx900", 256, 256, 64, 65536)
    assert t.get("keys") == ("rocm", "gpu") and t.kind_info.dl_device_type == 10
    assert parse_target("rocm -mcpu=gfx1100").get("thread_warp_size") == 32
    assert parse_target("rocm -mcpu=gfx950").get("max_shared_memory_per_block") == 163840
    # TVM writes its triple with -hcc: accepted
    assert parse_target("rocm -mtriple=amdgcn-amd-amdhsa-hcc").get("mtriple") == \
        "amdgcn-amd-amdhsa-hcc"



EXPANDED = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((4001,), "float32"), B: T.Buffer((5, 4001), "float32")):
        for i in range(4001):
            B[0, i] = T.tanh(A[i])
            B[1, i] = T.erf(A[i])
            B[2, i] = T.tan(A[i] * T.float32(0.25))
            B[3, i] = T.sinh(A[i])
            B[4, i] = T.cosh(A[i])
""")


def test_the_math_expansions_are_accurate(monkeypatch):
    """The expansions AMDGPU code uses for tanh, erf, tan, sinh and cosh, run on the CPU
    (the CPU backend made to lower those calls with them) against NumPy/math in float64."""
    import math

    import numpy as np
    tvm_ffi = pytest.importorskip("tvm_ffi")
    import tirc
    from tirc.backends.cpu.context import CPUContext
    cpu_lower_call = CPUContext.lower_call

    def lower_call(self, fl, call):
        if call.op in ("tanh", "erf", "tan", "sinh", "cosh") and call.dtype.is_float:
            return amdgpu.expand(fl, call)
        return cpu_lower_call(self, fl, call)

    monkeypatch.setattr(CPUContext, "lower_call", lower_call)
    c = tirc.compile(EXPANDED, name="expanded")
    assert "erff" not in c.files["expanded.o"].decode("latin-1")  # ours, not libm's
    a = np.concatenate([np.linspace(-6, 6, 3001), np.geomspace(1e-8, 0.7, 500),
                        -np.geomspace(1e-8, 0.7, 500)]).astype(np.float32)
    b = np.zeros((5, 4001), np.float32)
    c["f"](tvm_ffi.from_dlpack(a), tvm_ffi.from_dlpack(b))
    x = a.astype(np.float64)
    want = [np.tanh(x), np.array([math.erf(v) for v in x]), np.tan(x * 0.25), np.sinh(x),
            np.cosh(x)]
    # relative error, near 0 too, where tanh, erf and sinh switch to their series
    for name, got, ref, tol in zip(("tanh", "erf", "tan", "sinh", "cosh"), b, want,
                                   (1e-6, 1e-6, 1e-6, 1e-6, 1e-6)):
        scale = np.maximum(np.abs(ref), 1e-30)
        err = np.abs(got - ref) / scale
        assert err.max() < tol, (name, err.max(), x[err.argmax()])


def _cuda_source_lane(mode: str, me: int, lane: int, width: int) -> int:
    """The lane CUDA's __shfl*_sync reads from (a lane outside the segment reads itself)."""
    base = me & ~(width - 1)
    if mode == "idx":
        return base + lane % width
    if mode == "up":
        return me - lane if me - lane >= base else me
    if mode == "down":
        return me + lane if (me & (width - 1)) + lane < width else me
    return me ^ lane  # xor, a lane mask below width


def test_the_shuffle_source_lanes_are_cudas():
    """The source lane tirc's ds_bpermute shuffles compute (``warp._source_lane``), as
    LLVM IR run on the CPU, for every lane of a wavefront of 64, every width and offset:
    the lane CUDA's shuffle reads."""
    import ctypes

    from llvmlite import binding as llvm
    from llvmlite import ir

    from tirc.backends.llvm.builder import Builder
    from tirc.backends.llvm.context import init_llvm
    from tirc.backends.rocm import warp

    init_llvm()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    i32 = ir.IntType(32)
    m = ir.Module("lanes")
    m.triple = llvm.get_process_triple()
    modes = ("idx", "up", "down", "xor")
    for mode in modes:
        f = ir.Function(m, ir.FunctionType(i32, [i32, i32, i32]), f"src_{mode}")

        class FL:  # what _source_lane uses of a function lowering
            b = Builder(f.append_basic_block("entry"))

        FL.b.ret(warp._source_lane(FL, mode, *f.args))
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(m)), tm)
    engine.finalize_object()
    fns = {mode: ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)(
        engine.get_function_address(f"src_{mode}")) for mode in modes}
    for width in (2, 4, 8, 16, 32, 64):
        for lane in range(width):
            for me in range(64):
                for mode in modes:
                    if mode == "idx" or lane > 0 or mode == "xor":
                        assert fns[mode](me, lane, width) == _cuda_source_lane(mode, me, lane, width), \
                            (mode, me, lane, width)


EXPANDED_F64 = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((6000,), "float64"), B: T.Buffer((8, 6000), "float64")):
        for i in range(6000):
            B[0, i] = T.exp(A[i])
            B[1, i] = T.exp2(A[i])
            B[2, i] = T.exp10(A[i] * T.float64(0.4))
            B[3, i] = T.log(T.fabs(A[i]))
            B[4, i] = T.log2(T.fabs(A[i]))
            B[5, i] = T.log10(T.fabs(A[i]))
            B[6, i] = T.tanh(A[i])
            B[7, i] = T.sigmoid(A[i])
""")


def test_the_float64_expansions_are_accurate(monkeypatch):
    """exp, exp2, exp10, log, log2, log10, tanh and sigmoid of float64 as AMDGPU code
    computes them (no instruction, no ocml), run on the CPU against NumPy: within 4 ulp
    over the whole range, subnormals, zeros, infinities and NaN."""
    import numpy as np
    tvm_ffi = pytest.importorskip("tvm_ffi")
    import tirc
    from tirc.backends.cpu.context import CPUContext
    cpu_lower_call = CPUContext.lower_call

    def lower_call(self, fl, call):
        if call.op in amdgpu._EXPANDED_F64 and call.dtype.base == "float64":
            return amdgpu.expand_f64(fl, call)
        return cpu_lower_call(self, fl, call)

    monkeypatch.setattr(CPUContext, "lower_call", lower_call)
    c = tirc.compile(EXPANDED_F64, name="expanded64")
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1e-310, 1.0, 2.0, 8.0, 1000.0,
               709.78, -745.1, 1023.9, -1074.5, 1e-300, 1e300, 0.125, -0.125, 1e-9]
    a = np.concatenate([special, rng.uniform(-800, 800, 2000), rng.uniform(-2, 2, 1000),
                        np.exp(rng.uniform(-700, 700, 2980 - len(special) + 20))])[:6000]
    a = np.concatenate([a, np.zeros(6000 - len(a))])
    b = np.zeros((8, 6000))
    c["f"](tvm_ffi.from_dlpack(a), tvm_ffi.from_dlpack(b))
    with np.errstate(all="ignore"):
        want = [np.exp(a), np.exp2(a), np.power(10.0, a * 0.4), np.log(np.abs(a)),
                np.log2(np.abs(a)), np.log10(np.abs(a)), np.tanh(a), 1 / (1 + np.exp(-a))]
    names = ("exp", "exp2", "exp10", "log", "log2", "log10", "tanh", "sigmoid")
    for name, got, ref in zip(names, b, want):
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        with np.errstate(invalid="ignore"):
            ulp = np.abs(got - ref) / np.spacing(np.maximum(np.abs(ref), 2.2250738585072014e-308))
        bad = ~same & ~(ulp <= 4)
        assert not bad.any(), (name, a[bad][:5], got[bad][:5], ref[bad][:5])
