#!/usr/bin/env python
"""Regenerate the block-level (schedulable, ``T.sblock``) TIR corpus in tests/corpus/sblock/.

Made with TVM ``apache-tvm==0.27.0.post1`` (plus numpy).  Run with that venv's python:

    /tmp/tvmenv/bin/python tests/corpus/gen_sblock_corpus.py           # (re)write the files
    /tmp/tvmenv/bin/python tests/corpus/gen_sblock_corpus.py --check   # regenerate into a temp
                                                                      # dir, compare byte-for-byte

For every case below this writes, into tests/corpus/sblock/:

  NAME.tir           exactly ``mod.script()`` of the block-level IRModule (no added newline);
                     asserted to re-parse with ``tvm.script.from_source`` and to be a byte-exact
                     fixed point of TVM's parse/print; a cuda module, to compile with
                     ``tvm.compile`` for cuda (as far as the CUDA source: TVM's CUDA code
                     generator refuses, e.g., a global-scope buffer left inside a kernel).
  NAME.lowered.tir   ``.script()`` of TVM's own lowering of that module for its target: BindTarget,
                     then the S-TIR pipeline (tvm/s_tir/pipeline.py) up to but not including
                     ``tirx.SplitHostDevice``.  Asserted to re-parse, and asserted to equal the
                     module that TVM's real pipeline holds just before SplitHostDevice (captured with
                     a pass instrument).
  expected/NAME.npz  ``arg<i>`` = initial value of buffer parameter i, ``out<i>`` = its value
                     after running TVM's compiled function, ``scalar<i>`` for scalar parameters
                     (none at present).  Written with a fixed zip timestamp so the bytes are
                     reproducible.  llvm cases run the module itself; cuda cases (TVM has no
                     CUDA runtime here) run the unscheduled module the case was made from (the
                     one ``te_mod`` built inside its ``make``), compiled for llvm: the same
                     computation, so the expected values of the scheduled kernel, which
                     tests/testing/test_simt.py checks on tirc's SIMT interpreter.
  index.json         one entry per case.
  README.md          provenance, formats, module table, what TVM could not produce (generated).

Three sources: ``topi`` (te / topi operators through ``te.create_prim_func``, unscheduled),
``schedule`` (hand schedules with ``tvm.s_tir.Schedule``), ``dlight`` (``tvm.s_tir.dlight``
default rules).

This module is not a test module: it defines no ``test_*`` functions and pytest should not
import it (it needs TVM, which the tirc test environment lacks).
"""

from __future__ import annotations

import argparse
import filecmp
import io
import json
import shutil
import sys
import tempfile
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import tvm
from tvm import s_tir, te, tirx, topi
from tvm.s_tir import dlight as dl
from tvm.script import from_source

OUT_DIR = Path(__file__).resolve().parent / "sblock"

# Explicit triple so that printed targets are not machine specific.
LLVM = {"kind": "llvm", "mtriple": "x86_64-unknown-linux-gnu"}
CUDA = {"kind": "cuda", "arch": "sm_80"}
# index.json "target" labels (TVM 0.27 no longer parses CLI strings like "cuda -arch=sm_80";
# the dict actually used is recorded as "target_json").
TARGET_LABEL = {"llvm": "llvm", "cuda": "cuda -arch=sm_80"}
TARGET_JSON = {"llvm": LLVM, "cuda": CUDA}


@dataclass
class Case:
    name: str
    source: str  # "topi" | "schedule" | "dlight"
    what: str
    make: Callable[[], tvm.IRModule]
    target: str = "llvm"  # "llvm" | "cuda"
    n_out: int = 1  # the last n_out parameters are the outputs
    dims: dict = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5
    # per-parameter input generators: name -> fn(rng, shape, dtype) -> ndarray
    gen: dict = field(default_factory=dict)
    # optional NumPy reference: fn(list of input arrays) -> list of expected outputs
    ref: Callable | None = None
    ref_tol: tuple = (1e-4, 1e-4)


CASES: list[Case] = []


def case(name, source, what, **kw):
    def deco(fn):
        CASES.append(Case(name, source, what, fn, **kw))
        return fn
    return deco


# Every module te_mod builds, in order: a case's first one is its unscheduled computation
# (what a cuda case's expected outputs are computed from, on llvm).
MADE: list[tvm.IRModule] = []


def te_mod(*tensors) -> tvm.IRModule:
    # a separate copy for MADE: dlight schedules the module it is given in place
    MADE.append(tvm.IRModule({"main": te.create_prim_func(list(tensors))}))
    return tvm.IRModule({"main": te.create_prim_func(list(tensors))})


def small_ints(lo, hi):
    def g(rng, shape, dtype):
        return rng.integers(lo, hi, size=shape).astype(dtype)
    return g


def softmax_np(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------------------------------
# Building blocks shared by several cases
# ---------------------------------------------------------------------------------------

def matmul_te(m, n, k, dtype="float32", out_dtype=None, name="C"):
    out_dtype = out_dtype or dtype
    A = te.placeholder((m, k), name="A", dtype=dtype)
    B = te.placeholder((k, n), name="B", dtype=dtype)
    r = te.reduce_axis((0, k), name="k")
    if out_dtype == dtype:
        C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name=name)
    else:
        C = te.compute((m, n), lambda i, j: te.sum(A[i, r].astype(out_dtype) * B[r, j].astype(out_dtype), axis=r), name=name)
    return A, B, C


def row_sum_te(m, n, name="B"):
    A = te.placeholder((m, n), name="A")
    r = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, r], axis=r), name=name)
    return A, B


def mm_ref(ins):
    return [ins[0].astype(np.float64) @ ins[1].astype(np.float64)]


# =======================================================================================
# a. topi / te.compute, unscheduled (llvm)
# =======================================================================================

@case("topi_matmul", "topi", "te.compute matmul C[i,j] = sum_k A[i,k]*B[k,j], 64x80x96 f32", ref=mm_ref)
def _():
    return te_mod(*matmul_te(64, 80, 96))


@case("topi_dense_bias", "topi", "topi.nn.dense(X[32,64], W[48,64], bias[48]) f32",
      ref=lambda i: [i[0] @ i[1].T + i[2]])
def _():
    X = te.placeholder((32, 64), name="X"); W = te.placeholder((48, 64), name="W"); b = te.placeholder((48,), name="bias")
    return te_mod(X, W, b, topi.nn.dense(X, W, b))


@case("topi_batch_matmul", "topi", "topi.nn.batch_matmul(A[4,32,48], B[4,40,48]) (transpose_b) f32",
      ref=lambda i: [np.einsum("bik,bjk->bij", i[0], i[1])])
def _():
    A = te.placeholder((4, 32, 48), name="A"); B = te.placeholder((4, 40, 48), name="B")
    return te_mod(A, B, topi.nn.batch_matmul(A, B))


@case("topi_conv2d_nchw", "topi", "topi.nn.conv2d_nchw(X[1,3,16,16], W[8,3,3,3], stride 1, pad 1) f32")
def _():
    X = te.placeholder((1, 3, 16, 16), name="X"); W = te.placeholder((8, 3, 3, 3), name="W")
    return te_mod(X, W, topi.nn.conv2d_nchw(X, W, 1, 1, 1))


@case("topi_depthwise_conv2d_nchw", "topi",
      "topi.nn.depthwise_conv2d_nchw(X[1,8,14,14], W[8,1,3,3], stride 2, pad 1) f32")
def _():
    X = te.placeholder((1, 8, 14, 14), name="X"); W = te.placeholder((8, 1, 3, 3), name="W")
    return te_mod(X, W, topi.nn.depthwise_conv2d_nchw(X, W, 2, 1, 1))


@case("topi_max_pool2d", "topi", "topi.nn.pool2d max, X[1,4,12,12], kernel 2x2 stride 2, NCHW",
      ref=lambda i: [i[0].reshape(1, 4, 6, 2, 6, 2).max(axis=(3, 5))])
def _():
    X = te.placeholder((1, 4, 12, 12), name="X")
    return te_mod(X, topi.nn.pool2d(X, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "max"))


@case("topi_avg_pool2d", "topi",
      "topi.nn.pool2d avg, X[1,4,12,12], kernel 3x3 stride 1 pad 1, count_include_pad=False")
def _():
    X = te.placeholder((1, 4, 12, 12), name="X")
    return te_mod(X, topi.nn.pool2d(X, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), "avg", count_include_pad=False))


@case("topi_softmax", "topi", "topi.nn.softmax(X[32,64], axis=-1) f32", rtol=1e-4,
      ref=lambda i: [softmax_np(i[0])])
