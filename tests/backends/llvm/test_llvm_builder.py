"""``llvm_builder``'s fast paths make the modules llvmlite's own ``IRBuilder``,
``append_basic_block``, ``NameScope`` and ``GlobalVariable`` make: every sample and
every module of the TVM corpus, built for CUDA with an x86-64 host (and the CPU ones for
the CPU, with debug lines), gives the same LLVM IR text both ways, host and device
modules alike; ``bytes_constant`` writes llvmlite's escaped text."""
from __future__ import annotations

import pytest
from llvmlite import ir

from conftest import ROOT, ids
from tirc.backends.cpu import backend as cpu
from tirc.backends.llvm import launch_support
from tirc.backends.llvm import lower as llvm_lower
from tirc.backends.llvm import text as llvm_text
from tirc.backends.cuda import nvptx
from tirc.backends.llvm import types as lt
from tirc.backends.llvm.llvmlite_compat import opaque
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic

INPUTS = sorted((ROOT / "samples").glob("*.tir")) + sorted((ROOT / "tests/corpus/tvm").glob("*.tir"))
TARGETS = ("cuda -arch=sm_90", "llvm -mtriple=x86_64-linux-gnu")


def _llvmlite_constant(module, name, initializer, ptr):
    g = ir.GlobalVariable(module, initializer.type, name, addrspace=ptr.addrspace)
    g.linkage, g.global_constant, g.unnamed_addr = "private", True, True
    g.initializer = initializer
    return opaque(g, ptr)


def _texts(path, tmp_path, monkeypatch, slow: bool) -> list[str]:
    """The LLVM modules' texts of ``path`` built for each target, with llvmlite's own
    construction when ``slow``."""
    texts = []

    def keep(module):
        texts.append(str(module))
        return texts[-1]

    with monkeypatch.context() as m:
        for where in (cpu, nvptx):
            m.setattr(where, "module_text", keep)
        if slow:
            for where in (llvm_lower, launch_support):
                m.setattr(where, "Builder", ir.IRBuilder)
                m.setattr(where, "fast_names", lambda value: None)
            m.setattr(llvm_lower, "new_block", lambda f, name: f.append_basic_block(name))
            m.setattr(llvm_lower, "private_constant", _llvmlite_constant)
        for target in TARGETS:
            try:
                build(path.read_text(), target, TARGETS[1], out_dir=tmp_path,
                      filename=str(path), debug=target == TARGETS[1])
            except Diagnostic:
                texts.append(f"not for {target}")
    return texts


@pytest.mark.parametrize("path", INPUTS, ids=ids(INPUTS))
def test_fast_builder_makes_llvmlite_modules(path, tmp_path, monkeypatch):
    fast = _texts(path, tmp_path, monkeypatch, slow=False)
    assert fast == _texts(path, tmp_path, monkeypatch, slow=True)


@pytest.mark.parametrize("data", [b"", b"plain text\0", b'quote " back \\ tab \t nl \n\0',
                                  "caf\u00e9 \u2713".encode() + b"\0", bytes(range(256))])
def test_bytes_constant_is_llvmlite_text(data):
    ty = ir.ArrayType(lt.I8, len(data))
    fast = llvm_text.bytes_constant(ty, data).get_reference()
    assert fast == ir.Constant(ty, bytearray(data)).get_reference()
