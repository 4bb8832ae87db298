#!/usr/bin/env python
"""Regenerate the model corpus in bench/models/ (issue 32, goal 1): whole models written
with ``tvm.relax.frontend.nn``, plus the MLC-LLM kernels that TVM ships in
``tvm/relax/frontend/nn/llm``, taken through TVM 0.27's relax flow and kept as TIR text,
one file per model and target, with all of the model's PrimFuncs, as a user builds them.

Made with TVM ``apache-tvm==0.27.0.post1``; run with that venv's python from anywhere:

    /work/main/.venv/bin/python bench/models/gen_models.py            # (re)write the corpus
    /work/main/.venv/bin/python bench/models/gen_models.py --only llama_f32 --target cuda

For each model and target (``llvm``: ``{"kind": "llvm"}``; ``cuda``: ``{"kind": "cuda",
"arch": "sm_90"}``), in a child process of its own (TVM can crash):

1. ``nn.Module.export_tvm(spec)``;
2. under the target, the passes of TVM's own relax pipeline for it that make the PrimFuncs
   (``relax/backend/{cpu_generic,cuda}/pipeline.py``): ``library_dispatch_passes``
   (``DispatchSampling``, ``DispatchSortScan``: sort, top-k, cumsum and sampling become
   TIR, the GPU forms already scheduled), then ``relax.get_pipeline("zero")``
   (``LegalizeOps``, ``AnnotateTIROpPattern``, ``FoldConstant``, ``FuseOps``,
   ``FuseTIR``), and for cuda dlight's default GPU rules as the CUDA pipeline applies them,
   ``dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
   dl.gpu.GeneralReduction(), dl.gpu.Fallback())``. dlight is first tried on each function
   alone in a forked process: a function it crashes TVM on is left out and listed;
3. the PrimFuncs only, each with its ``global_symbol`` (relax's ``AttachGlobalSymbol``, as
   a build does; a private function is not built by itself), each printed alone
   (``IRModule({name: f}).script()``) and parsed back with ``tvm.script.from_source``: a
   function TVM's own printer/parser cannot round-trip is left out and listed;
4. the re-parsed functions in one ``IRModule``, printed with ``.script()``: the file.
   Checked: it parses back, ``tvm.compile`` builds it for its target (host llvm) and
   ``export_library`` writes it; for cuda the CUDA C TVM made is compiled with NVRTC
   (``tvm.support.nvcc.compile_cuda``, cubin) where NVRTC is installed. A function that
   fails ``tvm.compile`` is found (each compiled alone), left out and listed.

Writes ``bench/models/<model>.<target>.tir`` and ``bench/models/index.json`` (per file:
model, target, source, functions, names, what TVM left out and why). bench/models/README.md
says what each model is and what TVM fails on.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tokenize
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

OUT_DIR = Path(__file__).resolve().parent
TARGETS = {"llvm": {"kind": "llvm"}, "cuda": {"kind": "cuda", "arch": "sm_90"}}
DLIGHT = ("dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), "
          "dl.gpu.GeneralReduction(), dl.gpu.Fallback())")


@dataclass
class Model:
    name: str
    targets: tuple[str, ...]
    what: str
    make: Callable  # (target: tvm.target.Target) -> (nn.Module, spec)
    notes: dict = field(default_factory=dict)


MODELS: list[Model] = []


def model(name, targets, what):
    def deco(fn):
        MODELS.append(Model(name, tuple(targets), what, fn))
        return fn
    return deco


# ======================================================================================
# The models (imports of TVM happen in the child process only)
# ======================================================================================

def _nn():
    from tvm import te, tirx  # noqa: F401
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op
    return nn, op


LLAMA3_ROPE = dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                   original_max_position_embeddings=8192)


def rope(x, theta=500000.0):
    """Llama-3 rotary embedding of x [batch, seq, heads, head_dim] at positions 0..seq-1,
    one te kernel (the frequency from tvm's llm.position_embedding.rope_freq_llama3).
    (``llm.position_embedding.llama_rope``, the fused-QKV form, does not pass relax's
    well-formed check in TVM 0.27: its call_tir passes the int64 total_seq_len where an
    output tensor goes.)"""
    from tvm import te, tirx
    from tvm.relax.frontend.nn import op
    from tvm.relax.frontend.nn.llm.position_embedding import rope_freq_llama3
    d_rot = int(x.shape[-1])

    def f(t):
        def body(b, s, h, d):
            cos, sin, var_map = rope_freq_llama3(s.astype("float32"), d, d_rot, theta, t.dtype,
                                                 **LLAMA3_ROPE)
            e = cos * t[b, s, h, d] + sin * tirx.if_then_else(
                d < d_rot // 2, -t[b, s, h, d + d_rot // 2], t[b, s, h, d - d_rot // 2])
            for var, value in var_map.items():
                e = tirx.Let(var, value, e)
            return e
        return te.compute(t.shape, body, name="rope")
    return op.tensor_expr_op(f, "rope", [x])


def llama(hidden, heads, kv_heads, inter, vocab, layers, dtype):
    nn, op = _nn()
    hd = hidden // heads
    neg = -65504.0 if dtype == "float16" else -3.4e38

    class Attention(nn.Module):
        def __init__(self):
            self.qkv_proj = nn.Linear(hidden, (heads + 2 * kv_heads) * hd, bias=False, dtype=dtype)
            self.o_proj = nn.Linear(heads * hd, hidden, bias=False, dtype=dtype)

        def forward(self, x):
            b, s, _ = x.shape
            qkv = op.reshape(self.qkv_proj(x), (b, s, heads + 2 * kv_heads, hd))
            q, k, v = op.split(qkv, [heads, heads + kv_heads], axis=2)
            q, k = rope(q), rope(k)
            # grouped-query attention: each kv head serves heads // kv_heads query heads
            k = op.repeat(k, heads // kv_heads, axis=2)
            v = op.repeat(v, heads // kv_heads, axis=2)
            q = op.permute_dims(q, [0, 2, 1, 3])
            k = op.permute_dims(k, [0, 2, 3, 1])
            v = op.permute_dims(v, [0, 2, 1, 3])
            scores = op.matmul(q, k) * (1.0 / hd ** 0.5)
            causal = op.triu(op.full((s, s), neg, dtype), diagonal=1)
            p = op.softmax(scores + causal, axis=-1)
            o = op.permute_dims(op.matmul(p, v), [0, 2, 1, 3])
            return self.o_proj(op.reshape(o, (b, s, heads * hd)))

    class MLP(nn.Module):
        def __init__(self):
            self.gate_up_proj = nn.Linear(hidden, 2 * inter, bias=False, dtype=dtype)
            self.down_proj = nn.Linear(inter, hidden, bias=False, dtype=dtype)

        def forward(self, x):
            g, u = op.split(self.gate_up_proj(x), 2, axis=-1)
            return self.down_proj(op.silu(g) * u)

    class Layer(nn.Module):
        def __init__(self):
            self.self_attn = Attention()
            self.mlp = MLP()
            self.input_layernorm = nn.RMSNorm(hidden, -1, 1e-5, bias=False, dtype=dtype)
            self.post_attention_layernorm = nn.RMSNorm(hidden, -1, 1e-5, bias=False, dtype=dtype)

        def forward(self, x):
            x = x + self.self_attn(self.input_layernorm(x))
            return x + self.mlp(self.post_attention_layernorm(x))

    class Llama(nn.Module):
        def __init__(self):
            self.embed_tokens = nn.Embedding(vocab, hidden, dtype=dtype)
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])
            self.norm = nn.RMSNorm(hidden, -1, 1e-5, bias=False, dtype=dtype)
            self.lm_head = nn.Linear(hidden, vocab, bias=False, dtype=dtype)

        def forward(self, input_ids):
            x = self.embed_tokens(input_ids)
            for layer in self.layers:
                x = layer(x)
            return op.astype(self.lm_head(self.norm(x)), "float32")

    spec = {"forward": {"input_ids": nn.spec.Tensor([1, "seq_len"], "int32")}}
    return Llama(), spec


LLAMA_F32 = dict(hidden=128, heads=4, kv_heads=2, inter=344, vocab=512, layers=2)
LLAMA_F16 = dict(hidden=256, heads=8, kv_heads=2, inter=688, vocab=1024, layers=2)


@model("llama_f32", ("llvm", "cuda"),
       "llama-style decoder, float32: %(layers)d layers, hidden %(hidden)d, %(heads)d query "
       "heads / %(kv_heads)d kv heads (GQA, head_dim 32), SwiGLU MLP %(inter)d, vocab "
       "%(vocab)d, RMSNorm, Llama-3 rotary embedding, causal softmax attention; "
       "input_ids [1, seq_len], seq_len symbolic" % LLAMA_F32)
def _(target):
    return llama(dtype="float32", **LLAMA_F32)


@model("llama_f16", ("llvm", "cuda"),
       "llama-style decoder, float16 weights and activations (logits cast to float32): "
       "%(layers)d layers, hidden %(hidden)d, %(heads)d query heads / %(kv_heads)d kv heads "
       "(GQA, head_dim 32), SwiGLU MLP %(inter)d, vocab %(vocab)d, RMSNorm, Llama-3 rotary "
       "embedding; input_ids [1, seq_len], seq_len symbolic" % LLAMA_F16)
def _(target):
    return llama(dtype="float16", **LLAMA_F16)


@model("moe", ("llvm", "cuda"),
       "mixture-of-experts layer, float32: router Linear(128, 8) + softmax + top-2 "
       "(op.topk), weights renormalised over the chosen experts, 8 SwiGLU experts "
       "(hidden 128, intermediate 256) as batched matmuls over stacked expert weights, "
       "weighted sum; x [num_tokens, 128], num_tokens symbolic")
def _(target):
    nn, op = _nn()
    hidden, inter, experts, top_k = 128, 256, 8, 2

    class MoE(nn.Module):
        def __init__(self):
            self.gate = nn.Linear(hidden, experts, bias=False)
            self.w_gate_up = nn.Parameter((experts, hidden, 2 * inter), "float32")
            self.w_down = nn.Parameter((experts, inter, hidden), "float32")

        def forward(self, x):
            t = x.shape[0]
            probs = op.softmax(self.gate(x), axis=-1)
            top_vals = op.topk(probs, k=top_k, axis=-1, ret_type="values")
            kth = op.min(top_vals, axis=-1, keepdims=True)
            w = op.where(op.greater_equal(probs, kth), probs, op.zeros((t, experts), "float32"))
            w = op.divide(w, op.sum(w, axis=-1, keepdims=True))
            xb = op.broadcast_to(op.unsqueeze(x, 0), (experts, t, hidden))
            g, u = op.split(op.matmul(xb, self.w_gate_up), 2, axis=-1)
            y = op.matmul(op.silu(g) * u, self.w_down)  # [experts, t, hidden]
            wt = op.unsqueeze(op.permute_dims(w, [1, 0]), -1)  # [experts, t, 1]
            return op.sum(y * wt, axis=0)

    return MoE(), {"forward": {"x": nn.spec.Tensor(["num_tokens", hidden], "float32")}}


def _relax_op(name, x, *args, **kwargs):
    """A relax operator that nn.op does not wrap (pooling, argmax, ...)."""
    from tvm import relax
    from tvm.relax.frontend.nn.core import wrap_nested
    fn = relax.op
    for part in name.split("."):
        fn = getattr(fn, part)
    return wrap_nested(fn(x._expr, *args, **kwargs), name=name.split(".")[-1])


@model("cnn", ("llvm", "cuda"),
       "small ResNet-style CNN, float32, NCHW: conv3x3 3->16 + ReLU, max_pool2d 2x2, "
       "conv3x3 stride 2 16->32 + ReLU, residual block (two conv3x3 32->32, ReLU, add), "
       "global avg_pool2d, Linear(32, 10), softmax; x [batch, 3, 32, 32], batch symbolic")
def _(target):
    nn, op = _nn()

    class CNN(nn.Module):
        def __init__(self):
            self.conv1 = nn.Conv2D(3, 16, 3, padding=1, bias=True)
            self.conv2 = nn.Conv2D(16, 32, 3, stride=2, padding=1, bias=True)
            self.res_a = nn.Conv2D(32, 32, 3, padding=1, bias=True)
            self.res_b = nn.Conv2D(32, 32, 3, padding=1, bias=True)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            y = op.relu(self.conv1(x))
            y = _relax_op("nn.max_pool2d", y, pool_size=(2, 2), strides=(2, 2))
            y = op.relu(self.conv2(y))
            y = op.relu(self.res_b(op.relu(self.res_a(y))) + y)
            y = _relax_op("nn.avg_pool2d", y, pool_size=(8, 8), strides=(8, 8))
            y = op.reshape(y, (x.shape[0], 32))
            return op.softmax(self.fc(y), axis=-1)

    return CNN(), {"forward": {"x": nn.spec.Tensor(["batch", 3, 32, 32], "float32")}}


@model("attention_block", ("llvm", "cuda"),
       "transformer encoder block (BERT-style, post-norm), float32: fused QKV Linear, "
       "op.scaled_dot_product_attention (relax nn.attention, 4 heads of 32), output "
       "Linear, residual + LayerNorm, GELU MLP 128->512->128, residual + LayerNorm; "
       "x [1, seq_len, 128], seq_len symbolic")
def _(target):
    nn, op = _nn()
    hidden, heads = 128, 4
    hd = hidden // heads

    class Block(nn.Module):
        def __init__(self):
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.out = nn.Linear(hidden, hidden)
            self.ln1 = nn.LayerNorm(hidden)
            self.fc1 = nn.Linear(hidden, 4 * hidden)
            self.fc2 = nn.Linear(4 * hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = op.split(op.reshape(self.qkv(x), (b, s, 3 * heads, hd)), 3, axis=2)
            a = op.scaled_dot_product_attention(q, k, v)
            x = self.ln1(x + self.out(op.reshape(a, (b, s, hidden))))
            return self.ln2(x + self.fc2(op.gelu(self.fc1(x))))

    return Block(), {"forward": {"x": nn.spec.Tensor([1, "seq_len", hidden], "float32")}}


@model("sampling", ("llvm", "cuda"),
       "the sampling step of an LLM server over logits [batch, 4096] float32, batch "
       "symbolic, one function each: softmax with temperature, argmax, top-k (k=8) values "
       "and indices, sort + argsort (descending) with top-p/top-k renormalisation "
       "(op.renormalize_top_p_top_k_prob), top-p/top-k sampling from sorted probabilities "
       "(op.sample_top_p_top_k_from_sorted_prob), multinomial sampling "
       "(op.multinomial_from_uniform), cumsum")
def _(target):
    nn, op = _nn()
    vocab = 4096

    class Sampler(nn.Module):
        def softmax_with_temperature(self, logits, temperature):
            t = op.reshape(temperature, (logits.shape[0], 1))
            return op.softmax(op.divide(logits, t), axis=-1)

        def argmax(self, logits):
            return _relax_op("argmax", logits, axis=-1, keepdims=False)

        def top_k(self, probs):
            return op.topk(probs, k=8, axis=-1, ret_type="both")

        def sort_probs(self, probs, top_p, top_k):
            sorted_probs = op.sort(probs, axis=-1, descending=True)
            sorted_idx = op.argsort(probs, axis=-1, descending=True, dtype="int32")
            renorm = op.renormalize_top_p_top_k_prob(probs, sorted_probs, top_p, top_k)
            return sorted_probs, sorted_idx, renorm

        def sample_top_p_top_k(self, sorted_probs, sorted_idx, top_p, top_k, uniform,
                               sample_indices):
            return op.sample_top_p_top_k_from_sorted_prob(sorted_probs, sorted_idx, top_p,
                                                          top_k, uniform, sample_indices)

        def multinomial(self, probs, uniform, sample_indices):
            return op.multinomial_from_uniform(probs, uniform, sample_indices)

        def cumsum(self, probs):
            return op.cumsum(probs, axis=-1)

    b = "batch"
    P = nn.spec.Tensor([b, vocab], "float32")
    spec = {
        "softmax_with_temperature": {"logits": P, "temperature": nn.spec.Tensor([b], "float32")},
        "argmax": {"logits": P},
        "top_k": {"probs": P},
        "sort_probs": {"probs": P, "top_p": nn.spec.Tensor([b, 1], "float32"),
                       "top_k": nn.spec.Tensor([b, 1], "int32")},
        "sample_top_p_top_k": {"sorted_probs": P,
                               "sorted_idx": nn.spec.Tensor([b, vocab], "int32"),
                               "top_p": nn.spec.Tensor([b, 1], "float32"),
                               "top_k": nn.spec.Tensor([b, 1], "int32"),
                               "uniform": nn.spec.Tensor([b, 1], "float32"),
                               "sample_indices": nn.spec.Tensor([b, 1], "int32")},
        "multinomial": {"probs": P, "uniform": nn.spec.Tensor([b, 1], "float32"),
                        "sample_indices": nn.spec.Tensor([b, 1], "int64")},
        "cumsum": {"probs": P},
    }
    for v in spec.values():
        v["$"] = {"param_mode": "none", "effect_mode": "none"}
    return Sampler(), spec


@model("vision", ("llvm", "cuda"),
       "vision operators, float32 NCHW, one function each: bilinear resize of an image of "
       "symbolic size to 224x224 (op.interpolate), max_pool2d 3x3 stride 2 and avg_pool2d "
       "2x2, conv2d 3x3 + group_norm (8 groups) + SiLU (a VAE/UNet block), nearest 2x "
       "upsample + conv2d 3x3, depthwise conv2d 3x3")
def _(target):
    nn, op = _nn()

    class Vision(nn.Module):
        def __init__(self):
            self.conv = nn.Conv2D(32, 32, 3, padding=1, bias=True)
            self.norm = nn.GroupNorm(8, 32)
            self.up_conv = nn.Conv2D(32, 16, 3, padding=1, bias=True)
            self.dw = nn.Conv2D(32, 32, 3, padding=1, groups=32, bias=False)

        def resize(self, image):
            return op.interpolate(image, size=(224, 224), mode="bilinear", align_corners=False)

        def pool(self, x):
            m = _relax_op("nn.max_pool2d", x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
            a = _relax_op("nn.avg_pool2d", x, pool_size=(2, 2), strides=(2, 2))
            return m, a

        def conv_norm_silu(self, x):
            return op.silu(self.norm(self.conv(x)))

        def upsample_conv(self, x):
            return self.up_conv(op.interpolate(x, scale_factor=2.0, mode="nearest"))

        def depthwise(self, x):
            return self.dw(x)

    X = nn.spec.Tensor([1, 32, 56, 56], "float32")
    spec = {"resize": {"image": nn.spec.Tensor([1, 3, "h", "w"], "float32")},
            "pool": {"x": X}, "conv_norm_silu": {"x": X}, "upsample_conv": {"x": X},
            "depthwise": {"x": X}}
    return Vision(), spec


MLC_KV = dict(num_attention_heads=32, num_key_value_heads=8, head_dim=128, layers=2,
              page_size=16)


@model("mlc_kv_cache", ("cuda", "llvm"),
       "the TIR kernels TVM ships for MLC-LLM's paged KV cache (tvm.relax.frontend.nn.llm."
       "kv_cache.TIRPagedKVCache, attn_kind 'mha', rope_mode NORMAL, Llama-3-8B shapes: "
       "32 query heads, 8 kv heads, head_dim 128, page_size 16): paged prefill and decode "
       "attention (plain and sliding-window), ragged prefill, tree attention (plain and "
       "with the paged cache), attention-state merge, rotary embedding with a position map, "
       "KV append, page copy, compact copy, debug read; float16 for cuda, float32 for llvm "
       "(the *_cpu kernels TIRPagedKVCache uses there)")
def _(target):
    from tvm import relax, tirx
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn.llm.kv_cache import RopeMode, TIRPagedKVCache
    c = MLC_KV
    dtype = "float16" if target.kind.name == "cuda" else "float32"

    class KV(nn.Module):
        def create_paged_kv_cache(self, max_batch_size: tirx.Var, max_total_seq_len: tirx.Var,
                                  prefill_chunk_size: tirx.Var, support_sliding_window: tirx.Var):
            return TIRPagedKVCache(
                attn_kind="mha", max_batch_size=max_batch_size,
                max_total_seq_len=max_total_seq_len, prefill_chunk_size=prefill_chunk_size,
                page_size=c["page_size"], support_sliding_window=support_sliding_window,
                layer_partition=relax.ShapeExpr([0, c["layers"]]),
                num_hidden_layers=c["layers"], num_attention_heads=c["num_attention_heads"],
                num_key_value_heads=c["num_key_value_heads"], qk_head_dim=c["head_dim"],
                v_head_dim=c["head_dim"], mla_original_qk_head_dim=0, mla_original_v_head_dim=0,
                rope_mode=RopeMode.NORMAL, rope_scale=1, rope_theta=500000,
                rope_scaling={}, rope_ext_factors=relax.prim_value(0),
                rotary_dim=c["head_dim"], enable_disaggregation=False, dtype=dtype,
                target=target)

    spec = {"create_paged_kv_cache": {
        "max_batch_size": int, "max_total_seq_len": int, "prefill_chunk_size": int,
        "support_sliding_window": int, "$": {"param_mode": "none", "effect_mode": "none"}}}
    return KV(), spec


# ======================================================================================
# The child: one model, one target
# ======================================================================================

def _first_line(e: BaseException) -> str:
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    # TVM's DiagnosticError puts the message on a line starting with "error:"
    for l in lines:
        if l.startswith("error:"):
            return "%s: %s" % (type(e).__name__, l[len("error:"):].strip())
    tail = [l for l in lines if not l.startswith(("File ", "Traceback", "^", "~"))]
    return "%s: %s" % (type(e).__name__, (tail[-1] if tail else "")[:300])


def _forked(fns: dict, jobs: int) -> dict:
    """Run each fn() of ``fns`` in a forked child, at most ``jobs`` at a time: name -> None
    if it returned, else how it died (the exception's first line, or the signal)."""
    import signal
    out: dict = {}
    running: dict = {}  # pid -> (name, read fd)
    todo = list(fns.items())

    def reap(pid, status):
        name, r = running.pop(pid)
        msg = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            msg += chunk
        os.close(r)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            out[name] = "TVM crashed (signal %d%s)" % (sig, ", SIGSEGV" if sig == 11 else "")
        else:
            out[name] = msg.decode(errors="replace") or None

    while todo or running:
        while todo and len(running) < jobs:
            name, fn = todo.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # child
                os.close(r)
                signal.signal(signal.SIGSEGV, signal.SIG_DFL)  # no backtrace printer: die
                msg = b""
                try:
                    fn()
                except BaseException as e:  # noqa: BLE001
                    msg = _first_line(e).encode()[:2000] or b"exception"
                os.write(w, msg)
                os._exit(0)
            os.close(w)
            running[pid] = (name, r)
        pid, status = os.wait()
        if pid in running:
            reap(pid, status)
    return out


def _header(text: str) -> str:
    return text.split("@I.ir_module", 1)[0]


def child(name: str, tname: str) -> dict:
    import tvm
    from tvm import relax, tirx
    from tvm.s_tir import dlight as dl

    m = next(x for x in MODELS if x.name == name)
    target = tvm.target.Target(TARGETS[tname])
    if tname == "cuda":
        from tvm.relax.backend.cuda import pipeline as backend
    else:
        from tvm.relax.backend.cpu_generic import pipeline as backend
    dropped: dict[str, str] = {}
    t0 = time.time()
    with target:
        module, spec = m.make(target)
        mod = module.export_tvm(spec=spec)[0]
        mod = tvm.transform.Sequential(backend.library_dispatch_passes(target))(mod)
        mod = relax.get_pipeline("zero")(mod)
    funcs = {gv.name_hint: f.with_attr("global_symbol", gv.name_hint)
             for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)}

    def rules():
        return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                       dl.gpu.GeneralReduction(), dl.gpu.Fallback())

    if tname == "cuda":
        def probe(one):
            def fn():
                with target:
                    rules()(one)
            return fn
        probes = {f: probe(tvm.IRModule({f: funcs[f]})) for f in sorted(funcs)}
        for fname, why in _forked(probes, os.cpu_count() or 1).items():
            if why is not None:
                dropped[fname] = "dlight: " + why
                del funcs[fname]
        with target:
            mod = rules()(tvm.IRModule(funcs))
        funcs = {gv.name_hint: f for gv, f in mod.functions.items()}

    # each function printed alone and parsed back
    parsed = {}
    for fname in sorted(funcs):
        text = tvm.IRModule({fname: funcs[fname]}).script()
        try:
            back = tvm.script.from_source(text)
            parsed[fname] = back[fname]
        except Exception as e:  # noqa: BLE001
            dropped[fname] = "TVM cannot parse its own print: " + _first_line(e)

    renamed = unclash_typevars(parsed)

    tt = tvm.target.Target(TARGETS[tname], host={"kind": "llvm"}) if tname == "cuda" \
        else tvm.target.Target(TARGETS[tname])

    def compile_check(fs: dict) -> None:
        mod = tvm.script.from_source(tvm.IRModule(fs).script())
        ex = tvm.compile(mod, target=tt)
        with tempfile.TemporaryDirectory() as d:
            ex.export_library(os.path.join(d, "lib.so"))
        if tname == "cuda" and nvrtc_available():
            import tvm.support.nvcc as nvcc
            src = [x.inspect_source() for x in ex.mod.imports if x.kind == "cuda"]
            with tt:
                for s in src:
                    nvcc.compile_cuda(s, target_format="cubin", compiler="nvrtc")

    try:
        compile_check(parsed)
    except Exception:  # noqa: BLE001  find the functions TVM fails on, one by one
        for fname in sorted(parsed):
            try:
                compile_check({fname: parsed[fname]})
            except Exception as e:  # noqa: BLE001
                dropped[fname] = "tvm.compile: " + _first_line(e)
        parsed = {k: v for k, v in parsed.items() if k not in dropped}
        compile_check(parsed)  # the rest must build together

    text = tvm.IRModule(parsed).script()
    tvm.script.from_source(text)
    path = OUT_DIR / ("%s.%s.tir" % (name, tname))
    path.write_text(text + ("" if text.endswith("\n") else "\n"))
    return {
        "file": path.name, "model": name, "target": TARGETS[tname],
        "functions": len(parsed), "names": sorted(parsed), "bytes": path.stat().st_size,
        "what": m.what, "source": source_line(tname),
        "left_out": {k: dropped[k] for k in sorted(dropped)},
        "renamed": {k: ["%s -> %s" % p for p in v] for k, v in sorted(renamed.items())},
        "seconds": round(time.time() - t0, 1),
    }