def _():
    X = te.placeholder((32, 64), name="X")
    return te_mod(X, topi.nn.softmax(X))


@case("topi_log_softmax", "topi", "topi.nn.log_softmax(X[16,48]) f32", rtol=1e-4,
      ref=lambda i: [np.log(softmax_np(i[0]))])
def _():
    X = te.placeholder((16, 48), name="X")
    return te_mod(X, topi.nn.log_softmax(X))


@case("topi_layer_norm", "topi", "topi.nn.layer_norm(X[16,64], gamma[64], beta[64], axis=[1]) f32",
      rtol=1e-4, atol=1e-4,
      ref=lambda i: [(i[0] - i[0].mean(1, keepdims=True)) / np.sqrt(i[0].var(1, keepdims=True) + 1e-5) * i[1] + i[2]])
def _():
    X = te.placeholder((16, 64), name="X"); g = te.placeholder((64,), name="gamma"); b = te.placeholder((64,), name="beta")
    return te_mod(X, g, b, topi.nn.layer_norm(X, g, b, axis=[1]))


@case("topi_rms_norm", "topi", "topi.nn.rms_norm(X[16,64], weight[64], axis=[1]) f32", rtol=1e-4, atol=1e-4,
      ref=lambda i: [i[0] / np.sqrt((i[0] ** 2).mean(1, keepdims=True) + 1e-5) * i[1]])
def _():
    X = te.placeholder((16, 64), name="X"); w = te.placeholder((64,), name="weight")
    return te_mod(X, w, topi.nn.rms_norm(X, w, axis=[1]))


@case("topi_sum_axis1", "topi", "topi.sum(X[32,64], axis=1) f32", rtol=1e-4,
      ref=lambda i: [i[0].sum(1)])
def _():
    X = te.placeholder((32, 64), name="X")
    return te_mod(X, topi.sum(X, axis=1))


@case("topi_max_axis0_keepdims", "topi", "topi.max(X[32,64], axis=0, keepdims=True) f32",
      ref=lambda i: [i[0].max(0, keepdims=True)])
def _():
    X = te.placeholder((32, 64), name="X")
    return te_mod(X, topi.max(X, axis=0, keepdims=True))


@case("te_mean_axes12", "topi", "te.compute mean over axes (1,2) of X[4,8,16]: te.sum then divide by 128 (two blocks)",
      rtol=1e-4, ref=lambda i: [i[0].mean(axis=(1, 2))])
def _():
    X = te.placeholder((4, 8, 16), name="X")
    r1 = te.reduce_axis((0, 8), name="r1"); r2 = te.reduce_axis((0, 16), name="r2")
    S = te.compute((4,), lambda i: te.sum(X[i, r1, r2], axis=[r1, r2]), name="S")
    M = te.compute((4,), lambda i: S[i] / te.const(128.0, "float32"), name="M")
    return te_mod(X, M)


@case("topi_argmax", "topi", "topi.argmax(X[16,32], axis=1) -> int32 (two-value comm_reducer, lowered to T.Select lets)",
      ref=lambda i: [i[0].argmax(1).astype("int32")])
def _():
    X = te.placeholder((16, 32), name="X")
    return te_mod(X, topi.argmax(X, axis=1))


@case("topi_argmin", "topi", "topi.argmin(X[16,32], axis=1) -> int32",
      ref=lambda i: [i[0].argmin(1).astype("int32")])
def _():
    X = te.placeholder((16, 32), name="X")
    return te_mod(X, topi.argmin(X, axis=1))


@case("topi_cumsum", "topi", "topi.cumsum(X[8,16], axis=1) (ir_builder scan: one opaque sblock with T.parallel)",
      rtol=1e-4, ref=lambda i: [np.cumsum(i[0], axis=1)])
def _():
    X = te.placeholder((8, 16), name="X")
    return te_mod(X, topi.cumsum(X, axis=1))


@case("topi_add", "topi", "topi.add(A[64,48], B[64,48]) f32", ref=lambda i: [i[0] + i[1]])
def _():
    A = te.placeholder((64, 48), name="A"); B = te.placeholder((64, 48), name="B")
    return te_mod(A, B, topi.add(A, B))


@case("topi_exp", "topi", "topi.exp(A[1024]) f32", rtol=1e-5, atol=1e-6, ref=lambda i: [np.exp(i[0])])
def _():
    A = te.placeholder((1024,), name="A")
    return te_mod(A, topi.exp(A))


@case("topi_relu", "topi", "topi.nn.relu(A[32,32]) f32", ref=lambda i: [np.maximum(i[0], 0)])
def _():
    A = te.placeholder((32, 32), name="A")
    return te_mod(A, topi.nn.relu(A))


@case("topi_sigmoid", "topi", "topi.sigmoid(A[256]) f32", atol=1e-6, ref=lambda i: [1 / (1 + np.exp(-i[0]))])
def _():
    A = te.placeholder((256,), name="A")
    return te_mod(A, topi.sigmoid(A))


@case("topi_cast_f32_to_f16_and_i32", "topi",
      "topi.cast(A[128] f32 -> float16) and te.compute int32 cast of A*10, two outputs", n_out=2)
def _():
    A = te.placeholder((128,), name="A")
    H = topi.cast(A, "float16")
    I = te.compute((128,), lambda i: (A[i] * te.const(10.0, "float32")).astype("int32"), name="I")
    return te_mod(A, H, I)


@case("topi_broadcast_add", "topi", "topi.add(A[32,1,16], B[8,16]) broadcast -> [32,8,16] f32",
      ref=lambda i: [i[0] + i[1]])
def _():
    A = te.placeholder((32, 1, 16), name="A"); B = te.placeholder((8, 16), name="B")
    return te_mod(A, B, topi.add(A, B))


@case("topi_transpose", "topi", "topi.transpose(A[8,16,32], axes=(2,0,1))",
      ref=lambda i: [np.transpose(i[0], (2, 0, 1))])
def _():
    A = te.placeholder((8, 16, 32), name="A")
    return te_mod(A, topi.transpose(A, (2, 0, 1)))


@case("topi_reshape", "topi", "topi.reshape(A[8,16], (4,32))", ref=lambda i: [i[0].reshape(4, 32)])
def _():
    A = te.placeholder((8, 16), name="A")
    return te_mod(A, topi.reshape(A, (4, 32)))


@case("topi_concatenate", "topi", "topi.concatenate((A[4,8], B[4,12], C[4,4]), axis=1)",
      ref=lambda i: [np.concatenate(i[:3], axis=1)])
def _():
    A = te.placeholder((4, 8), name="A"); B = te.placeholder((4, 12), name="B"); C = te.placeholder((4, 4), name="C")
    return te_mod(A, B, C, topi.concatenate((A, B, C), axis=1))


@case("topi_pad", "topi", "topi.nn.pad(A[2,3,8,8], before (0,0,1,2), after (0,0,2,1), value 0.5)",
      ref=lambda i: [np.pad(i[0], ((0, 0), (0, 0), (1, 2), (2, 1)), constant_values=0.5)])
def _():
    A = te.placeholder((2, 3, 8, 8), name="A")
    return te_mod(A, topi.nn.pad(A, (0, 0, 1, 2), (0, 0, 2, 1), pad_value=0.5))


@case("topi_take", "topi", "topi.take(A[16,32], idx[10] int32, axis=0) (gather, mode clip)",
      gen={"idx": small_ints(0, 16)}, ref=lambda i: [i[0][i[1]]])
def _():
    A = te.placeholder((16, 32), name="A"); idx = te.placeholder((10,), name="idx", dtype="int32")
    return te_mod(A, idx, topi.take(A, idx, axis=0, mode="clip"))


@case("te_where_clip", "topi", "topi.where(A > 0, A, B*0.1) then topi.clip(-0.5, 0.5), A,B[64] f32",
      ref=lambda i: [np.clip(np.where(i[0] > 0, i[0], i[1] * np.float32(0.1)), -0.5, 0.5)])
def _():
    A = te.placeholder((64,), name="A"); B = te.placeholder((64,), name="B")
    W = topi.where(topi.greater(A, 0.0), A, topi.multiply(B, 0.1))
    return te_mod(A, B, topi.clip(W, -0.5, 0.5))


@case("te_matmul_int8", "topi", "te.compute matmul int8 x int8 -> int32 accumulate, 32x48x64",
      gen={"A": small_ints(-8, 8), "B": small_ints(-8, 8)}, rtol=0, atol=0,
      ref=lambda i: [i[0].astype(np.int32) @ i[1].astype(np.int32)])
