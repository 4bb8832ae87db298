"""``-j N``: a device module's kernels compiled in chunks side by side give the PTX the
whole module gives, byte for byte (shared memory demoted to kernels, block labels and
local frames numbered by the kernel's place in the module, libdevice math); what
cannot be joined is compiled whole."""
from __future__ import annotations

from dataclasses import replace

import pytest

from tirc.backends.cuda import nvptx, ptx_chunks
from tirc.build.stages import build
from tirc.frontend.parse import parse
from conftest import ROOT

MATH = frozenset(nvptx._MATH_OPS)

# Three kernels, two of them calling exp (libdevice), one with shared memory.
KERNELS = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32"),
             C: T.Buffer((256,), "float32"), D: T.Buffer((256,), "float32")):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                B[bx * 128 + tx] = T.exp(A[bx * 128 + tx])
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                stage = T.alloc_shared((128,))
                stage[tx] = A[bx * 128 + tx] * T.float32(2.0)
                T.tvm_storage_sync("shared")
                C[bx * 128 + tx] = stage[127 - tx]
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                D[bx * 128 + tx] = T.exp(C[bx * 128 + tx]) + T.float32(1.0)
'''


def _device_module(source: str, filename: str, monkeypatch):
    """The device module a build of ``source`` compiles, its target and its PTX."""
    seen = []
    whole = nvptx._generate

    def keep(mod, target, name, keep_ir, line_info, timed, ptx_version=None):
        image = whole(mod, target, name, keep_ir, line_info, timed, ptx_version)
        seen.append((mod, target, image.ptx))
        return image

    monkeypatch.setattr(nvptx, "_generate", keep)
    build(source, "cuda -arch=sm_80", "llvm", out_dir=".", filename=filename, write=False)
    monkeypatch.undo()
    (found,) = seen
    return found


def _joined(mod, target, jobs, pieces=False):
    chunks = ptx_chunks.split(mod, jobs, MATH)
    assert chunks is not None
    texts = [nvptx._chunk_ptx(c.mod, target, "m", nvptx.required_ptx_version(mod), pieces)
             for c in chunks]
    return ptx_chunks.join(texts, chunks), chunks


@pytest.mark.parametrize("pieces", [False, True])
def test_kernels_that_call_the_same_libdevice_function_are_compiled_apart(pieces, monkeypatch):
    mod, target, whole = _device_module(KERNELS, "kernels.tir", monkeypatch)
    joined, chunks = _joined(mod, target, 2, pieces)
    assert [c.places for c in chunks] == [(1,), (2,), (0,)]  # the largest first
    assert [c.math for c in chunks] == [False, True, True]
    assert joined == whole


# Two kernels of TVM's MLC-LLM KV cache that call the same libdevice functions
# (sin, cos and exp2 of rotary embedding and softmax): were each function optimised once
# for both kernels before inlining, a kernel compiled alone would get other instructions.
@pytest.mark.parametrize("path", ["bench/models/mlc_kv_cache.cuda.tir"])
def test_a_kernel_gets_the_same_code_alone_as_beside_others_calling_libdevice(path, monkeypatch):
    full, target, _ = _device_module((ROOT / path).read_text(), path, monkeypatch)
    names = [n for n in full.functions if n in ("fused_rope_kernel", "batch_decode_paged_kv_kernel")]
    mod = replace(full, functions={n: full.functions[n] for n in names})
    whole = nvptx.generate(mod, target, "m", keep_ir=False).ptx
    joined, chunks = _joined(mod, target, 2)
    assert all(c.math for c in chunks)
    assert joined == whole


@pytest.mark.parametrize("path, labels", [("bench/models/vision.cuda.tir", True),
                                         ("samples/two_kernels.tir", False)])
def test_chunks_join_to_the_whole_module(path, labels, monkeypatch):
    mod, target, whole = _device_module((ROOT / path).read_text(), path, monkeypatch)
    assert "has been demoted" in whole and ("$L__BB" in whole) == labels
    for jobs in (2, 3, len(mod.functions)):
        joined, _ = _joined(mod, target, jobs)
        assert joined == whole


def test_build_with_jobs_writes_the_serial_ptx(tmp_path):
    source = (ROOT / "bench/models/vision.cuda.tir").read_text()
    serial = build(source, "cuda -arch=sm_80", "llvm", out_dir=tmp_path / "1", name="v")
    parallel = build(source, "cuda -arch=sm_80", "llvm", out_dir=tmp_path / "2", name="v",
                     jobs=2)
    assert "chunks" in dict(parallel.device_times) and "chunks" not in dict(serial.device_times)
    # the kernels were compiled in the processes that ran their passes
    assert "with-passes" in dict(parallel.device_times)
    assert (tmp_path / "1/v.ptx").read_bytes() == (tmp_path / "2/v.ptx").read_bytes()


def test_kernels_compiled_with_their_passes_are_joined_not_compiled_again(monkeypatch):
    mod, target, whole = _device_module(KERNELS, "kernels.tir", monkeypatch)
    first, rest = (replace(mod, functions=dict(list(mod.functions.items())[:i])) if i else
                   replace(mod, functions=dict(list(mod.functions.items())[1:]))
                   for i in (1, 0))
    made = {**nvptx.compile_kernels(first, target, "m"), **nvptx.compile_kernels(rest, target, "m")}
    assert len(made) == 3

    def no_compiling(*args):
        raise AssertionError("compiled again")
    monkeypatch.setattr(nvptx, "_chunk_ptx", no_compiling)
    assert nvptx.generate(mod, target, "m", keep_ir=False, jobs=2, made=made).ptx == whole
    # a chunk made for another PTX ISA version is not the module's: compiled again
    other = {(names, t, version + 1): text for (names, t, version), text in made.items()}
    with pytest.raises(AssertionError, match="compiled again"):
        nvptx.generate(mod, target, "m", keep_ir=False, jobs=2, made=other)


def test_a_module_with_a_device_subroutine_compiles_no_kernels_apart(monkeypatch):
    from tirc.ir.attrs import CALLING_CONV
    mod, target, _ = _device_module(KERNELS, "kernels.tir", monkeypatch)
    kernel = next(iter(mod.functions.values()))
    helper = replace(kernel, attrs={k: v for k, v in kernel.attrs.items() if k != CALLING_CONV})
    assert nvptx.compile_kernels(mod, target, "m")
    assert nvptx.compile_kernels(replace(mod, functions={**mod.functions, "helper": helper}),
                                 target, "m") == {}  # a .func shared by its callers: not cut


# Two kernels in two functions; the second calls an extern function the GPU does not have.
BAD_EXTERN = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
@I.ir_module
class Module:
    @T.prim_func
    def first(A: T.Buffer((256,), "float32")):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            A[tx] = A[tx] * T.float32(2.0) + T.float32(1.0)

    @T.prim_func
    def second(A: T.Buffer((256,), "float32")):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            A[tx] = T.call_extern("float32", "no_such_function", A[tx])
'''


