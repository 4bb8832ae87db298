"""Capture the lowered modules TVM 0.27 builds while running its own unit tests.

The modules are printed by TVM **0.27.0.post1** (pip ``apache-tvm==0.27.0.post1``).

Where the modules come from
---------------------------
TVM's own test files, taken verbatim from the apache/tvm git repository at commit
``UPSTREAM_COMMIT`` (the same commit as ``gen_sblock_pass_pairs.py``), files listed in
``TEST_FILES``.  Each file is extracted with ``git show <commit>:<path>`` into a
temporary directory and run with pytest in a worker process of its own (a crash in
one file loses only that file).  While the tests run:

* ``tvm.tirx.transform.SplitHostDevice`` is wrapped: every module that reaches the
  host/device split inside ``tvm.compile`` / ``tvm.tirx.build`` (i.e. the module after
  the s_tir lowering pipeline: LowerInitBlock ... AnnotateEntryFunc) is recorded with
  the pytest node that built it, then the real pass runs unchanged;
* this machine has no GPU, so ``tvm.testing.env``'s CUDA probes (``has_cuda``,
  ``has_gpu``, ``has_nvptx``, ``has_cuda_compute``/``has_cuda_arch`` up to sm_80,
  ``has_nvcc_version``) answer True, so the CUDA tests reach ``tvm.compile``; what they
  do after the split (nvcc, running the kernel) may fail, which does not matter here;
* a bare ``"cuda"`` target given to ``tvm.compile``/``tvm.tirx.build`` becomes
  ``{"kind": "cuda", "arch": "sm_80"}`` (without a device TVM would pick ``sm_50``).

Each recorded module is printed with ``mod.script()``; modules whose functions target
anything but ``llvm`` and ``cuda`` are dropped, texts are deduplicated (over all files),
texts that ``tvm.script.from_source`` does not re-parse are dropped, and at most
``MAX_PER_FILE`` are kept per test file.  Output:

    tvm_tests/<testfile>__<n>.tir   first line ``# source: FILE::TEST  target: ...``,
                                    then exactly ``mod.script()``
    tvm_tests/index.json            file -> source test, tirc target and host, TVM target
    tvm_tests/dropped.json          counts of what was dropped, and why

How to run
----------
    /tmp/tvmenv/bin/pip install apache-tvm==0.27.0.post1 numpy pytest
    /tmp/tvmenv/bin/python tests/corpus/gen_tvm_test_corpus.py \\
        [--tvm-git-dir /path/to/apache/tvm/.git] [--out tests/corpus/tvm_tests] [-j N]

``--tvm-git-dir`` defaults to ``$TVM_GIT_DIR`` or /work/.mirror/apache+tvm/repo.  The
``.tir`` files, index.json and dropped.json in the output directory are rewritten;
README.md is kept.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

UPSTREAM_REPO = "https://github.com/apache/tvm"
UPSTREAM_COMMIT = "5d4dc8721307cf9677becacf0395c19be130e206"
TVM_VERSION = "0.27.0.post1"

_CG = "tests/python/codegen/"
_TB = "tests/python/tirx-base/"
_TX = "tests/python/tirx-transform/"
_SS = "tests/python/s_tir/schedule/"
_ST = "tests/python/s_tir/transform/"
_DL = "tests/python/s_tir/dlight/"

# test files that call tvm.compile / tvm.tirx.build on PrimFuncs or IRModules
TEST_FILES = [
    _CG + "test_target_codegen_cuda.py",
    _CG + "test_target_codegen_llvm.py",
    _CG + "test_target_codegen_cuda_fp8.py",
    _CG + "test_target_codegen_cuda_fastmath.py",
    _CG + "test_target_codegen_x86.py",
    _CG + "test_target_codegen_bool.py",
    _CG + "test_target_codegen_extern.py",
    _CG + "test_codegen_assert.py",
    _CG + "test_codegen_error_handling.py",
    _TB + "test_tir_imm_values.py",
    _TB + "test_tir_base.py",
    _TB + "test_tir_ptx_mma.py",
    _TB + "test_tir_ptx_ldmatrix.py",
    _TB + "test_tir_ptx_cp_async.py",
    _TB + "test_tir_ptx_scalar_f32_math.py",
    _TX + "test_tir_transform_vectorize.py",
    _TX + "test_tir_transform_lower_tvm_builtin.py",
    _TX + "test_tir_transform_lower_intrin.py",
    _ST + "test_s_tir_transform_inject_software_pipeline.py",
    _SS + "test_tir_schedule_fuse_reduction_epilogue.py",
    _SS + "test_tir_schedule_fuse_reduction_epilogue_relu.py",
    _SS + "test_tir_schedule_fuse_reduction_epilogue_clipping.py",
    _SS + "test_tir_schedule_rolling_buffer.py",
    _SS + "test_tir_schedule_decompose_padding.py",
    _DL + "test_cpu_reduction.py",
]

MAX_PER_FILE = 80  # modules kept per test file
MAX_TEXT = 200_000  # characters; longer modules are dropped
WORKER_TIMEOUT = 900  # seconds per test file
KINDS = ("llvm", "cuda", "c")


# --------------------------------------------------------------------------------------
# worker: run one test file, record every module reaching SplitHostDevice
# --------------------------------------------------------------------------------------
def _worker(work, path, out_json):
    import tvm
    import tvm.testing.env as env
    import tvm.tirx.transform

    # no GPU here: let the CUDA tests reach tvm.compile
    def _ok_arch(*arches, **_kw):
        return all(int(re.sub(r"\D", "", a) or 0) <= 80 for a in arches)

    env.has_cuda = lambda: True
    env.has_gpu = lambda: True
    env.has_nvptx = lambda: True
    env.has_cuda_compute = lambda major, minor=0, exact=False: (major, minor) <= (8, 0)
    env.has_cuda_arch = _ok_arch
    env.has_nvcc_version = lambda *a, **k: True
    if hasattr(env, "cuda_arch"):
        env.cuda_arch = lambda *a, **k: "sm_80"

    cur = {"node": None}

    def _target_info(mod):
        out = []
        for _, f in mod.functions.items():
            t = f.attrs.get("target") if f.attrs is not None else None
            if t is not None:
                out.append(json.dumps(_to_json(t.export()), sort_keys=True))
        return sorted(set(out))

    orig_shd = tvm.tirx.transform.SplitHostDevice

    def SplitHostDevice():  # noqa: N802
        inner = orig_shd()

        @tvm.transform.module_pass(opt_level=0, name="tirx.SplitHostDevice")
        def _rec(mod, _ctx):
            try:
                rec = {"node": cur["node"], "text": mod.script(), "targets": _target_info(mod)}
            except Exception as err:  # noqa: BLE001
                rec = {"node": cur["node"], "text": None, "error": "%s: %s" % (type(err).__name__, err)}
            # one line per module, written at once: a test that crashes the process
            # later loses nothing recorded before it
            with open(out_json, "a") as f:
                f.write(json.dumps(rec) + "\n")
            return inner(mod)

        return _rec

    tvm.tirx.transform.SplitHostDevice = SplitHostDevice

    orig_build = tvm.tirx.build

    def build(mod, target=None, pipeline="default"):
        if isinstance(target, str) and target.strip() == "cuda":
            target = tvm.target.Target({"kind": "cuda", "arch": "sm_80"})
        return orig_build(mod, target, pipeline)

    tvm.tirx.build = build

    class Recorder:
        def pytest_runtest_setup(self, item):
            cur["node"] = item.nodeid

        def pytest_runtest_teardown(self, item):
            cur["node"] = None

    import pytest

    os.chdir(work)
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", work, "-o", "addopts=",
            "--continue-on-collection-errors", path]
    rc = pytest.main(args, plugins=[Recorder()])
    sys.stdout.flush()
    os._exit(int(rc))


def _to_json(x):
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if hasattr(x, "items"):
        return {str(k): _to_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) or type(x).__name__ in ("Array", "List"):
        return [_to_json(v) for v in x]
    if hasattr(x, "value"):
        return _to_json(x.value)
    return str(x)


# --------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------
def tirc_target(tvm_targets):
    """(target, host) for tirc from the TVM target dicts of a module's functions, or a
    reason string why not."""
    kinds = {}
    for t in tvm_targets:
        d = json.loads(t)
        kinds.setdefault(d["kind"], d)
    if not kinds:
        return "no target"
    bad = sorted(k for k in kinds if k not in KINDS)
    if bad:
        return "target kind %s" % ",".join(bad)
    if "cuda" in kinds:
        return "cuda -arch=%s" % kinds["cuda"].get("arch", "sm_80"), "llvm"
    if "c" in kinds:
        if "llvm" in kinds:
            return "target kinds c and llvm in one module"
        return "c", None
    d = kinds["llvm"]
    s = "llvm"
    if d.get("mcpu"):
        s += " -mcpu=%s" % d["mcpu"]
    if d.get("mtriple") and not d["mtriple"].startswith("x86_64"):
        s += " -mtriple=%s" % d["mtriple"]
    if d.get("mattr"):
        s += " -mattr=%s" % ",".join(d["mattr"])
    return s, None


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tvm-git-dir", default=os.environ.get("TVM_GIT_DIR", "/work/.mirror/apache+tvm/repo"))
    ap.add_argument("--commit", default=UPSTREAM_COMMIT)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "tvm_tests"))
    ap.add_argument("-j", type=int, default=4)
    ap.add_argument("--worker", nargs=3, metavar=("WORK", "PATH", "OUT_JSON"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(*args.worker)
        return

    work = tempfile.mkdtemp(prefix="tvm_test_corpus_")
    extra = ["tests/python/conftest.py"]
    for path in TEST_FILES + extra:
        r = subprocess.run(["git", "--git-dir", args.tvm_git_dir, "show", "%s:%s" % (args.commit, path)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            if path in extra:
                continue
            sys.exit("not at %s: %s" % (args.commit, path))
        dst = os.path.join(work, path)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w") as f:
            f.write(r.stdout)

    def run(path):
        out_json = os.path.join(work, _stem(path) + ".json")
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", work, path, out_json],
                               capture_output=True, text=True, timeout=WORKER_TIMEOUT)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        records = []
        if os.path.exists(out_json):
            with open(out_json) as f:
                for line in f:
                    try:
                        records.append(json.loads(line))
                    except ValueError:  # a line cut short by a crash
                        pass
        return path, records, rc

    with ThreadPoolExecutor(max_workers=args.j) as ex:
        results = list(ex.map(run, TEST_FILES))

    out_dir = args.out
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):
        if name.endswith(".tir"):
            os.remove(os.path.join(out_dir, name))
    seen = set()
    index = {}
    dropped = {}

    def drop(path, why):
        d = dropped.setdefault(path, {})
        d[why] = d.get(why, 0) + 1

    import tvm  # the re-parse check

    def reparses(text):
        try:
            tvm.script.from_source(text)
            return True
        except Exception:  # noqa: BLE001
            return False

    for path, records, rc in results:
        print("%-80s %4d modules, worker exit %s" % (path, len(records), rc))
        n = 0
        for r in records:
            if r.get("text") is None:
                drop(path, "script() failed")
                continue
            text = r["text"]
            if text in seen:
                drop(path, "duplicate")
                continue
            seen.add(text)
            tt = tirc_target(r["targets"])
            if isinstance(tt, str):
                drop(path, tt)
                continue
            if not reparses(text):
                drop(path, "does not re-parse")
                continue
            if len(text) > MAX_TEXT:
                drop(path, "longer than %d characters" % MAX_TEXT)
                continue
            if n >= MAX_PER_FILE:
                drop(path, "over %d per file" % MAX_PER_FILE)
                continue
            n += 1
            target, host = tt
            name = "%s__%d.tir" % (_stem(path), n)
            source = "%s::%s" % (path, r["node"].split("::", 1)[1] if r["node"] else "<collection>")
            head = "# source: %s  target: %s%s\n" % (source, target, "  host: %s" % host if host else "")
            with open(os.path.join(out_dir, name), "w") as f:
                f.write(head + text)
            index[name] = {"source": source, "target": target, "host": host, "tvm_targets": r["targets"]}
    with open(os.path.join(out_dir, "index.json"), "w") as f:
        json.dump(index, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out_dir, "dropped.json"), "w") as f:
        json.dump(dropped, f, indent=1, sort_keys=True)
        f.write("\n")
    print("modules written:", len(index), "from", len({e["source"].split("::")[0] for e in index.values()}), "test files")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
