#!/usr/bin/env python
"""Cross-thread reductions of every shape LowerThreadAllreduce lowers differently, printed by
TVM 0.27, for the SIMT interpreter's tests (tests/testing/test_simt.py), in tests/corpus/simt/.

The block-level corpus (gen_sblock_corpus.py, whose machinery this reuses) has the common
shapes: one warp, whole warps, dlight's rules. These add the others: reductions over
fewer threads than a warp, over a number of threads that is not a multiple of the warp
(the shared-memory tree with warp-synchronous steps), over ``threadIdx.y``, over two
thread axes, several reduction groups in a block, a two-value reducer (argmax).

    /tmp/tvmenv/bin/python tests/corpus/gen_simt_corpus.py           # (re)write the files
    /tmp/tvmenv/bin/python tests/corpus/gen_simt_corpus.py --check   # compare, write nothing

Writes NAME.tir (``mod.script()`` of the scheduled block-level module), expected/NAME.npz
(``arg<i>``/``out<i>`` as in the block-level corpus: the unscheduled computation built for
llvm by TVM and run on seeded inputs, checked against NumPy) and index.json (name, what,
params, outputs, rtol, atol, npz). Not a test module (it needs TVM).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from tvm import s_tir, te, topi

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_sblock_corpus as sb  # noqa: E402

OUT_DIR = Path(__file__).resolve().parent / "simt"
CASES: list[sb.Case] = []


def case(name, what, **kw):
    def deco(fn):
        CASES.append(sb.Case(name, "schedule", what, fn, target="cuda", **kw))
        return fn
    return deco


def rows_to_blocks(m, n, threads):
    """Row sums: rows to blockIdx.x, the reduction split [None, threads] with the inner
    loop bound to threadIdx.x."""
    sch = s_tir.Schedule(sb.te_mod(*sb.row_sum_te(m, n)))
    i, k = sch.get_loops(sch.get_sblock("B"))
    _k0, k1 = sch.split(k, [None, threads])
    sch.bind(i, "blockIdx.x")
    sch.bind(k1, "threadIdx.x")
    return sch.mod


def rows_to_threads(m, n, rows, threads, rows_axis="threadIdx.y", red_axis="threadIdx.x"):
    """Row sums with ``rows`` rows per block (bound to ``rows_axis``), each reduced by
    ``threads`` threads of ``red_axis``."""
    sch = s_tir.Schedule(sb.te_mod(*sb.row_sum_te(m, n)))
    i, k = sch.get_loops(sch.get_sblock("B"))
    i0, i1 = sch.split(i, [None, rows])
    k0, k1 = sch.split(k, [None, threads])
    sch.reorder(i0, i1, k0, k1)
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, rows_axis)
    sch.bind(k1, red_axis)
    return sch.mod


SUM = {"rtol": 1e-4, "atol": 1e-5, "ref": lambda i: [i[0].sum(1)]}


@case("sum_8", "row sum A[8,64], 8 threads per row (sub-warp shuffles)", **SUM)
def _():
    return rows_to_blocks(8, 64, 8)


@case("sum_20", "row sum A[8,20], 20 threads per row (shuffles, guarded)", **SUM)
def _():
    return rows_to_blocks(8, 20, 20)


@case("sum_96", "row sum A[8,192], 96 threads per row (3 warps staged in shared memory)", **SUM)
def _():
    return rows_to_blocks(8, 192, 96)


@case("sum_48", "row sum A[8,96], 48 threads per row (shared-memory tree, warp-synchronous steps)", **SUM)
def _():
    return rows_to_blocks(8, 96, 48)


@case("sum_1000", "row sum A[4,1000], 1000 threads per row (shared-memory tree)", **SUM)
def _():
    return rows_to_blocks(4, 1000, 1000)


@case("sum2d_16x4", "row sum A[16,64]: 4 rows per block on threadIdx.y, 16 threads each", **SUM)
def _():
    return rows_to_threads(16, 64, 4, 16)


@case("sum2d_20x3", "row sum A[12,60]: 3 rows per block on threadIdx.y, 20 threads each", **SUM)
def _():
    return rows_to_threads(12, 60, 3, 20)


@case("sum2d_96x3", "row sum A[12,96]: 3 rows per block on threadIdx.y, 96 threads each", **SUM)
def _():
    return rows_to_threads(12, 96, 3, 96)


@case("sumy_8x32", "row sum A[16,64]: 8 rows per block on threadIdx.x, reduced over threadIdx.y (32)", **SUM)
def _():
    return rows_to_threads(16, 64, 8, 32, rows_axis="threadIdx.x", red_axis="threadIdx.y")


@case("sumxy_16x8", "row sum A[8,256]: the reduction split over threadIdx.y (8) and threadIdx.x (16)", **SUM)
def _():
    sch = s_tir.Schedule(sb.te_mod(*sb.row_sum_te(8, 256)))
    i, k = sch.get_loops(sch.get_sblock("B"))
    _k0, k1, k2 = sch.split(k, [None, 8, 16])
    sch.bind(i, "blockIdx.x")
    sch.bind(k1, "threadIdx.y")
    sch.bind(k2, "threadIdx.x")
    return sch.mod


@case("max_40", "topi.max X[8,80] axis 1, 40 threads per row (shared-memory tree)",
      ref=lambda i: [i[0].max(1)])
def _():
    X = te.placeholder((8, 80), name="X")
    sch = s_tir.Schedule(sb.te_mod(X, topi.max(X, axis=1)))
    i, k = sch.get_loops(sch.get_sblock("X_red"))
    _k0, k1 = sch.split(k, [None, 40])
    sch.bind(i, "blockIdx.x")
    sch.bind(k1, "threadIdx.x")
    return sch.mod


@case("argmax_64", "topi.argmax X[16,256] axis 1, 64 threads per row (two-value reducer)",
      ref=lambda i: [i[0].argmax(1).astype("int32")], rtol=0, atol=0)
def _():
    X = te.placeholder((16, 256), name="X")
    sch = s_tir.Schedule(sb.te_mod(X, topi.argmax(X, axis=1)))
    i, k = sch.get_loops(sch.get_sblock("X_red_temp"))
    _k0, k1 = sch.split(k, [None, 64])
    sch.bind(i, "blockIdx.x")
    sch.bind(k1, "threadIdx.x")
    sch.bind(sch.get_loops(sch.get_sblock("X_red"))[0], "threadIdx.x")
    return sch.mod


def render() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    index = []
    for c in CASES:
        sb.MADE.clear()
        mod = c.make()
        base = sb.MADE[0]
        params = sb.describe_params(mod["main"], c.dims)
        if sb.describe_params(base["main"], c.dims) != params:
            raise RuntimeError(f"{c.name}: the unscheduled module has other parameters")
        n = len(params)
        outputs = list(range(n - c.n_out, n))
        ins, outs = sb.run_llvm(c, base, params, outputs)
        arrays = {f"arg{i}": a for i, a in enumerate(ins)}
        arrays.update({f"out{i}": a for i, a in enumerate(outs)})
        files[f"{c.name}.tir"] = mod.script().encode()
        files[f"expected/{c.name}.npz"] = sb.npz_bytes(arrays)
        index.append({"name": c.name, "what": c.what, "target": sb.TARGET_LABEL["cuda"],
                      "func": "main", "params": params, "outputs": outputs, "rtol": c.rtol,
                      "atol": c.atol, "npz": f"expected/{c.name}.npz"})
        print(f"ok {c.name}", file=sys.stderr)
    files["index.json"] = (json.dumps(index, indent=1) + "\n").encode()
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the files, write nothing")
    args = ap.parse_args(argv)
    files = render()
    if args.check:
        bad = [rel for rel, data in files.items()
               if not (OUT_DIR / rel).exists() or (OUT_DIR / rel).read_bytes() != data]
        stale = [str(p.relative_to(OUT_DIR)) for p in OUT_DIR.rglob("*")
                 if p.is_file() and str(p.relative_to(OUT_DIR)) not in files]
        for rel in bad + stale:
            print(f"differs: {rel}")
        print("check: all files identical" if not bad + stale else "check: FAILED")
        return 1 if bad + stale else 0
    (OUT_DIR / "expected").mkdir(parents=True, exist_ok=True)
    for p in list(OUT_DIR.rglob("*")):
        if p.is_file() and str(p.relative_to(OUT_DIR)) not in files:
            p.unlink()
    for rel, data in files.items():
        (OUT_DIR / rel).write_bytes(data)
    print(f"wrote {len(files)} files to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
