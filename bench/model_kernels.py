"""Run time of the model corpus's CPU kernels: every PrimFunc of every
``bench/models/*.llvm.tir`` file, built by tirc and by TVM 0.27, run in one process on
the same inputs, results compared, then timed interleaved.

* tirc: ``tirc.build.stages.build(text, "llvm", None, DIR, MODEL, shared=True)`` -> one
  ``MODEL.so`` per file (all its functions), and ``MODEL.json``, the manifest whose
  ``functions`` entries give every parameter's shape, dtype and whether it is written;
* TVM: ``tvm.compile(tvm.script.from_source(text), target="llvm")`` +
  ``export_library`` -> ``MODEL.tvm.so``;

both loaded with ``tvm_ffi.load_module`` and called with 64-byte-aligned copies of the
same NumPy arrays (bench/cpu_kernels.py's ``aligned``).

Inputs come from the buffer declarations (the manifest): symbolic dimensions get the
values of :data:`DIMS` (``seq_len`` 128, ``batch`` 4, ...; ``--dim NAME=N`` overrides);
float buffers are uniform in [-1, 1), integer buffers uniform in [0, 8) (a valid index
into every dimension of the corpus). Kernels that read index buffers with other
meanings (token ids, page tables, index pointers, tree orders, sorted cumulative
probabilities) get values built for them by :data:`SPECIAL` (one entry per function,
with what it builds). Scalars: :data:`SCALARS` by name. Nothing is skipped when every
function has valid inputs; a function that cannot be given them is listed with the
reason.

Check: every function runs once in each tool on fresh copies of the inputs, and every
buffer (outputs and in-place ones) must then be equal: integers and bool exactly,
floats within ``tirc.run.TOLERANCES`` of the dtype (NaN equal to NaN).

Timing: as bench/cpu_kernels.py, interleaved (the order rotating per round), a sample
is a loop of calls lasting about ``--sample-ms``, and a sample is quiet when other
processes used at most ``--max-other-load`` of the machine meanwhile (read from
/proc). Functions with a ``T.parallel`` loop wait 0.3 s before each sample (the other
runtime's idle workers stop spinning). ``--clock wall`` (default) gives wall time per
call; ``--clock cpu`` gives this process's CPU time per call (user + system, all
threads), which another process on the machine disturbs far less than wall time (for
diagnosis on a shared machine; for parallel functions it adds up the threads). The
table gives, per function, the medians (of the quiet samples; of all, marked
"(noisy)", when a tool has fewer than 3) and tirc / TVM; then the geometric mean of
tirc / TVM over all functions, and per model file.

    python bench/model_kernels.py [--only MODEL[:FUNC],...] [--repeat N]
                                  [--sample-ms MS] [--clock wall|cpu] [--threads N]
                                  [--max-other-load F] [--dim NAME=N] [--keep DIR]

Not a test: nothing here is collected by pytest.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "bench" / "models"
SETTLE_S = 0.3

# Symbolic dimensions of the corpus: sizes a model sees in use.
DIMS = {
    "seq_len": 128,      # llama / attention block prompt
    "batch": 4,          # cnn images, sampling rows
    "num_tokens": 128,   # moe tokens
    "h": 240, "w": 320,  # vision: image resized to 224 x 224
    "vocab_size": 4096, "out_batch": 4,  # sampling
}

# Scalars by name (the kv-cache kernels' attention parameters).
SCALARS = {
    "rotary_mode": 0,  # rope applied by fused_rope beforehand (rope_mode NORMAL)
    "rope_scale": 1.0, "rope_theta": 500000.0,
    "sm_scale": 1.0 / math.sqrt(128) * math.log2(math.e),  # the kernels use exp2
    "causal": 1, "apply_rope": 1, "layer_id": 1,
}


# ------------------------------------------------------------------ special inputs
# The paged KV cache (mlc_kv_cache): 4 sequences of 8 pages of 16 tokens each, the
# last page partly filled; pages scattered over a pool of 40.
PAGE, SEQS, PAGES_PER_SEQ, POOL = 16, 4, 8, 40
LAST_PAGE_LEN = [16, 5, 9, 12]
Q_PER_SEQ = 16  # prefill / tree chunk per sequence


def _kv_pages(rng, np):
    values = rng.permutation(POOL)[:SEQS * PAGES_PER_SEQ].astype(np.int32)
    indptr = np.arange(0, SEQS * PAGES_PER_SEQ + 1, PAGES_PER_SEQ, dtype=np.int32)
    kv_len = [(PAGES_PER_SEQ - 1) * PAGE + n for n in LAST_PAGE_LEN]
    return values, indptr, kv_len


def _q_indptr(np):
    return np.arange(0, SEQS * Q_PER_SEQ + 1, Q_PER_SEQ, dtype=np.int32)


def _q_positions(kv_len, np):
    return np.concatenate([np.arange(n - Q_PER_SEQ, n) for n in kv_len]).astype(np.int32)


def _chain_tree(np, n=Q_PER_SEQ, seqs=SEQS):
    """Tree orders of ``seqs`` chains of ``n`` nodes: node i is entered at i and left
    at n, so each node's ancestors are the nodes before it."""
    one = np.stack([np.arange(n), np.full(n, n)], axis=1)
    return np.concatenate([one] * seqs).astype(np.int32)


