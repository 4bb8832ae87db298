"""Print what TVM 0.27's BindTarget gives each function (run with TVM 0.27 installed):
tests/corpus/tvm/bound_targets.json, {bind target: {module file: {function: [kind,
arch, host kind]}}} for every module of the samples, the TVM corpus and the block-level
corpus that TVM reads, bound to {"kind": "cuda", "arch": "sm_90"} with host llvm and to
{"kind": "llvm"}. tests/passes/prepare/test_bind_target_reference.py compares tirc's BindTarget with it.

    python tests/corpus/gen_bound_targets.py
"""
from __future__ import annotations

import json
import pathlib
import sys

import tvm

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
from gen_kernel_params import read_module  # noqa: E402
OUT = ROOT / "tests" / "corpus" / "tvm" / "bound_targets.json"
BINDS = {
    "cuda -arch=sm_90 --host llvm": lambda: tvm.target.Target({"kind": "cuda", "arch": "sm_90"}, host={"kind": "llvm"}),
    "llvm": lambda: tvm.target.Target({"kind": "llvm"}),
}


def summary(t) -> list:
    arch = str(t.attrs["arch"]) if "arch" in t.attrs else None
    return [str(t.kind.name), arch, str(t.host.kind.name) if t.host is not None else None]


def bound(path: pathlib.Path, target) -> dict | None:
    mod = read_module(path)
    if mod is None:
        return None
    try:
        mod = tvm.tirx.transform.BindTarget(target)(mod)
    except Exception:
        return None
    out = {}
    for gv, f in mod.functions.items():
        t = f.attrs.get("target") if f.attrs is not None else None
        out[gv.name_hint] = summary(t) if t is not None else None
    return out


def main() -> None:
    files = sorted((ROOT / "samples").glob("*.tir")) + sorted((ROOT / "tests" / "corpus" / "tvm").glob("*.tir")) \
        + sorted((ROOT / "tests" / "corpus" / "sblock").glob("*.tir"))
    result = {}
    for label, make in BINDS.items():
        target = make()
        per = {}
        for path in files:
            found = bound(path, target)
            if found is not None:
                per[str(path.relative_to(ROOT))] = found
        result[label] = per
    OUT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print({k: len(v) for k, v in result.items()}, "->", OUT)


if __name__ == "__main__":
    main()
