"""Cubins and PTX -> one fatbin through nvFatbin (``libnvfatbin.so``, the PyPI wheel
``nvidia-nvfatbin``): the container ``nvcc -gencode`` makes and ``cuModuleLoadData``
takes, from which the driver picks the image for the device. No GPU and no CUDA
toolkit needed. Used through cuda-python's ``cuda.bindings.nvfatbin`` when it has it,
else through ctypes on the library (located by ``cuda.pathfinder`` or in the wheel's
``nvidia/*/lib``). Imported only when a fatbin is asked for; a missing library is a
Diagnostic saying what to install.

:func:`entries` reads a fatbin's header back (tests, ``tirc.api``): per entry its kind
(``"cubin"`` or ``"ptx"``) and arch.
"""
from __future__ import annotations

import ctypes
import glob
import os
import struct
import sys

from tirc.diagnostics import Diagnostic
from tirc.records import record

MAGIC = 0xBA55ED50  # bytes 50 ed 55 ba
_ARCH_SPECIFIC, _FAMILY = 0x100000, 0x200000  # entry flags of sm_90a, sm_100f images
_MISSING = ("--device-format fatbin needs nvFatbin (libnvfatbin.so), which was not found: "
            "install the PyPI wheel nvidia-nvfatbin")


@record(frozen=True)
class Entry:
    """One image of a fatbin: ``kind`` "cubin" or "ptx", ``arch`` "sm_90" (or
    ``sm_90a``, ``sm_100f``), payload size in bytes (compressed when nvFatbin
    compressed it)."""

    kind: str
    arch: str
    size: int


def entries(data: bytes) -> list[Entry]:
    """The entries of a fatbin, read from its header (ValueError when ``data`` is not
    one): a 16-byte header (magic, version, header size, size of what follows), then
    per entry a header (kind 1 PTX or 2 ELF, header size, payload size, the arch at
    byte 28, flags at byte 40 with the ``a``/``f`` suffix bits) and its payload."""
    if len(data) < 16:
        raise ValueError("not a fatbin: shorter than its header")
    magic, _version, header, size = struct.unpack_from("<IHHQ", data, 0)
    if magic != MAGIC:
        raise ValueError(f"not a fatbin: magic {magic:#010x}, expected {MAGIC:#010x}")
    out, off, end = [], header, header + size
    if end > len(data):
        raise ValueError("truncated fatbin")
    while off < end:
        if off + 48 > end:
            raise ValueError(f"truncated fatbin entry at byte {off}")
        kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, off)
        arch = struct.unpack_from("<I", data, off + 28)[0]
        if kind not in (1, 2) or entry_header < 48:
            raise ValueError(f"bad fatbin entry at byte {off} (kind {kind})")
        flags = struct.unpack_from("<Q", data, off + 40)[0]
        suffix = "a" if flags & _ARCH_SPECIFIC else "f" if flags & _FAMILY else ""
        out.append(Entry("ptx" if kind == 1 else "cubin", f"sm_{arch}{suffix}", payload))
        off += entry_header + payload
    return out


