"""Print the parameters of every kernel TVM 0.27's SplitHostDevice makes (run with TVM
0.27 installed): tests/corpus/tvm/kernel_params.json, {module file: {kernel: [param, ...]}}
for each module with CUDA kernels among the samples, the TVM corpus and the block-level
corpus, built for {"kind": "cuda", "arch": "sm_90"} with host llvm through the pass list
of gen_tvm_corpus.py. tests/passes/split/test_kernel_param_order.py compares tirc's kernels with it.

    python tests/corpus/gen_kernel_params.py
"""
from __future__ import annotations

import importlib.util
import json
import pathlib

import tvm

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "corpus" / "tvm" / "kernel_params.json"


def passes():
    spec = importlib.util.spec_from_file_location("gen_tvm_corpus", ROOT / "tests" / "corpus" / "gen_tvm_corpus.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen._s_tir_passes()


def read_module(path: pathlib.Path):
    """The module TVM reads from ``path`` (a lone function as ``main``); None if it cannot."""
    try:
        mod = tvm.script.from_source(path.read_text())
    except Exception:
        return None
    return tvm.IRModule({"main": mod}) if isinstance(mod, tvm.tirx.PrimFunc) else mod


def kernels(path: pathlib.Path, pass_list) -> dict[str, list[str]] | None:
    mod = read_module(path)
    if mod is None:
        return None
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"}, host={"kind": "llvm"})
    try:
        with tvm.transform.PassContext(opt_level=3):
            mod = tvm.tirx.transform.BindTarget(target)(mod)
            for _, p in pass_list:
                mod = p(mod)
    except Exception:
        return None
    out = {}
    for gv, f in mod.functions.items():
        if int(f.attrs.get("calling_conv", 0)) == 2:
            out[gv.name_hint] = [p.name for p in f.params]
    return out or None


def main() -> None:
    pass_list = passes()
    files = sorted((ROOT / "samples").glob("*.tir")) + sorted((ROOT / "tests" / "corpus" / "tvm").glob("*.tir")) \
        + sorted((ROOT / "tests" / "corpus" / "sblock").glob("cuda_*.tir"))
    result = {}
    for path in files:
        found = kernels(path, pass_list)
        if found:
            result[str(path.relative_to(ROOT))] = found
    OUT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"{len(result)} modules, {sum(len(v) for v in result.values())} kernels -> {OUT}")


if __name__ == "__main__":
    main()