def _tokens(text: str) -> set:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def _rename(text: str, old: str, new: str) -> str:
    """``old`` -> ``new`` wherever it is a Python name (not inside a string, not a keyword
    argument's name), and in its ``old = TypeVar("old")`` line."""
    lines = text.splitlines(keepends=True)
    all_toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    toks, depth = [], 0
    for i, t in enumerate(all_toks):
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif t.type == tokenize.NAME and t.string == old:
            nxt = all_toks[i + 1] if i + 1 < len(all_toks) else None
            if depth and nxt is not None and nxt.type == tokenize.OP and nxt.string == "=":
                continue  # a keyword argument (elem_offset=...), not the variable
            toks.append(t)
    for t in reversed(toks):
        (row, c0), (_, c1) = t.start, t.end
        lines[row - 1] = lines[row - 1][:c0] + new + lines[row - 1][c1:]
    return "".join(lines).replace('TypeVar("%s")' % old, 'TypeVar("%s")' % new)


def unclash_typevars(funcs: dict) -> dict:
    """TVM 0.27 prints an int64 symbolic variable of a function's signature as a
    module-level ``n = TypeVar("n")`` line; in a module where another function declares a
    variable of the same name (``n = T.int32()``, or ``"n"`` in a shape), TVM cannot parse
    its own print ("Variable n already defined in current scope"). Such a signature
    variable is renamed (``n`` -> ``n_1``; a name changes nothing a function computes) and
    the function parsed back. Returns {function: [(old, new), ...]}; ``funcs`` is updated."""
    import tvm
    texts = {n: tvm.IRModule({n: f}).script() for n, f in funcs.items()}
    typevars = {n: re.findall(r'^(\w+) = TypeVar\("\w+"\)$', t, re.M) for n, t in texts.items()}
    all_tokens = set().union(*(_tokens(t) for t in texts.values())) if texts else set()
    done: dict = {}
    for n in sorted(funcs):
        for name in typevars[n]:
            clash = any(name in _tokens(texts[g]) and name not in typevars[g]
                        for g in funcs if g != n)
            if not clash:
                continue
            k = 1
            while "%s_%d" % (name, k) in all_tokens:
                k += 1
            new = "%s_%d" % (name, k)
            all_tokens.add(new)
            texts[n] = _rename(texts[n], name, new)
            done.setdefault(n, []).append((name, new))
        if n in done:
            funcs[n] = tvm.script.from_source(texts[n])[n]
    return done


