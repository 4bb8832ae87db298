"""The opencl backend's OpenCL C: side by side with TVM 0.27's for the same modules
(tests/corpus/opencl_tvm, printed by gen_opencl_tvm.py), the constructs one at a time, and
what it refuses."""
from __future__ import annotations

import json
import re
import sys

import pytest

from conftest import ROOT, TESTS
from tirc.diagnostics import CompileError

sys.path.insert(0, str(TESTS / "runtime"))
from opencl_corpus import retarget_text  # noqa: E402
from test_opencl_corpus import REFUSED  # noqa: E402

TVM_DIR = TESTS / "corpus" / "opencl_tvm"
TARGET = "opencl -max_num_threads=1024"
_BYTES = {"float": 4, "half": 2, "double": 8, "int": 4, "uint": 4, "char": 1, "uchar": 1,
          "short": 2, "ushort": 2, "long": 8, "ulong": 8}
# Where tirc's shared pipeline knowingly differs from TVM's: FlattenBuffer sizes a strided
# allocation by the elements its strides reach (31 * 18 + 16 = 574 floats for a (32, 16)
# tile with row stride 18), TVM by shape_0 * stride_0 (576); every index is inside both.
LOCAL_MEMORY = {"dl_gpu_matmul": (6896, 6912), "dl_gpu_matmul_dyn": (6896, 6912)}


def compile_cl(text: str, target: str = TARGET, name: str = "m") -> str:
    import tirc
    return tirc.compile(text, target=target, name=name, load=False).opencl["opencl"]


def kernels(source: str) -> dict[str, tuple[list[str], int]]:
    """Each ``__kernel``'s parameter declarations and static ``__local`` bytes."""
    out = {}
    for m in re.finditer(r"__kernel void (\w+)\(([^)]*)\)\s*\{", source):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            i += 1
        body = source[m.end():i]
        local = 0
        for ctype, count in re.findall(r"__local (\w+) \w+\[(\d+)\];", body):
            lanes = re.search(r"\d+$", ctype)
            local += _BYTES[re.sub(r"\d+$", "", ctype)] * (int(lanes.group()) if lanes else 1) * int(count)
        out[m.group(1)] = ([p.strip() for p in m.group(2).split(",") if p.strip()], local)
    return out


def _tvm_cases():
    return [pytest.param(e, id=e["name"]) for e in json.loads((TVM_DIR / "index.json").read_text())
            if "tvm_error" not in e]


def test_the_tvm_corpus_covers_the_samples_and_the_corpora():
    index = json.loads((TVM_DIR / "index.json").read_text())
    assert len([e for e in index if "tvm_error" not in e]) >= 170
    assert {e["name"] for e in index} >= {"vector_add", "shared_reduction", "two_kernels",
                                          "dl_gpu_matmul", "cuda_softmax_cross_thread", "sum_1000"}


def _declared_type(param: str) -> str:
    """A parameter declaration without its name and ``restrict``: ``__global float*``; a
    bool buffer as the bytes it is (TVM writes ``bool*``, which OpenCL C does not allow in
    a kernel's parameters, and whose size it leaves to the implementation)."""
    return param.replace(" restrict", "").rsplit(" ", 1)[0].replace("bool*", "uchar*")


@pytest.mark.parametrize("entry", _tvm_cases())
def test_kernels_parameters_and_local_memory_match_tvm(entry):
    """Same kernels, same parameter declarations, same static local memory as TVM 0.27's
    OpenCL code generator writes. For the modules TVM printed after its own lowering
    (tests/corpus/tvm*), four known differences: TVM names a pointer parameter after the
    buffer the kernel uses it through (``A_1_ptr`` for ``A_1 = T.decl_buffer(data=A.data)``),
    tirc after the pointer (``A_ptr``); TVM marks every kernel pointer ``restrict``, tirc
    only under ``tir.noalias`` (pointers may alias otherwise); a bool buffer is ``uchar*``;
    and TVM writes dynamic
    shared memory as a private array of each work-item, which work-items cannot share
    through, tirc as a ``__local`` parameter the launch sizes. Elsewhere all must agree."""
    tvm = kernels((TVM_DIR / f"{entry['name']}.cl").read_text())
    text = (ROOT / entry["source"]).read_text()
    printed = "/tvm" in entry["source"]
    if printed:  # printed by TVM with its CUDA targets
        text = retarget_text(text)
    try:
        ours = kernels(compile_cl(text, name=entry["name"]))
    except CompileError as e:
        assert entry["name"] in REFUSED, e  # what test_opencl_corpus.py expects
        assert REFUSED[entry["name"]] in str(e)
        return
    assert list(ours) == list(tvm)
    for name, (params, local) in tvm.items():
        mine = ours[name][0]
        if printed:
            if mine and mine[-1] == "__local uchar* buf_dyn_shmem":
                mine = mine[:-1]
            assert [_declared_type(p) for p in mine] == [_declared_type(p) for p in params], name
        else:
            assert mine == params, name
        expected = LOCAL_MEMORY.get(entry["name"], (local, local))
        assert (ours[name][1], local) == expected, name


