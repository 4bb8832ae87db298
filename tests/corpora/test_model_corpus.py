"""CI smoke test of the model corpus: every file of bench/models/ (whole models
made with tvm.relax.frontend.nn and the MLC-LLM kernels, printed by TVM 0.27; see
bench/models/README.md) builds with ``tirc build`` through the command line, as a user
runs it, for its target: ``llvm``, or ``cuda -arch=sm_90`` with host ``llvm`` (PTX, no GPU
needed). No timing assertions; bench/models.py measures the times. No TVM needed.

Files tirc refuses are in REFUSED with the error they give now (a regular expression
matched against tirc's diagnostics): strict xfails, so a file that starts building fails
here until it leaves the list, and a file that fails differently fails here too.

Files in SLOW build, but take too long for CI (the suite is kept to a few minutes on two
cores); bench/models.py builds them.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

CORPUS = ROOT / "bench" / "models"
INDEX = json.loads((CORPUS / "index.json").read_text())["files"]

# file -> the located error tirc gives (first line of its diagnostics)
REFUSED: dict[str, str] = {
}

# file -> why CI does not build it
SLOW: dict[str, str] = {}


class Refused(Exception):
    """tirc refused the file with the error REFUSED records."""


def _build(entry: dict, out: Path) -> subprocess.CompletedProcess:
    target = "cuda -arch=sm_90" if entry["target"]["kind"] == "cuda" else "llvm"
    cmd = [sys.executable, "-m", "tirc", "build", str(Path("bench") / "models" / entry["file"]),
           "--target", target, "--host", "llvm", "-o", str(out), "-q", "-j", "2"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_lists_are_true():
    names = {e["file"] for e in INDEX}
    assert set(REFUSED) <= names and set(SLOW) <= names  # no stale entries
    assert not set(REFUSED) & set(SLOW)
    assert all((CORPUS / n).is_file() for n in names)


def _params():
    for e in INDEX:
        marks = []
        if e["file"] in REFUSED:
            marks.append(pytest.mark.xfail(strict=True, raises=Refused,
                                           reason="tirc refuses: " + REFUSED[e["file"]]))
        if e["file"] in SLOW:
            marks.append(pytest.mark.skip(reason=SLOW[e["file"]]))
        yield pytest.param(e, id=e["file"].removesuffix(".tir"), marks=marks)


@pytest.mark.parametrize("entry", list(_params()))
def test_model_builds(entry, tmp_path):
    out = tmp_path / "out"
    p = _build(entry, out)
    if p.returncode != 0:
        err = (p.stderr + p.stdout).strip()
        expect = REFUSED.get(entry["file"])
        if expect and p.returncode == 1 and re.search(expect, err.splitlines()[0]):
            raise Refused(err.splitlines()[0])
        pytest.fail("tirc build %s: exit %d\n%s" % (entry["file"], p.returncode, err[:3000]))
    stem = entry["file"].removesuffix(".tir")
    for suffix in (".o", ".h", ".json"):
        assert (out / (stem + suffix)).stat().st_size > 0, suffix
    manifest = json.loads((out / (stem + ".json")).read_text())
    built = {f["name"] for f in manifest["functions"]}
    assert set(entry["names"]) <= built, sorted(set(entry["names"]) - built)
    if entry["target"]["kind"] == "cuda":
        ptx = (out / (stem + ".ptx")).read_text()
        assert ".target sm_90" in ptx and ".entry" in ptx


def test_attention_of_attention_block_cuda_computes_attention():
    """attention_block's `attention` (relax nn.attention legalized by topi, dlight-scheduled;
    its batch-matmul blocks carry T.sblock_attr({"layout_free_placeholders": [T_reshape]}))
    on the SIMT interpreter: softmax(Q K^T / sqrt(32)) V per head, against NumPy."""
    from dataclasses import replace

    import numpy as np

    from tirc.frontend.parse import parse
    from tirc.testing import simt

    path = CORPUS / "attention_block.cuda.tir"
    mod = parse(path.read_text(), str(path))
    mod = replace(mod, functions={"attention": mod.functions["attention"]})
    seq = 9
    rng = np.random.default_rng(0)
    q, k, v = (rng.uniform(-1, 1, (1, seq, 4, 32)).astype("float32") for _ in range(3))
    out = np.full((1, seq, 4, 32), np.nan, "float32")
    simt.run(mod, "attention", [q, k, v, out], target="cuda -arch=sm_90")
    s = np.einsum("qhd,khd->hqk", q[0], k[0]) / np.sqrt(np.float32(32))
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(out[0], np.einsum("hqk,khd->qhd", p, v[0]), rtol=1e-5, atol=1e-6)