def _():
    return te_mod(*matmul_te(32, 48, 64, dtype="int8", out_dtype="int32"))


@case("te_matmul_f16_f32acc", "topi", "te.compute matmul float16 inputs cast to float32 accumulate, 32x32x64",
      rtol=1e-4, atol=1e-4, ref=lambda i: [i[0].astype(np.float32) @ i[1].astype(np.float32)])
def _():
    return te_mod(*matmul_te(32, 32, 64, dtype="float16", out_dtype="float32"))


@case("topi_add_f16", "topi", "topi.add + topi.multiply on float16 A,B,C[256]: (A+B)*C", rtol=1e-2, atol=1e-2,
      ref=lambda i: [(i[0] + i[1]) * i[2]], ref_tol=(1e-2, 1e-2))
def _():
    A, B, C = (te.placeholder((256,), name=n, dtype="float16") for n in "ABC")
    return te_mod(A, B, C, topi.multiply(topi.add(A, B), C))


@case("topi_add_dyn", "topi", "topi.add(A[n,64], B[n,64]) with symbolic n = te.var('n')", dims={"n": 37},
      ref=lambda i: [i[0] + i[1]])
def _():
    n = te.var("n")
    A = te.placeholder((n, 64), name="A"); B = te.placeholder((n, 64), name="B")
    return te_mod(A, B, topi.add(A, B))


@case("te_matmul_dyn", "topi", "te.compute matmul A[m,64] x B[64,32] with symbolic m", dims={"m": 45},
      rtol=1e-4, ref=mm_ref)
def _():
    m = te.var("m")
    A = te.placeholder((m, 64), name="A"); B = te.placeholder((64, 32), name="B")
    r = te.reduce_axis((0, 64), name="k")
    return te_mod(A, B, te.compute((m, 32), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C"))


@case("topi_sum_dyn", "topi", "topi.sum(X[n,k], axis=1) with symbolic n, k", dims={"n": 13, "k": 29},
      rtol=1e-4, ref=lambda i: [i[0].sum(1)])
def _():
    n, k = te.var("n"), te.var("k")
    X = te.placeholder((n, k), name="X")
    return te_mod(X, topi.sum(X, axis=1))


# =======================================================================================
# b. hand schedules with tvm.s_tir.Schedule
# =======================================================================================

@case("sch_matmul_tile_parallel_vectorize", "schedule",
      "128x128x128 f32 matmul: split i[None,16] j[None,32] k[None,4], reorder, fuse+parallel, split j1[None,8]+vectorize, unroll k1, decompose_reduction at k0",
      rtol=1e-4, ref=mm_ref)
def _():
    sch = s_tir.Schedule(te_mod(*matmul_te(128, 128, 128)))
    C = sch.get_sblock("C")
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 32])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    f = sch.fuse(i0, j0)
    sch.parallel(f)
    _j1a, j1b = sch.split(j1, [None, 8])
    sch.vectorize(j1b)
    sch.unroll(k1)
    sch.decompose_reduction(C, k0)
    return sch.mod


@case("sch_matmul_cache_write", "schedule",
      "96x64x80 f32 matmul: tile i,j by 16, cache_write(C,0,'global'), reverse_compute_at(write-back, j0), parallel i0, vectorize write-back inner loop",
      rtol=1e-4, ref=mm_ref)
def _():
    sch = s_tir.Schedule(te_mod(*matmul_te(96, 64, 80)))
    C = sch.get_sblock("C")
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i0, j0, k, i1, j1)
    CW = sch.cache_write(C, 0, "global")
    sch.reverse_compute_at(CW, j0)
    sch.parallel(i0)
    sch.vectorize(sch.get_loops(CW)[-1])
    return sch.mod


@case("sch_matmul_cache_read_compute_at", "schedule",
      "64x64x64 f32 matmul: split k[None,16], cache_read(C,1,'global') of B, compute_at(B copy, k0), cache_read of A compute_at(k0)",
      rtol=1e-4, ref=mm_ref)
def _():
    sch = s_tir.Schedule(te_mod(*matmul_te(64, 64, 64)))
    C = sch.get_sblock("C")
    i, j, k = sch.get_loops(C)
    k0, k1 = sch.split(k, [None, 16])
    sch.reorder(i, k0, j, k1)
    BR = sch.cache_read(C, 1, "global")
    sch.compute_at(BR, k0)
    AR = sch.cache_read(C, 0, "global")
    sch.compute_at(AR, k0)
    return sch.mod


@case("sch_matmul_bias_relu_fused", "schedule",
      "te dense D = X[64,64] . W[64,64]^T, Bias = D + bias[64], R = max(Bias, 0): reverse_compute_inline(R) into Bias, split D's i [None,8] + parallel i0, reverse_compute_at(Bias, i0) (output buffer prints as R_1: 'R' is reserved)",
      rtol=1e-4, ref=lambda i: [np.maximum(i[0] @ i[1].T + i[2], 0)])
def _():
    X = te.placeholder((64, 64), name="X"); W = te.placeholder((64, 64), name="W"); b = te.placeholder((64,), name="bias")
    r = te.reduce_axis((0, 64), name="k")
    D = te.compute((64, 64), lambda i, j: te.sum(X[i, r] * W[j, r], axis=r), name="D")
    Bi = te.compute((64, 64), lambda i, j: D[i, j] + b[j], name="Bias")
    R = te.compute((64, 64), lambda i, j: te.max(Bi[i, j], te.const(0.0, "float32")), name="R")
    sch = s_tir.Schedule(te_mod(X, W, b, R))
    sch.reverse_compute_inline(sch.get_sblock("R"))
    D = sch.get_sblock("D")
    i, j, k = sch.get_loops(D)
    i0, i1 = sch.split(i, [None, 8])
    sch.reorder(i0, i1, j, k)
    sch.parallel(i0)
    sch.reverse_compute_at(sch.get_sblock("Bias"), i0)
    return sch.mod


@case("sch_elementwise_split_reorder_fuse", "schedule",
      "C = A*B + A over [64,96]: split i[None,8] j[None,16], reorder(i0,j0,i1,j1), fuse(i0,j0)+parallel, fuse(i1,j1) split [None,4] + vectorize",
      ref=lambda i: [i[0] * i[1] + i[0]])
def _():
    A = te.placeholder((64, 96), name="A"); B = te.placeholder((64, 96), name="B")
    C = te.compute((64, 96), lambda i, j: A[i, j] * B[i, j] + A[i, j], name="C")
    sch = s_tir.Schedule(te_mod(A, B, C))
    blk = sch.get_sblock("C")
    i, j = sch.get_loops(blk)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i0, j0, i1, j1)
    sch.parallel(sch.fuse(i0, j0))
    f = sch.fuse(i1, j1)
    _a, v = sch.split(f, [None, 4])
    sch.vectorize(v)
    return sch.mod


@case("sch_split_nondivisible", "schedule",
      "B = exp(A) over A[100,30]: split i by 16 and j by 8 (non-divisible -> T.where predicate), reorder",
      atol=1e-6, ref=lambda i: [np.exp(i[0])])
def _():
    A = te.placeholder((100, 30), name="A")
    sch = s_tir.Schedule(te_mod(A, topi.exp(A)))
    blk = sch.get_output_blocks(sch.get_sblock("root"))[0]
    i, j = sch.get_loops(blk)
    i0, i1 = sch.split(i, [None, 16])
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(i0, j0, i1, j1)
    return sch.mod


@case("sch_auto_unroll_pragma", "schedule",
      "row sum A[64,32]: annotate outer loop pragma_auto_unroll_max_step=16 and pragma_unroll_explicit=1, split k[None,4] + unroll inner",
      rtol=1e-4, ref=lambda i: [i[0].sum(1)])
def _():
    sch = s_tir.Schedule(te_mod(*row_sum_te(64, 32)))
    blk = sch.get_sblock("B")
    i, k = sch.get_loops(blk)
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    sch.annotate(i, "pragma_unroll_explicit", 1)
    _k0, k1 = sch.split(k, [None, 4])
    sch.unroll(k1)
    return sch.mod


@case("sch_compute_inline_chain", "schedule",
      "three elementwise stages T1 = A*2, T2 = exp(T1), C = T2 + B on [32,64]: compute_inline(T1), compute_inline(T2)",
      rtol=1e-5, atol=1e-5, ref=lambda i: [np.exp(i[0] * 2) + i[1]])
