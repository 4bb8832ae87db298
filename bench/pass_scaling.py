"""Pass scaling: every pass linear in the size of what it works on.

Each family below makes a kernel at a base size and doubles it four times (``--sizes``,
multipliers of the base, default 1,2,4,8,16), builds each up to the host/device split
with ``tirc.build.stages.build(..., stop_after="split", write=False)`` and reads each
pass's time from ``BuildResult.pass_times`` (what ``--time-passes`` prints), the least
of ``--repeat`` rounds (each round builds every size once, so that a change of the
machine's load moves all sizes alike). For every pass it prints the time at each size
and the growth ratio per doubling, ``t(2n) / t(n)``: a linear pass grows 2x (less while
fixed costs dominate), a quadratic one 4x. A pass is flagged (``!!``) when its ratio over the last
two doublings (their geometric mean) is above ``--threshold`` (2.3) and it takes at
least ``--min-ms`` at the largest size (tinier times are noise on a shared machine).
The IR nodes the pipeline leaves (the split modules' statements and expressions) are
counted too, so the table shows how the work itself grew.

Families (``--families``):

* ``unroll``: a dlight GPU matmul (``tests/corpus/sblock/dl_gpu_matmul.tir``, the rule's
  shared-memory tiling with ``pragma_auto_unroll_max_step``), its per-thread tile of rows
  ``2 * size`` (the corpus kernel is size 2): the auto-unrolled update, the shared-memory
  loads and the write-back grow with it, so UnrollLoop, CommonSubexprElim and ThreadSync
  see twice the statements per doubling.
* ``stmts``: one kernel of ``64 * size`` shared-memory stages (ping-pong buffers, each
  stage reading another thread's element: a barrier before each), straight-line code.
* ``funcs``: a module of ``size`` copies of the corpus matmul (the number of functions).

    python bench/pass_scaling.py [--sizes 1,2,4,8,16] [--families unroll,stmts,funcs]
                                 [--repeat 3] [--threshold 2.3] [--min-ms 5] [--passes A,B]
                                 [--gc]

Each build starts after a full garbage collection and, unless ``--gc``, runs without
one: a collection's pause lands in whichever pass happens to make the allocation that
triggers it, and on the larger modules it grows every pass's time alike (funcs, 8 -> 16
functions: every pass ~3.4x with collection, ~2.0x without), which says nothing of the
passes' algorithms. ``--gc`` measures the process as a build runs it.

Exit status 0 whatever the figures (a benchmark, not a test); the flagged passes are
listed at the end. Not collected by pytest (tests/corpora/test_bench_smoke.py runs it
with the smallest sizes).
"""
from __future__ import annotations

import argparse
import gc
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET = "cuda -arch=sm_90"

# -- the kernels ------------------------------------------------------------------------------