# -- the library ----------------------------------------------------------------------------
class _Ctypes:
    """The few nvFatbin calls this module makes, through ctypes, shaped like
    ``cuda.bindings.nvfatbin`` (for a cuda-python without it)."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        lib.nvFatbinGetErrorString.restype = ctypes.c_char_p
        lib.nvFatbinGetErrorString.argtypes = [ctypes.c_int]
        lib.nvFatbinCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
        lib.nvFatbinAddCubin.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                         ctypes.c_char_p, ctypes.c_char_p]
        lib.nvFatbinAddPTX.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                       ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.nvFatbinSize.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        lib.nvFatbinGet.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nvFatbinDestroy.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.nvFatbinVersion.argtypes = [ctypes.POINTER(ctypes.c_uint)] * 2

    class nvFatbinError(Exception):  # noqa: N801  (the bindings' name)
        pass

    def _check(self, result: int) -> None:
        if result != 0:
            name = self.lib.nvFatbinGetErrorString(result)
            raise self.nvFatbinError(f"{name.decode() if name else 'error'} ({result})")

    def version(self) -> tuple[int, int]:
        major, minor = ctypes.c_uint(), ctypes.c_uint()
        self._check(self.lib.nvFatbinVersion(ctypes.byref(major), ctypes.byref(minor)))
        return major.value, minor.value

    def create(self, options: list[str], count: int) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        opts = (ctypes.c_char_p * max(count, 1))(*[o.encode() for o in options])
        self._check(self.lib.nvFatbinCreate(ctypes.byref(handle), opts, count))
        return handle

    def add_cubin(self, handle, code: bytes, size: int, arch: str, identifier: str) -> None:
        self._check(self.lib.nvFatbinAddCubin(handle, code, size, arch.encode(),
                                              identifier.encode()))

    def add_ptx(self, handle, code: bytes, size: int, arch: str, identifier: str,
                options: str) -> None:
        self._check(self.lib.nvFatbinAddPTX(handle, code, size, arch.encode(),
                                            identifier.encode(), options.encode()))

    def size(self, handle) -> int:
        n = ctypes.c_size_t()
        self._check(self.lib.nvFatbinSize(handle, ctypes.byref(n)))
        return n.value

    def get(self, handle, buffer: bytearray) -> None:
        out = ctypes.create_string_buffer(len(buffer))
        self._check(self.lib.nvFatbinGet(handle, out))
        buffer[:] = out.raw

    def destroy(self, handle) -> None:
        self._check(self.lib.nvFatbinDestroy(ctypes.byref(handle)))


def _library_path() -> str | None:
    """``libnvfatbin.so`` as cuda.pathfinder finds it, else in a wheel's ``nvidia/*/lib``."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        return load_nvidia_dynamic_lib("nvfatbin").abs_path
    except Exception:  # ImportError, DynamicLibNotFoundError: look in the wheels
        pass
    for root in sys.path:
        found = sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib", "libnvfatbin.so*")))
        if found:
            return found[-1]
    return None


def ctypes_api() -> _Ctypes:
    """nvFatbin through ctypes (a Diagnostic when the library is not found)."""
    path = _library_path()
    if path is None:
        raise Diagnostic(_MISSING)
    try:
        return _Ctypes(ctypes.CDLL(path))
    except (OSError, AttributeError) as e:
        raise Diagnostic(f"{_MISSING} ({path}: {e})") from None


def _nvfatbin():
    """cuda-python's nvFatbin bindings with the library loaded, else :func:`ctypes_api`."""
    try:
        from cuda.bindings import nvfatbin
    except ImportError:
        return ctypes_api()
    try:
        nvfatbin.version()  # loads libnvfatbin.so
    except Exception as e:  # DynamicLibNotFoundError and similar from cuda.pathfinder
        raise Diagnostic(f"{_MISSING} ({type(e).__name__})") from None
    return nvfatbin


def available() -> bool:
    try:
        _nvfatbin()
    except Diagnostic:
        return False
    return True


def make_fatbin(images: list[tuple[str, str, bytes]], name: str = "module", api=None) -> bytes:
    """A fatbin of ``images``, each ``(kind, arch, data)``: ``kind`` "cubin" or "ptx",
    ``arch`` "sm_90" (``sm_90a``, ``sm_100f`` too), ``data`` the cubin or the PTX text
    (without its closing NUL). ``name`` identifies the entries (``cuobjdump`` shows it).
    The same images give the same bytes. ``api``: the nvFatbin calls to use (default:
    cuda-python's bindings, else ctypes)."""
    nvfb = api or _nvfatbin()
    handle = nvfb.create([], 0)
    try:
        for kind, arch, data in images:
            number = arch.split("_", 1)[1]  # nvFatbin takes "90", "90a"
            try:
                if kind == "cubin":
                    nvfb.add_cubin(handle, data, len(data), number, name)
                else:
                    nvfb.add_ptx(handle, data, len(data), number, name, "")
            except nvfb.nvFatbinError as e:
                raise Diagnostic(f"nvFatbin refused the {arch} {kind} of {name}: {e}") from None
        out = bytearray(nvfb.size(handle))
        nvfb.get(handle, out)
        return bytes(out)
    finally:
        nvfb.destroy(handle)
