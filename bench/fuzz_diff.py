"""Differential fuzzing, long run: random valid TIR modules (tirc.testing.gen), each
built by tirc for llvm and run through tvm-ffi against the IR evaluator
(tirc.testing.evaluate) and, with --tvm, against TVM 0.27's build of the same text.

    python bench/fuzz_diff.py --seed 0 --count 500 [--funcs 8] [--tvm|--no-tvm]
                              [--keep DIR] [-j 2]

Module i has seed S+i and --funcs public functions (the programs). Every module with a
mismatch, an error or a build failure is saved to DIR/seed_<n>.tir with a comment
header saying what went wrong (also every TVM disagreement, as DIR/tvm_<n>.tir).
Workers are processes, so a crash of a built library is reported, not fatal. Exit
status 1 when anything failed.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tirc.testing.differential import ModuleResult, check_module, summarize, tvm_available  # noqa: E402
from tirc.testing.gen import generate  # noqa: E402


def _one(seed: int, funcs: int, use_tvm: bool, workroot: str) -> tuple[ModuleResult, float]:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=workroot) as d:
        r = check_module(generate(seed, funcs), d, seed, use_tvm=use_tvm)
    return r, time.perf_counter() - t0


def _save(keep: Path, prefix: str, seed: int, funcs: int, lines: list[str]) -> None:
    keep.mkdir(parents=True, exist_ok=True)
    head = "".join(f"# {ln}\n" for ln in lines)
    (keep / f"{prefix}_{seed}.tir").write_text(head + generate(seed, funcs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100, help="modules")
    ap.add_argument("--funcs", type=int, default=8, help="public functions per module")
    ap.add_argument("--tvm", dest="tvm", action="store_true", default=None)
    ap.add_argument("--no-tvm", dest="tvm", action="store_false")
    ap.add_argument("--keep", type=Path, default=None, help="save failing modules here")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    use_tvm = tvm_available() if args.tvm is None else args.tvm
    if use_tvm and not tvm_available():
        print("fuzz_diff: --tvm, but TVM is not importable", file=sys.stderr)
        return 2
    seeds = list(range(args.seed, args.seed + args.count))
    results: list[ModuleResult] = []
    crashes: list[int] = []
    tvm_build_errors: dict[str, int] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz_diff_") as workroot:
        pending = list(seeds)
        while pending:
            try:
                with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                    futs = {s: pool.submit(_one, s, args.funcs, use_tvm, workroot) for s in pending}
                    for s, fut in futs.items():
                        r, _ = fut.result()
                        results.append(r)
                        pending.remove(s)
                        _report(r, args, tvm_build_errors)
            except BrokenProcessPool:
                # a worker died (a crash in built code): the first unfinished seed is blamed
                s = pending.pop(0)
                crashes.append(s)
                print(f"seed {s}: CRASH (worker process died)", flush=True)
                if args.keep:
                    _save(args.keep, "seed", s, args.funcs, ["the worker process crashed"])
    wall = time.perf_counter() - t0
    c = summarize(results)
    c["crashes"] = len(crashes)
    print()
    print(f"modules {c['modules'] + len(crashes)} (seeds {args.seed}..{args.seed + args.count - 1}), "
          f"{args.funcs} functions each, {wall:.1f} s wall, -j {args.jobs}")
    print(f"functions: {c['functions']} run, {c['ok']} ok, {c['mismatch']} mismatch, "
          f"{c['error']} error, {c['skipped']} skipped (undefined behaviour at run time)")
    print(f"module build errors (tirc): {c['module_build_errors']}, crashes: {len(crashes)}")
    if use_tvm:
        print(f"TVM: built {c['tvm_modules']} modules, could not build {c['tvm_build_errors']}; "
              f"functions agreeing {c['tvm_ok']}, disagreeing {c['tvm_disagree']}")
        for why, n in sorted(tvm_build_errors.items(), key=lambda kv: -kv[1])[:8]:
            print(f"  {n:5d}  {why}")
    failed = c["mismatch"] + c["error"] + c["module_build_errors"] + len(crashes)
    return 1 if failed else 0


def _report(r: ModuleResult, args, tvm_build_errors: dict[str, int]) -> None:
    funcs = args.funcs
    if r.status == "build_error":
        print(f"seed {r.seed}: BUILD ERROR {r.detail.strip().splitlines()[-1][:300]}", flush=True)
        if args.keep:
            _save(args.keep, "seed", r.seed, funcs, ["build error:"] + r.detail.splitlines())
        return
    bad = [f for f in r.funcs if f.status in ("mismatch", "error")]
    for f in bad:
        print(f"seed {r.seed} {f.name}: {f.status.upper()} {f.detail[:300]}", flush=True)
    if bad and args.keep:
        _save(args.keep, "seed", r.seed, funcs, [f"{f.name}: {f.status}: {f.detail}" for f in bad])
    if r.tvm_status == "build_error":
        key = r.tvm_detail[:90]
        tvm_build_errors[key] = tvm_build_errors.get(key, 0) + 1
    tbad = [f for f in r.funcs if f.tvm in ("mismatch", "error")]
    for f in tbad:
        print(f"seed {r.seed} {f.name}: TVM {f.tvm} {f.tvm_detail[:200]}", flush=True)
    if tbad and args.keep:
        _save(args.keep, "tvm", r.seed, funcs, [f"{f.name}: TVM {f.tvm}: {f.tvm_detail}" for f in tbad])


if __name__ == "__main__":
    sys.exit(main())
