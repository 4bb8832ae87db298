"""Source lines in LLVM IR: debug metadata that maps generated code to ``.tir`` lines.

Two kinds, chosen by the backend:

- ``"lines"`` (host ``-g``): DWARF line tables (``emissionKind: LineTablesOnly``), what
  ``clang -gline-tables-only`` writes, so ``gdb``, ``perf annotate`` and ``addr2line``
  map host code to the ``.tir`` file.
- ``"directives"`` (device ``-lineinfo``): ``.file``/``.loc`` directives only
  (``emissionKind: DebugDirectivesOnly``), what ``nvcc -lineinfo`` writes: the NVPTX
  backend prints them into the PTX, and nvJitLink keeps them in the cubin with its
  ``-lineinfo`` option, for Nsight Compute and ``nvdisasm -g``. No DWARF sections, so
  the PTX ``.target`` keeps no ``debug`` flag and the code is optimised as without it.

Every function gets a ``DISubprogram`` at its ``def`` line; each statement's code gets
the ``DILocation`` of the statement (a statement a pass wrote carries the location of
the one it came from; one without any takes its enclosing statement's).
"""
from __future__ import annotations

import os

from llvmlite import ir

from tirc.diagnostics import Span

KINDS = {"lines": "LineTablesOnly", "directives": "DebugDirectivesOnly"}


class DebugInfo:
    def __init__(self, module: ir.Module, kind: str, source: str):
        self.module = module
        file, directory = _split(source)
        self.file = module.add_debug_info("DIFile", {"filename": file, "directory": directory})
        self.unit = module.add_debug_info("DICompileUnit", {
            "language": ir.DIToken("DW_LANG_C99"),
            "file": self.file,
            "producer": "tirc",
            "isOptimized": True,
            "runtimeVersion": 0,
            "emissionKind": ir.DIToken(KINDS[kind]),
        }, is_distinct=True)
        module.add_named_metadata("llvm.dbg.cu", self.unit)
        flags = module.add_named_metadata("llvm.module.flags")
        flags.add(module.add_metadata([ir.IntType(32)(7), "Dwarf Version", ir.IntType(32)(4)]))
        flags.add(module.add_metadata([ir.IntType(32)(2), "Debug Info Version",
                                       ir.IntType(32)(3)]))
        self.no_types = module.add_debug_info("DISubroutineType",
                                              {"types": module.add_metadata([])})
        self.locations: dict[tuple[int, int, int], ir.DIValue] = {}

    def subprogram(self, llfunc: ir.Function, span: Span | None) -> ir.DIValue:
        """The function's ``DISubprogram`` (attached to it), at ``span``'s line."""
        line = span.line if span is not None else 0
        sp = self.module.add_debug_info("DISubprogram", {
            "name": llfunc.name,
            "linkageName": llfunc.name,
            "scope": self.file,
            "file": self.file,
            "line": line,
            "scopeLine": line,
            "type": self.no_types,
            "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"),
            "unit": self.unit,
        }, is_distinct=True)
        llfunc.set_metadata("dbg", sp)
        return sp

    def location(self, span: Span, scope: ir.DIValue) -> ir.DIValue:
        key = (span.line, span.col, id(scope))
        loc = self.locations.get(key)
        if loc is None:
            loc = self.locations[key] = self.module.add_debug_info(
                "DILocation", {"line": span.line, "column": span.col, "scope": scope})
        return loc


def _split(source: str) -> tuple[str, str]:
    """DIFile's name and directory: the path as the user gave it, and the directory it
    was given in (as compilers write ``DW_AT_name`` and ``DW_AT_comp_dir``)."""
    if source.startswith("<"):  # <stdin>, <string>: no file on disk
        return source, ""
    return source, os.getcwd()
