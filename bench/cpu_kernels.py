"""CPU code quality: the same TIR built by tirc and by TVM 0.27 for ``llvm`` (issue 7,
deliverable 2; issue 17 and issue 19 item 5 for the scheduled workloads).

Two sets of kernels (``--set plain|scheduled|all``, default all), both given to both
tools as the same text:

* plain: one ``@T.prim_func`` each in the lowered form TVM 0.27 prints (plain loops, no
  blocks, no schedules), written by this script;
* scheduled: block-level TIR printed by TVM 0.27 from hand schedules
  (``tvm.s_tir.Schedule``) of te / topi operators, checked in as text in
  bench/scheduled/cpu/ (made by bench/scheduled/gen_scheduled.py, which says how each is
  scheduled; this script needs no TVM to read them).

* tirc: ``tirc.build.stages.build(text, TARGET, None, DIR, NAME, shared=True)`` -> ``NAME.so``;
* TVM:  ``tvm.compile(tvm.script.from_source(text), target=TARGET)`` +
  ``export_library`` -> ``NAME.tvm.so`` (when TVM is importable; ``--no-tvm``: tirc
  alone, ``--tvm``: insist);
* NumPy (OpenBLAS) for the matmuls: ``np.matmul(A, B, out=C)``, as a baseline;

the libraries loaded with ``tvm_ffi.load_module`` into this one process and called with
the same 64-byte-aligned copies of the same NumPy arrays. Every result is first checked
against a float64 NumPy reference. Then the tools are timed interleaved (the order
rotating per round, with a 0.3 s pause before each sample so that the other runtimes'
idle threads have stopped spinning: TVM's pool spins for about 0.2 s after a parallel
call, libgomp for about 0.01 s, OpenBLAS's threads too). One sample is the wall time of
a loop of calls (the count chosen after a warm-up so that a sample lasts about
``--sample-ms``), divided by the count. While it runs, the share of the machine's CPU
time used by *other* processes is read from /proc; a sample is quiet when that share is
at most ``--max-other-load`` (default 5%). Rounds go on until each tool has ``--repeat``
quiet samples (at most 3 x repeat rounds; before each sample the script waits for a
quiet 0.5 s, up to ``--wait-quiet`` seconds per kernel); the table gives the median of
the quiet samples (of all samples, marked "(noisy)", when a tool has fewer than 3), the
time ratios tirc / TVM and tirc / NumPy (< 1 means tirc is faster) and the effective
GB/s (elementwise, reductions, softmax, layernorm: bytes read + written once) or
GFLOP/s (matmul: 2*M*N*K; conv2d: 2*N*H*W*CO*KH*KW*CI). On a 2-core machine a second
busy process halves what a 2-thread parallel loop gets and libgomp's barriers then cost
whole scheduler time slices, so unfiltered medians of the parallel kernels swing by
2-20x from run to run.

Kernels, each in a plain serial form and a form using the loop kinds:

* ``ew``: C = A*B + A over N float32 (serial loop; T.parallel outer, T.vectorized(16)
  inner);
* ``rowsum``: B[i] = sum_k A[i, k] over an R x K float32 matrix (serial with a local
  scalar accumulator; T.parallel rows with a 16-lane T.vectorized local accumulator
  buffer and a T.unroll horizontal sum);
* ``vecsum``: the sum of an N-float32 vector into B[0] (serial scalar accumulator;
  a 16-lane T.vectorized local accumulator, T.unroll horizontal sum);
* ``matmul``: C = A @ B, M x M x M float32 (serial i, j, k with a scalar accumulator;
  T.parallel over row tiles, an R x C local accumulator tile (``--tile``; default 4 x 8
  for the generic CPU's 16 SSE registers, 8 x 32 with an AVX-512 ``--mcpu``), T.unroll
  over its rows, T.vectorized over its columns).

Scheduled kernels (bench/scheduled/index.json has the exact schedules):

* ``sch_matmul``: 512^3 float32, 8 x 32 register tile accumulated in a
  ``cache_write(C, 0, "local")`` buffer, parallel over tiles, rows unrolled, columns
  vectorized, ``decompose_reduction``;
* ``sch_matmul_acc``: the same tiling accumulating in C itself (no cache stage);
* ``sch_conv2d``: topi conv2d_nhwc 1x56x56x64 * 3x3x64x64 (HWIO), stride 1, pad 1:
  the padding stage parallel + vectorized, the convolution parallel over output rows
  with an 8-column x 32-channel tile accumulated in the output;
* ``sch_softmax``: topi softmax over 512 x 2048, all stages under the parallel row
  loop, exp and normalisation vectorized by 16, reductions serial;
* ``sch_layernorm``: topi layer_norm over 512 x 2048 with gamma and beta, the same way.

Threads: tirc's T.parallel runs on libgomp (OMP_NUM_THREADS), TVM's on its own thread
pool (TVM_NUM_THREADS), NumPy's matmul on OpenBLAS's (OPENBLAS_NUM_THREADS); ``--threads
N`` sets all three to N before any runtime starts (default: the number of cores). TVM's
pool pins its threads to cores; libgomp leaves them unbound unless OMP_PROC_BIND is set
(``--omp-proc-bind true``): on this 2-vCPU virtual machine unbound libgomp threads at
times share one vCPU (a call at single-thread speed) or stall ~15 ms (bench/README.md).

Target: both get the same target. By default it is plain ``llvm``, for which both
tools pick LLVM's generic CPU of the host triple (x86-64: SSE2, no AVX, no FMA; TVM's
IR says ``"target-cpu"="generic"``, tirc's target machine is made for the CPU ``generic`` too);
``--mcpu native`` (or a CPU name) gives both ``-mcpu=<host cpu>``.

    python bench/cpu_kernels.py [--quick] [--repeat N] [--threads N] [--mcpu CPU]
                                [--tile RxC] [--only ew,matmul] [--set all|plain|scheduled]
                                [--tvm | --no-tvm] [--omp-proc-bind POLICY] [--sample-ms MS]
                                [--max-other-load F] [--wait-quiet S] [--keep DIR]
                                [--load N] [--load-cpus LIST|any]

``--load N`` runs N busy-loop processes beside the timing, a fixed co-running load as on
a shared CI machine: each pinned to one core (``--load-cpus``, default the last N
cores; ``any``: not pinned), started before the libraries are loaded and stopped at the
end; samples are then all kept (``--max-other-load`` becomes 1.0) and the table's "other
load" column shows the load they made.

``--quick`` shrinks the plain kernels only (the scheduled texts have fixed sizes).

Not a test: nothing here is collected by pytest.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
HEAD = "# from tvm.script import tirx as T\n\n"
# After a parallel call TVM's idle pool workers keep a core busy (spinning with yield)
# for about 0.2 s, libgomp's for about 0.01 s; a sample of one tool taken inside the
# other's spin window runs on a shared core. Every sample waits this long first.
SETTLE_S = 0.3


# ---------------------------------------------------------------------------- kernels

def ew_serial(n: int) -> str:
    return HEAD + f'''@T.prim_func
def ew_serial(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "float32"), C: T.Buffer(({n},), "float32")):
    for i in range({n}):
        C[i] = A[i] * B[i] + A[i]'''


def ew_par_vec(n: int) -> str:
    chunk = 4096
    assert n % chunk == 0
    idx = f"i0 * {chunk} + i1 * 16 + i2"
    return HEAD + f'''@T.prim_func
def ew_par_vec(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "float32"), C: T.Buffer(({n},), "float32")):
    for i0 in T.parallel({n // chunk}):
        for i1 in range({chunk // 16}):
            for i2 in T.vectorized(16):
                C[{idx}] = A[{idx}] * B[{idx}] + A[{idx}]'''


def rowsum_serial(r: int, k: int) -> str:
    return HEAD + f'''@T.prim_func
def rowsum_serial(A: T.Buffer(({r}, {k}), "float32"), B: T.Buffer(({r},), "float32")):
    for i in range({r}):
        acc: T.float32 = T.float32(0.0)
        for k in range({k}):
            acc = acc + A[i, k]
        B[i] = acc'''


def rowsum_par_vec(r: int, k: int) -> str:
    assert k % 16 == 0
    return HEAD + f'''@T.prim_func
def rowsum_par_vec(A: T.Buffer(({r}, {k}), "float32"), B: T.Buffer(({r},), "float32")):
    for i in T.parallel({r}):
        acc = T.alloc_local((16,))
        for v in T.vectorized(16):
            acc[v] = T.float32(0.0)
        for k0 in range({k // 16}):
            for v in T.vectorized(16):
                acc[v] = acc[v] + A[i, k0 * 16 + v]
        s: T.float32 = T.float32(0.0)
        for v in T.unroll(16):
            s = s + acc[v]
        B[i] = s'''


def vecsum_serial(n: int) -> str:
    return HEAD + f'''@T.prim_func
def vecsum_serial(A: T.Buffer(({n},), "float32"), B: T.Buffer((1,), "float32")):
    acc: T.float32 = T.float32(0.0)
    for i in range({n}):
        acc = acc + A[i]
    B[0] = acc'''


def vecsum_vec(n: int) -> str:
    assert n % 16 == 0
    return HEAD + f'''@T.prim_func
def vecsum_vec(A: T.Buffer(({n},), "float32"), B: T.Buffer((1,), "float32")):
    acc = T.alloc_local((16,))
    for v in T.vectorized(16):
        acc[v] = T.float32(0.0)
    for i in range({n // 16}):
        for v in T.vectorized(16):
            acc[v] = acc[v] + A[i * 16 + v]
    s: T.float32 = T.float32(0.0)
    for v in T.unroll(16):
        s = s + acc[v]
    B[0] = s'''


def matmul_serial(m: int) -> str:
    return HEAD + f'''@T.prim_func
def matmul_serial(A: T.Buffer(({m}, {m}), "float32"), B: T.Buffer(({m}, {m}), "float32"), C: T.Buffer(({m}, {m}), "float32")):
    for i in range({m}):
        for j in range({m}):
            acc: T.float32 = T.float32(0.0)
            for k in range({m}):
                acc = acc + A[i, k] * B[k, j]
            C[i, j] = acc'''


def matmul_tiled(m: int, ti: int = 8, tj: int = 32) -> str:
    assert m % ti == 0 and m % tj == 0
    return HEAD + f'''@T.prim_func
def matmul_tiled(A: T.Buffer(({m}, {m}), "float32"), B: T.Buffer(({m}, {m}), "float32"), C: T.Buffer(({m}, {m}), "float32")):
    for i0 in T.parallel({m // ti}):
        for j0 in range({m // tj}):
            acc = T.alloc_local(({ti}, {tj}))
            for ii in T.unroll({ti}):
                for jj in T.vectorized({tj}):
                    acc[ii, jj] = T.float32(0.0)
            for k in range({m}):
                for ii in T.unroll({ti}):
                    for jj in T.vectorized({tj}):
                        acc[ii, jj] = acc[ii, jj] + A[i0 * {ti} + ii, k] * B[k, j0 * {tj} + jj]
            for ii in T.unroll({ti}):
                for jj in T.vectorized({tj}):
                    C[i0 * {ti} + ii, j0 * {tj} + jj] = acc[ii, jj]'''


@dataclass
class Kernel:
    name: str  # the prim_func's name
    size: str  # for the table
    text: str
    make_inputs: Callable  # rng -> list of arrays (outputs included, zeroed)
    reference: Callable  # inputs -> (index of the output argument, expected array)
    work: float  # bytes (unit "GB/s") or flops (unit "GFLOP/s") per call
    unit: str
    rtol: float = 1e-5
    numpy: Callable | None = None  # args -> None: the same operation by NumPy (a baseline)


def kernels(quick: bool, tile: tuple[int, int] = (4, 8)) -> list[Kernel]:
    import numpy as np

    n = (1 << 20) if quick else (4 << 20)
    r, k = (1024, 1024) if quick else (4096, 1024)
    mm = 256 if quick else 512
    f32 = np.float32

    def vec3(rng):
        return [rng.standard_normal(n).astype(f32), rng.standard_normal(n).astype(f32),
                np.zeros(n, f32)]

    def mat2(rng):
        return [rng.standard_normal((r, k)).astype(f32), np.zeros(r, f32)]

    def vec1(rng):
        return [rng.standard_normal(n).astype(f32), np.zeros(1, f32)]

    def mm3(rng):
        return [rng.standard_normal((mm, mm)).astype(f32),
                rng.standard_normal((mm, mm)).astype(f32), np.zeros((mm, mm), f32)]

    ew_ref = lambda a: (2, a[0] * a[1] + a[0])  # noqa: E731
    rs_ref = lambda a: (1, a[0].astype(np.float64).sum(axis=1))  # noqa: E731
    vs_ref = lambda a: (1, np.array([a[0].astype(np.float64).sum()]))  # noqa: E731
    mm_ref = lambda a: (2, a[0].astype(np.float64) @ a[1].astype(np.float64))  # noqa: E731
    ew_bytes, rs_bytes, vs_bytes = 3 * 4 * n, 4 * (r * k + r), 4 * (n + 1)
    flops = 2.0 * mm ** 3
    nl = f"{n >> 20}M"
    return [
        Kernel("ew_serial", f"{nl} f32", ew_serial(n), vec3, ew_ref, ew_bytes, "GB/s"),
        Kernel("ew_par_vec", f"{nl} f32", ew_par_vec(n), vec3, ew_ref, ew_bytes, "GB/s"),
        Kernel("rowsum_serial", f"{r}x{k} f32", rowsum_serial(r, k), mat2, rs_ref, rs_bytes,
               "GB/s", 1e-3),
        Kernel("rowsum_par_vec", f"{r}x{k} f32", rowsum_par_vec(r, k), mat2, rs_ref, rs_bytes,
               "GB/s", 1e-3),
        Kernel("vecsum_serial", f"{nl} f32", vecsum_serial(n), vec1, vs_ref, vs_bytes, "GB/s",
               1e-2),
        Kernel("vecsum_vec", f"{nl} f32", vecsum_vec(n), vec1, vs_ref, vs_bytes, "GB/s", 1e-2),
        Kernel("matmul_serial", f"{mm}^3 f32", matmul_serial(mm), mm3, mm_ref, flops,
               "GFLOP/s", 1e-3, numpy_matmul),
        Kernel("matmul_tiled", f"{mm}^3 f32, tile {tile[0]}x{tile[1]}",
               matmul_tiled(mm, *tile), mm3, mm_ref, flops, "GFLOP/s", 1e-3, numpy_matmul),
    ]


def numpy_matmul(a, b, c):
    import numpy as np
    np.matmul(a, b, out=c)


# ------------------------------------------------------------------- scheduled kernels
# Block-level TIR printed by TVM 0.27 from hand schedules (tvm.s_tir.Schedule) of te /
# topi operators, checked in as text: bench/scheduled/cpu/*.tir, made by
# bench/scheduled/gen_scheduled.py (its index.json lists the parameters and schedules).

SCHEDULED = ROOT / "bench" / "scheduled"


def _softmax_ref(a):
    import numpy as np
    x = a[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return 1, e / e.sum(axis=1, keepdims=True)


def _layernorm_ref(a):
    import numpy as np
    x, g, b = (v.astype(np.float64) for v in a[:3])
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return 3, (x - mean) / np.sqrt(var + 1e-5) * g + b


def _conv2d_nhwc_ref(a):
    """conv2d NHWC / HWIO, stride 1, 'same' padding (kh // 2), in float64."""
    import numpy as np
    x, w = a[0].astype(np.float64), a[1].astype(np.float64)
    kh, kw = w.shape[:2]
    xp = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    n, h, wd = x.shape[0], x.shape[1], x.shape[2]
    out = np.zeros((n, h, wd, w.shape[3]))
    for r in range(kh):
        for s in range(kw):
            out += np.einsum("nhwc,cf->nhwf", xp[:, r:r + h, s:s + wd, :], w[r, s])
    return 2, out


def scheduled_kernels() -> list[Kernel]:
    import json

    import numpy as np
    index = json.loads((SCHEDULED / "index.json").read_text())
    out = []
    for m in index["modules"]:
        if m["target"]["kind"] != "llvm":
            continue
        params = m["params"]
        shapes = [tuple(p["shape"]) for p in params]
        outs = set(m["outputs"])

        def make(rng, shapes=shapes, outs=outs):
            return [np.zeros(s, np.float32) if i in outs
                    else rng.standard_normal(s).astype(np.float32)
                    for i, s in enumerate(shapes)]

        name = m["name"]
        text = (SCHEDULED / m["file"]).read_text()
        if name.startswith("sch_matmul"):
            mm, kk = shapes[0]
            nn = shapes[1][1]
            ref = lambda a: (2, a[0].astype(np.float64) @ a[1].astype(np.float64))  # noqa: E731
            k = Kernel(name, f"{mm}x{nn}x{kk} f32", text, make, ref, 2.0 * mm * nn * kk,
                       "GFLOP/s", 1e-3, numpy_matmul)
        elif name == "sch_conv2d":
            n, h, w, ci = shapes[0]
            kh, kw, _, co = shapes[1]
            k = Kernel(name, f"{n}x{h}x{w}x{ci} * {kh}x{kw}x{ci}x{co} NHWC f32", text, make,
                       _conv2d_nhwc_ref, 2.0 * n * h * w * co * kh * kw * ci, "GFLOP/s", 1e-3)
        elif name == "sch_softmax":
            r, c = shapes[0]
            k = Kernel(name, f"{r}x{c} f32", text, make, _softmax_ref, 2.0 * 4 * r * c,
                       "GB/s", 1e-4)
        elif name == "sch_layernorm":
            r, c = shapes[0]
            k = Kernel(name, f"{r}x{c} f32", text, make, _layernorm_ref,
                       4.0 * (2 * r * c + 2 * c), "GB/s", 1e-3)
        else:
            raise SystemExit(f"cpu_kernels.py: no reference for scheduled module {name}")
        out.append(k)
    return out


def aligned(a, align: int = 64):
    """A copy of ``a`` whose data starts at a multiple of ``align`` bytes. TVM's code
    assumes buffer data 64-byte aligned (its allocation alignment) without checking it,
    and with AVX-512 (``--mcpu native`` on a Zen 5 or a Xeon) uses aligned 64-byte vector
    loads, which crash on NumPy's usual 16-byte alignment; tirc assumes only the element
    alignment of a caller's array. Both tools get aligned copies, so both run the same."""
    import numpy as np
    buf = np.empty(a.nbytes + align, np.uint8)
    off = (-buf.ctypes.data) % align
    out = buf[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


# ---------------------------------------------------------------------------- building

def target_string(mcpu: str | None) -> str:
    return "llvm" if not mcpu else f"llvm -mcpu={mcpu}"


def build_tirc(k: Kernel, out: Path, target: str) -> Path:
    from tirc.build.stages import build
    build(k.text, target, None, out, k.name, shared=True)
    return out / f"{k.name}.so"


def tvm_target(mcpu: str | None):
    import tvm
    spec = {"kind": "llvm"}
    if mcpu:
        spec["mcpu"] = mcpu
    return tvm.target.Target(spec)


def build_tvm(k: Kernel, out: Path, mcpu: str | None) -> Path:
    import tvm
    func = tvm.script.from_source(k.text)
    ex = tvm.compile(func, target=tvm_target(mcpu))
    path = out / f"{k.name}.tvm.so"
    ex.export_library(str(path))
    return path


# ---------------------------------------------------------------------------- timing

def calibrate(fn, args, sample_s: float) -> int:
    """Calls per sample so that a sample lasts about ``sample_s`` (at least 1)."""
    t0 = time.perf_counter()
    fn(*args)
    once = time.perf_counter() - t0
    calls = 1
    while once * calls < sample_s / 4 and calls < 1 << 20:  # grow geometrically
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        once = (time.perf_counter() - t0) / calls
        calls *= 2
    return max(1, int(sample_s / max(once, 1e-9)))


def _ticks() -> tuple[int, int, int] | None:
    """(all CPU ticks, idle ticks) of the machine and this process's CPU ticks, from
    /proc (None where there is no /proc)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()
        return sum(v), v[3] + v[4], int(own[11]) + int(own[12])
    except (OSError, IndexError, ValueError):
        return None


def other_load(before, after) -> float:
    """The share of the machine's CPU time that other processes used between two
    ``_ticks()`` readings (0.0 when unknown)."""
    if before is None or after is None or after[0] <= before[0]:
        return 0.0
    total = after[0] - before[0]
    busy = total - (after[1] - before[1])
    return max(0.0, (busy - (after[2] - before[2])) / total)


def sample(fn, args, calls: int) -> tuple[float, float]:
    """Seconds per call over ``calls`` calls, and the other processes' load meanwhile."""
    before = _ticks()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    t = (time.perf_counter() - t0) / calls
    return t, other_load(before, _ticks())


def fmt_time(s: float) -> str:
    if s >= 1.0:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} us"


@dataclass
class Row:
    kernel: Kernel
    times: dict  # tool -> median seconds per call ("tirc", "TVM", "NumPy"; absent: not run)
    kept: dict  # tool -> "quiet samples kept / taken"
    spread: dict  # tool -> (max - min) / median
    noisy: bool  # fewer than 3 quiet samples for a tool: the median is over all samples
    load: float = 0.0  # median share of the machine used by other processes while sampling


def wait_quiet(max_other: float, budget: list[float]) -> None:
    """Wait until other processes used at most ``max_other`` of the machine over 0.5 s,
    drawing on ``budget[0]`` seconds (shared by all waits of a kernel)."""
    while budget[0] > 0:
        before = _ticks()
        time.sleep(0.5)
        budget[0] -= 0.5
        if other_load(before, _ticks()) <= max_other:
            return


def time_tools(tools: list[tuple[str, Callable, list]], repeat: int, sample_s: float,
               max_other: float, wait_s: float) -> tuple:
    """Interleaved samples of every tool (``(name, fn, args)``; the order rotates from
    round to round) until each has ``repeat`` taken while other processes used at most
    ``max_other`` of the machine (at most 3 * ``repeat`` rounds); before each sample,
    wait for such a quiet moment (``wait_s`` seconds in all per kernel). Returns the
    calls per sample, per tool (median, "kept/taken", spread, noisy), and the median
    share of the machine other processes used during the samples."""
    budget = [wait_s]
    calls = min(calibrate(fn, a, sample_s) for _, fn, a in tools)
    taken: dict[str, list] = {who: [] for who, _, _ in tools}
    rnd = 0
    while rnd < 3 * repeat:
        shift = rnd % len(tools)
        for who, fn, a in tools[shift:] + tools[:shift]:
            time.sleep(SETTLE_S)  # the other runtimes' idle workers stop spinning
            wait_quiet(max_other, budget)
            taken[who].append(sample(fn, a, calls))
        rnd += 1
        quiet = [sum(1 for _, load in taken[w] if load <= max_other) for w in taken]
        if rnd >= repeat and min(quiet) >= repeat:
            break
    result = {}
    for who, xs in taken.items():
        quiet = [t for t, load in xs if load <= max_other]
        use = quiet if len(quiet) >= 3 else [t for t, _ in xs]
        med = statistics.median(use)
        result[who] = (med, f"{len(quiet)}/{len(xs)}", (max(use) - min(use)) / med,
                       len(quiet) < 3)
    loads = [load for xs in taken.values() for _, load in xs]
    return calls, result, statistics.median(loads)


BUSY_LOOP = "import os, sys\nif sys.argv[1] != 'any':\n    os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


def start_load(n: int, cpus: str) -> list:
    """``n`` busy-loop processes, each pinned to one core of ``cpus`` ("0,1"; "any": not
    pinned; "": the last ``n`` cores)."""
    import subprocess
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if cpus == "any" or not cores:
        pins = ["any"] * n
    elif cpus:
        pins = [c.strip() for c in cpus.split(",")]
    else:
        pins = [str(c) for c in cores[-n:]]
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP, pins[i % len(pins)]])
            for i in range(n)]


