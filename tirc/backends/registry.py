"""Backends keyed by target kind: what turns a module of functions for one target into
an artefact. Entries name their generator as ``module:function`` and are imported on
first use, so nothing LLVM- or CUDA-related loads at import time."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tirc.diagnostics import Diagnostic


@dataclass(frozen=True)
class Backend:
    kind: str  # the target kind it compiles for
    name: str
    generator: str  # "module:function"; called as function(module, target, name)
    doc: str

    def load(self) -> Callable[..., Any]:
        module, _, function = self.generator.partition(":")
        return getattr(importlib.import_module(module), function)


BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> None:
    if backend.kind in BACKENDS:
        raise ValueError(f"a backend for target kind '{backend.kind}' is already registered")
    BACKENDS[backend.kind] = backend


def get_backend(kind: str) -> Backend:
    try:
        return BACKENDS[kind]
    except KeyError:
        known = ", ".join(sorted(BACKENDS)) or "none"
        raise Diagnostic(f"no code generator for target kind '{kind}' (available: {known})") from None


register(Backend("llvm", "cpu", "tirc.backends.cpu:generate",
                 "host CPU code through LLVM (an object file)"))
register(Backend("cuda", "nvptx", "tirc.backends.nvptx:generate",
                 "NVIDIA GPU code through LLVM's NVPTX target (PTX text)"))
