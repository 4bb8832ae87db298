"""Print TVM 0.27's OpenCL C for the modules test_opencl_source.py compares with tirc's:
the samples with kernels, the CUDA modules of the block-level and SIMT corpora, each
built by ``tvm.compile`` for ``opencl -max_num_threads=1024`` (host llvm), and the
modules TVM printed with CUDA targets (../tvm, ../tvm_tests), their targets made that
opencl target (tests/runtime/opencl_corpus.py's ``retarget_text``).

    python tests/corpus/gen_opencl_tvm.py     # needs apache-tvm==0.27 (the tvm extra)

Writes opencl_tvm/NAME.cl (the source of TVM's OpenCL module, ``inspect_source()``) and
opencl_tvm/index.json (which file each came from, and the modules TVM did not build, with
its error)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "runtime"))



def sources():
    for p in sorted((ROOT / "samples").glob("*.tir")):
        text = p.read_text()
        if "thread_binding" in text and "multi_target" not in p.name:
            yield p.stem, f"samples/{p.name}", text
    for folder in ("sblock", "simt"):
        for e in json.loads((HERE / folder / "index.json").read_text()):
            if e["target"] != "llvm":
                yield e["name"], f"tests/corpus/{folder}/{e['name']}.tir", \
                    (HERE / folder / f"{e['name']}.tir").read_text()
    from opencl_corpus import retarget_text, text_cases
    for p in text_cases():
        if p.parent.name in ("tvm", "tvm_tests"):
            yield p.stem, str(p.relative_to(ROOT)), retarget_text(p.read_text())


def main() -> None:
    import tvm
    out = HERE / "opencl_tvm"
    out.mkdir(exist_ok=True)
    index = []
    for name, path, text in sources():
        entry = {"name": name, "source": path}
        try:
            mod = tvm.script.from_source(text)
            if not isinstance(mod, tvm.IRModule):
                mod = tvm.IRModule({"main": mod})
            lib = tvm.compile(mod, target=tvm.target.Target({"kind": "opencl", "max_num_threads": 1024},
                                                            host="llvm"))
            (src,) = [m.inspect_source() for m in lib.mod.imports]
            (out / f"{name}.cl").write_text(src)
        except Exception as e:  # noqa: BLE001 - recorded, not hidden
            entry["tvm_error"] = str(e).strip().splitlines()[-1][:300]
        index.append(entry)
        print(name, entry.get("tvm_error", "ok"))
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
