"""TVM 0.27's folding of operators on an immediate operand (``arith::TryConstFold``), the
identity part: ``x + 0``, ``x * 1``, ``0 * x``, ``x // 1``, ``T.min(x, x)``, ``x and True``...

TVM's operators apply it while its parser reads the text (``x + 0`` reads as ``x``), so
tirc's front end folds the same way, and its printer writes a node that TVM's operator
would fold in the node form ``T.Add(x, 0)``, exactly as TVM's printer does, so that the
text reads back as that node. Folding two immediates into one is
:func:`tirc.frontend.arith.fold_constants`; this module only answers for the rest.
"""
from __future__ import annotations

from tirc.ir.expr import FloatImm, IntImm, PrimExpr


def _index_typed(e: PrimExpr) -> bool:
    d = e.dtype
    return d.is_int and d.bits in (32, 64) and d.lanes == 1


def fold_identity(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """What TVM's ``op(a, b)`` returns instead of a new node when one operand is an
    immediate that makes the operation trivial, or ``None`` when it builds the node.
    ``a`` and ``b`` have the same dtype (TVM matches the types first). Two immediates are
    not handled here (see the module docstring)."""
    ia, ib = isinstance(a, IntImm), isinstance(b, IntImm)
    fa, fb = isinstance(a, FloatImm), isinstance(b, FloatImm)
    va = a.value if ia or fa else None
    vb = b.value if ib or fb else None
    if op == "add":
        if (ia or fa) and va == 0:
            return b
        if (ib or fb) and vb == 0:
            return a
    elif op == "sub":
        if (ib or fb) and vb == 0:
            return a
    elif op == "mul":
        if ia or fa:
            if va == 1:
                return b
            if va == 0:
                return a
        if ib or fb:
            if vb == 1:
                return a
            if vb == 0:
                return b
    elif op in ("div", "floordiv"):
        if (ia or fa) and va == 0 and not (ib and vb == 0):
            return a
        if (ib or fb) and vb == 1:
            return a
    elif op in ("mod", "floormod"):
        if _index_typed(a) and _index_typed(b):
            if ia and va == 0 and not (ib and vb == 0):
                return a
            if ib and vb == 1:
                return IntImm(a.dtype, 0)
    elif op in ("min", "max"):
        if a is b:
            return a
    elif op == "and":
        if ia:
            return b if va else a
        if ib:
            return a if vb else b
    elif op == "or":
        if ia:
            return a if va else b
        if ib:
            return b if vb else a
    return None


def folds_away(op: str, a: PrimExpr, b: PrimExpr) -> bool:
    """Would TVM's operator, applied to ``a`` and ``b``, not give back a node ``op`` of
    exactly these operands? (Then TVM's printer writes the node form.)"""
    if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
        return True
    return fold_identity(op, a, b) is not None
