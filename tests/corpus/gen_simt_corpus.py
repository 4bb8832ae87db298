#!/usr/bin/env python
"""Cross-thread reductions of every shape LowerThreadAllreduce lowers differently, printed by
TVM 0.27, for the SIMT interpreter's tests (tests/testing/test_simt.py), in tests/corpus/simt/.

The block-level corpus (gen_sblock_corpus.py, whose machinery this reuses) has the common
shapes: one warp, whole warps, dlight's rules. These add the others: reductions over
fewer threads than a warp, over a number of threads that is not a multiple of the warp
(the shared-memory tree with warp-synchronous steps), over ``threadIdx.y``, over two
thread axes, several reduction groups in a block, a two-value reducer (argmax), and argmax
over every pair of index dtype (int32, int64) and value dtype (float32, float16, int32)
on each path (dlight's schedule for sm_90, one warp, the shared-memory tree), with the
one a model gets (relax's ``op.argmax`` legalized, dlight for sm_90).

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
import tvm
from tvm import s_tir, te, topi
from tvm.s_tir import dlight as dl

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


# Argmax, a two-value reducer of an index and a value, over every pair of index dtype
# (int32: te's int32 shapes; int64: relax's) and value dtype, through each path of
# LowerThreadAllreduce: dlight's schedule (256 threads: warp shuffles staged across
# warps in shared memory), one warp (shuffles only) and 48 threads (the shared-memory
# tree). dlight binds the write-back's threadIdx.x loop with the shape's dtype, after
# the reduction's int32 one in the int32 cases: the kernel mixes both.
ARCH = {}  # case name -> the arch its schedule was made for, where not sm_80
DLIGHT_SM90 = {"kind": "cuda", "arch": "sm_90"}


def argmax_te(m, n, index, value):
    X = te.placeholder((tvm.tirx.IntImm(index, m), tvm.tirx.IntImm(index, n)), value, name="X")
    return sb.te_mod(X, topi.argmax(X, axis=1))


def argmax_ref(index):
    return lambda i: [i[0].argmax(1).astype(index)]


def argmax_rows(mod, threads):
    """Rows to blockIdx.x, the reduction split [None, threads] on threadIdx.x, both
    temporaries in shared memory, the write-back under the row loop by one thread."""
    sch = s_tir.Schedule(mod)
    blk = sch.get_sblock("X_red_temp")
    i, k = sch.get_loops(blk)
    _k0, k1 = sch.split(k, [None, threads])
    sch.set_scope(blk, 0, "shared")
    sch.set_scope(blk, 1, "shared")
    out = sch.get_sblock("X_red")
    sch.reverse_compute_at(out, i)
    sch.bind(i, "blockIdx.x")
    sch.bind(k1, "threadIdx.x")
    return sch.mod


_INT_VALUES = {"X": sb.small_ints(-4, 4)}  # many ties: the first index must win


for _index in ("int32", "int64"):
    for _value in ("float32", "float16", "int32"):
        _kw = dict(ref=argmax_ref(_index), rtol=0, atol=0,
                   gen=_INT_VALUES if _value == "int32" else {})
        _tag = f"{_index[3:]}_{_value}"

        def _dlight(index=_index, value=_value):
            with tvm.target.Target(DLIGHT_SM90):
                return dl.ApplyDefaultSchedule(dl.gpu.Reduction(), dl.gpu.GeneralReduction(),
                                               dl.gpu.Fallback())(argmax_te(8, 1000, index, value))

        def _warp(index=_index, value=_value):
            return argmax_rows(argmax_te(8, 96, index, value), 32)

        def _tree(index=_index, value=_value):
            return argmax_rows(argmax_te(8, 96, index, value), 48)

        case(f"argmax_dlight_i{_tag}", f"topi.argmax X[8,1000] {_value}, {_index} index, "
             "dlight gpu.Reduction for sm_90 (256 threads, staged warp shuffles)", **_kw)(_dlight)
        ARCH[f"argmax_dlight_i{_tag}"] = "sm_90"
        case(f"argmax_warp_i{_tag}", f"topi.argmax X[8,96] {_value}, {_index} index, 32 "
             "threads per row (warp shuffles)", **_kw)(_warp)
        case(f"argmax_tree_i{_tag}", f"topi.argmax X[8,96] {_value}, {_index} index, 48 "
             "threads per row (shared-memory tree)", **_kw)(_tree)


def argmax_relax(m, n, value):
    """relax's op.argmax, legalized (LegalizeOps: topi.argmax over int64 shapes), as a
    model's PrimFunc is made."""
    from tvm import relax
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((m, n), value))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.argmax(x, axis=1)))
        bb.emit_func_output(out)
    mod = relax.transform.LegalizeOps()(bb.get())
    func = next(f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc))
    func = func.with_attr("global_symbol", "main")  # as a build gives it (AttachGlobalSymbol)
    sb.MADE.append(tvm.IRModule({"main": func}))
    return tvm.IRModule({"main": func})


@case("argmax_relax_dlight", "relax op.argmax of x[8,1000] float32 (axis 1, int64 index), "
      "legalized, dlight gpu.Reduction for sm_90", ref=argmax_ref("int64"), rtol=0, atol=0)
def _():
    with tvm.target.Target(DLIGHT_SM90):
        return dl.ApplyDefaultSchedule(dl.gpu.Reduction(), dl.gpu.GeneralReduction(),
                                       dl.gpu.Fallback())(argmax_relax(8, 1000, "float32"))


ARCH["argmax_relax_dlight"] = "sm_90"


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
        target = f"cuda -arch={ARCH[c.name]}" if c.name in ARCH else sb.TARGET_LABEL["cuda"]
        index.append({"name": c.name, "what": c.what, "target": target,
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