_MATMUL = '''
    @T.prim_func(s_tir=True)
    def {name}(A: T.Buffer(({m}, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer(({m}, 128), "float32")):
        T.func_attr({{"tirx.is_scheduled": True, "tirx.noalias": True}})
        C_reindex_local = T.sblock_alloc_buffer((1, {m}, 128), scope="local")
        A_reindex_shared = T.sblock_alloc_buffer((1, {m}, 128), scope="shared")
        B_reindex_shared = T.sblock_alloc_buffer((1, 128, 128), scope="shared")
        for ax0_ax2_0_fused in T.thread_binding(2, thread="blockIdx.y"):
            for ax1_0 in T.thread_binding(4, thread="blockIdx.x"):
                for ax2_1 in T.thread_binding(1, thread="vthread.y"):
                    for ax1_1 in T.thread_binding(1, thread="vthread.x"):
                        for ax2_2 in T.thread_binding(16, thread="threadIdx.y"):
                            for ax1_2 in T.thread_binding(8, thread="threadIdx.x", annotations={{"pragma_auto_unroll_max_step": {max_step}, "pragma_unroll_explicit": 1}}):
                                for ax1_3_init, ax2_3_0_init in T.grid({r}, 2):
                                    for ax2_3_1_init in T.vectorized(2):
                                        with T.sblock("C_init"):
                                            v0 = T.axis.spatial(1, 0)
                                            v1 = T.axis.spatial({m}, ax1_0 * {tile} + ax1_1 * {tile} + ax1_2 * {r} + ax1_3_init)
                                            v2 = T.axis.spatial(128, ax0_ax2_0_fused * 64 + ax2_1 * 64 + ax2_2 * 4 + ax2_3_0_init * 2 + ax2_3_1_init)
                                            T.reads()
                                            T.writes(C_reindex_local[0, v1, v2])
                                            C_reindex_local[0, v1, v2] = T.float32(0.0)
                                for ax3_0 in range(8):
                                    for ax0_ax1_ax2_fused_0 in T.thread_binding(16, thread="threadIdx.y"):
                                        for ax0_ax1_ax2_fused_1 in T.thread_binding(8, thread="threadIdx.x"):
                                            for ax0_ax1_ax2_fused_2 in range({a_steps}):
                                                for ax0_ax1_ax2_fused_3 in T.vectorized(2):
                                                    with T.sblock("A_reindex_shared"):
                                                        v0 = T.axis.spatial(1, 0)
                                                        v1 = T.axis.spatial({m}, ax1_0 * {tile} + (ax0_ax1_ax2_fused_0 * {tile} + ax0_ax1_ax2_fused_1 * {r} + ax0_ax1_ax2_fused_2 * 2 + ax0_ax1_ax2_fused_3) // 16)
                                                        v2 = T.axis.spatial(128, ax3_0 * 16 + (ax0_ax1_ax2_fused_0 * {tile} + ax0_ax1_ax2_fused_1 * {r} + ax0_ax1_ax2_fused_2 * 2 + ax0_ax1_ax2_fused_3) % 16)
                                                        T.reads(A[v1, v2])
                                                        T.writes(A_reindex_shared[v0, v1, v2])
                                                        T.sblock_attr({{"buffer_dim_align": [[0, 1, 8, 2]]}})
                                                        A_reindex_shared[v0, v1, v2] = A[v1, v2]
                                    for ax0_ax1_ax2_fused_0 in T.thread_binding(16, thread="threadIdx.y"):
                                        for ax0_ax1_ax2_fused_1 in T.thread_binding(8, thread="threadIdx.x"):
                                            for ax0_ax1_ax2_fused_2 in range(4):
                                                for ax0_ax1_ax2_fused_3 in T.vectorized(2):
                                                    with T.sblock("B_reindex_shared"):
                                                        v0 = T.axis.spatial(1, 0)
                                                        v1 = T.axis.spatial(128, ax0_ax2_0_fused * 64 + (ax0_ax1_ax2_fused_0 * 64 + ax0_ax1_ax2_fused_1 * 8 + ax0_ax1_ax2_fused_2 * 2 + ax0_ax1_ax2_fused_3) // 16)
                                                        v2 = T.axis.spatial(128, ax3_0 * 16 + (ax0_ax1_ax2_fused_0 * 64 + ax0_ax1_ax2_fused_1 * 8 + ax0_ax1_ax2_fused_2 * 2 + ax0_ax1_ax2_fused_3) % 16)
                                                        T.reads(B[v2, v1])
                                                        T.writes(B_reindex_shared[v0, v1, v2])
                                                        T.sblock_attr({{"buffer_dim_align": [[0, 1, 8, 2]]}})
                                                        B_reindex_shared[v0, v1, v2] = B[v2, v1]
                                    for ax3_1, ax1_3, ax2_3_0 in T.grid(16, {r}, 2):
                                        for ax2_3_1 in T.vectorized(2):
                                            with T.sblock("C_update"):
                                                v0 = T.axis.spatial(1, 0)
                                                v1 = T.axis.spatial({m}, ax1_0 * {tile} + ax1_1 * {tile} + ax1_2 * {r} + ax1_3)
                                                v2 = T.axis.spatial(128, ax0_ax2_0_fused * 64 + ax2_1 * 64 + ax2_2 * 4 + ax2_3_0 * 2 + ax2_3_1)
                                                v3 = T.axis.reduce(128, ax3_0 * 16 + ax3_1)
                                                T.reads(C_reindex_local[0, v1, v2], A_reindex_shared[0, v1, v3], B_reindex_shared[0, v2, v3])
                                                T.writes(C_reindex_local[0, v1, v2])
                                                C_reindex_local[0, v1, v2] = C_reindex_local[0, v1, v2] + A_reindex_shared[0, v1, v3] * B_reindex_shared[0, v2, v3]
                                for ax0, ax1, ax2_0 in T.grid(1, {r}, 2):
                                    for ax2_1_1 in T.vectorized(2):
                                        with T.sblock("C_reindex_local"):
                                            v0 = T.axis.spatial(1, ax0)
                                            v1 = T.axis.spatial({m}, ax1_0 * {tile} + ax1_2 * {r} + ax1)
                                            v2 = T.axis.spatial(128, ax0_ax2_0_fused * 64 + ax2_2 * 4 + ax2_0 * 2 + ax2_1_1)
                                            T.reads(C_reindex_local[v0, v1, v2])
                                            T.writes(C[v1, v2])
                                            C[v1, v2] = C_reindex_local[v0, v1, v2]
'''

