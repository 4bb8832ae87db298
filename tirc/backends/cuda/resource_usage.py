"""What a build's cubins use, read from the manifest's kernels (``NAME.json``): the
``--resource-usage`` report in the form ``nvcc --resource-usage`` prints, and the check
that a kernel's block fits the registers of one SM.

The figures are decided once, by the cubin stage (:mod:`tirc.backends.cuda.cubin`
reads them from nvJitLink), and reach the manifest as plain data: per kernel,
``"resource_usage": {arch: {"registers", "spill_stores", "spill_loads", "stack_frame",
"shared_memory", "constant_memory"}}``. Nothing here looks at IR or at a cubin.
"""
from __future__ import annotations

import math


def nvcc_report(kernels: list[dict]) -> list[str]:
    """Lines as ``nvcc --resource-usage`` (ptxas) prints them, per kernel and arch::

        ptxas info    : Compiling entry function 'main_kernel' for 'sm_80'
        ptxas info    : Function properties for main_kernel
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 24 registers, 1024 bytes smem, 376 bytes cmem[0]

    (ptxas leaves out smem and cmem[0] when they are 0, and so does this.)"""
    lines = []
    for k in kernels:
        for arch, r in sorted((k.get("resource_usage") or {}).items(), key=_arch_order):
            symbol = k.get("symbol", k.get("name"))
            lines += [f"ptxas info    : Compiling entry function '{symbol}' for '{arch}'",
                      f"ptxas info    : Function properties for {symbol}",
                      f"    {r['stack_frame']} bytes stack frame, {r['spill_stores']} bytes "
                      f"spill stores, {r['spill_loads']} bytes spill loads"]
            used = [f"Used {r['registers']} registers"]
            if r["shared_memory"]:
                used.append(f"{r['shared_memory']} bytes smem")
            if r["constant_memory"]:
                used.append(f"{r['constant_memory']} bytes cmem[0]")
            lines.append("ptxas info    : " + ", ".join(used))
    return lines


def _arch_order(item: tuple[str, dict]) -> tuple[int, str]:
    arch = item[0]
    digits = "".join(c for c in arch.split("_", 1)[-1] if c.isdigit())
    return (int(digits or 0), arch)


def block_registers(threads: int, registers: int, unit: int, warp: int = 32) -> int:
    """The registers a block of ``threads`` takes on an SM: each warp gets ``registers``
    x 32 rounded up to a multiple of ``unit`` (the occupancy calculator's rule)."""
    per_warp = math.ceil(registers * warp / unit) * unit
    return math.ceil(threads / warp) * per_warp


def _block_sizes(kernel: dict) -> list[int]:
    """The constant block sizes (threads) a kernel runs with: its own when constant,
    else those of its launch sites that are."""
    def threads(dims) -> int | None:
        return math.prod(dims) if dims and all(isinstance(d, int) for d in dims) else None

    own = threads(kernel.get("block"))
    if own is not None:
        return [own]
    return [n for site in kernel.get("launches", []) if (n := threads(site.get("block")))]


def register_overflows(kernels: list[dict]) -> list[tuple[str, str]]:
    """``(kernel name, message)`` for each kernel and arch whose block needs more
    registers than one SM of the arch has (``tirc.target.kinds.CUDA_ARCHS``): its launch
    would fail with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES. Kernels whose block size is
    known nowhere are not checked."""
    from tirc.target.kinds import CUDA_ARCHS

    out = []
    for k in kernels:
        sizes = _block_sizes(k)
        if not sizes:
            continue
        threads = max(sizes)
        for arch, r in sorted((k.get("resource_usage") or {}).items(), key=_arch_order):
            facts = CUDA_ARCHS.get(arch)
            if facts is None:
                continue
            need = block_registers(threads, r["registers"], facts.register_unit)
            if need > facts.registers_per_sm:
                out.append((k["name"], f"kernel '{k['name']}' uses {r['registers']} registers per "
                            f"thread on {arch}: a block of {threads} threads needs {need} "
                            f"registers, more than the {facts.registers_per_sm} of one SM, so "
                            "its launch fails (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES); launch "
                            "fewer threads per block"))
    return out
