"""Whole-model compile time: `tirc build` against TVM 0.27 on the model corpus.

The corpus is bench/models/*.tir (made by bench/models/gen_models.py, listed in
bench/models/index.json): whole models written with `tvm.relax.frontend.nn` and the MLC-LLM
kernels TVM ships, each file all of a model's PrimFuncs for one target. Each module is
built, as a fresh process each time, by:

* tirc:  `tirc build FILE --target T --host llvm -o TMPDIR -q [-j N]`, once with `-j 1`
         and once with `-j 2` (T is `llvm`, or `cuda -arch=sm_90` for the cuda files: the
         host object with the PTX embedded, and NAME.ptx);
* TVM:   `python -c ...` that does `import tvm`, `tvm.script.from_source` + `tvm.compile`
         (Target `{"kind": "cuda", "arch": "sm_90"}` with host llvm, or `{"kind": "llvm"}`)
         + `export_library` into a temporary directory; for cuda it then compiles the CUDA C
         that TVM put in the library to device code, as TVM does when the library is loaded
         (`tvm_callback_cuda_compile`): NVRTC to a cubin where NVRTC is installed
         (`nvidia-cuda-nvrtc`), else nvcc to a fatbin, else not at all (`--tvm-cuda`). TVM
         0.27's `tvm.compile` itself does not compile device code: its library holds CUDA C.

Runs are interleaved (tirc -j 1, tirc -j 2, TVM, tirc -j 1, ...) after one untimed warm-up,
and the table gives medians over `--repeat N` runs (default 3) of whole-process wall time,
the ratios tirc/TVM (< 1: tirc is faster), the ratio to TVM without its device compile (the
TVM process's own timing of NVRTC/nvcc taken out), the speed-up of -j 2 over -j 1, the
geometric means, and the per-pass times tirc prints with `--time-passes` for the file tirc
takes longest on. A file a tool fails on says "fails" with the first error line, and a tirc
run past `--timeout` seconds (default 300) is stopped and shown as "> N (timed out)"; either
is run once only and left out of the geometric means.

    python bench/models.py [--repeat N] [--files llama_f32.cuda,moe.llvm] [--quick]
                           [--venv DIR | --tirc EXE] [--tvm-python PY] [--tvm-cuda auto]
                           [--jobs 1,2] [--timeout S] [--no-time-passes]

`--quick`: repeat 1, the two llama_f32 files only. `--venv DIR`: time tirc installed as the
README installs it (`pip install .` of this checkout, made in DIR if missing, as
bench/compile.py does); else the `tirc` on PATH, else `python -m tirc`. `--tvm-python`: the
Python with TVM 0.27 (default: DIR/bin/python where it imports tvm, else this Python).
Output: a Markdown report on stdout. Not a test: nothing here is collected by pytest.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "bench" / "models"
CUDA_TARGET = "cuda -arch=sm_90"
HOST = "llvm"

# The TVM side: `python -c TVM_CODE FILE KIND OUTDIR CUDA_COMPILER`. One JSON line out:
# {"ok": true, "phases": {...seconds}, "produced": "..."} or {"ok": false, "error": "..."}.
TVM_CODE = r'''
import json, os, sys, time
t0 = time.perf_counter()
path, kind, outdir, cc = sys.argv[1:5]
ph = {}
try:
    import tvm
    ph["import"] = time.perf_counter() - t0
    t = time.perf_counter()
    mod = tvm.script.from_source(open(path).read())
    if not isinstance(mod, tvm.IRModule):
        mod = tvm.IRModule({"main": mod})
    ph["from_source"] = time.perf_counter() - t
    if kind == "cuda":
        target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"}, host={"kind": "llvm"})
    else:
        target = tvm.target.Target({"kind": "llvm"})
    t = time.perf_counter()
    ex = tvm.compile(mod, target=target)
    ph["compile"] = time.perf_counter() - t
    t = time.perf_counter()
    out = os.path.join(outdir, "lib.so")
    ex.export_library(out)
    ph["export"] = time.perf_counter() - t
    produced = ["lib.so (%d kB)" % (os.path.getsize(out) // 1000)]
    if kind == "cuda" and cc != "none":
        import tvm.support.nvcc as nvcc
        t = time.perf_counter()
        n = 0
        with target:
            for m in ex.mod.imports:
                if m.kind == "cuda":
                    src = m.inspect_source()
                    fmt = "cubin" if cc == "nvrtc" else "fatbin"
                    n += len(nvcc.compile_cuda(src, target_format=fmt, compiler=cc))
        ph["device"] = time.perf_counter() - t
        produced.append("%s (%d kB)" % ("cubin" if cc == "nvrtc" else "fatbin", n // 1000))
    print(json.dumps({"ok": True, "phases": ph, "produced": ", ".join(produced)}))
except Exception as e:
    msg = str(e).strip().splitlines()
    first = next((l.strip() for l in msg if l.strip().startswith("error:")), None)
    first = first or next((l.strip() for l in msg if l.strip()), type(e).__name__)
    print(json.dumps({"ok": False, "error": "%s: %s" % (type(e).__name__, first[:300])}))
    sys.exit(1)
'''

TIRC: list[str] = []  # the tirc command; set by main (--tirc / --venv)


def tirc_cmd() -> list[str]:
    if TIRC:
        return TIRC
    exe = shutil.which("tirc")
    return [exe] if exe else [sys.executable, "-m", "tirc"]


def user_venv(path: Path) -> list[str]:
    """tirc as a user installs it (README: a venv and `pip install .`, which compiles the
    bytecode), made in ``path`` unless it is already there."""
    exe = path / "bin" / "tirc"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(path / "bin" / "pip"), "install", "-q", str(ROOT)], check=True)
    return [str(exe)]


def first_error(text: str) -> str:
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if "error" in l:
            return l[:300]
    return lines[0][:300] if lines else ""


TIMEOUT = [0.0]  # seconds a tirc run may take (--timeout); 0: no limit


def run_tirc(path: Path, kind: str, jobs: int, extra: list[str] | None = None
             ) -> tuple[float, bool, str]:
    with tempfile.TemporaryDirectory(prefix="bench_models_tirc_") as out:
        cmd = tirc_cmd() + ["build", str(path), "-o", out, "-q", "-j", str(jobs)]
        cmd += ["--target", CUDA_TARGET if kind == "cuda" else "llvm", "--host", HOST]
        cmd += extra or []
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT[0] or None)
        except subprocess.TimeoutExpired:
            dt = time.perf_counter() - t0
            return dt, False, "timed out: stopped after %.0f s (--timeout)" % dt
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            return dt, False, "exit %d: %s" % (p.returncode, first_error(p.stderr + p.stdout))
        if extra:
            return dt, True, p.stderr + p.stdout
        files = sorted(os.listdir(out))
        return dt, True, ", ".join(sorted({"." + f.split(".", 1)[1] for f in files if "." in f}))


def run_tvm(py: str, path: Path, kind: str, cc: str, env: dict) -> tuple[float, bool, str, dict]:
    with tempfile.TemporaryDirectory(prefix="bench_models_tvm_") as out:
        cmd = [py, "-c", TVM_CODE, str(path), kind, out, cc]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        dt = time.perf_counter() - t0
    res = None
    for line in reversed(p.stdout.splitlines()):
        try:
            res = json.loads(line)
            break
        except ValueError:
            continue
    if res is None:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        return dt, False, (lines[-1] if lines else "exit %d" % p.returncode), {}
    if not res["ok"]:
        return dt, False, res["error"], {}
    return dt, True, res["produced"], res["phases"]


def tvm_env() -> dict:
    """TVM's NVRTC path looks for the CUDA headers under CUDA_PATH, else next to nvcc (an
    nvcc in /usr/local/bin gives /usr/local, which has none)."""
    env = dict(os.environ)
    if "CUDA_PATH" not in env:
        for home in (env.get("CUDA_HOME"), "/usr/local/cuda"):
            if home and os.path.isfile(os.path.join(home, "include", "cuda_runtime.h")):
                env["CUDA_PATH"] = home
                break
    return env


def pick_cuda_compiler(py: str, choice: str, env: dict) -> tuple[str, str]:
    """(compiler, why): "nvrtc", "nvcc" or "none" for TVM's CUDA C."""
    if choice in ("none", "nvcc"):
        return choice, "chosen"
    probe = ("from cuda.bindings import nvrtc; e, a, b = nvrtc.nvrtcVersion(); "
             "print('%d.%d' % (a, b) if int(e) == 0 else 'fail')")
    p = subprocess.run([py, "-c", probe], capture_output=True, text=True, env=env)
    ver = p.stdout.strip()
    if p.returncode == 0 and ver and ver != "fail":
        return "nvrtc", "NVRTC %s" % ver
    if choice == "nvrtc":
        sys.exit("bench/models.py: NVRTC is not usable from %s (pip install nvidia-cuda-nvrtc)" % py)
    if shutil.which("nvcc", path=env.get("PATH")):
        return "nvcc", "nvcc (NVRTC not installed)"
    return "none", "neither NVRTC nor nvcc: TVM's CUDA C is not compiled"


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt_s(x: float | None) -> str:
    return "-" if x is None else "%.2f" % x