def _():
    A = te.placeholder((32, 64), name="A"); B = te.placeholder((32, 64), name="B")
    T1 = te.compute((32, 64), lambda i, j: A[i, j] * te.const(2.0, "float32"), name="T1")
    T2 = te.compute((32, 64), lambda i, j: te.exp(T1[i, j]), name="T2")
    C = te.compute((32, 64), lambda i, j: T2[i, j] + B[i, j], name="C")
    sch = s_tir.Schedule(te_mod(A, B, C))
    sch.compute_inline(sch.get_sblock("T1"))
    sch.compute_inline(sch.get_sblock("T2"))
    return sch.mod


@case("sch_reverse_compute_inline", "schedule",
      "T1 = A + 1 (written to output-shaped temp), C = relu(T1) * 3 on [48,48]: reverse_compute_inline(C)",
      ref=lambda i: [np.maximum(i[0] + 1, 0) * 3])
def _():
    A = te.placeholder((48, 48), name="A")
    T1 = te.compute((48, 48), lambda i, j: A[i, j] + te.const(1.0, "float32"), name="T1")
    C = te.compute((48, 48), lambda i, j: te.max(T1[i, j], te.const(0.0, "float32")) * te.const(3.0, "float32"), name="C")
    sch = s_tir.Schedule(te_mod(A, C))
    sch.reverse_compute_inline(sch.get_sblock("C"))
    return sch.mod


@case("sch_rfactor_sum", "schedule",
      "row sum A[16,512]: split k[None,16], rfactor(k1, factor_axis=0) -> B_rf[16,16] + final block, parallel rf spatial loop",
      rtol=1e-4, ref=lambda i: [i[0].sum(1)])
def _():
    sch = s_tir.Schedule(te_mod(*row_sum_te(16, 512)))
    blk = sch.get_sblock("B")
    i, k = sch.get_loops(blk)
    _k0, k1 = sch.split(k, [None, 16])
    rf = sch.rfactor(k1, 0)
    sch.parallel(sch.get_loops(rf)[0])
    return sch.mod


@case("sch_decompose_reduction", "schedule",
      "row max A[64,100]: split k[None,10], decompose_reduction at k0 (separate B_init block), parallel i",
      ref=lambda i: [i[0].max(1)])
def _():
    A = te.placeholder((64, 100), name="A")
    r = te.reduce_axis((0, 100), name="k")
    B = te.compute((64,), lambda i: te.max(A[i, r], axis=r), name="B")
    sch = s_tir.Schedule(te_mod(A, B))
    blk = sch.get_sblock("B")
    i, k = sch.get_loops(blk)
    k0, _k1 = sch.split(k, [None, 10])
    sch.parallel(i)
    sch.decompose_reduction(blk, k0)
    return sch.mod


@case("sch_softmax_compute_at", "schedule",
      "topi.nn.softmax X[64,128]: compute_at(maxelem/exp/expsum, row loop of norm), parallel row, vectorize norm inner split 8",
      rtol=1e-4, ref=lambda i: [softmax_np(i[0])])
def _():
    X = te.placeholder((64, 128), name="X")
    sch = s_tir.Schedule(te_mod(X, topi.nn.softmax(X)))
    norm = sch.get_sblock("T_softmax_norm")
    i, j = sch.get_loops(norm)
    for b in ("T_softmax_expsum", "T_softmax_exp", "T_softmax_maxelem"):
        sch.compute_at(sch.get_sblock(b), i)
    sch.parallel(i)
    _j0, j1 = sch.split(j, [None, 8])
    sch.vectorize(j1)
    return sch.mod


@case("sch_conv2d_pad_inline", "schedule",
      "topi.nn.conv2d_nchw X[1,4,16,16] W[8,4,3,3] pad 1: compute_inline(pad_temp), fuse(n,c)+parallel, reorder rc/ry/rx above w, vectorize w",
      rtol=1e-4, atol=1e-4)
def _():
    X = te.placeholder((1, 4, 16, 16), name="X"); W = te.placeholder((8, 4, 3, 3), name="W")
    sch = s_tir.Schedule(te_mod(X, W, topi.nn.conv2d_nchw(X, W, 1, 1, 1)))
    sch.compute_inline(sch.get_sblock("pad_temp"))
    conv = sch.get_sblock("conv2d_nchw")
    n, c, h, w, rc, ry, rx = sch.get_loops(conv)
    sch.reorder(n, c, h, rc, ry, rx, w)
    sch.parallel(sch.fuse(n, c))
    sch.decompose_reduction(conv, rc)
    sch.vectorize(sch.get_loops(sch.get_sblock("conv2d_nchw_init"))[-1])
    return sch.mod


@case("sch_layer_norm_compute_at", "schedule",
      "topi.nn.layer_norm X[32,64]: compute_at of the sum/mean/var blocks under the output row loop, parallel rows",
      rtol=1e-4, atol=1e-4)
def _():
    X = te.placeholder((32, 64), name="X"); g = te.placeholder((64,), name="gamma"); b = te.placeholder((64,), name="beta")
    mod = te_mod(X, g, b, topi.nn.layer_norm(X, g, b, axis=[1]))
    sch = s_tir.Schedule(mod)
    out = sch.get_output_blocks(sch.get_sblock("root"))[0]
    i = sch.get_loops(out)[0]
    # producers (sum, mean, var_sum) in reverse topological order so that compute_at succeeds
    blocks = [bl for bl in sch.get_child_blocks(sch.get_sblock("root")) if not sch.get(bl).same_as(sch.get(out))]
    for bl in reversed(blocks):
        sch.compute_at(bl, i)
    sch.parallel(i)
    return sch.mod


@case("sch_blockize_tile", "schedule",
      "B = A * 2 + 1 over [64,64]: split i,j by 8, reorder, blockize(i1) -> outer sblock with T.reads/T.writes regions around an inner sblock",
      ref=lambda i: [i[0] * 2 + 1])
def _():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] * te.const(2.0, "float32") + te.const(1.0, "float32"), name="B")
    sch = s_tir.Schedule(te_mod(A, B))
    blk = sch.get_sblock("B")
    i, j = sch.get_loops(blk)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(i0, j0, i1, j1)
    sch.blockize(i1)
    return sch.mod


@case("sch_transform_layout_cache", "schedule",
      "matmul 64x64x64: cache_read(C,1,'global') -> B_global, transform_layout(B_global, (k,n) -> (n//16, k, n%16)), parallel i",
      rtol=1e-4, ref=mm_ref)
