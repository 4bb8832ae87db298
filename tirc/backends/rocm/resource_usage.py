"""What a build's AMDGPU code objects use, read from the manifest's kernels
(``NAME.json``): the ``--resource-usage`` report of rocm kernels. The figures come from
the code object's AMDHSA metadata (:mod:`tirc.backends.rocm.hsaco`), recorded by the
device stage as ``"resource_usage": {arch: {"vgprs", "agprs", "sgprs", "vgpr_spills",
"sgpr_spills", "scratch_bytes", "lds_bytes"}}``; nothing here reads a code object."""
from __future__ import annotations


def is_amdgpu(kernel: dict) -> bool:
    """Whether a manifest kernel's figures are an AMDGPU code object's."""
    return any("vgprs" in r for r in (kernel.get("resource_usage") or {}).values())


def amdgpu_report(kernels: list[dict]) -> list[str]:
    """Per kernel and arch, in the words of the code object's metadata::

        amdgpu info   : Function properties for main_kernel on gfx90a
            VGPRs: 24, AGPRs: 0, SGPRs: 16, VGPR spills: 0, SGPR spills: 0
            LDS: 1024 bytes, scratch: 0 bytes per work-item
    """
    lines = []
    for k in kernels:
        symbol = k.get("symbol", k.get("name"))
        for arch, r in sorted((k.get("resource_usage") or {}).items()):
            lines += [f"amdgpu info   : Function properties for {symbol} on {arch}",
                      f"    VGPRs: {r['vgprs']}, AGPRs: {r['agprs']}, SGPRs: {r['sgprs']}, "
                      f"VGPR spills: {r['vgpr_spills']}, SGPR spills: {r['sgpr_spills']}",
                      f"    LDS: {r['lds_bytes']} bytes, scratch: {r['scratch_bytes']} bytes "
                      "per work-item"]
    return lines
