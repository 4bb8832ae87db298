"""LowerThreadBindings: ``for v in T.thread_binding(a, b, thread=tag)`` loops become
``T.launch_thread`` scopes (an AttrStmt "thread_extent" over an IterVar), the one form
of thread axes the later passes read.

Precondition: BindTarget ran (nothing here depends on targets). Guarantees: no For of
kind ``thread_binding`` remains; a loop starting at ``a != 0`` binds a fresh thread
variable ``v_1`` in ``[0, b - a)`` and ``v`` becomes ``v_1 + a`` in the body.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import THREAD_EXTENT
from tirc.ir.expr import BinOp, IntImm, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import AttrStmt, For, IterVar, LetStmt
from tirc.ir.visitor import Mutator


class _Lower(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_For(self, s: For):
        s = (yield from self.descend(s))
        if s.kind != "thread_binding":
            return s
        if s.step is not None:
            raise Diagnostic("a thread-bound loop cannot have a step", s.span)
        if isinstance(s.min, IntImm) and s.min.value == 0:
            return AttrStmt(IterVar(s.loop_var, s.thread_tag, s.span), THREAD_EXTENT, s.extent,
                            s.body, s.span)
        axis = Var(f"{s.loop_var.name}_1", s.loop_var.dtype, None, s.loop_var.span)
        shifted = BinOp("add", axis, s.min, s.loop_var.dtype, s.span)
        body = LetStmt(s.loop_var, shifted, s.body, s.span)
        return AttrStmt(IterVar(axis, s.thread_tag, s.span), THREAD_EXTENT, s.extent, body, s.span)


def lower_thread_bindings(mod: IRModule, ctx) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        body = _Lower().visit(f.body)
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)
