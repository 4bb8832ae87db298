#!/usr/bin/env python
"""Regenerate the scheduled benchmark workloads in bench/scheduled/ (issue 19 item 5,
issue 17): block-level TIR printed by TVM 0.27, which tirc and TVM then build from the
same text (bench/cpu_kernels.py, bench/gpu_kernels.py, tests/corpora/test_bench_dlight_cuda.py).

Made with TVM ``apache-tvm==0.27.0.post1`` (plus numpy); the benchmarks themselves do not
need TVM to build the texts with tirc. Run with that venv's python:

    /tmp/tvmenv/bin/python bench/scheduled/gen_scheduled.py           # (re)write the files
    /tmp/tvmenv/bin/python bench/scheduled/gen_scheduled.py --check   # compare, write nothing

Writes, into bench/scheduled/:

  cpu/NAME.tir   ``mod.script()`` of a hand schedule (``tvm.s_tir.Schedule``) of a te / topi
                 operator (``te.create_prim_func``), one public function named NAME;
                 asserted to re-parse with ``tvm.script.from_source`` and to build with
                 ``tvm.compile`` for ``{"kind": "llvm"}``.
  cuda/NAME.tir  ``mod.script()`` of ``tvm.s_tir.dlight.ApplyDefaultSchedule(gpu.Matmul(),
                 gpu.GEMV(), gpu.Reduction(), gpu.GeneralReduction(), gpu.Fallback())`` under
                 ``Target({"kind": "cuda", "arch": "sm_90"})``; asserted to re-parse and to
                 lower through TVM's pipeline (``tvm.tirx.build`` stops at codegen: this
                 wheel has no CUDA codegen enabled, so only the TIR pipeline is checked).
  index.json     per module: name, function, target, the schedule in words, the parameters
                 (name, shape, dtype) and which of them are outputs, the TVM version.

The hand schedules are written for a 16-register x86-64 CPU with AVX-512 (register tiles
of 8 rows x 32 float32 = 16 zmm accumulators); they run on any CPU.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import tvm
from tvm import s_tir, te, topi
from tvm.s_tir import dlight as dl
from tvm.script import from_source

OUT_DIR = Path(__file__).resolve().parent
LLVM = {"kind": "llvm"}
CUDA = {"kind": "cuda", "arch": "sm_90"}
GPU_RULES = ("dl.ApplyDefaultSchedule(gpu.Matmul(), gpu.GEMV(), gpu.Reduction(), "
             "gpu.GeneralReduction(), gpu.Fallback()) under Target cuda sm_90")


@dataclass
class Case:
    name: str  # the file and the function
    target: str  # "llvm" | "cuda"
    what: str
    make: Callable[[], tvm.IRModule]


CASES: list[Case] = []


def case(name, target, what):
    def deco(fn):
        CASES.append(Case(name, target, what, fn))
        return fn
    return deco


def te_mod(name: str, *tensors) -> tvm.IRModule:
    func = te.create_prim_func(list(tensors)).with_attr("global_symbol", name)
    return tvm.IRModule({name: func})


def schedule(name: str, *tensors) -> s_tir.Schedule:
    sch = s_tir.Schedule(te_mod(name, *tensors))
    sch.work_on(name)
    return sch


def matmul_te(m, n, k, dtype="float32"):
    A = te.placeholder((m, k), name="A", dtype=dtype)
    B = te.placeholder((k, n), name="B", dtype=dtype)
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


# ======================================================================================
# CPU: hand schedules (llvm)
# ======================================================================================

MM = 512  # matmul M = N = K
TI, TJ = 8, 32  # register tile: TI rows (unrolled) x TJ float32 columns (vectorized)


@case("sch_matmul", "llvm",
      f"te matmul {MM}^3 f32: C tile {TI}x{TJ} accumulated in a cache_write(C, 0, 'local') "
      f"buffer: split i [None,{TI}], j [None,{TJ}], reorder (i0, j0, k, i1, j1), fuse(i0, j0) "
      "+ parallel, reverse_compute_at(write-back, fused), unroll i1, vectorize j1, "
      "decompose_reduction at k, vectorize the write-back's inner loop")
def _():
    sch = schedule("sch_matmul", *matmul_te(MM, MM, MM))
    blk = sch.get_sblock("C")
    cw = sch.cache_write(blk, 0, "local")
    i, j, k = sch.get_loops(blk)
    i0, i1 = sch.split(i, [None, TI])
    j0, j1 = sch.split(j, [None, TJ])
    sch.reorder(i0, j0, k, i1, j1)
    fused = sch.fuse(i0, j0)
    sch.parallel(fused)
    sch.reverse_compute_at(cw, fused)
    sch.unroll(i1)
    sch.vectorize(j1)
    sch.decompose_reduction(blk, k)
    sch.vectorize(sch.get_loops(cw)[-1])
    return sch.mod


@case("sch_matmul_acc", "llvm",
      f"te matmul {MM}^3 f32 accumulating in C itself (no cache stage): split i [None,{TI}], "
      f"j [None,{TJ}], reorder (i0, j0, k, i1, j1), fuse(i0, j0) + parallel, unroll i1, "
      "vectorize j1, decompose_reduction at k")
def _():
    sch = schedule("sch_matmul_acc", *matmul_te(MM, MM, MM))
    blk = sch.get_sblock("C")
    i, j, k = sch.get_loops(blk)
    i0, i1 = sch.split(i, [None, TI])
    j0, j1 = sch.split(j, [None, TJ])
    sch.reorder(i0, j0, k, i1, j1)
    sch.parallel(sch.fuse(i0, j0))
    sch.unroll(i1)
    sch.vectorize(j1)
    sch.decompose_reduction(blk, k)
    return sch.mod


CONV = dict(n=1, h=56, w=56, ci=64, co=64, kh=3, kw=3)  # ResNet-50 stage 2, stride 1, pad 1
CW, CF = 8, 32  # conv register tile: 8 output columns (unrolled) x 32 output channels


@case("sch_conv2d", "llvm",
      "topi.nn.conv2d_nhwc X[1,56,56,64] W[3,3,64,64] (HWIO) stride 1 pad 1 f32: pad_temp at "
      "root, fuse(n, h) + parallel, vectorize channels by 16; conv: split w [None,8], "
      "co [None,32], reorder (n, h, w0, co0, ry, rx, rc, w1, co1), fuse(n, h) + parallel, "
      "unroll w1, vectorize co1, decompose_reduction at ry (accumulates in the output)")
def _():
    c = CONV
    X = te.placeholder((c["n"], c["h"], c["w"], c["ci"]), name="X")
    W = te.placeholder((c["kh"], c["kw"], c["ci"], c["co"]), name="W")
    sch = schedule("sch_conv2d", X, W, topi.nn.conv2d_nhwc(X, W, 1, 1, 1))
    pad = sch.get_sblock("pad_temp")
    n, h, w, ch = sch.get_loops(pad)
    sch.parallel(sch.fuse(n, h))
    sch.vectorize(sch.split(ch, [None, 16])[1])
    conv = sch.get_sblock("conv2d_nhwc")
    n, h, w, co, ry, rx, rc = sch.get_loops(conv)
    w0, w1 = sch.split(w, [None, CW])
    co0, co1 = sch.split(co, [None, CF])
    sch.reorder(n, h, w0, co0, ry, rx, rc, w1, co1)
    sch.parallel(sch.fuse(n, h))
    sch.unroll(w1)
    sch.vectorize(co1)
    sch.decompose_reduction(conv, ry)
    return sch.mod


ROWS, COLS = 512, 2048  # softmax / layernorm input


@case("sch_softmax", "llvm",
      f"topi.nn.softmax X[{ROWS},{COLS}] f32: compute_at of maxelem, exp, expsum under the row "
      "loop of norm, parallel rows, the elementwise exp and norm loops split [None,16] + "
      "vectorize, the max and sum reductions serial")
def _():
    X = te.placeholder((ROWS, COLS), name="X")
    sch = schedule("sch_softmax", X, topi.nn.softmax(X))
    norm = sch.get_sblock("T_softmax_norm")
    i, j = sch.get_loops(norm)
    for b in ("T_softmax_expsum", "T_softmax_exp", "T_softmax_maxelem"):
        sch.compute_at(sch.get_sblock(b), i)
    sch.parallel(i)
    sch.vectorize(sch.split(j, [None, 16])[1])
    exp = sch.get_sblock("T_softmax_exp")
    sch.vectorize(sch.split(sch.get_loops(exp)[-1], [None, 16])[1])
    return sch.mod


@case("sch_layernorm", "llvm",
      f"topi.nn.layer_norm X[{ROWS},{COLS}] gamma beta (axis 1) f32: compute_at of the sum, mean "
      "and var_sum blocks under the row loop of the output, parallel rows, the output loop "
      "split [None,16] + vectorize, the reductions serial")
def _():
    X = te.placeholder((ROWS, COLS), name="X")
    g = te.placeholder((COLS,), name="gamma")
    b = te.placeholder((COLS,), name="beta")
    sch = schedule("sch_layernorm", X, g, b, topi.nn.layer_norm(X, g, b, axis=[1]))
    out = sch.get_sblock("T_layer_norm")
    i, j = sch.get_loops(out)
    for blk in ("X_var_sum", "X_mean", "X_sum"):
        sch.compute_at(sch.get_sblock(blk), i)
    sch.parallel(i)
    sch.vectorize(sch.split(j, [None, 16])[1])
    return sch.mod


# ======================================================================================
# CUDA: dlight default GPU rules (sm_90)
# ======================================================================================

def dlight_gpu(mod: tvm.IRModule) -> tvm.IRModule:
    with tvm.target.Target(CUDA):
        return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                       dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)


GPU_MM = 2048
GPU_ROWS, GPU_COLS = 4096, 4096
GEMV_N, GEMV_K = 4096, 4096


@case("dl_matmul", "cuda", f"te matmul {GPU_MM}^3 f32; {GPU_RULES} (Matmul rule)")
def _():
    return dlight_gpu(te_mod("dl_matmul", *matmul_te(GPU_MM, GPU_MM, GPU_MM)))


@case("dl_softmax", "cuda", f"topi.nn.softmax X[{GPU_ROWS},{GPU_COLS}] f32; {GPU_RULES} "
      "(GeneralReduction rule)")
def _():
    X = te.placeholder((GPU_ROWS, GPU_COLS), name="X")
    return dlight_gpu(te_mod("dl_softmax", X, topi.nn.softmax(X)))


@case("dl_layernorm", "cuda", f"topi.nn.layer_norm X[{GPU_ROWS},{GPU_COLS}] gamma beta (axis 1) "
      f"f32; {GPU_RULES} (GeneralReduction rule)")
def _():
    X = te.placeholder((GPU_ROWS, GPU_COLS), name="X")
    g = te.placeholder((GPU_COLS,), name="gamma")
    b = te.placeholder((GPU_COLS,), name="beta")
    return dlight_gpu(te_mod("dl_layernorm", X, g, b, topi.nn.layer_norm(X, g, b, axis=[1])))


@case("dl_gemv", "cuda", f"GEMV y[1,{GEMV_N}] = x[1,{GEMV_K}] . W[{GEMV_N},{GEMV_K}]^T f32; "
      f"{GPU_RULES} (GEMV rule)")
def _():
    x = te.placeholder((1, GEMV_K), name="x")
    W = te.placeholder((GEMV_N, GEMV_K), name="W")
    r = te.reduce_axis((0, GEMV_K), name="k")
    y = te.compute((1, GEMV_N), lambda i, j: te.sum(x[i, r] * W[j, r], axis=r), name="y")
    return dlight_gpu(te_mod("dl_gemv", x, W, y))


# ======================================================================================

def params_of(func) -> list[dict]:
    out = []
    for buf in func.params:  # TVM 0.27: a buffer parameter is the buffer itself
        out.append({"name": buf.name, "shape": [int(s) for s in buf.shape],
                    "dtype": str(buf.dtype)})
    return out


def check_builds(mod: tvm.IRModule, c: Case) -> None:
    if c.target == "llvm":
        tvm.compile(mod, target=tvm.target.Target(LLVM))
        return
    # No CUDA codegen in this wheel: run TVM's TIR pipeline for the CUDA target, which
    # rejects what TVM could not lower (an unbound loop, a bad thread extent).
    target = tvm.target.Target(CUDA).with_host(tvm.target.Target(LLVM))
    mod = tvm.tirx.transform.BindTarget(target)(mod)
    pipeline = tvm.tirx.get_tir_pipeline("s_tir")[0]
    with tvm.transform.PassContext():
        pipeline(mod)


def render() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    index = []
    for c in CASES:
        mod = c.make()
        text = mod.script()
        again = from_source(text)
        tvm.ir.assert_structural_equal(again, mod, map_free_vars=True)
        check_builds(again, c)
        func = mod[c.name]
        # The output buffers: what the last te stage writes (te.create_prim_func puts the
        # outputs last; every workload here has one).
        params = params_of(func)
        sub = "cpu" if c.target == "llvm" else "cuda"
        files[f"{sub}/{c.name}.tir"] = text.encode()
        index.append({"name": c.name, "file": f"{sub}/{c.name}.tir", "func": c.name,
                      "target": LLVM if c.target == "llvm" else CUDA, "what": c.what,
                      "params": params, "outputs": [len(params) - 1]})
    head = {"generator": "bench/scheduled/gen_scheduled.py",
            "tvm": f"apache-tvm {tvm.__version__}", "modules": index}
    files["index.json"] = (json.dumps(head, indent=1) + "\n").encode()
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and compare with --out byte for byte")
    args = ap.parse_args(argv)
    files = render()
    if args.check:
        ok = True
        for rel, data in files.items():
            p = args.out / rel
            if not p.is_file() or p.read_bytes() != data:
                print(f"differs or missing: {rel}")
                ok = False
        for sub in ("cpu", "cuda"):
            for p in sorted((args.out / sub).glob("*.tir")):
                if f"{sub}/{p.name}" not in files:
                    print(f"stale: {sub}/{p.name}")
                    ok = False
        print("check: all files identical" if ok else "check: FAILED")
        return 0 if ok else 1
    tmp = Path(tempfile.mkdtemp(prefix="scheduled_"))
    try:
        for rel, data in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
        for sub in ("cpu", "cuda"):
            d = args.out / sub
            if d.exists():
                for p in d.glob("*.tir"):
                    p.unlink()
        for rel in files:
            (args.out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tmp / rel, args.out / rel)
    finally:
        shutil.rmtree(tmp)
    print(f"wrote {len(files)} files to {args.out} with TVM {tvm.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