def tvm_available() -> bool:
    try:
        import tvm  # noqa: F401
        return True
    except Exception:  # noqa: BLE001  (any failure to import means: not available)
        return False


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, repeat 3")
    ap.add_argument("--repeat", type=int, default=None,
                    help="quiet samples wanted per tool (default 11; quick 3)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="threads for T.parallel in both runtimes and for OpenBLAS "
                         "(default: cores)")
    ap.add_argument("--mcpu", default=None,
                    help="'native' (this machine's CPU) or a CPU name, given to both tools "
                         "(default: none, each tool's default for plain 'llvm')")
    ap.add_argument("--tile", default=None,
                    help="matmul_tiled accumulator tile ROWSxCOLS (default: 4x8, which fits "
                         "the 16 SSE registers of the generic CPU; 8x32 with an AVX-512 --mcpu)")
    ap.add_argument("--only", default="", help="comma-separated kernel names or prefixes")
    ap.add_argument("--set", dest="kernel_set", choices=("all", "plain", "scheduled"),
                    default="all",
                    help="plain: the loop-nest kernels written here; scheduled: the "
                         "TVM-printed schedules of bench/scheduled/cpu/; all (default): both")
    ap.add_argument("--tvm", dest="tvm", action="store_true", default=None,
                    help="build and time TVM 0.27's build of each text too (default: when "
                         "TVM is importable)")
    ap.add_argument("--no-tvm", dest="tvm", action="store_false",
                    help="tirc (and NumPy) only")
    ap.add_argument("--sample-ms", type=float, default=None,
                    help="target length of one timing sample (default 200, quick 50)")
    ap.add_argument("--max-other-load", type=float, default=0.05, metavar="F",
                    help="a sample counts as quiet when other processes used at most this "
                         "share of the machine's CPU time meanwhile (default 0.05)")
    ap.add_argument("--wait-quiet", type=float, default=60.0, metavar="S",
                    help="per kernel, wait up to S seconds in all for quiet moments before "
                         "samples (default 60; 0: never wait)")
    ap.add_argument("--omp-proc-bind", default=None, metavar="POLICY",
                    help="set OMP_PROC_BIND for tirc's libgomp threads (true, close, spread; "
                         "default: libgomp's, threads not bound). TVM pins its pool's threads "
                         "to cores by default (TVM_BIND_THREADS)")
    ap.add_argument("--keep", default=None, help="write the libraries here and keep them")
    ap.add_argument("--load", type=int, default=0, metavar="N",
                    help="run N busy-loop processes meanwhile (a fixed co-running load); "
                         "every sample is kept")
    ap.add_argument("--load-cpus", default="", metavar="LIST",
                    help="cores for the --load processes, one each: '1' or '0,1' (default: "
                         "the last N cores), 'any': not pinned")
    args = ap.parse_args(argv)
    if args.load:
        args.max_other_load = 1.0
        args.wait_quiet = 0.0

    # The thread pools read these when they start, which is after this point (NumPy's
    # OpenBLAS when numpy is first imported, just below).
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    if args.omp_proc_bind:
        os.environ["OMP_PROC_BIND"] = args.omp_proc_bind

    import numpy as np
    import tvm_ffi
    from llvmlite import binding as llvm

    use_tvm = tvm_available() if args.tvm is None else args.tvm
    if use_tvm and not tvm_available():
        print("cpu_kernels.py: --tvm, but TVM is not importable", file=sys.stderr)
        return 2
    if use_tvm:
        import tvm

    repeat = args.repeat or (3 if args.quick else 11)
    sample_s = (args.sample_ms or (50 if args.quick else 200)) / 1e3
    mcpu = args.mcpu
    if mcpu == "native":
        mcpu = llvm.get_host_cpu_name()
    target = target_string(mcpu)
    if args.tile:
        tile = tuple(int(x) for x in args.tile.lower().split("x"))
    elif mcpu and "+avx512f" in llvm.get_host_cpu_features().flatten():
        tile = (8, 32)
    else:
        tile = (4, 8)
    ks = []
    if args.kernel_set in ("all", "plain"):
        ks += kernels(args.quick, tile)
    if args.kernel_set in ("all", "scheduled"):
        ks += scheduled_kernels()
    if args.only:
        want = [w.strip() for w in args.only.split(",") if w.strip()]
        ks = [k for k in ks if any(k.name.startswith(w) for w in want)]

    tmp = None
    if args.keep:
        out = Path(args.keep)
        out.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="cpu_kernels_")
        out = Path(tmp.name)

    tvm_name = f"TVM {tvm.__version__}" if use_tvm else "TVM (not run)"
    print(f"# CPU kernels: tirc vs {tvm_name} vs NumPy {np.__version__}", flush=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, host CPU "
          f"{llvm.get_host_cpu_name()}; Python {platform.python_version()}")
    print(f"target: tirc '{target}'"
          + (f", TVM {tvm_target(mcpu)}" if use_tvm else "")
          + f"; threads: OMP_NUM_THREADS=TVM_NUM_THREADS=OPENBLAS_NUM_THREADS={args.threads}"
          + f" OMP_PROC_BIND={os.environ.get('OMP_PROC_BIND', '(unset)')}; "
          f"{repeat} quiet samples wanted per tool, ~{sample_s * 1e3:.0f} ms each")
    print()

    load = start_load(args.load, args.load_cpus) if args.load else []
    if load:
        print(f"co-running load: {args.load} busy-loop process(es), cores "
              f"{args.load_cpus or 'the last ' + str(args.load)}")
    try:
        return _run(args, ks, out, tmp, target, mcpu, use_tvm, repeat, sample_s, np, tvm_ffi)
    finally:
        for p in load:
            p.kill()
            p.wait()


