"""RewriteUnsafeSelect: a ``T.Select`` whose branches could fault when evaluated (they
load from a buffer or call something impure) becomes ``T.if_then_else``, which
evaluates only the branch its condition picks, as TVM's pass of the same name does.

``T.Select`` evaluates both branches (an LLVM ``select``): ``T.Select(i > 0, A[i - 1], 0)``
would read ``A[-1]`` at ``i == 0``. A branch is safe when it is made of constants,
variables, arithmetic, comparisons, casts, broadcasts and ramps, and calls of pure
intrinsics with safe arguments; a load is unsafe, and so is a call of anything else; a
nested select or ``T.if_then_else`` is as safe as its condition, ``T.address_of(A[i])``
as its indices. Only selects with a scalar boolean condition are rewritten (a vector
select has no branch to skip).
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir.dtype import BOOL
from tirc.ir.expr import (BinOp, Broadcast, BufferLoad, Call, Cast, FloatImm, IntImm, Let, Not,
                          PrimExpr, Ramp, Select, Shuffle, StringImm, Var)
from tirc.ir.function import IRModule
from tirc.ir.ops import INTRINSICS
from tirc.ir.visitor import Mutator, walk


def rewrite_unsafe_select(mod: IRModule, ctx=None) -> IRModule:
    functions = {}
    for name, func in mod.functions.items():
        # one walk to look; the rewrite only where an unsafe select is
        if any(type(n) is Select and n.condition.dtype == BOOL
               and (_unsafe(n.true_value) or _unsafe(n.false_value)) for n in walk(func.body)):
            func = func.with_body(_Rewrite().visit(func.body))
        functions[name] = func
    return replace(mod, functions=functions)


class _Rewrite(Mutator):
    def visit_Select(self, e: Select):
        e = self.generic_visit(e)
        if e.condition.dtype == BOOL and (_unsafe(e.true_value) or _unsafe(e.false_value)):
            return Call(e.dtype, "if_then_else", (e.condition, e.true_value, e.false_value),
                        e.span)
        return e


def _unsafe(e: PrimExpr) -> bool:
    if isinstance(e, (Var, IntImm, FloatImm, StringImm)):
        return False
    if isinstance(e, BufferLoad):
        return True
    if isinstance(e, BinOp):
        return _unsafe(e.a) or _unsafe(e.b)
    if isinstance(e, Not):
        return _unsafe(e.a)
    if isinstance(e, Cast):
        return _unsafe(e.value)
    if isinstance(e, Broadcast):
        return _unsafe(e.value)
    if isinstance(e, Ramp):
        return _unsafe(e.base) or _unsafe(e.stride)
    if isinstance(e, Select):
        return _unsafe(e.condition)
    if isinstance(e, Let):
        return _unsafe(e.body) or _unsafe(e.value)
    if isinstance(e, Shuffle):
        return any(_unsafe(v) for v in e.vectors)
    if isinstance(e, Call):
        if e.op == "if_then_else":
            return _unsafe(e.args[0])
        if e.op == "address_of":
            arg = e.args[0]
            if isinstance(arg, BufferLoad):
                return any(_unsafe(i) for i in arg.indices)
            return _unsafe(arg)
        intr = INTRINSICS.get(e.op) if isinstance(e.op, str) else None
        if intr is not None and intr.pure:
            return any(_unsafe(a) for a in e.args if isinstance(a, PrimExpr))
        return True
    return True