def source_line(tname: str) -> str:
    s = ("nn.Module.export_tvm, then under Target(%s): the backend's "
         "library_dispatch_passes (DispatchSampling, DispatchSortScan), "
         "relax.get_pipeline('zero')" % json.dumps(TARGETS[tname]))
    if tname == "cuda":
        s += ", " + DLIGHT
    return s + "; PrimFuncs with global_symbol, printed by TVM 0.27 (IRModule.script())"


_NVRTC: list[bool] = []


def nvrtc_available() -> bool:
    if not _NVRTC:
        try:
            from cuda.bindings import nvrtc
            err, _, _ = nvrtc.nvrtcVersion()
            _NVRTC.append(int(err) == 0)
        except Exception:  # noqa: BLE001
            _NVRTC.append(False)
    return _NVRTC[0]


def cuda_env() -> dict:
    """TVM's NVRTC path looks for the CUDA headers under CUDA_PATH, else next to nvcc
    (/usr/local/bin/nvcc gives /usr/local, which has none)."""
    env = dict(os.environ)
    if "CUDA_PATH" not in env:
        for home in (env.get("CUDA_HOME"), "/usr/local/cuda"):
            if home and os.path.isfile(os.path.join(home, "include", "cuda_runtime.h")):
                env["CUDA_PATH"] = home
                break
    return env


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--target", choices=sorted(TARGETS), help="one target only")
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "TARGET"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        try:
            res = child(*args.child)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            res = {"model": args.child[0], "target": TARGETS[args.child[1]],
                   "failed": _first_line(e)}
        print("RESULT " + json.dumps(res))
        return 0

    import tvm
    only = set(args.only.split(",")) if args.only else None
    index_path = OUT_DIR / "index.json"
    old = json.loads(index_path.read_text())["files"] if index_path.exists() else []
    entries = {(e["model"], e["target"]["kind"]): e for e in old}
    failed = {}
    for m in MODELS:
        if only and m.name not in only:
            continue
        for t in m.targets:
            if args.target and t != args.target:
                continue
            print("%-16s %-5s ..." % (m.name, t), end=" ", file=sys.stderr, flush=True)
            p = subprocess.run([sys.executable, __file__, "--child", m.name, t],
                               capture_output=True, text=True, env=cuda_env())
            res = None
            for line in p.stdout.splitlines():
                if line.startswith("RESULT "):
                    res = json.loads(line[7:])
            if res is None:
                res = {"model": m.name, "target": TARGETS[t],
                       "failed": "generator died (exit %d): %s" % (
                           p.returncode, (p.stderr.strip().splitlines() or [""])[-1][:300])}
            if "failed" in res:
                failed["%s.%s" % (m.name, t)] = res["failed"]
                entries.pop((m.name, t), None)
                stale = OUT_DIR / ("%s.%s.tir" % (m.name, t))
                if stale.exists():
                    stale.unlink()
                print("FAILED: " + res["failed"], file=sys.stderr)
                continue
            entries[(m.name, t)] = res
            print("%d functions, %d B, %d left out, %.0f s" % (
                res["functions"], res["bytes"], len(res["left_out"]), res["seconds"]),
                file=sys.stderr)
    order = {m.name: i for i, m in enumerate(MODELS)}
    files = sorted(entries.values(), key=lambda e: (order.get(e["model"], 99), e["target"]["kind"]))
    for e in files:
        e.pop("seconds", None)
    index = {"generator": "bench/models/gen_models.py",
             "tvm": "apache-tvm %s" % tvm.__version__,
             "nvrtc_checked": nvrtc_available(),
             "files": files}
    if failed:
        index["not_made"] = failed
    index_path.write_text(json.dumps(index, indent=1) + "\n")
    total = sum(e["bytes"] for e in files)
    print("%d files, %d functions, %.2f MB" % (len(files), sum(e["functions"] for e in files),
                                               total / 1e6), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