def _run(args, ks, out, tmp, target, mcpu, use_tvm, repeat, sample_s, np, tvm_ffi) -> int:
    rng = np.random.default_rng(0)
    rows = []
    for k in ks:
        inputs = k.make_inputs(rng)
        o, expected = k.reference(inputs)
        tools = [("tirc", tvm_ffi.load_module(str(build_tirc(k, out, target)))[k.name])]
        if use_tvm:
            tools.append(("TVM", tvm_ffi.load_module(str(build_tvm(k, out, mcpu)))[k.name]))
        if k.numpy is not None:
            tools.append(("NumPy", k.numpy))
        runs = []
        for who, fn in tools:
            a = [aligned(x) for x in inputs]
            fn(*a)
            got = a[o]
            if not np.allclose(got, expected, rtol=k.rtol, atol=k.rtol * 10):
                err = float(np.max(np.abs(got - expected)))
                print(f"{k.name}: {who} result differs from NumPy's float64 reference "
                      f"(max abs err {err:g})", file=sys.stderr)
                return 1
            runs.append((who, fn, a))
        calls, r, load = time_tools(runs, repeat, sample_s, args.max_other_load,
                                    args.wait_quiet)
        rows.append(Row(k, {w: v[0] for w, v in r.items()}, {w: v[1] for w, v in r.items()},
                        {w: v[2] for w, v in r.items()}, any(v[3] for v in r.values()), load))
        print(f"  {k.name}: " + ", ".join(f"{w} {fmt_time(v[0])}" for w, v in r.items())
              + f" ({calls} calls/sample, quiet samples "
              + " / ".join(v[1] for v in r.values()) + ")", file=sys.stderr, flush=True)

    print("| kernel | size | tirc | TVM 0.27 | NumPy | tirc / TVM | tirc / NumPy | tirc rate "
          "| TVM rate | quiet samples tirc / TVM / NumPy | spread tirc / TVM / NumPy "
          "| other load |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in rows:
        k, t = w.kernel, w.times
        mark = " (noisy)" if w.noisy else ""
        tt, tv, tn = t["tirc"], t.get("TVM"), t.get("NumPy")
        fmt = lambda x: "-" if x is None else fmt_time(x)  # noqa: E731
        rate = lambda x: "-" if x is None else f"{k.work / x / 1e9:.1f} {k.unit}"  # noqa: E731
        kept = " / ".join(w.kept.get(x, "-") for x in ("tirc", "TVM", "NumPy"))
        spread = " / ".join(f"{w.spread[x] * 100:.0f}%" if x in w.spread else "-"
                            for x in ("tirc", "TVM", "NumPy"))
        print(f"| {k.name} | {k.size} | {fmt(tt)} | {fmt(tv)} | {fmt(tn)} | "
              f"{ratio(tt, tv)}{mark} | {ratio(tt, tn)} | {rate(tt)} | {rate(tv)} | "
              f"{kept} | {spread} | {w.load:.0%} |")
    print()
    print(f"ratios are of median times per call: tirc / TVM < 1 means tirc is faster. quiet "
          f"sample: other processes used <= {args.max_other_load:.0%} of the machine while it "
          "ran; medians are over the quiet samples (over all samples, marked (noisy), when a "
          "tool has fewer than 3). spread: (max - min) / median of those. other load: the "
          "median share of the machine's CPU time other processes used during the samples.")
    if use_tvm:
        slower = [(w.kernel.name, w.times["tirc"] / w.times["TVM"]) for w in rows
                  if w.times["tirc"] / w.times["TVM"] > 1.05]
        if slower:
            print("tirc slower than TVM (tirc / TVM > 1.05): "
                  + ", ".join(f"{n} {r:.2f}" for n, r in slower))
        else:
            print("tirc no slower than TVM on every kernel (all tirc / TVM <= 1.05)")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
