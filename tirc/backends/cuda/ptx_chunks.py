"""The PTX of one device module made in chunks side by side (``tirc build -j N``): the
kernels of a device module are compiled independently by LLVM's NVPTX backend, so
kernels can be lowered, optimised and printed in forked processes
(:mod:`tirc.backends.forked`) and their PTX texts joined into the text the whole
module gives.

* **Chunks** (:func:`split`): only a module of kernels alone (no device subroutine,
  which would be a ``.func`` shared by its callers); each kernel is a chunk. The N
  processes take the chunks one at a time, the largest (statements and expressions of
  the kernel's body) first, so that they finish together whatever each kernel costs.
  Every chunk is compiled for the whole module's PTX ISA version. libdevice's functions
  are inlined into each kernel before the optimiser runs (:func:`libdevice.link`), so
  a kernel's code does not depend on the other kernels that call the same function;
  when more than two chunks may call libdevice, they link it by the piece.
* **Join** (:func:`join`): the NVPTX printer writes the header, the first kernel's
  ``.globl`` line, one line per shared-memory global it demoted to a kernel-local
  ``.shared`` (in the order of the kernels that own them) and a blank line, then each
  kernel; block labels and local stack frames are numbered by the function's place in
  the module (``$L__BB3_1``, ``__local_depot3``). The join writes the same from the
  chunks' texts, each kernel renumbered from its place in its chunk to its place in
  the module. A chunk whose text holds anything else at the top level (an ``.extern``
  or ``.global`` declaration, a ``.func``) cannot be joined that way: the module is
  then compiled whole (:func:`join` returns None).

The joined text is the whole module's PTX byte for byte (tests/backends/cuda/
test_ptx_chunks.py compares them over the CUDA corpora), so the device code does not
depend on N.
"""
from __future__ import annotations

import re
from dataclasses import replace

from tirc.ir.attrs import is_kernel
from tirc.ir.expr import Call
from tirc.ir.function import IRModule
from tirc.ir.visitor import walk
from tirc.records import record

_NUMBERED = re.compile(r"(\$L__BB|__local_depot)(\d+)")
_DEMOTED = re.compile(r"// \S+ has been demoted")
_EXTERN_CALLS = frozenset({"call_extern", "call_pure_extern"})


def split(mod: IRModule, jobs: int, math_ops: frozenset[str]) -> list[Chunk] | None:
    """``mod``'s kernels as chunks, one per kernel, the largest (statements and
    expressions) first, for ``jobs`` processes that take the next chunk when free
    (``forked.run_pulled``); ``math_ops``: the TIR calls that may reach libdevice (with
    extern calls). None when it is not cut (one process, one kernel, or a device
    subroutine)."""
    if jobs <= 1 or len(mod.functions) < 2:
        return None
    measured = kernels(mod, math_ops)
    if measured is None:
        return None
    order = sorted(range(len(measured)), key=lambda i: (-measured[i][1], i))
    return [measured[i][0] for i in order]


def kernels(mod: IRModule, math_ops: frozenset[str]) -> list[tuple[Chunk, int]] | None:
    """Each kernel of ``mod`` as a chunk of its own, in module order, with its size
    (statements and expressions); None when ``mod`` holds a device subroutine."""
    funcs = list(mod.functions.items())
    if not all(is_kernel(f) for _, f in funcs):
        return None
    out = []
    for i, (name, func) in enumerate(funcs):
        size, calls = 0, False
        for node in walk(func.body):
            size += 1
            if isinstance(node, Call) and isinstance(node.op, str) and (
                    node.op in math_ops or node.op in _EXTERN_CALLS):
                calls = True
        out.append((Chunk(replace(mod, functions={name: func}), (i,), calls), size))
    return out


@record(frozen=True)
class Chunk:
    """Some kernels of a device module, as a module, their places in it, and whether
    they may call libdevice."""

    mod: IRModule
    places: tuple[int, ...]
    math: bool


def join(texts: list[str], chunks: list[Chunk]) -> str | None:
    """The PTX of the whole module from the PTX of each of its ``chunks``; None when a
    chunk holds a top-level item other than demoted-global notes and kernels."""
    header = None
    notes: list[tuple[int, int, str]] = []  # (owner's place, order in chunk, line)
    kernels: list[tuple[int, str]] = []
    for text, chunk in zip(texts, chunks):
        parsed = _parse(text)
        if parsed is None or len(parsed[2]) != len(chunk.places):
            return None
        head, lines, bodies = parsed
        if header is None:
            header = head
        elif head != header:
            return None
        bodies = [_NUMBERED.sub(lambda m, d=place - i: f"{m.group(1)}{int(m.group(2)) + d}", body)
                  for i, (place, body) in enumerate(zip(chunk.places, bodies))]
        for n, line in enumerate(lines):
            name = line.split()[1]
            declared = re.compile(rf"^\t\.shared .* {re.escape(name)}(\[\d*\])?;$", re.M)
            owner = next((place for place, body in zip(chunk.places, bodies)
                          if declared.search(body)), None)
            if owner is None:
                return None
            notes.append((owner, n, line))
        kernels += zip(chunk.places, bodies)
    if header is None or not kernels:
        return None
    kernels.sort()
    notes.sort()
    first, _, rest = kernels[0][1].partition("\n")
    return (header + first + "\n" + "".join(f"{line}\n" for _, _, line in notes) + "\n"
            + rest + "".join(body for _, body in kernels[1:]))


def _parse(text: str) -> tuple[str, list[str], list[str]] | None:
    """A chunk's header (through ``.address_size`` and the blank line after it), its
    demoted-global notes and its kernels, each from its ``.globl`` line through its
    closing brace; None when anything else is at the top level."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.startswith(".address_size")), None)
    if at is None or at + 1 >= len(lines) or lines[at + 1] != "\n":
        return None
    header = "".join(lines[:at + 2])
    notes: list[str] = []
    kernels: list[str] = []
    i = at + 2
    while i < len(lines):
        line = lines[i]
        if line.startswith("\t// .globl\t"):
            j = i + 1
            while j < len(lines) and _DEMOTED.fullmatch(lines[j].rstrip("\n")):
                notes.append(lines[j].rstrip("\n"))
                j += 1
            if not kernels:  # the chunk's first kernel: its notes, then a blank line
                if j >= len(lines) or lines[j] != "\n":
                    return None
                j += 1
            if j >= len(lines) or not lines[j].startswith(".visible .entry "):
                return None
            end = j
            while end < len(lines) and lines[end] != "}\n":
                end += 1
            if end >= len(lines):
                return None
            kernels.append(line + "".join(lines[j:end + 1]))
            i = end + 1
            continue
        if line != "\n":
            return None
        if kernels:
            kernels[-1] += line  # a blank line between kernels belongs to the one before
        else:
            return None
        i += 1
    return header, notes, kernels
