"""Code-quality properties of the CPU backend found by bench/cpu_kernels.py,
checked on the emitted LLVM IR and assembly, never on timings."""
from __future__ import annotations

import platform
import re
import textwrap

import pytest
from llvmlite import binding as llvm

from tirc.backends.cpu.backend import generate, lower_to_llvm, target_machine
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target

HEAD = "# from tvm.script import tirx as T\n"

MATMUL = """
@T.prim_func
def mm(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    for i in range(64):
        for j in range(64):
            acc: T.float32 = T.float32(0.0)
            for k in range(64):
                acc = acc + A[i, k] * B[k, j]
            C[i, j] = acc
"""

PARALLEL = """
@T.prim_func
def f(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
    for i0 in T.parallel(16):
        X = T.alloc_buffer((4096,))
        for i1 in range(256):
            X[i0 * 256 + i1] = A[i0 * 256 + i1]
            B[i0 * 256 + i1] = X[i0 * 256 + i1] * T.float32(2.0)
"""


def lowered(text: str, target: str = "llvm"):
    t = parse_target(target)
    return run_pipeline(parse(HEAD + textwrap.dedent(text), "t.tir"), PassContext(t)), t


def weights(ir_text: str) -> dict[str, tuple[int, ...]]:
    """Metadata id -> branch weights."""
    out = {}
    for m in re.finditer(r'^(!\d+) = !\{ ?!"branch_weights", ([^}]*)\}', ir_text, re.M):
        out[m.group(1)] = tuple(int(w) for w in re.findall(r"i32 (\d+)", m.group(2)))
    return out


def test_argument_checks_are_marked_likely_to_pass():
    """Each check branches to its failure block with weight 1 against 2**20 - 1, as TVM
    marks its checks: unweighted, LLVM treats the ~30 checks of a 3-buffer function as
    50/50 each, so the loops after them look cold (no loop alignment, cold layout)."""
    text, _ = lower_to_llvm(*lowered(MATMUL))
    w = weights(text)
    checks = re.findall(r'br i1 [^,]+, label %"assert_ok\d+", label %"assert_fail\d+"(.*)', text)
    assert len(checks) > 20
    for tail in checks:
        m = re.search(r"!prof (!\d+)", tail)
        assert m, "an argument check without branch weights"
        assert w[m.group(1)] == ((1 << 20) - 1, 1)


def test_allocation_and_parallel_failure_paths_are_unlikely():
    text, _ = lower_to_llvm(*lowered(PARALLEL))
    w = weights(text)
    for ok in ("alloc_ok", "parallel_ok"):
        m = re.search(r'br i1 [^,]+, label %"' + ok + r'\d+", label %"[a-z_]+\d+", !prof (!\d+)', text)
        assert m, f"the branch to {ok} carries no weights"
        assert w[m.group(1)] == ((1 << 20) - 1, 1)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 assembly")
def test_innermost_loop_is_aligned_after_the_checks():
    """The visible effect of the weights: the k loop's header is aligned (the assembly
    has a .p2align right before the loop's block), as in TVM's output."""
    mod, t = lowered(MATMUL)
    obj = generate(mod, t)
    asm = target_machine(t).emit_assembly(llvm.parse_assembly(obj.llvm_ir))
    body = asm[asm.index("__tvm_ffi_mm:"):]
    # the innermost loop: the block that holds the multiply and jumps back to itself
    loop = re.search(r"\n(\.LBB\d+_\d+):[^\n]*\n((?:(?!\n\.LBB)[\s\S])*?mulss[\s\S]*?)\n\s+j\w+\s+\1\n", body)
    assert loop, body
    before = body[:loop.start()].rstrip().splitlines()[-1]
    assert ".p2align" in before, before


def tiled_matmul(rows: int) -> str:
    """A matmul with ``rows`` accumulators per k step (an unrolled register tile)."""
    return f"""
@T.prim_func
def mm(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    for i0 in range({64 // rows}):
        for j in range(64):
            acc = T.alloc_local(({rows},))
            for ii in T.unroll({rows}):
                acc[ii] = T.float32(0.0)
            for k in range(64):
                for ii in T.unroll({rows}):
                    acc[ii] = acc[ii] + A[i0 * {rows} + ii, k] * B[k, j]
            for ii in T.unroll({rows}):
                C[i0 * {rows} + ii, j] = acc[ii]
"""


