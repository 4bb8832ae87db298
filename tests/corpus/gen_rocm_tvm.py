"""Record what TVM 0.27 makes of the modules test_rocm_tvm.py compares with tirc's rocm
builds: the samples with kernels, the CUDA modules of the block-level and SIMT corpora,
and the modules TVM printed with CUDA targets (../tvm, ../tvm_tests) with those targets
made ``rocm -mcpu=gfx90a -max_num_threads=1024`` (opencl_corpus.py's ``retarget_text``).

TVM 0.27's ``target.build.rocm`` needs ROCm's device bitcode at build time
(``tvm_callback_rocm_bitcode_path``), which this machine does not have, so the modules
are taken through ``tvm.tirx.build``'s steps short of code generation: BindTarget, the
default TIR pipeline for the target, ``split_host_device_mods`` and the device
finalisation passes. Per device module, per kernel (``calling_conv`` 2): its symbol, its
parameters' dtypes, and its static shared (LDS) allocations, read by parsing TVM's
printed device module with tirc's parser.

    python tests/corpus/gen_rocm_tvm.py     # needs apache-tvm==0.27 (the tvm extra)

Writes rocm_tvm/index.json."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "runtime"))

TARGET = {"kind": "rocm", "mcpu": "gfx90a", "max_num_threads": 1024}


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
            yield p.stem, str(p.relative_to(ROOT)), retarget_text(p.read_text(), TARGET)


def kernels_of(device_text: str) -> list[dict]:
    """The kernels of a device module TVM printed: symbol, parameter dtypes, static
    shared allocations (name, bytes) and whether it uses dynamic shared memory."""
    from tirc.frontend.parse import parse
    from tirc.ir.attrs import GLOBAL_SYMBOL, is_kernel
    from tirc.ir.stmt import AllocBuffer
    from tirc.ir.visitor import walk
    mod = parse(device_text, "tvm_device.tir")
    out = []
    for name, f in mod.functions.items():
        if not is_kernel(f):
            continue
        shared, dyn = [], False
        for node in walk(f.body):
            if isinstance(node, AllocBuffer) and node.buffer.scope in ("shared", "shared.dyn"):
                if node.buffer.scope == "shared.dyn":
                    dyn = True
                    continue
                b = node.buffer
                count = 1
                for d in b.shape:
                    count *= int(d.value)
                shared.append([b.name, count * b.dtype.bits * b.dtype.lanes // 8])
        out.append({"symbol": str(f.attrs.get(GLOBAL_SYMBOL, name)),
                    "params": [str(p.dtype) for p in f.params],
                    "shared": shared, "dynamic_shared": dyn})
    return out


def main() -> None:
    import tvm
    from tvm.target import Target
    build = importlib.import_module("tvm.tirx.build")
    index = []
    for name, path, text in sources():
        entry = {"name": name, "source": path}
        try:
            mod = tvm.script.from_source(text)
            if not isinstance(mod, tvm.IRModule):
                mod = tvm.IRModule({"main": mod})
            target = Target(TARGET, host="llvm")
            mod = tvm.tirx.transform.BindTarget(target)(mod)
            pipeline, _, finalize_device = tvm.tirx.get_default_tir_pipeline(target)
            _, devices = build.split_host_device_mods(pipeline(mod))
            kernels = []
            for device_mod in devices.values():
                kernels += kernels_of(finalize_device()(device_mod).script())
            entry["kernels"] = kernels
        except Exception as e:  # noqa: BLE001 - recorded, not hidden
            entry["tvm_error"] = str(e).strip().splitlines()[-1][:300]
        index.append(entry)
        print(name, entry.get("tvm_error", "ok"))
    out = HERE / "rocm_tvm"
    out.mkdir(exist_ok=True)
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