_HEADER = "@I.ir_module\nclass Module:"


def matmul(name: str = "main", rows: int = 4) -> str:
    """The corpus's dlight matmul (``rows`` = 4 is tests/corpus/sblock/dl_gpu_matmul.tir)
    with a per-thread tile of ``rows`` rows (even): the block's tile is ``8 * rows`` rows
    of A, loaded into shared memory ``rows / 2`` vector pairs a thread."""
    assert rows >= 2 and rows % 2 == 0
    return _MATMUL.format(name=name, r=rows, tile=8 * rows, m=32 * rows, a_steps=rows // 2,
                          max_step=64 * rows)


def unroll_family(size: int) -> str:
    return f"{_HEADER}{matmul(rows=2 * size)}"


def funcs_family(size: int) -> str:
    return _HEADER + "".join(matmul(f"main_{k}") for k in range(size))


def stmts_family(size: int) -> str:
    stages = 64 * size
    lines = [
        _HEADER,
        "    @T.prim_func",
        '    def main(A: T.Buffer((65536,), "float32"), B: T.Buffer((65536,), "float32")):',
        '        T.func_attr({"tir.noalias": True})',
        '        for bx in T.thread_binding(256, thread="blockIdx.x"):',
        '            for tx in T.thread_binding(256, thread="threadIdx.x"):',
        "                s0 = T.alloc_shared((256,))",
        "                s1 = T.alloc_shared((256,))",
        "                s0[tx] = A[bx * 256 + tx]",
    ]
    for k in range(stages):
        src, dst = (f"s{k % 2}", f"s{(k + 1) % 2}")
        lines.append(f"                {dst}[tx] = {src}[(tx + {k % 255 + 1}) % 256] * "
                     f"T.float32({k + 1}) + A[bx * 256 + (tx * 7 + {k}) % 256]")
    lines.append(f"                B[bx * 256 + tx] = s{stages % 2}[tx]")
    return "\n".join(lines) + "\n"


FAMILIES = {"unroll": unroll_family, "stmts": stmts_family, "funcs": funcs_family}


# -- measuring --------------------------------------------------------------------------------

def _nodes(result) -> int:
    from tirc.ir.visitor import walk
    mods = [result.host, *result.devices.values()]
    return sum(1 for m in mods if m is not None for f in m.functions.values()
               for _ in walk(f.body))


def measure(text: str, repeat: int, collect: bool = True) -> tuple[dict[str, float], int]:
    """Each pass's least time over ``repeat`` builds (seconds), and the nodes left. Each
    build starts after a full garbage collection; ``collect=False``: none during it."""
    from tirc.build.stages import build
    best: dict[str, float] = {}
    nodes = 0
    for _ in range(repeat):
        result = None
        gc.collect()
        if not collect:
            gc.disable()
        try:
            result = build(text, TARGET, write=False, stop_after="split", filename="scaled.tir")
        finally:
            gc.enable()
        times: dict[str, float] = {}
        for name, t in result.pass_times:
            times[name] = times.get(name, 0.0) + t
        times["(all passes)"] = sum(t for _, t in result.pass_times)
        for name, t in times.items():
            best[name] = min(best.get(name, math.inf), t)
        nodes = _nodes(result)
    return best, nodes