def _decode_sw(rng, np):
    values, indptr, kv_len = _kv_pages(rng, np)
    info = np.zeros((3, SEQS), np.int32)
    info[0] = LAST_PAGE_LEN  # last page length; sliding-window offset and sink size 0
    return ({"B": SEQS, "max_num_pages": POOL, "nnz_pages": len(values)},
            {"page_table_indptr": indptr, "page_table_values": values, "length_info": info,
             "k_rope_pos_offset": np.zeros(SEQS, np.int32),
             "q_rope_position": np.array(kv_len, np.int32) - 1})


def _prefill_paged(sliding: bool, tree: bool = False):
    def make(rng, np):
        values, indptr, kv_len = _kv_pages(rng, np)
        if sliding:
            info = np.zeros((3, SEQS), np.int32)
            info[0] = LAST_PAGE_LEN
        else:
            info = np.array(LAST_PAGE_LEN, np.int32)
        dims = {"batch_size": SEQS, "total_len": SEQS * Q_PER_SEQ, "max_num_pages": POOL,
                "nnz_pages": len(values)}
        arrays = {"q_indptr": _q_indptr(np), "page_indptr": indptr, "page_values": values,
                  "length_info": info, "k_rope_pos_offset": np.zeros(SEQS, np.int32),
                  "q_rope_position": _q_positions(kv_len, np)}
        if tree:
            dims["total_tree_order_len"] = SEQS * Q_PER_SEQ
            arrays["tree_order_indptr"] = _q_indptr(np)
            arrays["tree_order"] = _chain_tree(np)
        return dims, arrays
    return make


def _ragged(tree: bool):
    def make(rng, np):
        kv_per_seq = 64 if not tree else Q_PER_SEQ
        dims = {"qo_len": SEQS * Q_PER_SEQ, "kv_len": SEQS * kv_per_seq}
        kv_indptr = np.arange(0, SEQS * kv_per_seq + 1, kv_per_seq, dtype=np.int32)
        arrays = {"q_indptr": _q_indptr(np), "kv_indptr": kv_indptr,
                  "q_rope_position": _q_positions([kv_per_seq] * SEQS, np)}
        if tree:
            dims.update(batch_size_plus_1=SEQS + 1, tree_size=SEQS * Q_PER_SEQ)
            arrays.update(mn_indptr=_q_indptr(np), mask=_chain_tree(np))
        else:
            dims["batch_size"] = SEQS
            arrays["k_rope_pos_offset"] = np.zeros(SEQS, np.int32)
        return dims, arrays
    return make


