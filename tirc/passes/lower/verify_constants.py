"""VerifyConstants: the constant facts that make a program undefined
(:mod:`tirc.passes.analysis.constant_facts`), checked again late in the pipeline, after
unrolling, inlining and simplification have made more indices and divisors constant."""
from __future__ import annotations

from tirc.ir.function import IRModule
from tirc.passes.analysis.constant_facts import check_function


def verify_constants(mod: IRModule, ctx=None) -> IRModule:
    """Raise a :class:`Diagnostic` for the first fact found; return ``mod`` unchanged."""
    for func in mod.functions.values():
        check_function(func)
    return mod
