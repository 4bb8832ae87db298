"""A commutative reducer: TVM's ``T.comm_reducer(lambda x0, ..., y0, ...: (r0, ...), [id0, ...])``.

``lhs`` and ``rhs`` are the lambda's parameters (one pair per reduced value), ``result``
the combined values written in terms of them, ``identity`` each value's identity element.
The variables are local to the reducer: nothing outside refers to them. It is the node of
a ``T.attr(reducer, "reduce_scope", 0)`` around ``T.tvm_thread_allreduce``.
"""
from __future__ import annotations

from dataclasses import field
from typing import Sequence

from tirc.diagnostics import Span
from tirc.ir.expr import PrimExpr, Var
from tirc.records import record

_SPAN = dict(default=None, compare=False, repr=False)


@record(frozen=True, slots=True)
class CommReducer:
    lhs: tuple[Var, ...]
    rhs: tuple[Var, ...]
    result: tuple[PrimExpr, ...]
    identity: tuple[PrimExpr, ...]
    span: Span | None = field(**_SPAN)

    @property
    def size(self) -> int:
        return len(self.result)

    def combine(self, a: Sequence[PrimExpr], b: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        """The reducer applied to values ``a`` (for ``lhs``) and ``b`` (for ``rhs``)."""
        from tirc.ir.renew import substitute
        mapping = {id(v): e for v, e in zip(self.lhs, a)}
        mapping.update({id(v): e for v, e in zip(self.rhs, b)})
        return tuple(substitute(r, mapping) for r in self.result)