def _compact_copy(rng, np):
    n = 48  # tokens moved, 12 per sequence, from the tail of the pool to its head
    src = rng.permutation(np.arange(POOL // 2 * PAGE, POOL * PAGE))[:n]
    dst = rng.permutation(np.arange(0, POOL // 2 * PAGE))[:n]
    return ({"num_pages": POOL, "batch_size": SEQS, "total_copy_length": n},
            {"copy_length_indptr": np.arange(0, n + 1, n // SEQS, dtype=np.int32),
             "copy_src_dst_pos": np.stack([src, dst]).astype(np.int32)},
            {"batch_size": SEQS})


def _positions(dim: str, count: int, pool_dim: str):
    """``count`` distinct token positions in a pool of POOL pages (``position_map``)."""
    def make(rng, np):
        return ({dim: count, pool_dim: POOL},
                {"position_map": rng.permutation(POOL * PAGE)[:count].astype(np.int32)})
    return make


def _sorted_probs(rng, np, batch, vocab):
    x = rng.standard_normal((batch, vocab))
    p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    order = np.argsort(-p, axis=1)
    cum = np.cumsum(np.take_along_axis(p, order, axis=1), axis=1)
    return cum.astype(np.float32), order.astype(np.int32), p.astype(np.float32)


def _index_from_sorted(rng, np):
    b, v, ob = DIMS["batch"], DIMS["vocab_size"], DIMS["out_batch"]
    cum, order, _ = _sorted_probs(rng, np, b, v)
    return ({}, {"cumsum_sorted": cum, "indices": order,
                 "renorm_prob": cum[:, -1:].copy(),
                 "usample": rng.random((ob, 1)).astype(np.float32),
                 "sample_indices": rng.integers(0, b, (ob, 1)).astype(np.int32)})


def _renorm_prob(rng, np):
    b, v = DIMS["batch"], DIMS["vocab_size"]
    cum, _, _ = _sorted_probs(rng, np, b, v)
    return ({}, {"cumsum_sorted": cum,
                 "top_p": rng.uniform(0.5, 1.0, (b, 1)).astype(np.float32),
                 "top_k": rng.integers(1, v + 1, (b, 1)).astype(np.int32)})


def _sample_index(rng, np):
    b, v, ob = DIMS["batch"], DIMS["vocab_size"], DIMS["out_batch"]
    _, _, p = _sorted_probs(rng, np, b, v)
    return ({}, {"prob": p, "usample": rng.random((ob, 1)).astype(np.float32),
                 "sample_indices": rng.integers(0, b, (ob, 1)).astype(np.int64)})


def _token_ids(vocab: int):
    def make(rng, np):
        return ({}, {"reshape": rng.integers(0, vocab, DIMS["seq_len"]).astype(np.int32)})
    return make


# (model, function) -> rng, numpy -> (dims, arrays by parameter name[, scalars])
SPECIAL = {
    ("llama_f32", "take"): _token_ids(512),  # token ids into the 512-row embedding
    ("llama_f16", "take"): _token_ids(1024),
    ("sampling", "get_index_from_sorted"): _index_from_sorted,
    ("sampling", "get_renorm_prob"): _renorm_prob,
    ("sampling", "get_sample_index"): _sample_index,
    ("mlc_kv_cache", "batch_decode_paged_kv_cpu_sliding_window"): _decode_sw,
    ("mlc_kv_cache", "batch_prefill_paged_kv_cpu"): _prefill_paged(False),
    ("mlc_kv_cache", "batch_prefill_paged_kv_cpu_sliding_window"): _prefill_paged(True),
    ("mlc_kv_cache", "tree_attn_paged_kv_cpu"): _prefill_paged(False, tree=True),
    ("mlc_kv_cache", "batch_prefill_ragged_kv"): _ragged(False),
    ("mlc_kv_cache", "batch_tree_attn"): _ragged(True),
    ("mlc_kv_cache", "compact_kv_copy_cpu"): _compact_copy,
    ("mlc_kv_cache", "copy_single_page_cpu"): lambda rng, np: (
        {"num_pages": POOL}, {}, {"src_page_id": 3, "tgt_page_id": 17, "copy_length": 11}),
    ("mlc_kv_cache", "fused_rope"): lambda rng, np: (
        {}, {"position_map": rng.integers(0, 4096, DIMS["seq_len"]).astype(np.int32)}),
    ("mlc_kv_cache", "merge_state_inplace_cpu"): lambda rng, np: (
        {"N": 64, "H": 32, "D": 128}, {}),
    ("mlc_kv_cache", "tir_kv_cache_debug_get_kv"): lambda rng, np: (
        {"num_pages_1": POOL, "page_size": PAGE, "seqlen": 256},
        {"position_map": rng.permutation(POOL * PAGE)[:256].astype(np.int32)}),
    ("mlc_kv_cache", "tir_kv_cache_transpose_append"): _positions("ntoken", 128,
                                                                   "num_pages_2"),
    ("mlc_kv_cache", "tir_kv_cache_transpose_append_mla"): _positions("ntoken", 128,
                                                                       "num_pages_3"),
}


# ------------------------------------------------------------------ inputs and checks

def make_inputs(model: str, entry: dict, rng, dims_over: dict):
    import numpy as np

    from tirc.run import _eval_dim
    from tirc.runtime import as_dtype
    dims = dict(DIMS)
    dims.update(dims_over)
    arrays, scalars = {}, {}
    special = SPECIAL.get((model, entry["name"]))
    if special is not None:
        made = special(rng, np)
        dims.update(made[0])
        arrays = made[1]
        if len(made) > 2:
            scalars = made[2]
    values = []
    for p in entry["params"]:
        name, dt = p["name"], p["dtype"]
        if p["kind"] != "buffer":
            if name in scalars:
                values.append(scalars[name])
            elif name in SCALARS:
                values.append(SCALARS[name])
            elif name in dims:
                values.append(dims[name])
            else:
                raise ValueError(f"no value for the scalar '{name}' ({dt})")
            continue
        shape = tuple(s if isinstance(s, int) else _eval_dim(s, dims, name)
                      for s in p["shape"])
        if name in arrays:
            a = np.asarray(arrays[name], as_dtype(dt))
            if a.shape != shape:
                raise ValueError(f"'{name}': made {a.shape}, declared {shape}")
        else:
            npdt = as_dtype(dt)
            if np.issubdtype(npdt, np.integer):
                a = rng.integers(0, 8, shape).astype(npdt)
            elif npdt == np.bool_:
                a = rng.random(shape) < 0.5
            else:
                a = rng.uniform(-1.0, 1.0, shape).astype(np.float32).astype(npdt)
        values.append(a)
    return values


def same(a, b) -> str | None:
    """None when ``a`` (tirc's) equals ``b`` (TVM's) as the dtype allows, else why not."""
    import numpy as np

    from tirc.run import TOLERANCES
    if a.dtype.kind in "iub":
        if np.array_equal(a, b):
            return None
        return f"{int(np.sum(a != b))} of {a.size} elements differ"
    rtol, atol = TOLERANCES.get(str(a.dtype), (1e-4, 1e-5))
    x, y = a.astype(np.float64), b.astype(np.float64)
    if np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
        return None
    bad = ~np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
    return (f"{int(bad.sum())} of {a.size} elements differ "
            f"(max abs diff {float(np.nanmax(np.abs(x - y)[bad])):g})")


# ------------------------------------------------------------------ timing

def _ticks():
    sys.path.insert(0, str(ROOT / "bench"))
    from cpu_kernels import _ticks as t
    return t()


def time_pair(tools, repeat: int, sample_s: float, max_other: float, settle: float,
              clock: str):
    """Interleaved samples of each ``(name, fn, args)``; per tool (median, quiet/taken,
    noisy)."""
    from cpu_kernels import calibrate, other_load
    calls = min(calibrate(fn, a, sample_s) for _, fn, a in tools)
    taken = {who: [] for who, _, _ in tools}
    for rnd in range(3 * repeat):
        shift = rnd % len(tools)
        for who, fn, a in tools[shift:] + tools[:shift]:
            if settle:
                time.sleep(settle)
            before = _ticks()
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(calls):
                fn(*a)
            t1, c1 = time.perf_counter(), time.process_time()
            t = (c1 - c0 if clock == "cpu" else t1 - t0) / calls
            taken[who].append((t, other_load(before, _ticks())))
        quiet = [sum(1 for _, ld in xs if ld <= max_other) for xs in taken.values()]
        if rnd + 1 >= repeat and min(quiet) >= repeat:
            break
    out = {}
    for who, xs in taken.items():
        quiet = [t for t, ld in xs if ld <= max_other]
        use = quiet if len(quiet) >= 3 else [t for t, _ in xs]
        out[who] = (statistics.median(use), f"{len(quiet)}/{len(xs)}", len(quiet) < 3)
    load = statistics.median(ld for xs in taken.values() for _, ld in xs)
    return calls, out, load


# ------------------------------------------------------------------ main

def function_texts(text: str) -> dict[str, str]:
    """Each function's text in a module file, by name."""
    parts = re.split(r"\n    @T\.prim_func", text)
    out = {}
    for p in parts[1:]:
        m = re.search(r"def (\w+)\(", p)
        if m:
            out[m.group(1)] = p
    return out


def build_both(path: Path, out: Path):
    import tvm
    import tvm_ffi

    from tirc.build.stages import build
    model = path.name.split(".")[0]
    text = path.read_text()
    build(text, "llvm", None, out, model, shared=True)
    manifest = json.loads((out / f"{model}.json").read_text())
    ex = tvm.compile(tvm.script.from_source(text), target=tvm.target.Target({"kind": "llvm"}))
    tvm_path = out / f"{model}.tvm.so"
    ex.export_library(str(tvm_path))
    return (manifest, tvm_ffi.load_module(str(out / f"{model}.so")),
            tvm_ffi.load_module(str(tvm_path)), function_texts(text))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="MODEL or MODEL:FUNC, comma-separated")
    ap.add_argument("--repeat", type=int, default=7, help="quiet samples wanted per tool")
    ap.add_argument("--sample-ms", type=float, default=50.0)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="OMP_NUM_THREADS and TVM_NUM_THREADS (default: cores)")
    ap.add_argument("--max-other-load", type=float, default=0.05, metavar="F")
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=N")
    ap.add_argument("--no-time", action="store_true", help="check only")
    ap.add_argument("--keep", default=None, help="write the libraries here and keep them")
    args = ap.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    sys.path.insert(0, str(ROOT / "bench"))
    import numpy as np
    import tvm
    from cpu_kernels import aligned, fmt_time
    dims_over = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    want = [w.strip() for w in args.only.split(",") if w.strip()]

    def wanted(model, func=None):
        if not want:
            return True
        for w in want:
            m, _, f = w.partition(":")
            if m == model and (func is None or not f or f == func):
                return True
        return False

    tmp = None
    if args.keep:
        out = Path(args.keep)
        out.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="model_kernels_")
        out = Path(tmp.name)
    print(f"# model corpus CPU kernels: tirc vs TVM {tvm.__version__}, target llvm; "
          f"{os.cpu_count()} cores, threads {args.threads}; clock {args.clock}; "
          f"{args.repeat} quiet samples (other load <= {args.max_other_load:.0%}) of "
          f"~{args.sample_ms:.0f} ms per tool; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
          flush=True)
    rng = np.random.default_rng(0)
    rows, skipped, failed = [], [], []
    for path in sorted(MODELS.glob("*.llvm.tir")):
        model = path.name.split(".")[0]
        if not wanted(model):
            continue
        manifest, lib_tirc, lib_tvm, texts = build_both(path, out)
        for entry in manifest["functions"]:
            name = entry["name"]
            if not wanted(model, name):
                continue
            try:
                inputs = make_inputs(model, entry, rng, dims_over)
            except ValueError as e:
                skipped.append((model, name, str(e)))
                print(f"  {model}:{name}: skipped: {e}", file=sys.stderr, flush=True)
                continue
            fns = {"tirc": lib_tirc[name], "TVM": lib_tvm[name]}
            got = {}
            for who, fn in fns.items():
                a = [aligned(x) if isinstance(x, np.ndarray) else x for x in inputs]
                fn(*a)
                got[who] = a
            diffs = []
            for p, x, y in zip(entry["params"], got["tirc"], got["TVM"]):
                if isinstance(x, np.ndarray):
                    why = same(x, y)
                    if why:
                        diffs.append(f"{p['name']}: {why}")
            if diffs:
                failed.append((model, name, "; ".join(diffs)))
                print(f"  {model}:{name}: tirc's result differs from TVM's: "
                      + "; ".join(diffs), file=sys.stderr, flush=True)
                continue
            if args.no_time:
                print(f"  {model}:{name}: same results", file=sys.stderr, flush=True)
                continue
            par = "T.parallel" in texts.get(name, "")
            tools = [(who, fn, [aligned(x) if isinstance(x, np.ndarray) else x
                                for x in inputs]) for who, fn in fns.items()]
            calls, r, load = time_pair(tools, args.repeat, args.sample_ms / 1e3,
                                       args.max_other_load, SETTLE_S if par else 0.0,
                                       args.clock)
            rows.append((model, name, par, r, load))
            print(f"  {model}:{name}: tirc {fmt_time(r['tirc'][0])}, TVM "
                  f"{fmt_time(r['TVM'][0])}, {r['tirc'][0] / r['TVM'][0]:.2f} ({calls} "
                  f"calls/sample, quiet {r['tirc'][1]} / {r['TVM'][1]})",
                  file=sys.stderr, flush=True)
    if rows:
        print("| model | function | tirc | TVM 0.27 | tirc / TVM | quiet samples tirc / TVM "
              "| other load |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for model, name, par, r, load in rows:
            noisy = " (noisy)" if r["tirc"][2] or r["TVM"][2] else ""
            print(f"| {model} | {name}{' (parallel)' if par else ''} | "
                  f"{fmt_time(r['tirc'][0])} | {fmt_time(r['TVM'][0])} | "
                  f"{r['tirc'][0] / r['TVM'][0]:.2f}{noisy} | {r['tirc'][1]} / {r['TVM'][1]} "
                  f"| {load:.0%} |")
        print()
        ratios = [r["tirc"][0] / r["TVM"][0] for _, _, _, r, _ in rows]
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"geometric mean of tirc / TVM over {len(rows)} functions: {gm:.3f}; "
              f"max {max(ratios):.2f}; above 1.1: "
              + (", ".join(f"{m}:{n} {r['tirc'][0] / r['TVM'][0]:.2f}"
                           for m, n, _, r, _ in rows if r["tirc"][0] / r["TVM"][0] > 1.1)
                 or "none"))
        per = {}
        for (m, _, _, _, _), x in zip(rows, ratios):
            per.setdefault(m, []).append(x)
        print("per model: " + ", ".join(
            f"{m} {math.exp(sum(map(math.log, xs)) / len(xs)):.3f}" for m, xs in per.items()))
    for model, name, why in skipped:
        print(f"skipped {model}:{name}: {why}")
    for model, name, why in failed:
        print(f"DIFFERENT {model}:{name}: {why}")
    if tmp is not None:
        tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