# -- constructs -----------------------------------------------------------------------------
HEAD = "# from tvm.script import tirx as T\n\n"


def test_a_kernel_as_tvm_writes_it():
    source = compile_cl((ROOT / "samples" / "vector_add.tir").read_text())
    assert ("__kernel void vector_add_kernel(__global float* restrict A_ptr, __global float* "
            "restrict B_ptr, __global float* restrict C_ptr, int n) {") in source
    assert "(((convert_int(get_group_id(0))) * 256) + (convert_int(get_local_id(0))))" in source
    assert "C_ptr[cse_v1] = (A_ptr[cse_v1] + B_ptr[cse_v1]);" in source


def test_shared_memory_is_local_at_kernel_scope_with_barriers():
    source = compile_cl((ROOT / "samples" / "shared_reduction.tir").read_text())
    body = source.split("reduce_sum_kernel(", 2)[2]
    assert body.splitlines()[1] == "  __local float red[256];"
    assert body.count("barrier(CLK_LOCAL_MEM_FENCE);") == 9


def test_dynamic_shared_memory_is_a_trailing_local_parameter():
    text = HEAD + '''@T.prim_func
def reverse(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            buf = T.alloc_buffer((256,), scope="shared.dyn")
            buf[tx] = A[bx * 256 + tx]
            T.tvm_storage_sync("shared")
            B[bx * 256 + tx] = buf[255 - tx]
'''
    source = compile_cl(text)
    assert "__kernel void reverse_kernel(__global float* A_ptr, __global float* B_ptr, " \
           "__local uchar* buf_dyn_shmem)" in source
    assert "((__local float*)buf_dyn_shmem)[(255 - (convert_int(get_local_id(0))))]" in source


def test_half_enables_cl_khr_fp16_and_vectors_use_vload_vstore():
    text = HEAD + '''@T.prim_func
def add(A: T.Buffer((64,), "float16"), B: T.Buffer((64,), "float16")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            for v in T.vectorized(4):
                B[bx * 16 + tx * 4 + v] = A[bx * 16 + tx * 4 + v] + T.float16(1)
'''
    source = compile_cl(text)
    assert source.splitlines()[1] == "#pragma OPENCL EXTENSION cl_khr_fp16 : enable"
    assert "vstore4((vload4(0, A_ptr + " in source
    assert "((half4)(((half)1.0f)))), 0, B_ptr + " in source


def test_math_builtins_and_wide_integers():
    text = HEAD + '''@T.prim_func
def f(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32"), C: T.Buffer((256,), "int64")):
    for tx in T.thread_binding(256, thread="threadIdx.x"):
        B[tx] = T.exp(A[tx]) + T.tanh(A[tx]) + T.sqrt(T.fabs(A[tx])) + T.round(A[tx])
        C[tx] = T.Cast("int64", tx) * T.int64(4294967296) + T.floordiv(T.Cast("int64", tx) - T.int64(7), T.int64(2))
'''
    source = compile_cl(text)
    assert "exp(A_ptr[" in source and "tanh(A_ptr[" in source and "rint(A_ptr[" in source
    assert "sqrt(fabs(A_ptr[" in source
    assert "4294967296L" in source
    assert "tirc_floordiv_long(" in source
    assert "static inline long tirc_floordiv_long(long a, long b) {" in source


def test_a_device_subroutine_is_a_function_the_kernel_calls():
    source = compile_cl((ROOT / "samples" / "device_call_add.tir").read_text())
    assert re.search(r"\nint \w+\(int \w+, int \w+\) \{", source), source
    assert "__kernel void" in source


# -- what it refuses --------------------------------------------------------------------------
def test_an_unsupported_construct_is_a_located_error_naming_the_target():
    text = HEAD + '''@T.prim_func
def f(A: T.Buffer((32,), "uint32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        A[tx] = T.tvm_warp_activemask()
'''
    with pytest.raises(CompileError) as e:
        compile_cl(text, name="f")
    message = str(e.value)
    assert message.startswith("<string>:6:17: error: ")
    assert "T.tvm_warp_activemask is not supported in OpenCL device code (target 'opencl')" \
        in message


def test_a_bad_option_names_the_target_kind():
    from tirc.target.kinds import TargetError, parse_target
    with pytest.raises(TargetError, match="unknown option 'arch' for target kind 'opencl'"):
        parse_target("opencl -arch=sm_80")
    with pytest.raises(TargetError, match="option 'max_num_threads' of 'opencl' takes an integer"):
        parse_target("opencl -max_num_threads=many")


def test_tvm_defaults():
    from tirc.target.kinds import parse_target
    t = parse_target("opencl")
    assert (t.get("thread_warp_size"), t.get("max_num_threads"),
            t.get("max_shared_memory_per_block")) == (1, 256, 16384)
    assert t.kind_info.dl_device_type == 4 and t.is_device and not t.is_cuda
