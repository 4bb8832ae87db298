"""The device stage for opencl targets: each device module as OpenCL C source, one file
per target (``OUT/NAME.cl``; ``OUT/NAME.<n>.cl`` for the n-th target from the second on), the
same text embedded in the host object, which builds it with the OpenCL driver at its
first launch in each context. Per target its facts for the manifest: each kernel's
parameters and static local memory."""
from __future__ import annotations

from pathlib import Path

from tirc.backends.outputs import DeviceOutputs
from tirc.ir.function import IRModule
from tirc.target.kinds import Target


def device_images(devices: dict[Target, IRModule], out: Path, name: str,
                  device_format: str, emit: tuple[str, ...] = (),
                  line_info: bool = False) -> DeviceOutputs:
    from tirc.backends.opencl.source import generate

    result = DeviceOutputs()
    for i, (t, m) in enumerate(devices.items()):
        with result.timed("opencl-c"):
            source = generate(m, t)
        label = "opencl" if i == 0 else f"opencl.{i + 1}"
        stem = name if i == 0 else f"{name}.{i + 1}"
        data = source.text.encode()
        result.images.setdefault(t, []).append((label, out / f"{stem}.cl", data))
        result.labelled.setdefault("cl", {})[label] = data
        result.facts.setdefault(t.canonical, {})["opencl_kernels"] = {
            k.symbol: {"params": list(k.params), "local_memory_bytes": k.local_bytes,
                       "dynamic_local_memory": k.dynamic_local} for k in source.kernels}
        result.launches.append((m, tuple(k.symbol for k in source.kernels),
                                [(data, "cl", label)]))
    return result
