"""AnnotateIrregularLoop: a loop whose own body breaks or continues it (``T.break_loop()``,
``T.continue_loop()``, not inside a nested loop) is marked ``irregular_loop_mark``, as
TVM's pass of the same name does, so that the passes after it keep it a loop: a unit
loop is no longer dropped for its body (where a ``break`` would leave it for the
enclosing loop, or for none).

A ``while`` loop is irregular by nature and not marked; its jumps are its own. A marked
loop must be serial and carry none of the annotations that reshape a loop
(``pragma_auto_unroll_max_step``, ``pragma_unroll_explicit``, ``pragma_loop_partition_hint``,
``software_pipeline_stage``): a located error otherwise, where TVM fails a check.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.function import IRModule
from tirc.ir.stmt import Break, Continue, For, While
from tirc.ir.visitor import Mutator

MARK = "irregular_loop_mark"
_RESHAPING = ("pragma_auto_unroll_max_step", "pragma_unroll_explicit",
              "pragma_loop_partition_hint", "software_pipeline_stage")


def annotate_irregular_loop(mod: IRModule, ctx=None) -> IRModule:
    return mod.map_bodies(_Annotate().visit)


class _Annotate(Mutator):
    def __init__(self):
        self.jumps = False

    def visit_Break(self, s: Break):
        self.jumps = True
        return s

    def visit_Continue(self, s: Continue):
        self.jumps = True
        return s

    def visit_While(self, s: While):
        outer, self.jumps = self.jumps, False
        s = self.generic_visit(s)
        self.jumps = outer
        return s

    def visit_For(self, s: For):
        outer, self.jumps = self.jumps, False
        new = self.generic_visit(s)
        if self.jumps:
            if s.kind != "serial":
                raise Diagnostic(f"loop '{s.loop_var.name}' breaks or continues, so it must be "
                                 f"serial, not {s.kind}", s.span)
            keys = dict(s.annotations)
            for key in _RESHAPING:
                if key in keys:
                    raise Diagnostic(f"loop '{s.loop_var.name}' breaks or continues: annotation "
                                     f"'{key}' cannot apply to it", s.span)
            if keys.get(MARK) != 1:
                keys[MARK] = 1
                new = replace(new, annotations=tuple(sorted(keys.items())))
        self.jumps = outer
        return new