def _():
    sch = s_tir.Schedule(te_mod(*matmul_te(64, 64, 64)))
    C = sch.get_sblock("C")
    BR = sch.cache_read(C, 1, "global")
    sch.transform_layout(BR, ("write", 0), lambda k, n: (n // 16, k, n % 16))
    i, j, k = sch.get_loops(C)
    sch.parallel(i)
    return sch.mod


@case("sch_argmax_parallel", "schedule", "topi.argmax X[64,100] axis 1: split rows [None,8], parallel outer",
      ref=lambda i: [i[0].argmax(1).astype("int32")])
def _():
    X = te.placeholder((64, 100), name="X")
    sch = s_tir.Schedule(te_mod(X, topi.argmax(X, axis=1)))
    blk = sch.get_sblock("X_red_temp")
    i, _k = sch.get_loops(blk)
    i0, _i1 = sch.split(i, [None, 8])
    sch.parallel(i0)
    return sch.mod


@case("sch_avg_pool_compute_at_unroll", "schedule",
      "topi.nn.pool2d avg 3x3 s1 p1 (count_include_pad) on X[1,8,16,16]: compute_inline(pad_temp), compute_at(pool_sum, w loop of pool_avg), fuse(n,c)+parallel, unroll both kernel loops",
      rtol=1e-5, atol=1e-6)
def _():
    X = te.placeholder((1, 8, 16, 16), name="X")
    P = topi.nn.pool2d(X, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), "avg", count_include_pad=True)
    sch = s_tir.Schedule(te_mod(X, P))
    sch.compute_inline(sch.get_sblock("pad_temp"))
    out = sch.get_sblock("pool_avg")
    loops = sch.get_loops(out)
    psum = sch.get_sblock("pool_sum")
    sch.compute_at(psum, loops[3])
    sch.parallel(sch.fuse(loops[0], loops[1]))
    for lp in sch.get_loops(psum)[-2:]:
        sch.unroll(lp)
    return sch.mod


@case("sch_matmul_dyn_split", "schedule",
      "matmul A[m,64] x B[64,48], symbolic m: split m by 8 (T.where on symbolic bound), parallel outer, vectorize j split 16",
      dims={"m": 29}, rtol=1e-4, ref=mm_ref)
def _():
    m = te.var("m")
    A = te.placeholder((m, 64), name="A"); B = te.placeholder((64, 48), name="B")
    r = te.reduce_axis((0, 64), name="k")
    C = te.compute((m, 48), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    sch = s_tir.Schedule(te_mod(A, B, C))
    blk = sch.get_sblock("C")
    i, j, k = sch.get_loops(blk)
    i0, i1 = sch.split(i, [None, 8])
    sch.reorder(i0, i1, k, j)
    sch.parallel(i0)
    sch.decompose_reduction(blk, k)
    return sch.mod


# ---- CUDA hand schedules -------------------------------------------------------------

@case("cuda_elementwise_bind", "schedule",
      "C = exp(A) + B over [256,512]: fuse, split [None,256], bind blockIdx.x / threadIdx.x", target="cuda",
      ref=lambda i: [np.exp(i[0]) + i[1]])
def _():
    A = te.placeholder((256, 512), name="A"); B = te.placeholder((256, 512), name="B")
    C = te.compute((256, 512), lambda i, j: te.exp(A[i, j]) + B[i, j], name="C")
    sch = s_tir.Schedule(te_mod(A, B, C))
    blk = sch.get_sblock("C")
    f = sch.fuse(*sch.get_loops(blk))
    bx, tx = sch.split(f, [None, 256])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch.mod


@case("cuda_matmul_shared", "schedule",
      "128^3 f32 matmul: split i,j [4,8,4], k [16,8]; bind blockIdx.y/x, threadIdx.y/x; cache_write local + reverse_compute_at(tx); cache_read A,B shared + compute_at(k0) with cooperative fetch fuse/split/bind threadIdx; decompose_reduction",
      target="cuda", rtol=1e-4, ref=mm_ref)
def _():
    sch = s_tir.Schedule(te_mod(*matmul_te(128, 128, 128)))
    C = sch.get_sblock("C")
    i, j, k = sch.get_loops(C)
    i0, i1, i2 = sch.split(i, [4, 8, 4])
    j0, j1, j2 = sch.split(j, [4, 8, 4])
    k0, k1 = sch.split(k, [16, 8])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    CL = sch.cache_write(C, 0, "local")
    sch.reverse_compute_at(CL, j1)
    for idx in (0, 1):
        S = sch.cache_read(C, idx, "shared")
        sch.compute_at(S, k0)
        f = sch.fuse(*sch.get_loops(S)[-2:])
        _o, ty, tx = sch.split(f, [None, 8, 8])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    sch.decompose_reduction(C, k0)
    return sch.mod


@case("cuda_reduce_cross_thread", "schedule",
      "row sum A[128,256]: bind i to blockIdx.x, split k [None,128] and bind the reduction loop k1 to threadIdx.x (no rfactor -> LowerCrossThreadReduction / tvm_thread_allreduce)",
      target="cuda", rtol=1e-4, ref=lambda i: [i[0].sum(1)])
def _():
    sch = s_tir.Schedule(te_mod(*row_sum_te(128, 256)))
    blk = sch.get_sblock("B")
    i, k = sch.get_loops(blk)
    _k0, k1 = sch.split(k, [None, 128])
    sch.bind(i, "blockIdx.x")
    sch.bind(k1, "threadIdx.x")
    return sch.mod


@case("cuda_softmax_cross_thread", "schedule",
      "topi.nn.softmax X[64,256]: compute_at producers under norm row loop bound to blockIdx.x, their per-row results set_scope shared, each block's inner loop split [None,64]; threadIdx.x bound on both reductions (cross-thread) and on elementwise",
      target="cuda", rtol=1e-4, ref=lambda i: [softmax_np(i[0])])
def _():
    X = te.placeholder((64, 256), name="X")
    sch = s_tir.Schedule(te_mod(X, topi.nn.softmax(X)))
    norm = sch.get_sblock("T_softmax_norm")
    i, _j = sch.get_loops(norm)
    sch.compute_inline(sch.get_sblock("T_softmax_exp"))
    for b in ("T_softmax_expsum", "T_softmax_maxelem"):
        sch.compute_at(sch.get_sblock(b), i)
        # the row's max / sum, read by every thread of the block: shared memory (left in
        # global scope, the kernel would allocate global memory, which CUDA cannot)
        sch.set_scope(sch.get_sblock(b), 0, "shared")
    sch.bind(i, "blockIdx.x")
    for b in ("T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm"):
        lp = sch.get_loops(sch.get_sblock(b))[-1]
        _o, tx = sch.split(lp, [None, 64])
        sch.bind(tx, "threadIdx.x")
    return sch.mod


@case("cuda_rfactor_sum", "schedule",
      "row sum A[64,512]: split k [None,32], rfactor(k1,0), bind rf-block k1 to threadIdx.x and rows to blockIdx.x, B_rf set_scope local; final block reduction over the rf axis bound to threadIdx.x (cross-thread)",
      target="cuda", rtol=1e-4, ref=lambda i: [i[0].sum(1)])
def _():
    sch = s_tir.Schedule(te_mod(*row_sum_te(64, 512)))
    blk = sch.get_sblock("B")
    i, k = sch.get_loops(blk)
    _k0, k1 = sch.split(k, [None, 32])
    rf = sch.rfactor(k1, 0)
    i_rf, k0_rf, k1_rf = sch.get_loops(rf)
    sch.reorder(k1_rf, k0_rf)
    sch.bind(i_rf, "blockIdx.x")
    sch.bind(k1_rf, "threadIdx.x")
    # each partial sum B_rf[k1, i] is made and read by the thread k1 of block i: a register
    # (left in global scope, the kernel would allocate global memory, which CUDA cannot)
    sch.set_scope(rf, 0, "local")
    sch.reverse_compute_at(blk, i_rf)
    sch.bind(sch.get_loops(blk)[-1], "threadIdx.x")
    return sch.mod


@case("cuda_argmax_cross_thread", "schedule",
      "topi.argmax X[32,256] axis 1: bind row to blockIdx.x and the reduction loop split [None,128] inner to threadIdx.x (two-value cross-thread reduction)",
      target="cuda")
def _():
    X = te.placeholder((32, 256), name="X")
    sch = s_tir.Schedule(te_mod(X, topi.argmax(X, axis=1)))
    blk = sch.get_sblock("X_red_temp")
    i, k = sch.get_loops(blk)
    _k0, k1 = sch.split(k, [None, 128])
    sch.bind(i, "blockIdx.x")
    sch.bind(k1, "threadIdx.x")
    fin = sch.get_sblock("X_red")
    sch.bind(sch.get_loops(fin)[0], "threadIdx.x")
    return sch.mod


# =======================================================================================
# c. dlight default rules
# =======================================================================================

def dlight_gpu(mod):
    with tvm.target.Target(CUDA):
        return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                       dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)


def dlight_cpu(mod):
    with tvm.target.Target(LLVM):
        return dl.ApplyDefaultSchedule(dl.cpu.GEMV(), dl.cpu.Reduction())(mod)


GPU_RULES = "dl.ApplyDefaultSchedule(gpu.Matmul, gpu.GEMV, gpu.Reduction, gpu.GeneralReduction, gpu.Fallback) under Target cuda sm_80"
CPU_RULES = "dl.ApplyDefaultSchedule(cpu.GEMV, cpu.Reduction) under Target llvm"


@case("dl_gpu_matmul", "dlight", f"te matmul 128^3 f32; {GPU_RULES} (Matmul rule)", target="cuda",
      rtol=1e-4, ref=mm_ref)
def _():
    return dlight_gpu(te_mod(*matmul_te(128, 128, 128)))


@case("dl_gpu_matmul_dyn", "dlight", f"te matmul A[m,64] x B[64,128] f32, symbolic m; {GPU_RULES} (Matmul rule)",
      target="cuda", dims={"m": 50}, rtol=1e-4, ref=mm_ref)
def _():
    m = te.var("m")
    A = te.placeholder((m, 64), name="A"); B = te.placeholder((64, 128), name="B")
    r = te.reduce_axis((0, 64), name="k")
    return dlight_gpu(te_mod(A, B, te.compute((m, 128), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")))


@case("dl_gpu_gemv", "dlight", f"GEMV y[1,256] = x[1,1024] . W[256,1024]^T, f16 in / f16 out; {GPU_RULES} (GEMV rule)",
      target="cuda", rtol=2e-2, atol=0.5, ref=lambda i: [i[0].astype(np.float32) @ i[1].astype(np.float32).T],
      ref_tol=(2e-2, 0.5))  # float16 sums of 1024 products (|y| up to ~30) in another order
def _():
    x = te.placeholder((1, 1024), name="x", dtype="float16"); W = te.placeholder((256, 1024), name="W", dtype="float16")
    r = te.reduce_axis((0, 1024), name="k")
    y = te.compute((1, 256), lambda i, j: te.sum(x[i, r] * W[j, r], axis=r), name="y")
    return dlight_gpu(te_mod(x, W, y))


@case("dl_gpu_softmax", "dlight", f"topi.nn.softmax X[64,256]; {GPU_RULES} (GeneralReduction rule)", target="cuda",
      rtol=1e-4, ref=lambda i: [softmax_np(i[0])])
def _():
    X = te.placeholder((64, 256), name="X")
    return dlight_gpu(te_mod(X, topi.nn.softmax(X)))


@case("dl_gpu_layer_norm", "dlight", f"topi.nn.layer_norm X[64,256] gamma beta; {GPU_RULES} (GeneralReduction rule)",
      target="cuda", rtol=1e-4, atol=1e-4,
      ref=lambda i: [(i[0] - i[0].mean(1, keepdims=True)) / np.sqrt(i[0].var(1, keepdims=True) + 1e-5) * i[1] + i[2]])
def _():
    X = te.placeholder((64, 256), name="X"); g = te.placeholder((256,), name="gamma"); b = te.placeholder((256,), name="beta")
    return dlight_gpu(te_mod(X, g, b, topi.nn.layer_norm(X, g, b, axis=[1])))


@case("dl_gpu_rms_norm", "dlight", f"topi.nn.rms_norm X[32,512] weight; {GPU_RULES}", target="cuda",
      rtol=1e-4, atol=1e-4, ref=lambda i: [i[0] / np.sqrt((i[0] ** 2).mean(1, keepdims=True) + 1e-5) * i[1]])
def _():
    X = te.placeholder((32, 512), name="X"); w = te.placeholder((512,), name="weight")
    return dlight_gpu(te_mod(X, w, topi.nn.rms_norm(X, w, axis=[1])))


@case("dl_gpu_sum_reduction", "dlight", f"topi.sum X[128,1024] axis 1; {GPU_RULES} (Reduction rule)", target="cuda",
      rtol=1e-4, atol=1e-4, ref=lambda i: [i[0].sum(1)])
def _():
    X = te.placeholder((128, 1024), name="X")
    return dlight_gpu(te_mod(X, topi.sum(X, axis=1)))


@case("dl_gpu_elementwise_fusion", "dlight",
      f"fused elementwise D = sigmoid(A*B + bias[None,:]) then cast to f16, A,B[256,512]; {GPU_RULES} (Fallback rule, inlines producers)",
      target="cuda", rtol=1e-3, atol=1e-3,
      ref=lambda i: [(1 / (1 + np.exp(-(i[0] * i[1] + i[2])))).astype(np.float16)], ref_tol=(1e-3, 1e-3))
def _():
    A = te.placeholder((256, 512), name="A"); B = te.placeholder((256, 512), name="B"); b = te.placeholder((512,), name="bias")
    T1 = te.compute((256, 512), lambda i, j: A[i, j] * B[i, j] + b[j], name="T1")
    T2 = te.compute((256, 512), lambda i, j: te.sigmoid(T1[i, j]), name="T2")
    D = te.compute((256, 512), lambda i, j: T2[i, j].astype("float16"), name="D")
    return dlight_gpu(te_mod(A, B, b, D))


@case("dl_gpu_transpose_add", "dlight", f"topi.transpose(A[128,256]) + B[256,128]; {GPU_RULES} (Fallback rule)",
      target="cuda", ref=lambda i: [i[0].T + i[1]])
def _():
    A = te.placeholder((128, 256), name="A"); B = te.placeholder((256, 128), name="B")
    return dlight_gpu(te_mod(A, B, topi.add(topi.transpose(A), B)))


@case("dl_cpu_gemv", "dlight", f"GEMV y[1,128] = x[1,256] . W[128,256]^T f32; {CPU_RULES} (cpu.GEMV rule)",
      rtol=1e-4, ref=lambda i: [i[0] @ i[1].T])
def _():
    x = te.placeholder((1, 256), name="x"); W = te.placeholder((128, 256), name="W")
    r = te.reduce_axis((0, 256), name="k")
    return dlight_cpu(te_mod(x, W, te.compute((1, 128), lambda i, j: te.sum(x[i, r] * W[j, r], axis=r), name="y")))


@case("dl_cpu_softmax", "dlight", f"topi.nn.softmax X[16,256]; {CPU_RULES} (cpu.Reduction rule)",
      rtol=1e-4, ref=lambda i: [softmax_np(i[0])])
def _():
    X = te.placeholder((16, 256), name="X")
    return dlight_cpu(te_mod(X, topi.nn.softmax(X)))


@case("dl_cpu_sum_reduction", "dlight", f"topi.sum X[64,300] axis 1; {CPU_RULES} (cpu.Reduction rule)",
      rtol=1e-4, ref=lambda i: [i[0].sum(1)])
def _():
    X = te.placeholder((64, 300), name="X")
    return dlight_cpu(te_mod(X, topi.sum(X, axis=1)))


# =======================================================================================
# Lowering
# =======================================================================================

def bound_target(kind: str) -> tvm.target.Target:
    """What tvm.tirx.build binds: the target with its host (llvm for cuda, itself for llvm)."""
    host = tvm.target.Target(LLVM)
    return tvm.target.Target(TARGET_JSON[kind]).with_host(host)


def s_tir_passes_before_split():
    """tvm.s_tir.pipeline.default_s_tir_pipeline with a default PassContext, up to but not
    including tirx.SplitHostDevice (which this pipeline runs without AnnotateDeviceRegions)."""
    t, s = tirx.transform, s_tir.transform
    return [
        s.CanonicalizeLoop(),
        s.LowerCrossThreadReduction(),
        s.LowerInitBlock(),
        s.PlanAndUpdateBufferAllocationLocation(),
        s.ConvertBlocksToOpaque(),
        s.LiftThreadBinding(),
        s.ManifestSharedMemoryLocalStage(),
        s.CompactBufferAllocation(),
        s.LowerAutoCopy(),
        s.UnifyThreadBinding(),
        s.LowerMatchBuffer(),
        s.StmtSimplify(),
        s.InjectPermutedLayout(),
        s.AnnotateIrregularLoop(),
        s.InjectSoftwarePipeline(),
        s.TransformMmaBufferLayout(),
        s.LowerOpaqueBlock(),
        t.FlattenBuffer(),
        t.BF16ComputeLegalize(),
        t.NarrowDataType(32),
        s.LoopPartition(),
        t.VectorizeLoop(True),
        s.InjectVirtualThread(),
        s.InjectDoubleBuffer(),
        t.StorageRewrite(),
        s.HoistIfThenElse(),
        t.UnrollLoop(),
        s.RenormalizeSplitPattern(),
        t.StmtSimplify(),
        t.RemoveNoOp(),
        s.RewriteUnsafeSelect(),
        t.CommonSubexprElim(),
        t.FP8ComputeLegalize(),
        s.VerifyVTCMLimit(),
        s.LowerVtcmAlloc(),
        t.VerifyMemory(),
        t.AnnotateEntryFunc(),
        s.ThreadSync("shared"),
        s.ThreadSync("shared.dyn"),
        s.ThreadSync("warp"),
        s.InferFragment(),
        s.LowerThreadAllreduce(),
        s.MergeSharedMemoryAllocations(),
    ]


def lower(mod: tvm.IRModule, kind: str) -> tvm.IRModule:
    mod = tirx.transform.BindTarget(bound_target(kind))(mod)
    with tvm.transform.PassContext():
        manual = tvm.transform.Sequential(s_tir_passes_before_split())(mod)

    # Cross-check against TVM's own pipeline, captured just before SplitHostDevice.
    captured = []

    @tvm.ir.instrument.pass_instrument
    class Capture:
        def run_before_pass(self, m, info):
            if info.name == "tirx.SplitHostDevice" and not captured:
                captured.append(m.script())  # print now: later passes may mutate m in place

    pipeline = tvm.tirx.get_tir_pipeline("s_tir")[0]
    with tvm.transform.PassContext(instruments=[Capture()]):
        pipeline(mod)
    assert captured, "SplitHostDevice was not reached"
    if captured[0] != manual.script():
        import difflib
        diff = "\n".join(difflib.unified_diff(captured[0].splitlines(), manual.script().splitlines(), lineterm=""))
        raise RuntimeError("manual pass list differs from tvm.s_tir.pipeline before SplitHostDevice:\n" + diff)
    return manual


# =======================================================================================
# Running on llvm
# =======================================================================================

def concrete_shape(shape, dims):
    out = []
    for e in shape:
        if hasattr(e, "value"):  # IntImm
            out.append(int(e.value))
        elif hasattr(e, "name"):  # symbolic Var
            out.append(int(dims[e.name]))
        else:
            raise ValueError(f"unsupported shape expression {e}")
    return out


def describe_params(func, dims):
    """In TVM 0.27 a PrimFunc has no buffer_map: buffer params are Vars of BufferType."""
    params = []
    for p in func.params:
        try:
            shape = p.shape
        except AttributeError:
            params.append({"name": p.name, "kind": "scalar", "shape": [], "dtype": str(p.dtype)})
            continue
        params.append({"name": p.name, "kind": "buffer",
                       "shape": concrete_shape(shape, dims), "dtype": str(p.dtype)})
    return params


def make_inputs(c: Case, params, outputs):
    rng = np.random.default_rng(zlib.crc32(c.name.encode()))
    arrays = []
    for idx, p in enumerate(params):
        if p["kind"] != "buffer":
            raise NotImplementedError("scalar params")
        shape, dtype = tuple(p["shape"]), p["dtype"]
        if idx in outputs:
            arrays.append(np.zeros(shape, dtype=dtype))
        elif p["name"] in c.gen:
            arrays.append(c.gen[p["name"]](rng, shape, dtype))
        elif dtype.startswith("float"):
            arrays.append(rng.uniform(-1.0, 1.0, size=shape).astype(dtype))
        elif dtype.startswith(("int", "uint")):
            arrays.append(rng.integers(0, 8, size=shape).astype(dtype))
        else:
            raise NotImplementedError(dtype)
    return arrays


def run_llvm(c: Case, mod, params, outputs):
    ins = make_inputs(c, params, outputs)
    lib = tvm.compile(mod, target=tvm.target.Target(LLVM))
    dev = tvm.cpu()
    tens = [tvm.runtime.tensor(a, device=dev) for a in ins]
    lib["main"](*tens)
    outs = [t.numpy() for t in tens]
    for idx, (a, b) in enumerate(zip(ins, outs)):
        if idx not in outputs and not np.array_equal(a, b):
            raise RuntimeError(f"{c.name}: input param {idx} was modified")
    if c.ref is not None:
        exp = c.ref([a for i, a in enumerate(ins) if i not in outputs])
        for o, e in zip(outputs, exp):
            got = outs[o]
            if got.shape != e.shape or not np.allclose(got.astype(np.float64), e.astype(np.float64),
                                                       rtol=c.ref_tol[0], atol=c.ref_tol[1]):
                raise RuntimeError(f"{c.name}: TVM result for output {o} disagrees with NumPy reference")
    return ins, outs


def npz_bytes(arrays: dict) -> bytes:
    """A .npz (np.load-able) with fixed zip timestamps, so the bytes are reproducible."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            b = io.BytesIO()
            np.lib.format.write_array(b, np.ascontiguousarray(arr), allow_pickle=False)
            zf.writestr(info, b.getvalue())
    return buf.getvalue()


# =======================================================================================
# Driver
# =======================================================================================

def render(only=None):
    files: dict[str, bytes] = {}
    index = []
    dropped = []
    for c in CASES:
        if only and c.name not in only:
            continue
        MADE.clear()
        try:
            mod = c.make()
        except Exception as err:  # noqa: BLE001
            dropped.append((c.name, f"TVM could not build it: {type(err).__name__}: {str(err).splitlines()[0][:200]}"))
            continue
        text = mod.script()
        try:
            again = from_source(text).script()
        except Exception as err:  # noqa: BLE001
            dropped.append((c.name, f"printed text does not re-parse: {str(err).splitlines()[0][:200]}"))
            continue
        if again != text:
            dropped.append((c.name, "printed text is not a parse/print fixed point"))
            continue
        if c.target == "cuda":
            # TVM's CUDA code generator must accept the schedule (it refuses, e.g., a
            # global-scope buffer left inside a kernel); compiled from a fresh parse
            try:
                tvm.compile(from_source(text), target=tvm.target.Target(CUDA, host=LLVM))
            except Exception as err:  # noqa: BLE001
                msg = str(err).strip().splitlines()
                dropped.append((c.name, "TVM's CUDA code generator refuses it: " + (msg[-1] if msg else "")[:300]))
                continue
        func = mod["main"]
        lowered = lower(mod, c.target)
        ltext = lowered.script()
        well_formed = True
        try:
            lowered_again = from_source(ltext).script()  # must re-parse
        except Exception as err:  # noqa: BLE001
            msg = str(err).strip().splitlines()
            msg = (msg[0] if msg else "")[:300]
            if "not well-formed" not in msg:
                dropped.append((c.name, "lowered text does not re-parse: " + msg))
                continue
            # TVM's own lowering produced IR that its well-formedness checker rejects;
            # keep it if it parses with the check off, and flag it in index.json.
            lowered_again = from_source(ltext, check_well_formed=False).script()
            well_formed = False
        n_params = len(func.params)
        outputs = list(range(n_params - c.n_out, n_params))
        params = describe_params(func, c.dims)
        entry = {
            "name": c.name,
            "source": c.source,
            "what": c.what,
            "target": TARGET_LABEL[c.target],
            "target_json": TARGET_JSON[c.target],
            "func": "main",
            "params": params,
            "dims": dict(sorted(c.dims.items())),
            "outputs": outputs,
            "rtol": c.rtol,
            "atol": c.atol,
            "npz": None,
            "lowered_fixed_point": lowered_again == ltext,
            "lowered_well_formed": well_formed,
        }
        if c.target == "llvm" or MADE:
            # cuda: TVM cannot run it here; the unscheduled computation gives the expected values
            base = mod if c.target == "llvm" else MADE[0]
            if describe_params(base["main"], c.dims) != params:
                raise RuntimeError(f"{c.name}: the unscheduled module has other parameters")
            ins, outs = run_llvm(c, base, params, outputs)
            arrays = {f"arg{i}": a for i, a in enumerate(ins)}
            arrays.update({f"out{i}": a for i, a in enumerate(outs)})
            files[f"expected/{c.name}.npz"] = npz_bytes(arrays)
            entry["npz"] = f"expected/{c.name}.npz"
        files[f"{c.name}.tir"] = text.encode()
        files[f"{c.name}.lowered.tir"] = ltext.encode()
        index.append(entry)
        print(f"ok {c.source:8s} {c.target:5s} {c.name}", file=sys.stderr)
    files["index.json"] = (json.dumps(index, indent=1) + "\n").encode()
    files["README.md"] = readme_text(index, dropped).encode()
    return files, dropped


README_HEAD = """\
# Block-level (schedulable) TIR corpus

Generated by `tests/corpus/gen_sblock_corpus.py` with TVM `apache-tvm==0.27.0.post1`
(numpy, ml_dtypes) from the venv `/tmp/tvmenv`. **This README is generated too**; edit the
generator, not this file.

Regenerate / verify (needs the TVM venv; CI does not):

    /tmp/tvmenv/bin/python tests/corpus/gen_sblock_corpus.py          # rewrite tests/corpus/sblock/
    /tmp/tvmenv/bin/python tests/corpus/gen_sblock_corpus.py --check  # regenerate into a temp dir,
                                                                     # compare byte-for-byte

## Files

* `NAME.tir` -- exactly `mod.script()` of an IRModule holding one block-level PrimFunc `main`
  (`@T.prim_func(s_tir=True)`, `T.sblock`, ...), no trailing newline added. Every file
  re-parses with `tvm.script.from_source` and is a byte-exact parse/print fixed point
  (asserted; modules that are not are dropped and listed below). A CUDA module is also
  asserted to compile with `tvm.compile` for `{"kind": "cuda", "arch": "sm_80"}` (host
  llvm), which this wheel runs as far as the CUDA source.
* `NAME.lowered.tir` -- `.script()` of TVM's own lowering of the same module for its target:
  `tirx.transform.BindTarget(target.with_host(llvm))` (what `tvm.tirx.build` binds; for llvm the
  host is the target itself), then the passes of `tvm/s_tir/pipeline.py`
  (`default_s_tir_pipeline`, default `PassContext`) up to but **not including**
  `tirx.SplitHostDevice` (this pipeline has no `AnnotateDeviceRegions`), i.e. ending with
  `MergeSharedMemoryAllocations`. The generator applies that list by hand and asserts that its
  result prints identically to the module TVM's real pipeline holds just before
  `SplitHostDevice` (captured with a pass instrument). Every lowered file re-parses in TVM;
  some are not parse/print fixed points (`lowered_fixed_point` in index.json), see below.
* `expected/NAME.npz` -- built with `tvm.compile(mod, target=llvm)` and run on the CPU: for
  llvm modules the module itself, for cuda modules (this TVM has no CUDA runtime) the
  unscheduled module the case was made from (its `te.create_prim_func`, before the schedule
  or dlight), the same computation; tests/testing/test_simt.py runs the cuda modules on tirc's SIMT
  interpreter against them. Keys: `arg0, arg1, ...` = the initial value of every buffer parameter in
  parameter order (outputs start as zeros), `out0, out1, ...` = the value of every buffer
  parameter after the call (inputs are asserted unchanged), `scalar<i>` for scalar parameters
  (there are none at present). Inputs use `np.random.default_rng(zlib.crc32(name))`: floats
  uniform in [-1, 1] (float16 = float32 draw cast), integers in [0, 8) unless a case says
  otherwise (int8 matmul: [-8, 8); `topi_take` indices: [0, 16)). Zip entries have a fixed
  timestamp, so the bytes are reproducible; load with `np.load`. Where a simple NumPy
  reference exists (matmuls, softmax, sums, norms, argmax, layout ops, ...) the generator
  checks TVM's output against it.
* `index.json` -- a list, one entry per module:
  `name`; `source` (`topi` | `schedule` | `dlight`); `what` (how it was made);
  `target` (`"llvm"` or `"cuda -arch=sm_80"`; TVM 0.27 no longer parses such CLI strings, so
  `target_json` holds the dict actually used: `{"kind": "llvm", "mtriple":
  "x86_64-unknown-linux-gnu"}` or `{"kind": "cuda", "arch": "sm_80"}`); `func` (`"main"`);
  `params` (`[{"name", "kind": "buffer"|"scalar", "shape": [concrete ints], "dtype"}]`, shapes
  with symbolic vars evaluated at `dims`); `dims` (values for symbolic shape vars, e.g.
  `{"n": 37}`); `outputs` (indices of the params written); `rtol`, `atol` (tolerance suggested
  for comparing against the npz); `npz` (`"expected/NAME.npz"`);
  `lowered_fixed_point` (bool); `lowered_well_formed` (false when TVM's well-formedness check
  rejects TVM's own lowered text, which then re-parses only with `check_well_formed=False`).

## Sources

* `topi` -- `te.create_prim_func([...tensors])` of `tvm.topi` operators or plain
  `te.compute`, unscheduled, target llvm.
* `schedule` -- hand schedules with `tvm.s_tir.Schedule` (split / reorder / fuse / parallel /
  vectorize / unroll / annotate / cache_read / cache_write / compute_at / reverse_compute_at /
  compute_inline / reverse_compute_inline / rfactor / decompose_reduction / blockize /
  transform_layout, and `bind` for CUDA).
* `dlight` -- `tvm.s_tir.dlight`: GPU modules use
  `dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
  dl.gpu.GeneralReduction(), dl.gpu.Fallback())` inside `with tvm.target.Target({"kind":
  "cuda", "arch": "sm_80"})`; CPU modules use `dl.ApplyDefaultSchedule(dl.cpu.GEMV(),
  dl.cpu.Reduction())` inside `with tvm.target.Target(llvm)` (TVM 0.27's `dl.cpu` has only
  these two rules, no CPU matmul rule).

"""

README_CANNOT = """\
## What TVM could not produce

* `te.scan` (a scan/cumsum through `te.ScanOp`): `te.create_prim_func` rejects it
  ("Unsupported Operation: te.ScanOp. Only te.placeholder and te.compute are allowed").
  `topi_cumsum` uses `topi.cumsum` instead, which is an ir_builder extern: one opaque
  `T.sblock` with empty `T.reads()`/`T.writes()` and a `T.parallel` loop inside.
* dlight `gpu.Matmul` on float16 or int8 inputs for sm_80: for sm >= 70 the rule dispatches to
  `MatmulTensorization` / `MatmulInt8Tensorization`, and `Schedule.tensorize` **segfaults** in
  this wheel (even a minimal `tensorize` with `wmma_fill_16x16x16_f32`). The dlight matmuls
  are therefore float32 (which dlight does not tensorize); float16 appears in `dl_gpu_gemv`.
* No CUDA run: the wheel has no CUDA runtime (`tvm.runtime.enabled("cuda")` is False), so the
  npz of a CUDA module holds the outputs of its unscheduled computation built for llvm.
* `cuda_argmax_cross_thread` (topi.argmax with the reduction loop bound to threadIdx.x) is
  dropped: its schedule leaves the reduction's temporaries `X_red_temp_v0`/`X_red_temp_v1` in
  global scope inside the kernel, which TVM's CUDA code generator refuses ("Cannot allocate
  global memory when targeting CUDA"); and its lowered text contains
  `T.comm_reducer(lambda x0, x1, y0, y1: (T.Select(x1 > y1 or x1 == y1 and x0 < y0, x0, y0), ...)`
  and TVM's parser rejects Python `or`/`and` on expressions.
  (`T.comm_reducer` with one value does appear in the lowered cross-thread reductions.)
* `dl_gpu_gemv` is kept but its lowering is not well-formed: dlight's GEMV annotates an
  extent-1 loop with `pragma_vectorize`, and lowering leaves
  `with T.attr(ax1_0, "pragma_vectorize", 1): for ax1_0 in range(1): ...` (the attr uses the
  loop variable outside its loop; the printer declares `ax1_0 = T.int32()` first). It
  re-parses only with `check_well_formed=False` (`lowered_well_formed: false`).
* Lowered files that re-parse but are not parse/print fixed points (known TVM asymmetries):
  `T.tvm_storage_sync("shared")` re-prints as `T.tvm_storage_sync("shared", T.bool(False), -1)`;
  `annotations={"tirx.volatile": True}` re-prints with `T.bool(True)`; in `topi_cumsum`,
  `T.decl_buffer((128,), data=out_buf.data)` re-prints as `out_buf.view(128)`.
"""


def readme_text(index, dropped) -> str:
    counts = Counter((e["source"], e["target"]) for e in index)
    lines = [README_HEAD, "## Modules\n",
             f"{len(index)} modules. By (source, target): "
             + ", ".join(f"{s} / {t}: {n}" for (s, t), n in sorted(counts.items())) + ".\n",
             "| name | source | target | how it was made |", "|---|---|---|---|"]
    for e in index:
        lines.append(f"| `{e['name']}` | {e['source']} | {e['target']} | {e['what'].replace('|', '/')} |")
    lines.append("")
    lines.append(README_CANNOT)
    nf = [e["name"] for e in index if not e["lowered_fixed_point"]]
    lines.append("Lowered files that are not fixed points: " + ", ".join(f"`{n}`" for n in nf) + ".\n")
    if dropped:
        lines.append("Cases dropped by this run of the generator:\n")
        for name, why in dropped:
            lines.append(f"* `{name}`: {why}")
        lines.append("")
    return "\n".join(lines)


def write_tree(root: Path, files: dict[str, bytes]):
    root.mkdir(parents=True, exist_ok=True)
    (root / "expected").mkdir(exist_ok=True)
    for rel, data in files.items():
        (root / rel).write_bytes(data)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare byte-for-byte with --out")
    args = ap.parse_args(argv)

    names = [c.name for c in CASES]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise RuntimeError(f"duplicate case names {dup}")

    files, dropped = render()
    for name, why in dropped:
        print(f"DROPPED {name}: {why}", file=sys.stderr)

    if args.check:
        tmp = Path(tempfile.mkdtemp(prefix="sblock_check_"))
        try:
            write_tree(tmp, files)
            ok = True
            want = {str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file()}
            have = {str(p.relative_to(args.out)) for p in args.out.rglob("*") if p.is_file()}
            for rel in sorted(want | have):
                if rel not in have:
                    print(f"missing: {rel}"); ok = False
                elif rel not in want:
                    print(f"stale: {rel}"); ok = False
                elif not filecmp.cmp(tmp / rel, args.out / rel, shallow=False):
                    print(f"differs: {rel}"); ok = False
            print("check: all files identical" if ok else "check: FAILED")
            return 0 if ok else 1
        finally:
            shutil.rmtree(tmp)

    # Rewrite: remove generated files that are no longer produced.
    if args.out.exists():
        for p in list(args.out.rglob("*")):
            if p.is_file() and str(p.relative_to(args.out)) not in files:
                p.unlink()
    write_tree(args.out, files)
    total = sum(len(b) for b in files.values())
    print(f"wrote {len(files)} files ({total} bytes) to {args.out}; dropped {len(dropped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
