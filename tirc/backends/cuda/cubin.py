"""PTX -> cubin through nvJitLink from cuda-python (``cuda.bindings.nvjitlink``): no GPU
and no nvcc needed, only ``libnvJitLink.so`` (the PyPI wheel ``nvidia-nvjitlink``).
Imported only when a cubin is asked for; when the library is missing the answer is a
Diagnostic saying what to install.

This stage owns the cubin's resource usage: nvJitLink runs with ``-verbose`` and its
info log (the ptxas report of each function, then the linker's report of each kernel
of the linked cubin) is read into plain figures per function (:data:`FIELDS`). The
linked cubin's own figures (registers, stack, shared and constant memory, as
``cuobjdump --dump-resource-usage`` reads them from the cubin) come from the linker's
lines; the spills, which only the compiler knows, from ptxas's."""
from __future__ import annotations

import re
from dataclasses import field

from tirc.diagnostics import Diagnostic
from tirc.records import record

# the resource figures of one function of a cubin, all integers
FIELDS = ("registers", "spill_stores", "spill_loads", "stack_frame", "shared_memory",
          "constant_memory")

_MISSING = ("--device-format cubin needs nvJitLink (libnvJitLink.so), which was not found: "
            "install the PyPI wheel nvidia-nvjitlink, or build PTX")


def _nvjitlink():
    """The nvJitLink bindings, with the library loaded (a Diagnostic otherwise)."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError:
        raise Diagnostic(_MISSING + " (cuda-python's cuda.bindings is not installed either)") from None
    try:
        nvjitlink.version()  # loads libnvJitLink.so
    except Exception as e:  # DynamicLibNotFoundError and similar from cuda.pathfinder
        raise Diagnostic(f"{_MISSING} ({type(e).__name__})") from None
    return nvjitlink


def available() -> bool:
    try:
        _nvjitlink()
    except Diagnostic:
        return False
    return True


class UnsupportedArch(Diagnostic):
    """The installed nvJitLink makes no cubin for this arch (CUDA 13: none before sm_75)."""


@record(frozen=True)
class Cubin:
    """A cubin and what nvJitLink reported about it: ``resources`` by kernel symbol,
    each a dict of :data:`FIELDS`."""

    data: bytes
    arch: str
    resources: dict[str, dict[str, int]] = field(default_factory=dict)


def ptx_to_cubin(ptx: str, arch: str, name: str = "module", span=None) -> bytes:
    """The bytes of :func:`compile_cubin`."""
    return compile_cubin(ptx, arch, name, span).data


def compile_cubin(ptx: str, arch: str, name: str = "module", span=None,
                  line_info: bool = False) -> Cubin:
    """Assemble and link ``ptx`` for ``arch`` (``sm_90``) into a cubin, with its
    resource usage; ``line_info``: keep the PTX's ``.loc`` lines in it (``-lineinfo``).
    An arch the installed nvJitLink cannot compile for (CUDA 13 dropped offline
    compilation before sm_75) is :class:`UnsupportedArch` at ``span`` (the kernel's)
    suggesting PTX instead."""
    nvjl = _nvjitlink()
    options = [f"-arch={arch}", "-O3", "-verbose"] + (["-lineinfo"] if line_info else [])
    try:
        handle = nvjl.create(len(options), options)
    except nvjl.nvJitLinkError as e:
        version = ".".join(str(v) for v in nvjl.version())
        if "UNSUPPORTED_ARCH" in str(e):
            raise UnsupportedArch(f"the installed nvJitLink ({version}) cannot make a cubin "
                                  f"for {arch}; build PTX for it with --device-format ptx (the "
                                  "driver compiles PTX when the module is loaded)", span) from None
        raise Diagnostic(f"nvJitLink ({version}) refused the options {options}: {e}", span) from None
    try:
        data = ptx.encode()
        try:
            nvjl.add_data(handle, nvjl.InputType.PTX, data, len(data), f"{name}.ptx")
            nvjl.complete(handle)
        except nvjl.nvJitLinkError as e:
            raise Diagnostic(f"nvJitLink could not compile the PTX for {arch}: {e}\n"
                             f"{_log(nvjl, handle, 'error')}".rstrip()) from None
        out = bytearray(nvjl.get_linked_cubin_size(handle))
        nvjl.get_linked_cubin(handle, out)
        return Cubin(bytes(out), arch, parse_info_log(_log(nvjl, handle, "info")))
    finally:
        nvjl.destroy(handle)


def _log(nvjl, handle, which: str) -> str:
    try:
        size = getattr(nvjl, f"get_{which}_log_size")(handle)
        buf = bytearray(size)
        getattr(nvjl, f"get_{which}_log")(handle, buf)
        return buf.rstrip(b"\0").decode(errors="replace")
    except Exception:
        return ""


# -- the info log ---------------------------------------------------------------------------
# ptxas, per function:   ptxas info    : Function properties for NAME
#                        ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
#   and for a kernel:    ptxas info    : Used 24 registers, used 1 barriers, 1024 bytes smem, 376 bytes cmem[0]
# the linker, per kernel of the linked cubin:
#                        info    : Function properties for 'NAME':
#                        info    : used 24 registers, used 6 barriers, 0 stack, 0 bytes smem, 376 bytes cmem[0], 0 bytes lmem
_PROPS = re.compile(r"^(ptxas )?info\s*: Function properties for '?([^':]+)'?:?\s*$")
_FIGURE = re.compile(r"(\d+) (?:bytes )?(stack frame|spill stores|spill loads|registers|stack|smem|"
                     r"cmem\[0\])")
_PTXAS_NAMES = {"stack frame": "stack_frame", "spill stores": "spill_stores",
                "spill loads": "spill_loads", "registers": "registers", "smem": "shared_memory",
                "cmem[0]": "constant_memory"}
_LINK_NAMES = {"registers": "registers", "stack": "stack_frame", "smem": "shared_memory",
               "cmem[0]": "constant_memory"}


def parse_info_log(log: str) -> dict[str, dict[str, int]]:
    """The resource figures of each kernel in nvJitLink's ``-verbose`` info log (the
    functions it reports registers for), by symbol: every one of :data:`FIELDS` (0
    where the log names none, as ptxas leaves out an empty smem or cmem). A kernel's figures are the linked cubin's where the
    linker reports them (its registers may grow to its callees', its shared memory
    by what the arch reserves), its spills ptxas's."""
    compiled: dict[str, dict[str, int]] = {}
    linked: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    names = _PTXAS_NAMES
    for line in log.splitlines():
        m = _PROPS.match(line.strip())
        if m:
            table = compiled if m.group(1) else linked
            current = table.setdefault(m.group(2), {})
            names = _PTXAS_NAMES if m.group(1) else _LINK_NAMES
            continue
        if current is None or not re.search(r"\b(registers|stack|spill)\b", line):
            continue
        for value, what in _FIGURE.findall(line):
            if what in names:
                current[names[what]] = int(value)
    out = {}
    for symbol in list(compiled) + [s for s in linked if s not in compiled]:
        figures = {f: 0 for f in FIELDS}
        figures.update(compiled.get(symbol, {}))
        figures.update(linked.get(symbol, {}))
        if "registers" in compiled.get(symbol, {}) or "registers" in linked.get(symbol, {}):
            out[symbol] = figures
    return out