def test_float_multiply_add_may_contract_to_fma_on_a_named_cpu():
    """With -mcpu (or -mattr) a * b + c carries the `contract` flag, as TVM lowers it to
    llvm.fmuladd, so a CPU with FMA gets one vfmadd where tirc used to emit a multiply
    and an add (found by matmul_tiled with --mcpu native: TVM had FMAs, tirc none)."""
    text, _ = lower_to_llvm(*lowered(tiled_matmul(4), "llvm -mcpu=haswell"))
    assert re.search(r"fmul contract float", text)
    assert re.search(r"fadd contract float", text)
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    for target in ("llvm -mcpu=haswell", "llvm -mattr=+avx2,+fma"):
        mod, t = lowered(tiled_matmul(4), target)
        asm = target_machine(t).emit_assembly(llvm.parse_assembly(generate(mod, t).llvm_ir))
        assert "vfmadd" in asm and "vmulss" not in asm, target


def test_latency_bound_accumulator_chain_does_not_contract():
    """A serial loop with fewer than THROUGHPUT_CHAINS accumulators (``acc = acc + a * b``
    on one location) waits on each add: its adds stay uncontracted, so the chain runs
    at an add's latency, the multiply off the chain (bench matmul_serial with --mcpu
    native: 0.83x..0.99x TVM with FMAs). With 4 accumulators (a register tile) every
    add contracts; an update of a location that moves with the loop is no chain."""
    from tirc.backends.llvm.accumulator_chains import THROUGHPUT_CHAINS
    assert THROUGHPUT_CHAINS == 4
    text, _ = lower_to_llvm(*lowered(MATMUL, "llvm -mcpu=haswell"))
    assert re.search(r"fmul contract float", text)  # still contracts elsewhere
    assert re.search(r"= fadd float", text) and not re.search(r"fadd contract float", text)
    text, _ = lower_to_llvm(*lowered(tiled_matmul(2), "llvm -mcpu=haswell"))
    assert re.search(r"= fadd float", text) and not re.search(r"fadd contract float", text)
    moving = """
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    for k in range(64):
        C[k] = C[k] + A[k] * B[k]
"""
    text, _ = lower_to_llvm(*lowered(moving, "llvm -mcpu=haswell"))
    assert re.search(r"fadd contract float", text)
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    mod, t = lowered(MATMUL, "llvm -mcpu=haswell")
    asm = target_machine(t).emit_assembly(llvm.parse_assembly(generate(mod, t).llvm_ir))
    assert "vfmadd" not in asm and "vmulss" in asm and "vaddss" in asm


def test_generic_cpu_keeps_separate_multiply_and_add():
    """Plain `llvm` (the generic CPU, no FMA on x86-64): no contract flags at all, so
    results stay bit-exact with separately rounded operations."""
    text, _ = lower_to_llvm(*lowered(MATMUL))
    assert "contract" not in text
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    mod, t = lowered(MATMUL)
    asm = target_machine(t).emit_assembly(llvm.parse_assembly(generate(mod, t).llvm_ir))
    assert "fmadd" not in asm and "mulss" in asm


COPY_ROWS = """
@T.prim_func
def f(A: T.Buffer((64, 32), "float32"), B: T.Buffer((64, 2, 32), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i, r, j in T.grid(64, 2, 32):
        B[i, r, j] = A[i, j]
"""


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 tuning")
def test_generic_x86_cpu_is_tuned_as_tvm_tunes_it():
    """Plain `llvm` on x86-64 builds for LLVM's "generic" CPU as TVM does ("target-cpu"=
    "generic"): without a CPU name LLVM tunes for the i586, on which unaligned 16-byte
    moves are slow, so each 128-byte row copy (a memcpy after loop idiom recognition)
    became `rep movsl`, 4x slower than TVM's 16-byte `movups` on the model corpus's
    repeat/transpose kernels (bench/model_kernels.py)."""
    mod, t = lowered(COPY_ROWS)
    asm = target_machine(t).emit_assembly(llvm.parse_assembly(generate(mod, t).llvm_ir))
    body = asm[asm.index("__tvm_ffi_f"):]
    assert "rep" not in re.findall(r"^\s+(\w+)", body, re.M)
    # the rows move 16 bytes at a time, not float by float
    assert not re.search(r"\bmovsl\b", body) and not re.search(r"\bmovss\b", body)
    assert "movups" in body