def test_a_kernel_that_fails_in_its_process_fails_as_in_the_serial_build(tmp_path):
    from tirc.diagnostics import Diagnostic
    errors = []
    for jobs in (1, 2):
        with pytest.raises(Diagnostic) as e:
            build(BAD_EXTERN, "cuda -arch=sm_80", "llvm", out_dir=tmp_path / str(jobs),
                  filename="bad.tir", jobs=jobs)
        errors.append(str(e.value))
        assert not (tmp_path / str(jobs)).exists()
    assert "unknown extern function 'no_such_function'" in errors[0]
    assert errors[1] == errors[0]


HEADER = "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 7.0\n.target sm_80\n.address_size 64\n\n"
KERNEL = "\t// .globl\tk\n\n.visible .entry k(\n)\n{\n\tret;\n\n}\n"


@pytest.mark.parametrize("extra", [".extern .func (.param .b32 r) vprintf(.param .b64 f);\n",
                                   ".global .align 4 .b8 $str[3] = {104, 105, 0};\n",
                                   ".func helper()\n{\n\tret;\n\n}\n"])
def test_other_top_level_items_are_not_joined(extra):
    mod = parse(KERNELS)
    chunks = [ptx_chunks.Chunk(mod, (0,), False)]
    assert ptx_chunks.join([HEADER + KERNEL], chunks) == HEADER + KERNEL
    assert ptx_chunks.join([HEADER + extra + "\n" + KERNEL], chunks) is None
    assert ptx_chunks.join([HEADER + KERNEL + extra], chunks) is None


def test_a_module_with_a_device_subroutine_is_not_cut(monkeypatch):
    mod, _, _ = _device_module(KERNELS, "kernels.tir", monkeypatch)
    assert ptx_chunks.split(mod, 2, MATH) is not None
    assert ptx_chunks.split(mod, 1, MATH) is None
    helper = parse(KERNELS).functions["main"]  # not a kernel
    assert ptx_chunks.split(replace(mod, functions={**mod.functions, "helper": helper}),
                            2, MATH) is None
