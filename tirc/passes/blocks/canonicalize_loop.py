"""CanonicalizeLoop: every loop starts at 0 with step 1, as the block passes after it
expect. ``for i in range(a, b, s)`` (``min`` a, ``extent`` b - a, ``step`` s) becomes
``for i in range(ceildiv(b - a, s))`` with ``i`` replaced by ``i * s + a`` in the body.

Diagnostics: a step that is not a constant of at least 1 (a zero or negative step would
never end; a symbolic one cannot be proven positive), as TVM refuses it.

Precondition: Verify. Guarantees: every loop has ``min`` 0 and no step.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.expr import BinOp, IntImm
from tirc.ir.function import IRModule
from tirc.ir.renew import substitute
from tirc.ir.stmt import For
from tirc.ir.visitor import Mutator
from tirc.ir.index_arith import arith


def _is_const(e, value: int) -> bool:
    return isinstance(e, IntImm) and e.value == value


class _Canonicalize(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_For(self, s: For):
        step = s.step
        if _is_const(s.min, 0) and (step is None or _is_const(step, 1)):
            out = yield from self.descend(s)
            return out if out.step is None else replace(out, step=None)
        if step is None:
            step = IntImm(s.loop_var.dtype, 1)
        if not isinstance(step, IntImm) or step.value < 1:
            raise Diagnostic(f"loop '{s.loop_var.name}' has a step that may not be positive "
                             f"({'a symbolic step' if not isinstance(step, IntImm) else step.value}); "
                             "loops must count up by a constant of at least 1", s.span)
        var = s.loop_var
        body = substitute(s.body, {id(var): arith("add", arith("mul", var, step), s.min)})
        if isinstance(s.extent, IntImm):
            extent = IntImm(s.extent.dtype, -(-s.extent.value // step.value))
        elif step.value == 1:
            extent = s.extent
        else:
            bumped = arith("add", s.extent, IntImm(s.extent.dtype, step.value - 1))
            extent = BinOp("floordiv", bumped, IntImm(s.extent.dtype, step.value), s.extent.dtype)
        return replace(s, min=IntImm(s.min.dtype, 0), extent=extent, step=None,
                       body=(yield body))


def canonicalize_loop(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(_Canonicalize().visit)
