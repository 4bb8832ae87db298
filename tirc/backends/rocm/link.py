"""Linking AMDGPU objects into code objects (``.hsaco``) with ``ld.lld``.

A code object is an ELF shared object for AMDGPU: ``ld.lld -shared`` of the relocatable
object llvmlite emits, as ROCm's own toolchain links it. The linker is LLD 22, matching
llvmlite's LLVM: the one the ``ziglang`` wheel ships (``zig ld.lld``; the ``tirc[rocm]``
extra installs it), else an ``ld.lld`` on PATH. Nothing else of a toolchain is needed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from tirc.diagnostics import Diagnostic, Span

NO_LINKER = ("linking AMDGPU code objects needs the linker ld.lld, which was not found: "
             "pip install 'tirc[rocm]' (the ziglang wheel ships LLD) or put ld.lld on PATH")
_LINKER: list[str] | None = None


def linker() -> list[str] | None:
    """The command that runs ``ld.lld`` (``[zig, "ld.lld"]`` or ``[path]``), or None."""
    global _LINKER
    if _LINKER is None:
        _LINKER = []
        try:
            import ziglang
            zig = os.path.join(os.path.dirname(ziglang.__file__), "zig")
            if os.path.exists(zig):
                _LINKER = [zig, "ld.lld"]
        except ImportError:
            pass
        if not _LINKER and shutil.which("ld.lld"):
            _LINKER = [shutil.which("ld.lld")]
    return _LINKER or None


def link(obj: bytes, name: str, span: Span | None = None) -> bytes:
    """The code object of relocatable object ``obj``; a Diagnostic at ``span`` when the
    linker is missing or refuses it (an undefined symbol: a function the device code
    calls that nothing defines)."""
    cmd = linker()
    if cmd is None:
        raise Diagnostic(NO_LINKER, span)
    with tempfile.TemporaryDirectory(prefix="tirc-hsaco-") as tmp:
        src, dst = os.path.join(tmp, f"{name}.o"), os.path.join(tmp, f"{name}.hsaco")
        with open(src, "wb") as f:
            f.write(obj)
        try:
            run = subprocess.run([*cmd, "-shared", "--no-undefined", "-o", dst, src],
                                 capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            raise Diagnostic(f"ld.lld could not be run ({e}): {NO_LINKER}", span) from None
        if run.returncode != 0:
            detail = (run.stderr or run.stdout).strip().replace(src, f"{name}.o")
            raise Diagnostic(f"ld.lld did not link the AMDGPU code object: {detail}", span)
        with open(dst, "rb") as f:
            return f.read()
