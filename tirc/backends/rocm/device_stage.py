"""The device stage for rocm targets: each device module compiled by the AMDGPU backend
(:mod:`tirc.backends.rocm.amdgpu`) and linked by ``ld.lld`` into one code object per
target, ``OUT/NAME.hsaco`` (``OUT/NAME.<n>.hsaco`` for the n-th target from the second
on), which the host object embeds and loads with ``hipModuleLoadData``. Per target its
facts for the manifest, read from the code object's AMDHSA metadata
(:mod:`tirc.backends.rocm.hsaco`): each kernel's static LDS bytes, kernarg layout and, as
``resource_usage`` by arch, its VGPRs, AGPRs, SGPRs, spills, scratch and LDS.
With ``--emit llvm``, the optimised LLVM IR as ``<stem>.device.ll``."""
from __future__ import annotations

from pathlib import Path

from tirc.backends.outputs import DeviceOutputs
from tirc.diagnostics import Diagnostic
from tirc.ir.function import IRModule
from tirc.target.kinds import Target


def device_images(devices: dict[Target, IRModule], out: Path, name: str,
                  device_format: str, emit: tuple[str, ...] = (),
                  line_info: bool = False) -> DeviceOutputs:
    from tirc.backends.rocm.amdgpu import generate
    from tirc.backends.rocm.hsaco import kernels
    from tirc.backends.rocm.link import link

    result = DeviceOutputs()
    for i, (t, m) in enumerate(devices.items()):
        first = next(iter(m.functions.values()), None)
        if line_info and i == 0:
            result.warnings.append(Diagnostic(
                "-lineinfo: AMDGPU code objects are built without line information (target "
                "rocm); the build goes on without it", first.span if first else None,
                severity="warning"))
        obj = generate(m, t, name, keep_ir="llvm" in emit,
                       timed=result.timed)
        with result.timed("link"):
            data = link(obj.obj, name, first.span if first else None)
        label = obj.arch if i == 0 else f"{obj.arch}.{i + 1}"
        stem = name if i == 0 else f"{name}.{i + 1}"
        result.images.setdefault(t, []).append((obj.arch, out / f"{stem}.hsaco", data))
        result.labelled.setdefault("hsaco", {})[label] = data
        if "llvm" in emit:
            result.extras.append((out / f"{stem}.device.ll", obj.llvm_ir.encode()))
        facts = kernels(data)
        result.facts.setdefault(t.canonical, {})["rocm_kernels"] = {
            symbol: {"lds_bytes": f["lds_bytes"], "kernarg_bytes": f["kernarg_bytes"],
                     "args": [{k: a[k] for k in ("offset", "size", "kind")} for a in f["args"]],
                     "wavefront_size": f["wavefront_size"],
                     "max_flat_workgroup_size": f["max_flat_workgroup_size"]}
            for symbol, f in facts.items()}
        usage = result.facts[t.canonical].setdefault("resource_usage", {})
        for symbol, f in facts.items():
            usage.setdefault(symbol, {})[obj.arch] = {
                k: f[k] for k in ("vgprs", "agprs", "sgprs", "vgpr_spills", "sgpr_spills",
                                  "scratch_bytes", "lds_bytes")}
        result.launches.append((m, obj.kernels, [(data, "hsaco", obj.arch)]))
    return result
