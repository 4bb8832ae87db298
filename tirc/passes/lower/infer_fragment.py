"""InferFragment: each WMMA fragment buffer learns its shape and layout from the calls that
use it (TVM's ``s_tir.transform.InferFragment``, ``tensorcore_infer_fragment.cc``).

A fragment (``wmma.matrix_a``, ``wmma.matrix_b``, ``wmma.accumulator``; ``tirc.ir.wmma_ops``)
takes the (m, n, k) of the first ``T.tvm_load_matrix_sync``, ``T.tvm_store_matrix_sync`` or
``T.tvm_fill_fragment`` that names it, in program order, and A and B fragments the layout
of their first load or store; a first fill gives ``row_major``, and an accumulator first
loaded or stored gets no layout, as TVM decides. Every later call must agree, and the four
fragments of a ``T.tvm_mma_sync`` must have been filled or loaded and share one shape:
each a located error otherwise (TVM's internal checks). A load or store of a fragment's
elements (``C_frag[i]``) is an error too: how a fragment's elements sit in a warp's
registers is the hardware's, so only the WMMA calls may touch them.

The allocation of each fragment gets, inside it, TVM's attributes
``T.attr(frag.data, "fragment_layout", "row_major")`` (where it has a layout) around
``T.attr(frag.data, "fragment_shape", "16, 16, 16")``, which the CUDA code generator reads
to pick the layouts of ``wmma.mma``. (TVM 0.27 wraps the allocation statement itself,
which leaves the allocation scoped to the attribute; inside it the allocation keeps its
scope.)

Runs after ThreadSync, as in TVM's pipeline; skipped on a module without WMMA calls.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir import wmma_ops
from tirc.ir.buffer import WMMA_SCOPES
from tirc.ir.expr import BufferLoad, Call, StringImm
from tirc.ir.function import IRModule
from tirc.ir.stmt import AllocBuffer, AttrStmt, BufferStore, Stmt
from tirc.ir.visitor import Mutator, walk
from tirc.records import record

FRAGMENT_SHAPE, FRAGMENT_LAYOUT = "fragment_shape", "fragment_layout"


@record(frozen=True)
class FragmentInfo:
    shape: tuple[int, int, int]
    layout: str  # "" for none
    scope: str


def fragment_infos(body: Stmt) -> dict[int, FragmentInfo]:
    """The shape and layout of each fragment named by a WMMA call in ``body``, by the id of
    its data variable; checks every call against the first (module docstring)."""
    infos: dict[int, FragmentInfo] = {}
    calls = []
    for node in walk(body):
        if isinstance(node, (BufferLoad, BufferStore)) and node.buffer.scope in WMMA_SCOPES:
            verb = "reads" if isinstance(node, BufferLoad) else "writes"
            raise Diagnostic(f"this {verb} an element of the WMMA fragment '{node.buffer.name}' "
                             f"({node.buffer.scope}); a fragment's elements are spread over a "
                             "warp's registers as the hardware decides, so only the WMMA calls "
                             "(T.tvm_load_matrix_sync, ...) may touch them", node.span)
        if isinstance(node, Call) and wmma_ops.is_wmma(node.op):
            calls.append(node)
    for call in calls:
        d = wmma_ops.decode(call)
        if d.op == wmma_ops.MMA:
            continue
        frag = d.frags[0]
        old = infos.get(id(frag.data))
        if old is None:
            if d.op == wmma_ops.FILL:
                layout = "row_major"
            else:
                layout = d.layout if frag.scope != wmma_ops.ACCUMULATOR else ""
            infos[id(frag.data)] = FragmentInfo(d.shape, layout, frag.scope)
            continue
        if old.shape != d.shape:
            raise Diagnostic(f"T.{call.op} names fragment '{frag.data.name}' with shape "
                             f"{_shape(d.shape)}, and an earlier call with {_shape(old.shape)}",
                             call.span)
        if d.op != wmma_ops.FILL and frag.scope != wmma_ops.ACCUMULATOR and old.layout != d.layout:
            raise Diagnostic(f"T.{call.op} loads fragment '{frag.data.name}' as {d.layout}, and an "
                             f"earlier call as {old.layout}: one fragment has one layout", call.span)
    for call in calls:
        if call.op != wmma_ops.MMA:
            continue
        frags = wmma_ops.decode(call).frags
        known = []
        for f in frags:
            info = infos.get(id(f.data))
            if info is None:
                raise Diagnostic(f"T.tvm_mma_sync uses fragment '{f.data.name}', which no "
                                 "T.tvm_fill_fragment or T.tvm_load_matrix_sync fills or loads",
                                 call.span)
            known.append(info)
        if len({i.shape for i in known}) > 1:
            names = ", ".join(f"{f.data.name} {_shape(i.shape)}" for f, i in zip(frags, known))
            raise Diagnostic(f"T.tvm_mma_sync multiplies fragments of different shapes ({names})",
                             call.span)
    return infos


def _shape(mnk: tuple[int, int, int]) -> str:
    return "m%dn%dk%d" % mnk


class _Annotate(Mutator):
    def __init__(self, infos: dict[int, FragmentInfo]):
        self.infos = infos

    def visit_AllocBuffer(self, s: AllocBuffer):
        out = yield from self.descend(s)
        info = self.infos.get(id(s.buffer.data))
        if info is None:
            return out
        var = s.buffer.data
        body = AttrStmt(var, FRAGMENT_SHAPE, StringImm("%d, %d, %d" % info.shape), out.body, s.span)
        if info.layout:
            body = AttrStmt(var, FRAGMENT_LAYOUT, StringImm(info.layout), body, s.span)
        return AllocBuffer(out.buffer, body, out.span, out.annotations)


def infer_fragment(mod: IRModule, ctx=None) -> IRModule:
    def run(body: Stmt) -> Stmt:
        infos = fragment_infos(body)
        return _Annotate(infos).visit(body) if infos else body
    return mod.map_bodies(run)