def fmt_r(x: float | None) -> str:
    return "-" if x is None else "%.2f" % x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool and file (default 3)")
    ap.add_argument("--files", help="comma-separated corpus files, with or without .tir "
                    "(llama_f32.cuda,moe.llvm); default all")
    ap.add_argument("--quick", action="store_true", help="repeat 1, llama_f32 only")
    ap.add_argument("--jobs", default="1,2", help="the `tirc build -j` values (default 1,2)")
    ap.add_argument("--tirc", help="the tirc executable to time (default: tirc on PATH)")
    ap.add_argument("--venv", type=Path, help="time tirc installed as the README installs it, "
                    "in this virtual environment (made, with `pip install .`, if missing)")
    ap.add_argument("--tvm-python", help="the Python with TVM 0.27 (default: the venv's, "
                    "where it imports tvm, else this one)")
    ap.add_argument("--tvm-cuda", choices=("auto", "nvrtc", "nvcc", "none"), default="auto",
                    help="what compiles TVM's CUDA C (default: NVRTC, else nvcc)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="stop a tirc run after this many seconds and report it as timed out "
                    "(default 300; 0: no limit)")
    ap.add_argument("--no-time-passes", action="store_true",
                    help="skip the --time-passes run of the slowest file")
    args = ap.parse_args(argv)
    if args.tirc:
        TIRC[:] = [args.tirc]
    elif args.venv:
        TIRC[:] = user_venv(args.venv.resolve())
    if args.quick:
        args.repeat = 1
        args.files = args.files or "llama_f32.llvm,llama_f32.cuda"
    jobs = [int(j) for j in args.jobs.split(",") if j.strip()]
    TIMEOUT[0] = args.timeout

    py = args.tvm_python
    if py is None:
        cands = ([str(args.venv.resolve() / "bin" / "python")] if args.venv else []) + [sys.executable]
        py = next((c for c in cands if subprocess.run([c, "-c", "import tvm"],
                                                      capture_output=True).returncode == 0), None)
        if py is None:
            sys.exit("bench/models.py: no Python with TVM 0.27 (pip install apache-tvm==0.27.0.post1"
                     " or --tvm-python)")
    env = tvm_env()
    tvm_ver = subprocess.run([py, "-c", "import tvm; print(tvm.__version__)"],
                             capture_output=True, text=True, env=env).stdout.strip()

    index = json.loads((CORPUS / "index.json").read_text())
    entries = index["files"]
    if args.files:
        want = [f.strip().removesuffix(".tir") for f in args.files.split(",") if f.strip()]
        by = {e["file"].removesuffix(".tir"): e for e in entries}
        missing = [w for w in want if w not in by]
        if missing:
            sys.exit("bench/models.py: not in the corpus: %s (have: %s)" % (
                ", ".join(missing), ", ".join(sorted(by))))
        entries = [by[w] for w in want]
    kinds = {e["target"]["kind"] for e in entries}
    cc, cc_why = pick_cuda_compiler(py, args.tvm_cuda, env) if "cuda" in kinds else ("none", "")

    if entries:  # warm-up, untimed: file caches, bytecode
        e = entries[0]
        run_tirc(CORPUS / e["file"], e["target"]["kind"], 1)
        run_tvm(py, CORPUS / e["file"], e["target"]["kind"], cc, env)

    rows = []
    for e in entries:
        path, kind = CORPUS / e["file"], e["target"]["kind"]
        t = {j: [] for j in jobs}
        ok_t = {j: True for j in jobs}
        err_t = {j: "" for j in jobs}
        t_tvm, t_dev = [], []
        ok_v, err_v, produced = True, "", ""
        for _ in range(max(1, args.repeat)):  # interleaved
            for j in jobs:
                if not ok_t[j]:
                    continue  # failed or timed out once: not run again
                dt, ok, what = run_tirc(path, kind, j)
                t[j].append(dt)
                if not ok and ok_t[j]:
                    ok_t[j], err_t[j] = False, what
            if not ok_v:
                continue
            dt, ok, what, ph = run_tvm(py, path, kind, cc, env)
            t_tvm.append(dt)
            t_dev.append(ph.get("device", 0.0))
            if not ok and ok_v:
                ok_v, err_v = False, what
            elif ok:
                produced = what
        r = dict(file=e["file"], kind=kind, funcs=e["functions"], kb=e["bytes"] / 1000,
                 tirc={j: statistics.median(t[j]) if ok_t[j] else None for j in jobs},
                 tirc_raw={j: statistics.median(t[j]) for j in jobs}, err_tirc=err_t,
                 tvm=statistics.median(t_tvm) if ok_v else None,
                 tvm_nodev=statistics.median([a - b for a, b in zip(t_tvm, t_dev)]) if ok_v else None,
                 dev=statistics.median(t_dev) if ok_v else None,
                 tvm_raw=statistics.median(t_tvm), err_tvm=err_v, produced=produced)
        rows.append(r)
        print("  %-26s %s  TVM %6.2f s%s" % (
            e["file"], "  ".join("tirc -j%d %6.2f s%s" % (j, r["tirc_raw"][j], "" if ok_t[j] else " (fails)")
                                 for j in jobs), r["tvm_raw"], "" if ok_v else " (fails)"),
              file=sys.stderr, flush=True)

    # per-pass times of the file tirc takes longest on (at -j 1)
    tp_file, tp_text = None, ""
    j0 = jobs[0]
    built = [r for r in rows if r["tirc"][j0] is not None]
    if built and not args.no_time_passes:
        slow = max(built, key=lambda r: r["tirc"][j0])
        tp_file = slow["file"]
        _, ok, out = run_tirc(CORPUS / tp_file, slow["kind"], 1, ["--time-passes"])
        tp_text = out.strip() if ok else "fails: " + out

    cmdline = "python bench/models.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print("Whole-model compile time, whole-process wall time, medians (s). %s, %s, %d cores, "
          "Python %s, TVM %s. tirc: `%s`. TVM's CUDA C compiled by: %s. Command: `%s`." % (
              datetime.now(timezone.utc).strftime("%Y-%m-%d"), platform.machine(),
              os.cpu_count() or 0, platform.python_version(), tvm_ver or "?",
              " ".join(tirc_cmd()), (cc_why or "-") if "cuda" in kinds else "-",
              cmdline.strip()))
    print()
    jcols = " | ".join("tirc -j %d" % j for j in jobs)
    rcols = " | ".join("tirc -j %d / TVM" % j for j in jobs)
    print("| file | functions | kB | %s | TVM 0.27 | of it %s | %s | tirc -j %d / TVM w/o device | "
          "-j %d speed-up | tirc wrote / TVM wrote |" % (
              jcols, "NVRTC/nvcc", rcols, j0, jobs[-1]))
    print("|---|---:|---:|%s---:|---:|%s---:|---:|---|" % ("---:|" * len(jobs), "---:|" * len(jobs)))
    for r in rows:
        cells = []
        for j in jobs:
            if r["tirc"][j] is not None:
                cells.append(fmt_s(r["tirc"][j]))
            elif r["err_tirc"][j].startswith("timed out"):
                cells.append("> %.0f (timed out)" % r["tirc_raw"][j])
            else:
                cells.append("fails (%s)" % r["err_tirc"][j].replace("|", "\\|"))
        tvm_cell = fmt_s(r["tvm"]) if r["tvm"] is not None else "fails (%s)" % r["err_tvm"].replace("|", "\\|")
        ratios = [fmt_r(r["tirc"][j] / r["tvm"]) if r["tirc"][j] and r["tvm"] else "-" for j in jobs]
        nodev = fmt_r(r["tirc"][j0] / r["tvm_nodev"]) if r["tirc"][j0] and r["tvm_nodev"] else "-"
        sp = fmt_r(r["tirc"][j0] / r["tirc"][jobs[-1]]) if r["tirc"][j0] and r["tirc"][jobs[-1]] else "-"
        dev = fmt_s(r["dev"]) if r["kind"] == "cuda" and r["dev"] else "-"
        print("| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %s |" % (
            r["file"], r["funcs"], r["kb"], " | ".join(cells), tvm_cell, dev, " | ".join(ratios),
            nodev, sp, (("PTX, host .o" if r["kind"] == "cuda" else ".o") + " / " +
                        (r["produced"] or "-")).replace("|", "\\|")))
    print()
    for label, sel in (("all files", lambda r: True), ("llvm", lambda r: r["kind"] == "llvm"),
                       ("cuda", lambda r: r["kind"] == "cuda")):
        rs = [r for r in rows if sel(r)]
        if not rs:
            continue
        parts = []
        for j in jobs:
            g = geomean([r["tirc"][j] / r["tvm"] for r in rs if r["tirc"][j] and r["tvm"]])
            if g is not None:
                parts.append("tirc -j %d / TVM %.2f" % (j, g))
        g = geomean([r["tirc"][j0] / r["tvm_nodev"] for r in rs if r["tirc"][j0] and r["tvm_nodev"]])
        if g is not None and any(r["kind"] == "cuda" for r in rs):
            parts.append("tirc -j %d / TVM without its device compile %.2f" % (j0, g))
        if len(jobs) > 1:
            g = geomean([r["tirc"][j0] / r["tirc"][jobs[-1]] for r in rs
                         if r["tirc"][j0] and r["tirc"][jobs[-1]]])
            if g is not None:
                parts.append("-j %d speed-up %.2fx" % (jobs[-1], g))
        n = sum(1 for r in rs if r["tirc"][j0] and r["tvm"])
        print("- Geometric mean, %s (%d of %d files built by both): %s." % (
            label, n, len(rs), "; ".join(parts) or "-"))
    worst = [r for r in rows if r["tirc"][j0] and r["tvm"]]
    if worst:
        w = max(worst, key=lambda r: r["tirc"][j0] / r["tvm"])
        print("- Highest tirc -j %d / TVM: %s, %.2f (goal: geometric mean <= 0.4, none "
              "above 0.6)." % (j0, w["file"], w["tirc"][j0] / w["tvm"]))
    if tp_file:
        print()
        print("Per-pass times, `tirc build %s ... -j 1 --time-passes` (the file tirc takes longest "
              "on), one run:" % tp_file)
        print()
        print("```")
        print(tp_text)
        print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main())
