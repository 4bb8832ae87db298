"""PTX -> cubin through nvJitLink from cuda-python (``cuda.bindings.nvjitlink``): no GPU
and no nvcc needed, only ``libnvJitLink.so`` (the PyPI wheel ``nvidia-nvjitlink-cu12``
or ``-cu13``). Imported only when a cubin is asked for; when the library is missing
the answer is a Diagnostic saying what to install."""
from __future__ import annotations

from tirc.diagnostics import Diagnostic

_MISSING = ("--device-format cubin needs nvJitLink (libnvJitLink.so), which was not found: "
            "install the PyPI wheel nvidia-nvjitlink-cu13 (or -cu12), or build PTX")


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


def ptx_to_cubin(ptx: str, arch: str, name: str = "module", span=None) -> bytes:
    """Assemble and link ``ptx`` for ``arch`` (``sm_90``) into a cubin. An arch the
    installed nvJitLink cannot compile for (CUDA 13 dropped offline compilation before
    sm_75) is a Diagnostic at ``span`` (the kernel's) suggesting PTX instead."""
    nvjl = _nvjitlink()
    options = [f"-arch={arch}", "-O3"]
    try:
        handle = nvjl.create(len(options), options)
    except nvjl.nvJitLinkError as e:
        version = ".".join(str(v) for v in nvjl.version())
        if "UNSUPPORTED_ARCH" in str(e):
            raise Diagnostic(f"the installed nvJitLink ({version}) cannot make a cubin for "
                             f"{arch}; build PTX for it with --device-format ptx (the driver "
                             "compiles PTX when the module is loaded)", span) from None
        raise Diagnostic(f"nvJitLink ({version}) refused the options {options}: {e}", span) from None
    try:
        data = ptx.encode()
        try:
            nvjl.add_data(handle, nvjl.InputType.PTX, data, len(data), f"{name}.ptx")
            nvjl.complete(handle)
        except nvjl.nvJitLinkError as e:
            raise Diagnostic(f"nvJitLink could not compile the PTX for {arch}: {e}\n"
                             f"{_log(nvjl, handle)}".rstrip()) from None
        out = bytearray(nvjl.get_linked_cubin_size(handle))
        nvjl.get_linked_cubin(handle, out)
        return bytes(out)
    finally:
        nvjl.destroy(handle)


def _log(nvjl, handle) -> str:
    try:
        size = nvjl.get_error_log_size(handle)
        buf = bytearray(size)
        nvjl.get_error_log(handle, buf)
        return buf.rstrip(b"\0").decode(errors="replace")
    except Exception:
        return ""
