"""UnifyThreadBinding: each kernel launches every thread tag once, at its top. All
thread axes of a kernel, ``T.thread_binding`` loops and ``T.launch_thread`` scopes
alike, become one ``T.thread_binding`` loop per tag, nested in the order the tags were
first met, around the kernel's body; every variable bound to a tag becomes that loop's
variable (through a cast when its dtype differs).

As TVM 0.27 does it (``s_tir/transform/unify_thread_binding.cc``):

- a kernel starts at an outermost thread axis; a ``blockIdx.*`` (or cluster) axis
  nested in it belongs to the same kernel. Each kernel has its own loops, so two kernels
  may bind ``threadIdx.x`` with different extents;
- within a kernel, the axes of one tag must have the same range (a located error
  otherwise, where TVM raises ValueError);
- a thread-bound loop with annotations keeps them: on the loop that takes its place, or
  on a new ``for var in T.serial(1, annotations=...)`` around its body when no loop does.
  Where that loop is a loop of the body, tirc merges the annotations into the loop's own
  (TVM replaces them, losing e.g. a pipelining annotation of the inner loop);
- the new loop variable is named after the tag (``threadIdx_x``).

Runs on block-level functions only (``s_tir`` or holding blocks): plain TIR, whose
``T.launch_thread`` scopes tirc reads as written, passes through unchanged.
LowerThreadBindings, after LowerOpaqueBlock, turns the loops back into
``T.launch_thread`` scopes (TVM's LowerOpaqueBlock does that itself).

Precondition: LiftThreadBinding ran (not needed for correctness: nested loops of one tag
are unified here too). Guarantees: in a block-level function, thread axes are
``thread_binding`` loops, one per tag and kernel, all at the kernel's top.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Span
from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.expr import Cast, IntImm, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import AttrStmt, For, IterVar, SeqStmt, Stmt, seq
from tirc.ir.visitor import Mutator
from tirc.passes.blocks.lift_thread_binding import (axis_var_name, check_same_range,
                                              is_block_level)
from tirc.records import record

_THREAD_KEYS = (THREAD_EXTENT, VIRTUAL_THREAD)
_KERNEL_TAGS = ("blockIdx.", "clusterIdx.", "clusterCtaIdx")


@record(frozen=True)
class _Axis:
    var: Var
    min: PrimExpr
    extent: PrimExpr
    tag: str
    span: Span | None


class _Unify(Mutator):
    def __init__(self) -> None:
        self.axes: dict[str, _Axis] = {}  # of the current kernel, by tag
        self.launch: list[_Axis] = []  # the current kernel's, outermost first
        self.subst: dict[int, PrimExpr] = {}
        self.depth = 0  # nesting of kernel-level axes (the first axis, blockIdx.*)

    def visit_SeqStmt(self, s: SeqStmt):
        # A removed thread loop leaves its body in the sequence; flatten it, as TVM does.
        new = (yield from self.descend(s))
        if new is not s and any(isinstance(x, SeqStmt) for x in new.stmts):
            return seq(new.stmts, s.span)
        return new

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.subst.get(id(v), v)

    def visit_AttrStmt(self, s: AttrStmt):
        if s.key not in _THREAD_KEYS or not isinstance(s.node, IterVar):
            return (yield from self.descend(s))
        zero = IntImm(s.value.dtype, 0, s.span)
        return (yield from self._unify(s, s.node.var, s.node.thread_tag, zero, s.value))

    def visit_For(self, s: For):
        if s.kind != "thread_binding":
            return (yield from self.descend(s))
        out = yield from self._unify(s, s.loop_var, s.thread_tag, s.min, s.extent)
        if not s.annotations:
            return out
        if isinstance(out, For):
            merged = dict(out.annotations)
            merged.update(s.annotations)
            return replace(out, annotations=tuple(sorted(merged.items())))
        dtype = s.loop_var.dtype
        return For(Var("var", dtype, None, s.span), IntImm(dtype, 0, s.span),
                   IntImm(dtype, 1, s.span), "serial", out, None, s.annotations, None, s.span)

    def _unify(self, s: Stmt, old: Var, tag: str, lo: PrimExpr, extent: PrimExpr):
        kernel = self.depth == 0
        depth = self.depth
        if kernel:
            self.axes = {}
        if kernel or tag.startswith(_KERNEL_TAGS):
            self.depth += 1
        axis = self.axes.get(tag)
        if axis is None:
            var = Var(axis_var_name(tag), extent.dtype, None, old.span)
            axis = self.axes[tag] = _Axis(var, lo, extent, tag, s.span)
            self.launch.append(axis)
        else:
            check_same_range(tag, (axis.min, axis.extent), lo, extent, s.span)
        self.subst[id(old)] = axis.var if old.dtype == axis.var.dtype else \
            Cast(old.dtype, axis.var, old.span)
        body = yield s.body
        self.depth = depth
        if not kernel:
            return body
        for a in reversed(self.launch):
            body = For(a.var, a.min, a.extent, "thread_binding", body, a.tag, (), None, a.span)
        self.launch = []
        return body


def unify_thread_binding(mod: IRModule, ctx=None) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        body = _Unify().visit(f.body) if is_block_level(f) else f.body
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)
