"""Software-pipelined GEMMs for CUDA end to end (tests/corpus/pipelined_gemm, scheduled
by TVM 0.27: tests/corpus/gen_pipelined_gemm.py): with ``tirx.use_async_copy`` the
pipeline's copies to shared memory become ``cp.async`` and its commit and wait scopes
``cp.async.commit_group``/``cp.async.wait_group N`` in the PTX for sm_80; the SIMT
interpreter (which runs each cp.async as a synchronous copy) gives NumPy's product (in
dynamic shared memory too, where the copies write through the merged buffer's views:
``T.address_of(A_shared[0])`` plus an offset in elements, not bytes); an
older arch is a located error at the copy or the pipelined loop. TVM's own asynchronous
pipelines (its InjectSoftwarePipeline tests) build and compute what their plain loops
compute; a second async queue is an error for CUDA, as in TVM's code generator."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import TESTS, ptxas_check
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.testing import simt

CORPUS = TESTS / "corpus" / "pipelined_gemm"
CASES = sorted(p.stem for p in CORPUS.glob("*.tir"))
ASYNC = ("tirx.use_async_copy=1",)


def _ptx(name: str, tmp_path, target="cuda -arch=sm_80", config=ASYNC) -> str:
    result = build((CORPUS / f"{name}.tir").read_text(), target, None, tmp_path / "out",
                   name, filename=f"{name}.tir", device_only=True, pass_config=config)
    (image,) = result.images.values()
    return open(image).read()


def filecheck(text: str, checks: str, tmp_path) -> None:
    check_file = tmp_path / "checks.txt"
    check_file.write_text(textwrap.dedent(checks))
    proc = subprocess.run([sys.executable, "-m", "filecheck", str(check_file)], input=text,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n--- PTX ---\n" + text


def test_corpus_is_there():
    assert CASES == ["gemm_2stage_dynamic_shared", "gemm_2stage_scalar", "gemm_2stage_vec4",
                     "gemm_3stage_scalar"]


@pytest.mark.parametrize("name", CASES)
def test_pipelined_gemm_builds_to_cp_async(name, tmp_path):
    ptx = _ptx(name, tmp_path)
    stages = 3 if "3stage" in name else 2
    # a vectorized copy of 4 floats is one 16-byte cp.async (.cg: it bypasses L1)
    copy = "cg" if "vec4" in name else "ca"
    size = 16 if "vec4" in name else 4
    # prologue: the first stages' copies, each group committed; steady state: copy the
    # next tile, commit, wait until stages - 1 groups remain; epilogue: drain the rest
    filecheck(ptx, f"""
        CHECK: .target sm_80
        CHECK: cp.async.{copy}.shared.global [%r{{{{[0-9]+}}}}], [%rd{{{{[0-9]+}}}}], {size};
        CHECK: cp.async.commit_group;
        CHECK: cp.async.commit_group;
        CHECK: cp.async.wait_group {stages - 1};
        CHECK: bar.sync 0;
        CHECK: cp.async.wait_group 0;
        CHECK: bar.sync 0;
        """, tmp_path)
    # the steady state's waits leave stages - 1 groups in flight, the epilogue's drain
    # them one by one (LLVM may unroll a short main loop: its wait is then repeated)
    waits = [int(w) for w in re.findall(r"cp\.async\.wait_group (\d+);", ptx)]
    assert waits[-stages:] == list(range(stages - 1, -1, -1))
    assert set(waits[:-stages]) <= {stages - 1}
    ptxas_check(ptx, "sm_80", tmp_path)


@pytest.mark.parametrize("name", CASES)
def test_pipelined_gemm_matches_numpy_on_the_simt_interpreter(name):
    src = (CORPUS / f"{name}.tir").read_text()
    m, k = map(int, re.search(r"A: T.Buffer\(\((\d+), (\d+)\)", src).groups())
    n = int(re.search(r"B: T.Buffer\(\(\d+, (\d+)\)", src).group(1))
    rng = np.random.default_rng(0)
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    simt.run(src, "main", [a, b, c], pass_config={"tirx.use_async_copy": True})
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_without_async_copy_the_copies_stay_plain_stores(tmp_path):
    ptx = _ptx("gemm_2stage_scalar", tmp_path, config=())
    assert "cp.async.ca" not in ptx and "cp.async.cg" not in ptx
    # TVM's CUDA code generator still commits and waits (on empty groups)
    assert "cp.async.commit_group;" in ptx and "cp.async.wait_group 1;" in ptx


@pytest.mark.parametrize("config, where", [(ASYNC, "A_shared[v0, v1] = A[v0, v1]"),
                                           ((), "software_pipeline_stage")])
def test_below_sm_80_is_an_error_at_the_copy_or_the_pipelined_loop(config, where, tmp_path):
    # with cp.async, at the first copy; without, at the loop whose queues need it
    with pytest.raises(Diagnostic, match="needs sm_80 or newer, and the target's arch is sm_75") as err:
        _ptx("gemm_2stage_scalar", tmp_path, "cuda -arch=sm_75", config)
    text = (CORPUS / "gemm_2stage_scalar.tir").read_text().splitlines()
    assert where in text[err.value.span.line - 1]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


VECTOR_COPY = '''# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        for k in T.serial(8, annotations={"software_pipeline_stage": [0, 1], "software_pipeline_order": [0, 1], "software_pipeline_async_stages": [0]}):
            with T.sblock("tile"):
                S = T.sblock_alloc_buffer((128,), scope="shared")
                for v in T.vectorized(4):
                    with T.sblock("copy"):
                        S[tx * 4 + v] = A[k * 128 + tx * 4 + v]
                for v in range(4):
                    with T.sblock("use"):
                        C[k * 128 + tx * 4 + v] = S[tx * 4 + v] * T.float32(2.0)
'''


def test_a_16_byte_vector_copy_is_one_cp_async_cg(tmp_path):
    """(The GEMMs' vectorized tile copies stay scalar: tirc's VectorizeLoop keeps a loop
    whose index divides the lane, ``(tx * 4 + v) // 64``, as a loop.)"""
    result = build(VECTOR_COPY, "cuda -arch=sm_80", None, tmp_path, "v", device_only=True,
                   pass_config=ASYNC)
    ptx = open(next(iter(result.images.values()))).read()
    filecheck(ptx, """
        CHECK: cp.async.cg.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16;
        CHECK: cp.async.commit_group;
        CHECK: cp.async.cg.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16;
        CHECK: cp.async.commit_group;
        CHECK: cp.async.wait_group 1;
        CHECK: cp.async.wait_group 0;
        """, tmp_path)
    a = np.random.default_rng(1).random(1024, dtype=np.float32)
    c = np.zeros(1024, np.float32)
    simt.run(VECTOR_COPY, "main", [a, c], pass_config={"tirx.use_async_copy": True})
    np.testing.assert_array_equal(c, a * 2)


PAIRS = TESTS / "corpus" / "sblock_passes" / "InjectSoftwarePipeline"


@pytest.mark.parametrize("case, copies", [("simple_compute_async_1", 0),
                                          ("simple_compute_async_2", 0),
                                          ("async_producer_interleaving", 8)])
def test_tvms_async_pipelines_build_and_compute_what_the_plain_loops_compute(case, copies, tmp_path):
    """TVM's own asynchronous pipelines (the inputs of its InjectSoftwarePipeline tests):
    for sm_80 with cp.async where a stage copies (the simple cases compute in their
    async stage, which stays a store), and on the SIMT interpreter the outputs of the
    same module with its loop annotations removed."""
    src = (PAIRS / f"{case}.before.tir").read_text()
    result = build(src, "cuda -arch=sm_80", None, tmp_path, case, device_only=True,
                   pass_config=ASYNC)
    ptx = open(next(iter(result.images.values()))).read()
    assert ptx.count("cp.async.ca.shared.global") == copies
    assert "cp.async.commit_group;" in ptx and "cp.async.wait_group" in ptx
    plain = re.sub(r", annotations=\{[^}]*\}", "", src)
    params = re.findall(r'(\w+): T.Buffer\(\(([\d, ]+)\), "float32"\)', src)
    outputs = []
    for text in (src, plain):
        rng = np.random.default_rng(0)
        args = [rng.random(tuple(int(x) for x in shape.split(",")), dtype=np.float32)
                for _, shape in params]
        simt.run(text, "main", args, pass_config={"tirx.use_async_copy": True})
        outputs.append(args)
    for piped, loop in zip(*outputs):
        np.testing.assert_array_equal(piped, loop)


def test_a_second_async_queue_is_an_error_for_cuda(tmp_path):
    src = (PAIRS / "three_stage_compute_two_stage_async.before.tir").read_text()
    with pytest.raises(Diagnostic, match="names async queue 1: CUDA has one queue, 0") as err:
        build(src, "cuda -arch=sm_80", None, tmp_path, "t", device_only=True, pass_config=ASYNC)
    assert "software_pipeline_stage" in src.splitlines()[err.value.span.line - 1]
