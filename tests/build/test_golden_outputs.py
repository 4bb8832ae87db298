"""Golden outputs: the bytes ``tirc build`` writes for one sample per target, pinned by
their sha256, so that any change of generated code (an intended one included) shows up
here and is accepted on purpose.

Pinned builds (``CASES``), each from a sample into a temporary directory with
``tirc.build.stages.build``:

* ``cuda_sm_90``: ``samples/vector_add.tir`` for ``cuda -arch=sm_90`` with the host
  ``llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64``: ``vector_add.ptx``, the host object
  ``vector_add.o`` (the PTX embedded), ``vector_add.h`` and ``vector_add.json``.
* ``x86_64`` and ``aarch64``: the CPU sample ``samples/cpu_matmul.tir`` for
  ``llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64`` and ``llvm -mtriple=aarch64-linux-gnu``:
  ``cpu_matmul.o``, ``.h`` and ``.json``. ``vector_add.tir`` binds its loops to GPU
  threads, which a CPU target refuses; and the CPU sample's function carries its own
  ``T.target({"kind": "llvm"})`` (which wins over the build's target and follows the
  machine's default triple), so that attribute is taken out of the text first and the
  pinned triple and CPU apply. Neither depends on the machine the tests run on.

The expected hashes are in ``tests/golden/<case>.json`` with the llvmlite (and LLVM)
version they were made with. LLVM versions change generated code, so where the installed
llvmlite is another version the tests skip and say so.

When a change of the outputs is intended, update the pinned hashes (and the recorded
llvmlite version) with::

    TIRC_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/build/test_golden_outputs.py

then review and commit ``tests/golden/``. A mismatch names each file that changed and
gives this command.
"""
from __future__ import annotations

import hashlib
import json
import os

import pytest

from conftest import ROOT
from tirc.build.stages import build

GOLDEN = ROOT / "tests" / "golden"
UPDATE_COMMAND = ("TIRC_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q -p no:cacheprovider "
                  "tests/build/test_golden_outputs.py")
X86_64 = "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64"
AARCH64 = "llvm -mtriple=aarch64-linux-gnu"
CPU_SAMPLE_OWN_TARGET = '"target": T.target({"kind": "llvm"}), '

# case -> (sample, target, host)
CASES = {
    "x86_64": ("cpu_matmul", X86_64, None),
    "aarch64": ("cpu_matmul", AARCH64, None),
    "cuda_sm_90": ("vector_add", "cuda -arch=sm_90", X86_64),
}


def _llvmlite_version() -> tuple[str, str]:
    import llvmlite
    import llvmlite.binding as llvm
    return llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info))


def _source(sample: str) -> str:
    text = (ROOT / "samples" / f"{sample}.tir").read_text()
    if sample == "cpu_matmul":
        # its own llvm target would win over the pinned one: take it out (see above)
        assert text.count(CPU_SAMPLE_OWN_TARGET) == 1, \
            "samples/cpu_matmul.tir changed its target attribute: update _source()"
        text = text.replace(CPU_SAMPLE_OWN_TARGET, "")
    return text


def _built_hashes(case: str, out) -> dict[str, str]:
    sample, target, host = CASES[case]
    result = build(_source(sample), target, host, out, sample, filename=f"samples/{sample}.tir")
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(result.files)}


def _update(case: str, path, files: dict[str, str]) -> None:
    sample, target, host = CASES[case]
    llvmlite_version, llvm_version = _llvmlite_version()
    record = {
        "sample": f"samples/{sample}.tir",
        "target": target,
        "host": host,
        "llvmlite": llvmlite_version,
        "llvm": llvm_version,
        "update_with": UPDATE_COMMAND,
        "sha256": files,
    }
    GOLDEN.mkdir(exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def _mismatches(expected: dict[str, str], got: dict[str, str]) -> list[str]:
    lines = []
    for name in sorted(set(expected) | set(got)):
        if name not in got:
            lines.append(f"  {name}: no longer written")
        elif name not in expected:
            lines.append(f"  {name}: newly written (not pinned)")
        elif expected[name] != got[name]:
            lines.append(f"  {name}: changed (sha256 {expected[name][:16]}... pinned, "
                         f"{got[name][:16]}... now)")
    return lines


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_are_byte_identical_to_the_pinned_ones(case, tmp_path):
    path = GOLDEN / f"{case}.json"
    got = _built_hashes(case, tmp_path / "out")
    if os.environ.get("TIRC_UPDATE_GOLDEN") == "1":
        _update(case, path, got)
        return
    assert path.is_file(), f"no pinned hashes for '{case}' ({path}); write them with:\n  {UPDATE_COMMAND}"
    golden = json.loads(path.read_text())
    llvmlite_version, _ = _llvmlite_version()
    if golden["llvmlite"] != llvmlite_version:
        pytest.skip(f"the pinned hashes are for llvmlite {golden['llvmlite']} (LLVM "
                    f"{golden['llvm']}), this is llvmlite {llvmlite_version}: LLVM versions "
                    f"change generated code (re-pin with: {UPDATE_COMMAND})")
    sample, target, host = CASES[case]
    assert (golden["sample"], golden["target"], golden["host"]) == (f"samples/{sample}.tir", target, host), \
        f"{path.name} pins another build than CASES['{case}']; re-pin with:\n  {UPDATE_COMMAND}"
    changed = _mismatches(golden["sha256"], got)
    assert not changed, (
        f"the outputs of samples/{sample}.tir for '{target}'" + (f" (host '{host}')" if host else "")
        + " are not the pinned ones:\n" + "\n".join(changed)
        + f"\nIf this change of generated code is intended, update {path.relative_to(ROOT)} with:\n  "
        + UPDATE_COMMAND)


def test_the_pinned_builds_are_for_the_named_machines(tmp_path):
    """The pins mean what their names say: an x86-64 and an AArch64 object (whatever the
    machine running the tests), and the sm_90 PTX."""
    for case, machine in (("x86_64", 62), ("aarch64", 183), ("cuda_sm_90", 62)):
        sample = CASES[case][0]
        _built_hashes(case, tmp_path / case)
        obj = (tmp_path / case / f"{sample}.o").read_bytes()
        assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[18:20], "little") == machine, case
    assert ".target sm_90" in (tmp_path / "cuda_sm_90" / "vector_add.ptx").read_text()
