"""The CUDA modules of the corpora that carry expected outputs, built for the GPU present
and run on it: the block-level corpus (tests/corpus/sblock, te / schedule / dlight modules
printed by TVM 0.27, outputs computed by TVM on the CPU) and the cross-thread reduction
shapes (tests/corpus/simt). tests/testing/test_simt.py runs the same modules on the SIMT
interpreter; here they meet the real device, its warps, shared memory and barriers.

Each module is built as the command line builds it, for the device's own arch, once with
the device code as a cubin (nvJitLink) and once as PTX (JIT-compiled by the driver at
load), and called through tvm-ffi on device arrays made from the corpus inputs."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import TESTS

CORPUS = TESTS / "corpus"
# argmax_64 allocates a global buffer inside its kernel: refused at build time (test_simt.py)
REFUSED = {"argmax_64"}


def _cases():
    cases = []
    for folder in ("sblock", "simt"):
        root = CORPUS / folder
        for entry in json.loads((root / "index.json").read_text()):
            if entry["target"] != "llvm" and entry["name"] not in REFUSED:
                cases.append(pytest.param(root, entry, id=f"{folder}/{entry['name']}"))
    return cases


CASES = _cases()


def for_arch(target: str, arch: str) -> str:
    """The corpus target with its arch replaced by ``arch`` (the device's)."""
    return re.sub(r"-arch=\S+", f"-arch={arch}", target)


def build(root: Path, entry: dict, arch: str, device_format: str, load: bool = True):
    import tirc
    text = (root / f"{entry['name']}.tir").read_text()
    return tirc.compile(text, target=for_arch(entry["target"], arch), name=entry["name"],
                        filename=f"{entry['name']}.tir", device_format=device_format, load=load)


def test_every_case_builds_for_sm_90():
    """The build half of the GPU test, which runs everywhere: each case builds for sm_90
    in both device formats and launches at least one kernel."""
    assert len(CASES) == 44  # 25, and the 19 argmax modules of index x value dtypes and paths
    for case in CASES:
        root, entry = case.values
        for fmt in ("cubin", "ptx"):
            compiled = build(root, entry, "sm_90", fmt, load=False)
            assert compiled.kernels, entry["name"]
            assert (compiled.cubin if fmt == "cubin" else compiled.ptx).keys() == {"sm_90"}


@pytest.mark.gpu
@pytest.mark.parametrize("device_format", ["cubin", "ptx"])
@pytest.mark.parametrize("root,entry", CASES)
def test_corpus_module_on_gpu(root, entry, device_format):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    from tirc import runtime as rt
    dev = rt.device("cuda", 0)
    compiled = build(root, entry, dev.arch, device_format)
    expected = np.load(root / entry["npz"])
    inputs = [expected[f"arg{i}"] for i in range(len(entry["params"]))]
    arrays = [rt.from_numpy(a, dev) for a in inputs]
    compiled[entry["func"]](*[tvm_ffi.from_dlpack(a) for a in arrays])
    rt.synchronize(dev)
    for i, (before, array) in enumerate(zip(inputs, arrays)):
        got = array.to_numpy()
        if i in entry["outputs"]:
            np.testing.assert_allclose(got.astype("float64"), expected[f"out{i}"].astype("float64"),
                                       rtol=max(entry["rtol"], 1e-5), atol=max(entry["atol"], 1e-5),
                                       err_msg=f"{entry['name']}: output {i}")
        else:
            assert np.array_equal(got, before), f"{entry['name']}: input {i} was changed"
