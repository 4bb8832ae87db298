"""Integer arithmetic of constants folded while lowering, as LLVM's own IRBuilder folds
an instruction whose operands are all constants (TVM's code generator gets this from it;
llvmlite's builder emits every instruction). Unrolled loops leave many such operations
(``0 * 2``, the steps of a ramp): folding them here spares the text, its parse and the
optimiser's first clean-up, and gives the value LLVM would compute.

Only operations defined for every operand are folded: a shift by the width or more is
poison in LLVM and stays an instruction, and so do divisions (their guards are built by
the caller)."""
from __future__ import annotations

from llvmlite import ir

_FOLDED = frozenset({"add", "sub", "mul", "bitwise_and", "bitwise_or", "bitwise_xor",
                     "shift_left", "shift_right"})


def _ints(v: ir.Value) -> list[int] | None:
    """The integer lanes of a constant (one for a scalar); None for anything else."""
    if not isinstance(v, ir.Constant):
        return None
    c = v.constant
    if type(c) is int:
        return [c]
    if isinstance(c, list) and isinstance(v.type, ir.VectorType):
        out = []
        for x in c:
            if not isinstance(x, ir.Constant) or type(x.constant) is not int:
                return None
            out.append(x.constant)
        return out
    return None


def fold_int(op: str, a: ir.Value, c: ir.Value, bits: int, signed: bool) -> ir.Value | None:
    """``a op c`` without an instruction: a constant of ``a``'s type when both are integer
    constants and the operation is defined for them (wrapping at ``bits`` as the
    instruction does), or an operand when the other is the operation's identity
    (``x + 0``, ``x * 1``, ...); None when it stays an instruction."""
    if op not in _FOLDED:
        return None
    xs, ys = _ints(a), _ints(c)
    if ys is not None and xs is None:
        return _identity(op, a, ys)
    if xs is not None and ys is None:
        return _identity(op, c, xs) if op in _COMMUTATIVE else None
    if xs is None or ys is None or len(xs) != len(ys):
        return None
    mask = (1 << bits) - 1
    out = []
    for x, y in zip(xs, ys):
        x &= mask
        y &= mask
        if op == "add":
            r = x + y
        elif op == "sub":
            r = x - y
        elif op == "mul":
            r = x * y
        elif op == "bitwise_and":
            r = x & y
        elif op == "bitwise_or":
            r = x | y
        elif op == "bitwise_xor":
            r = x ^ y
        elif y >= bits:
            return None  # poison: left to the instruction
        elif op == "shift_left":
            r = x << y
        elif signed:
            r = _signed(x, bits) >> y
        else:
            r = x >> y
        out.append(_signed(r & mask, bits) if signed else r & mask)
    if isinstance(a.type, ir.VectorType):
        return ir.Constant(a.type, out)
    return ir.Constant(a.type, out[0])


_COMMUTATIVE = frozenset({"add", "mul", "bitwise_and", "bitwise_or", "bitwise_xor"})


def _identity(op: str, v: ir.Value, lanes: list[int]) -> ir.Value | None:
    """``v op k`` for the constant ``k`` (its ``lanes``): ``v`` when ``k`` is the
    identity of ``op`` in every lane (0 for ``+ - | ^`` and shifts, 1 for ``*``)."""
    if op in ("add", "sub", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"):
        unit = 0
    elif op == "mul":
        unit = 1
    else:
        return None
    return v if all(k == unit for k in lanes) else None


def _signed(x: int, bits: int) -> int:
    return x - (1 << bits) if x >> (bits - 1) & 1 else x
