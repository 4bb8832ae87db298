"""Input fuzzer for `tirc build` (issue 7, the long run; tests/testing/test_fuzz_build_input.py
is the CI-sized one): mutated inputs (always-broken mutations and blind byte flips,
token deletions, swapped lines) of the samples and of the TVM-printed corpus
(tests/corpus/tvm/*.tir, text TVM 0.27 itself wrote), hostile variants aimed at the
limits of issue 15 (huge and out-of-range literals, zero divisors, constant indices out of
range, deep nesting, bad target options in the text and on the command line) go through
`python -m tirc build` in a subprocess with a time limit. A finding is a crash (exit other than 0/1, or a traceback), a hang, a
rejection without `FILE:LINE:COL: error:`, or output files left by a failed build.

    python bench/fuzz_input.py --seed 1 --count 500 [--inputs all|samples|corpus]
                               [--timeout 20] [--keep DIR]
"""
from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tirc.testing.mutate import blind_mutants, hostile_mutants, mutants  # noqa: E402

LOCATION = re.compile(r"^[^\n]+:\d+:\d+: error: .+")


CUDA = ["--target", "cuda -arch=sm_90", "--host", "llvm"]
# Command-line targets that must be usage errors (exit 2 naming --target), never a crash.
BAD_TARGETS = ["llvm -mcpu=notacpu", "llvm -mattr=+nosuchfeature", "llvm -mtriple=bogus-none",
               "llvm -opt-level=banana", "cuda -arch=sm_1", "cuda -max_num_threads=-5",
               "cuda -arch=sm_90 -nosuchoption=1", "nosuchkind"]
USAGE = re.compile(r"Error: Invalid value for '--target'")


def target_for(path: Path, work: Path) -> list[str]:
    """The target flags under which the unmutated input builds: CUDA for the samples and
    the corpus's GPU modules, the default (``llvm``) for CPU ones, so that mutants get
    past the target checks; CUDA when neither builds."""
    for flags in (CUDA, []):
        cmd = [sys.executable, "-m", "tirc", "build", str(path), "-q", "-o",
               str(work / "probe")] + flags
        if subprocess.run(cmd, capture_output=True).returncode == 0:
            return flags
    return CUDA


def one(data: bytes, work: Path, index: int, timeout: float,
        flags: list[str] = CUDA) -> str | None:
    src = work / f"case{index}.tir"
    src.write_bytes(data)
    out = work / f"out{index}"
    cmd = [sys.executable, "-m", "tirc", "build", str(src), "-o", str(out)] + flags
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"hang (> {timeout} s)"
    if proc.returncode == 2 and USAGE.search(proc.stderr) and "Traceback" not in proc.stderr:
        return None if not (out.exists() and any(out.iterdir())) else "a usage error left output files"
    if "Traceback" in proc.stderr or proc.returncode not in (0, 1):
        return f"crash (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}"
    if proc.returncode == 1:
        first = proc.stderr.splitlines()[0] if proc.stderr else ""
        if not LOCATION.match(first):
            return f"rejected without a location: {first!r}"
        if out.exists() and any(out.iterdir()):
            return "a failed build left output files"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=200, help="cases in all")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case")
    ap.add_argument("--keep", type=Path, help="directory to copy failing inputs into")
    ap.add_argument("--inputs", choices=("all", "samples", "corpus"), default="all",
                    help="what to mutate: samples/*.tir, tests/corpus/tvm/*.tir, or both")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    samples = []
    if args.inputs in ("all", "samples"):
        samples += sorted((ROOT / "samples").glob("*.tir"))
    if args.inputs in ("all", "corpus"):
        samples += sorted((ROOT / "tests" / "corpus" / "tvm").glob("*.tir"))
    findings = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        flags = {p: target_for(p, work) for p in samples}
        for i in range(args.count):
            sample = rng.choice(samples)
            text = sample.read_text()
            case_flags = flags[sample]
            r = rng.random()
            if r < 0.35:
                kind, broken = rng.choice(list(mutants(text, rng, per_kind=2)))
                data = broken.encode()
            elif r < 0.6:
                kind, data = next(blind_mutants(text, rng, 1))
            elif r < 0.95:
                pool = list(hostile_mutants(text, rng, per_kind=2))
                kind, hostile = rng.choice(pool) if pool else ("unchanged", text)
                data = hostile.encode()
            else:
                kind, data = "bad --target", text.encode()
                case_flags = ["--target", rng.choice(BAD_TARGETS), "--host", "llvm"]
            problem = one(data, work, i, args.timeout, case_flags)
            if problem:
                findings += 1
                print(f"case {i} ({kind} of {sample.name}): {problem}")
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / f"case{i}.tir").write_bytes(data)
    print(f"{args.count} cases, seed {args.seed}: {findings} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
