"""``OUT/NAME.json``: what a build system or a reviewer wants to know without reading PTX
(docs/build-systems.md), a function of the build's facts (:mod:`tirc.ir.facts`): it reads no IR.

    {"abi": "c" | "packed", "module": NAME, "host_target": canonical,
     "functions": [{"name", "symbol", "target", "target_summary", "params", "returns",
                    "declaration"?}],
     "kernels":   [{"name", "symbol", "target", "target_summary", "image"?, "params",
                    "launch_params", "grid", "block", "dynamic_shared_memory", "launches",
                    "resource_usage"?, "fatbin"?, "opencl"?, "rocm"?}]}

``functions`` are the exported host functions (packed or C API), with their TIR
parameters (``{"name", "kind": "buffer", "dtype", "shape", "written"}`` or ``{"name",
"kind": "scalar", "dtype"}``; ``written``: whether a call may store to the buffer, so a
caller knows its outputs) and for the C ABI the C declaration. ``kernels`` are the device
kernels (``calling_conv`` 2): ``grid`` and ``block`` are ``[x, y, z]`` with integers
for constants and expression text (in terms of the kernel's parameters) otherwise;
``dynamic_shared_memory`` is bytes, likewise; ``launch_params`` the launch parameter
tags in order (TVM's ``tirx.kernel_launch_params``); ``launches`` each host launch
site (``caller`` and the sizes in terms of the caller's variables). ``target`` is the
target's canonical string; ``image`` the device file of the kernel's target, or a
list of them (one per arch) for a multi-arch target (``cuda -arch=sm_80,sm_90``).
Builds with cubins (``--device-format cubin`` or ``fatbin``) add ``resource_usage``,
per arch of the kernel's cubins: ``{"sm_80": {"registers", "spill_stores",
"spill_loads", "stack_frame", "shared_memory", "constant_memory"}}`` (integers; bytes
but for registers per thread), as the cubin stage read them from nvJitLink; fatbin
builds add ``fatbin``, the images of the kernel's fatbin in order (``[{"arch":
"sm_80", "format": "cubin"}, ..., {"arch": "sm_90", "format": "ptx"}]``). Kernels of an
opencl target add ``opencl``: ``{"params": [OpenCL C parameter declarations],
"local_memory_bytes": static __local bytes, "dynamic_local_memory": bool}``. Kernels of a
rocm target add ``rocm``, as the code object's metadata states them: ``{"lds_bytes":
static LDS bytes, "kernarg_bytes", "args": [{"offset", "size", "kind"}], "wavefront_size",
"max_flat_workgroup_size"}``, and their ``resource_usage`` per arch is ``{"vgprs",
"agprs", "sgprs", "vgpr_spills", "sgpr_spills", "scratch_bytes", "lds_bytes"}``. These are
the device stage's facts, passed in as plain data (``device_facts``), never derived
here. Lists are in module order; the JSON has sorted keys and a trailing newline, so the
same input gives the same bytes.
"""
from __future__ import annotations

import json

from tirc.ir.facts import BuildFacts, Function, Kernel


def _kernel(k: Kernel, images: dict, device_facts: dict) -> dict:
    entry = {"name": k.name, "symbol": k.symbol, "target": k.target,
             "target_summary": k.target_summary,
             "image": images.get(k.target) if k.target is not None else None,
             "params": [p.as_json() for p in k.params], "launch_params": list(k.launch_params),
             **k.sizes.as_json(), "launches": [launch.as_json() for launch in k.launches]}
    found = device_facts.get(k.target, {}) if k.target is not None else {}
    usage = found.get("resource_usage", {}).get(k.symbol)
    if usage:
        entry["resource_usage"] = usage
    if "fatbin" in found:
        entry["fatbin"] = found["fatbin"]
    opencl = found.get("opencl_kernels", {}).get(k.symbol)
    if opencl is not None:
        entry["opencl"] = opencl
    rocm = found.get("rocm_kernels", {}).get(k.symbol)
    if rocm is not None:
        entry["rocm"] = rocm
    return entry


def _function(f: Function) -> dict:
    entry = {"name": f.name, "symbol": f.symbol, "target": f.target,
             "target_summary": f.target_summary, "params": [p.as_json() for p in f.params],
             "returns": f.returns}
    if f.declaration is not None:
        entry["declaration"] = f.declaration
    return entry


def manifest(facts: BuildFacts, name: str, abi: str, host_target: str | None = None,
             images: dict[str, str | list[str]] | None = None,
             device_facts: dict[str, dict] | None = None) -> dict:
    """The manifest of a build: its ``facts`` (the record the passes filled in),
    ``host_target`` (canonical), ``images`` (a device target's canonical string -> its
    image file name, a list of names for a multi-arch target) and ``device_facts`` (a
    device target's canonical string -> what its device stage recorded:
    ``"resource_usage"``, ``{kernel symbol: {arch: figures}}``, ``"fatbin"``, the
    fatbin's entries, ``"opencl_kernels"`` and ``"rocm_kernels"``, ``{kernel symbol:
    facts}``)."""
    images = images or {}
    device_facts = device_facts or {}
    return {"abi": abi, "module": name, "host_target": host_target,
            "functions": [_function(f) for f in facts.functions],
            "kernels": [_kernel(k, images, device_facts) for k in facts.kernels]}


def manifest_json(data: dict) -> str:
    return json.dumps(data, sort_keys=True, indent=2) + "\n"
