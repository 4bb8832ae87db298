"""The dlight-scheduled CUDA workloads of bench/gpu_kernels.py (bench/scheduled/cuda/*.tir,
printed by TVM 0.27 with tvm.s_tir.dlight's default GPU rules for sm_90, made by
bench/scheduled/gen_scheduled.py) build with tirc to PTX with a kernel entry, which
``ptxas`` assembles where it is installed. No GPU and no TVM needed.

Modules tirc refuses for now are listed with the error they must give; one that starts
building fails here, so the list stays true (as tests/corpora/test_sblock_corpus.py's REFUSED)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ptxas_check, TESTS
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic

ROOT = TESTS.parent / "bench" / "scheduled"
INDEX = [m for m in json.loads((ROOT / "index.json").read_text())["modules"]
         if m["target"]["kind"] == "cuda"]
ARCH = "sm_90"

# name -> the located error tirc must give (a regular expression). Empty since
# CompactBufferAllocation (5659e0d) landed; before it, and before LowerCrossThreadReduction
# (e04d9a0), the list was:
#   dl_softmax, dl_layernorm: "reduces across threads" (LowerCrossThreadReduction)
#   dl_gemv: "variable 'ax1_0' is used but never defined" (a pragma's loop variable)
#   dl_matmul: "shared memory of this kernel totals 33554432 bytes, over the limit of
#       232448 bytes per block on sm_90" (the shared tiles kept the operands' full size)
REFUSED: dict[str, str] = {}


def test_the_workloads_are_there():
    names = {m["name"] for m in INDEX}
    assert {"dl_matmul", "dl_softmax", "dl_layernorm", "dl_gemv"} <= names
    assert set(REFUSED) <= names  # no stale entries
    for m in INDEX:
        assert m["target"] == {"kind": "cuda", "arch": ARCH}


@pytest.mark.parametrize("entry", INDEX, ids=[m["name"] for m in INDEX])
def test_dlight_module_builds_to_ptx(entry, tmp_path):
    name, func = entry["name"], entry["func"]
    text = (ROOT / entry["file"]).read_text()
    out = tmp_path / "out"
    if name in REFUSED:
        with pytest.raises(Diagnostic, match=REFUSED[name]):
            build(text, f"cuda -arch={ARCH}", "llvm", out, name, filename=entry["file"])
        assert not out.exists() or not list(out.iterdir())  # nothing written
        return
    build(text, f"cuda -arch={ARCH}", "llvm", out, name, filename=entry["file"])
    for suffix in (".o", ".h", ".json", ".ptx"):
        assert (out / f"{name}{suffix}").stat().st_size > 0, suffix
    ptx = (out / f"{name}.ptx").read_text()
    assert f".target {ARCH}" in ptx
    entries = [line for line in ptx.splitlines() if ".entry" in line]
    assert entries and all(f"{func}_kernel" in e for e in entries), entries
    manifest = json.loads((out / f"{name}.json").read_text())
    # the manifest lists what was built: the function, and each PTX entry as a kernel
    assert func in [f["name"] for f in manifest["functions"]]
    kernels = sorted(k["name"] for k in manifest["kernels"])
    assert kernels == sorted(e.split("(")[0].split()[-1] for e in entries), (kernels, entries)
    ptxas_check(ptx, ARCH, tmp_path)  # a no-op where ptxas is not installed
