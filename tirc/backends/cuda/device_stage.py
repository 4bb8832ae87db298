"""The device stage of ``build()``: device modules -> device images (docs/codegen-runtime.md).

Device modules (kernels and device subroutines, grouped by device target) go to the
backend of their target kind: one image each, ``OUT/NAME.ptx`` — ``OUT/NAME.<arch>.ptx``
when there are several device images (device targets, or archs of one multi-arch
``cuda -arch=sm_80,sm_90`` target, compiled once per arch) — or ``.cubin`` with
``device_format="cubin"`` (nvJitLink). ``device_format="fatbin"`` gives one
``OUT/NAME.fatbin`` per device target (``OUT/NAME.<archs>.fatbin`` when there are
several, ``NAME.sm_80-sm_90.fatbin``; nvFatbin): a cubin per arch and the PTX of the
newest arch whose PTX runs on later GPUs (the newest without an ``a``/``f`` suffix, else
the newest), so a newer GPU JIT-compiles it, as ``nvcc -gencode`` does; an arch
nvJitLink makes no cubin for (CUDA 13: before sm_75) goes in as PTX, with a warning.

What the stage decides is returned as plain data (:class:`DeviceOutputs`): the files,
and per device target its facts for the manifest — each kernel's resource usage per
arch, as the cubin stage (:mod:`tirc.backends.cuda.cubin`) read it from nvJitLink, and
the fatbin's entries. Nothing downstream derives them again.
"""
from __future__ import annotations

from pathlib import Path

from tirc.diagnostics import Diagnostic
from tirc.ir.function import IRModule
from tirc.backends.outputs import DeviceOutputs
from tirc.target.kinds import Target, arch_target, image_archs


def device_images(devices: dict[Target, IRModule], out: Path, name: str,
                  device_format: str, emit: tuple[str, ...] = (),
                  line_info: bool = False, jobs: int = 1,
                  made: dict | None = None) -> DeviceOutputs:
    """Compile each device module, once per arch of its target (``cuda -arch=sm_80,sm_90``
    lists several): per image its arch, file (``NAME.ptx``; ``NAME.<arch>.ptx`` when
    there are several images, ``NAME.<arch>.<n>.ptx`` when two targets share an arch) and
    bytes; a fatbin build makes one file per target of all its archs' images. Each
    module's images are also returned for the host's launch table
    (``DeviceOutputs.launches``): the host picks one per device at load time (the
    driver picks from a fatbin).
    Also the emitted intermediates (``emit``): ``<stem>.device.ll`` (llvm) and, for
    cubins and fatbins, ``<stem>.ptx`` (ptx). ``line_info``: PTX and cubins carry the
    ``.tir`` lines of their code (``-lineinfo``). ``jobs``: processes that may compile a
    module's kernels in chunks side by side (:mod:`tirc.backends.cuda.ptx_chunks`);
    ``made``: chunks compiled already (``nvptx.compile_kernels``)."""
    from tirc.backends.cuda.nvptx import generate

    result = DeviceOutputs()
    taken: set[str] = set()  # stems of the per-arch files
    fatbins: set[str] = set()  # stems of the fatbins

    def stem_for(label: str, single: bool, taken: set[str] = taken) -> str:
        stem, n = name if single else f"{name}.{label}", 1
        while stem in taken:
            n += 1
            stem = f"{name}.{label}.{n}"
        taken.add(stem)
        return stem

    def keep(stem: str, label: str, ext: str, data: bytes) -> None:
        result.labelled.setdefault(ext, {})[stem[len(name) + 1:] or label] = data

    single = sum(len(image_archs(t)) for t in devices) == 1
    for t, m in devices.items():
        archs = image_archs(t)
        first = next(iter(m.functions.values()), None)
        span = first.span if first else None
        variants, ptx, cubins = [], {}, {}
        for arch in archs:
            image = generate(m, arch_target(t, arch, len(archs)), name,
                             keep_ir="llvm" in emit, line_info=line_info, timed=result.timed,
                             jobs=jobs, made=made)
            ptx[image.arch] = image.ptx
            if device_format != "ptx":
                with result.timed("cubin"):
                    cubin = _cubin(image, name, span, device_format, result.warnings, line_info)
                if cubin is not None:
                    cubins[image.arch] = cubin.data
                    for symbol, figures in cubin.resources.items():
                        usage = result.facts.setdefault(t.canonical, {}).setdefault(
                            "resource_usage", {})
                        usage.setdefault(symbol, {})[image.arch] = figures
            stem = stem_for(image.arch, single)
            if device_format != "fatbin":
                data = cubins[image.arch] if device_format == "cubin" else image.ptx.encode()
                variants.append((data, device_format, image.arch))
                result.images.setdefault(t, []).append(
                    (image.arch, out / f"{stem}.{device_format}", data))
                keep(stem, image.arch, device_format, data)
            if "llvm" in emit:
                result.extras.append((out / f"{stem}.device.ll", image.llvm_ir.encode()))
            if "ptx" in emit and device_format != "ptx":
                result.extras.append((out / f"{stem}.ptx", image.ptx.encode()))
                keep(stem, image.arch, "ptx", image.ptx.encode())
        if device_format == "fatbin":
            entries = fatbin_entries(list(ptx), cubins)
            from tirc.backends.cuda.fatbin import make_fatbin
            with result.timed("fatbin"):
                data = make_fatbin([(fmt, arch, cubins[arch] if fmt == "cubin"
                                     else ptx[arch].encode()) for arch, fmt in entries], name)
            label = "-".join(ptx)
            stem = stem_for(label, len(devices) == 1, fatbins)
            result.images[t] = [(label, out / f"{stem}.fatbin", data)]
            keep(stem, label, "fatbin", data)
            result.facts.setdefault(t.canonical, {})["fatbin"] = [
                {"arch": arch, "format": fmt} for arch, fmt in entries]
            variants = [(data, "fatbin", label)]
        result.launches.append((m, image.kernels, variants))
    return result


def _cubin(image, name: str, span, device_format: str, warnings: list, line_info: bool):
    """The cubin of one device image (``nvptx_cubin.Cubin``); for a fatbin, None for an
    arch nvJitLink makes no cubin for (its PTX goes in instead, with a warning)."""
    from tirc.backends.cuda.cubin import UnsupportedArch, compile_cubin

    try:
        return compile_cubin(image.ptx, image.arch, name, span, line_info)
    except UnsupportedArch as e:
        if device_format != "fatbin":
            raise
        warnings.append(Diagnostic(
            f"{e.message.split(';')[0]}: the fatbin holds its PTX instead, which the driver "
            "compiles when the module is loaded", span, severity="warning"))
        return None


def fatbin_entries(archs: list[str], cubins: dict[str, bytes]) -> list[tuple[str, str]]:
    """``(arch, format)`` of each image of a fatbin, oldest arch first: its cubin (its PTX
    when there is none), then the PTX of the newest arch whose PTX runs on every later
    GPU (no ``a``/``f`` suffix; the newest arch when all have one), as ``nvcc -gencode
    arch=compute_XY,code=[sm_XY,compute_XY]`` makes it."""
    from tirc.target.cuda_arch import image_rule

    entries = [(a, "cubin" if a in cubins else "ptx") for a in archs]
    portable = [a for a in archs if image_rule(a, "ptx") == "atmost"]
    newest = (portable or archs)[-1]
    if (newest, "ptx") not in entries:
        entries.append((newest, "ptx"))
    return entries