def _ratio(a: float, b: float) -> float:
    return b / a if a > 0 else math.inf


def report(family: str, sizes: list[int], times: list[dict[str, float]], nodes: list[int],
           threshold: float, min_ms: float, only: set[str] | None) -> list[str]:
    """Print ``family``'s table; the names of the flagged passes."""
    head = (["pass"] + [f"size {s} (ms)" for s in sizes]
            + [f"{a}->{b}" for a, b in zip(sizes, sizes[1:])] + ["last two", ""])
    print(f"\n### {family}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    cells = [str(n) for n in nodes] + [f"{_ratio(a, b):.2f}" for a, b in zip(nodes, nodes[1:])]
    print("| IR nodes after the passes | " + " | ".join(cells) + " | | |")
    names = list(times[-1])
    flagged = []
    order = sorted(names, key=lambda n: (n != "(all passes)", -times[-1][n]))
    for name in order:
        if only and name not in only and name != "(all passes)":
            continue
        row = [times[i].get(name, 0.0) for i in range(len(sizes))]
        ratios = [_ratio(a, b) for a, b in zip(row, row[1:])]
        tail = ratios[-2:] if len(ratios) >= 2 else ratios
        last = math.prod(tail) ** (1 / len(tail)) if tail else 0.0
        flag = last > threshold and row[-1] * 1000 >= min_ms
        if flag and name != "(all passes)":
            flagged.append(name)
        print(f"| {name} | " + " | ".join(f"{t * 1000:.1f}" for t in row) + " | "
              + " | ".join(f"{r:.2f}" for r in ratios) + f" | {last:.2f} | "
              + ("!!" if flag else "") + " |")
    return flagged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,2,4,8,16")
    ap.add_argument("--families", default="unroll,stmts,funcs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threshold", type=float, default=2.3)
    ap.add_argument("--min-ms", type=float, default=5.0)
    ap.add_argument("--passes", default="", help="only these passes' rows (comma-separated)")
    ap.add_argument("--gc", action="store_true",
                    help="keep garbage collection on during the builds (its pauses land in "
                         "whichever pass triggers one)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time each pass by the process's CPU time instead of wall time (a "
                         "shared machine: other processes' load then moves the figures less)")
    args = ap.parse_args(argv)
    if args.cpu_time:
        from tirc.passes.pipeline import TimePasses
        TimePasses.clock = time.process_time
    sizes = [int(s) for s in args.sizes.split(",")]
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    only = {p for p in args.passes.split(",") if p} or None
    print(f"# pass scaling: target {TARGET!r}, least of {args.repeat} runs, "
          f"flag above {args.threshold}x per doubling (last two) and {args.min_ms} ms"
          + (", garbage collection on" if args.gc else ", no garbage collection during a build")
          + (", CPU time" if args.cpu_time else ", wall time"))
    measure(FAMILIES[families[0]](sizes[0]), 1, args.gc)  # imports, first uses: not counted
    all_flagged = []
    for family in families:
        texts = [FAMILIES[family](size) for size in sizes]
        times: list[dict[str, float]] = [{} for _ in sizes]
        nodes = [0] * len(sizes)
        for round_ in range(args.repeat):  # sizes interleaved: a load spike hits them all
            for i, (size, text) in enumerate(zip(sizes, texts)):
                start = time.perf_counter()
                t, nodes[i] = measure(text, 1, args.gc)
                for name, value in t.items():
                    times[i][name] = min(times[i].get(name, math.inf), value)
                print(f"{family} round {round_ + 1} size {size}: {nodes[i]} nodes, passes "
                      f"{t['(all passes)']:.2f} s ({time.perf_counter() - start:.1f} s)",
                      file=sys.stderr, flush=True)
        flagged = report(family, sizes, times, nodes, args.threshold, args.min_ms, only)
        all_flagged += [f"{family}: {name}" for name in flagged]
    print("\nflagged (above %.1fx per doubling): %s"
          % (args.threshold, ", ".join(all_flagged) if all_flagged else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
