"""InferBlockRegions: the ``T.reads``/``T.writes`` a block's text leaves out (TVMScript
written by hand: tutorials, older modules), inferred from its body as TVM's parser does
(``ScriptComplete``, with ``GetSBlockReadWriteRegion``:
:mod:`tirc.passes.analysis.block_access_region`).

The front end marks such a block with the annotation ``DETECT_ACCESS`` (which of the two
the text left out) and leaves them empty; this pass, run right after Verify, fills in the
ones left out and drops the mark. As in TVM:

- blocks are completed innermost first, so a block sees its children's regions;
- only buffers visible at the block count: the function's parameters and the buffers of
  the blocks around it (allocated or matched); its own allocations do not, and accesses
  through its own matched buffers count as accesses of their sources;
- a buffer written by the init is not also read (a reduction's ``C[vi, vj] = C[vi, vj] +
  ...`` reads only ``A`` and ``B``), and the init's reads count;
- a buffer whose data pointer is used directly (``A.data`` passed to a call) makes the
  regions impossible to infer: a located error asking for them to be written.

A module whose blocks all declare their regions is returned unchanged.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import DETECT_ACCESS
from tirc.ir.block import SBlock
from tirc.ir.buffer import Buffer
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import AllocBuffer, DeclBuffer
from tirc.ir.visitor import Mutator, walk
from tirc.passes.analysis.block_access_region import block_read_write_regions


def infer_block_regions(mod: IRModule, ctx=None) -> IRModule:
    funcs = {name: _infer(f) for name, f in mod.functions.items()}
    if all(funcs[n] is f for n, f in mod.functions.items()):
        return mod
    return replace(mod, functions=funcs)


def _infer(func: PrimFunc) -> PrimFunc:
    if not any(isinstance(n, SBlock) and any(k == DETECT_ACCESS for k, _ in n.annotations)
               for n in walk(func.body)):
        return func
    visible = {id(b.data): b for _, b in func.buffer_map}
    body = _Complete(visible).visit(func.body)
    return func.with_body(body)


class _Complete(Mutator):
    def __init__(self, visible: dict[int, Buffer]):
        self.visible = visible

    def _scoped(self, buffers):
        saved = {id(b.data): self.visible.get(id(b.data)) for b in buffers}
        self.visible.update((id(b.data), b) for b in buffers)
        return saved

    def _restore(self, saved) -> None:
        for key, old in saved.items():
            if old is None:
                self.visible.pop(key, None)
            else:
                self.visible[key] = old

    def visit_AllocBuffer(self, s: AllocBuffer):
        saved = self._scoped([s.buffer])
        try:
            return (yield from self.descend(s))
        finally:
            self._restore(saved)

    def visit_DeclBuffer(self, s: DeclBuffer):
        saved = self._scoped([s.buffer])
        try:
            return (yield from self.descend(s))
        finally:
            self._restore(saved)

    def visit_SBlock(self, s: SBlock):
        own = list(s.alloc_buffers) + [m.buffer for m in s.match_buffers]
        saved = self._scoped(own)
        try:
            block = yield from self.descend(s)
        finally:
            self._restore(saved)
        mask = dict(block.annotations).get(DETECT_ACCESS)
        if mask is None:
            return block

        def opaque(buf: Buffer) -> Diagnostic:
            return Diagnostic(
                f"cannot infer the regions block '{s.name_hint}' reads and writes: it uses "
                f"the data pointer of buffer '{buf.name}' directly; write its T.reads and "
                "T.writes", s.span)

        reads, writes = block_read_write_regions(block, self.visible, opaque)
        annotations = tuple((k, v) for k, v in block.annotations if k != DETECT_ACCESS)
        return replace(block, reads=reads if mask & 1 else block.reads,
                       writes=writes if mask & 2 else block.writes, annotations=annotations)
