"""TVM's warp-level matrix builtins (WMMA, CUDA's ``nvcuda::wmma``) and what each call means.

A fragment buffer lives in scope ``wmma.matrix_a`` (an M x K tile of A), ``wmma.matrix_b``
(K x N of B) or ``wmma.accumulator`` (M x N of C); it is an array of fragments, each the
size of its tile, and a call names one by its *index* (fragment ``i`` holds the tile's
elements ``i * tile .. (i + 1) * tile - 1`` of the buffer's declared extent). A fragment is
held by the 32 threads of a warp together; how its elements are spread over their
registers is the hardware's (the PTX ISA leaves it unspecified), so a fragment is only
read and written by these calls:

* ``T.tvm_fill_fragment(frag, m, n, k, index, value)``: every element set to ``value``;
* ``T.tvm_load_matrix_sync(frag, m, n, k, index, ptr, stride, layout)``: the tile at
  ``ptr`` (a generic pointer, ``T.tvm_access_ptr``), rows ``stride`` elements apart
  (``"row_major"``; ``"col_major"``: columns), loaded into the fragment;
* ``T.tvm_store_matrix_sync(frag, m, n, k, index, ptr, stride, layout)``: an accumulator
  fragment stored to ``ptr``;
* ``T.tvm_mma_sync(d, di, a, ai, b, bi, c, ci)``: D = A B + C, fragment by fragment.

The shapes (m, n, k) and types are the PTX ISA's ``wmma`` ones: f16 multiplicands with an
f16 or f32 accumulator and s8/u8 with s32, in m16n16k16, m32n8k16 and m8n32k16. Sub-byte,
1-bit (``tvm_bmma_sync``) and bfloat16 fragments are refused at the call (tirc stores
bfloat16 as uint16 on every target, BF16StorageLegalize, and has no bfloat16 fragment).
:func:`decode` checks a call's arguments; :func:`fragment_regs` says how many 32-bit
registers each thread holds of a fragment (the PTX ISA's "wmma fragments" table).
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.expr import Call, IntImm, PrimExpr, StringImm, Var
from tirc.records import record

FILL, LOAD, STORE, MMA, BMMA = ("tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_store_matrix_sync",
                                "tvm_mma_sync", "tvm_bmma_sync")
NAMES = (FILL, LOAD, STORE, MMA, BMMA)
# name -> (min args, max args, result)
SIGNATURES = {FILL: (6, 6, "void"), LOAD: (8, 8, "void"), STORE: (8, 8, "void"),
              MMA: (8, 8, "void"), BMMA: (8, 8, "void")}

MATRIX_A, MATRIX_B, ACCUMULATOR = "wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator"
SCOPES = (MATRIX_A, MATRIX_B, ACCUMULATOR)
LAYOUTS = ("row_major", "col_major")

# multiplicand dtype -> (PTX type, shapes, accumulator dtypes)
_SHAPES = ((16, 16, 16), (32, 8, 16), (8, 32, 16))
_MULTIPLICANDS = {"float16": ("f16", ("float16", "float32")), "int8": ("s8", ("int32",)),
                  "uint8": ("u8", ("int32",))}
_ACCUMULATORS = {"float16": "f16", "float32": "f32", "int32": "s32"}
PTX_TYPES = {**{d: p for d, (p, _) in _MULTIPLICANDS.items()}, **_ACCUMULATORS}


def tile(scope: str, mnk: tuple[int, int, int]) -> tuple[int, int]:
    """The (rows, columns) of a fragment of ``scope`` for shape ``mnk``."""
    m, n, k = mnk
    return {MATRIX_A: (m, k), MATRIX_B: (k, n), ACCUMULATOR: (m, n)}[scope]


def fragment_regs(scope: str, ptx: str, mnk: tuple[int, int, int]) -> int:
    """The 32-bit registers each thread holds of one fragment (PTX ISA, "Matrix
    fragments for WMMA"): f16 multiplicands are replicated (8 registers of .f16x2 for any
    shape), f16 accumulators take 4 .f16x2, f32/s32 accumulators 8; 8-bit integer
    multiplicands hold their share of the tile, four to a register."""
    if scope == ACCUMULATOR:
        return 4 if ptx == "f16" else 8
    if ptx == "f16":
        return 8
    rows, cols = tile(scope, mnk)
    return rows * cols // 32 // 4


@record(frozen=True)
class Fragment:
    """One fragment operand of a call: its buffer's pointer and the fragment's index."""

    data: Var
    index: PrimExpr
    scope: str
    dtype: str  # the fragment buffer's dtype (float16, float32, int8, ...)


@record(frozen=True)
class WmmaCall:
    op: str
    shape: tuple[int, int, int]  # (m, n, k); for tvm_mma_sync that of its operands (checked later)
    frags: tuple[Fragment, ...]  # fill/load/store: (frag,); mma: (d, a, b, c)
    pointer: PrimExpr | None = None  # load/store: the memory side
    stride: PrimExpr | None = None
    layout: str = ""  # load/store: row_major / col_major
    value: PrimExpr | None = None  # fill


def _fragment(call: Call, i: int, index: PrimExpr, scopes=SCOPES) -> Fragment:
    a = call.args[i]
    ptr = getattr(a, "ptr", None)
    if not isinstance(a, Var) or ptr is None or ptr.scope not in SCOPES:
        raise Diagnostic(f"argument {i + 1} of T.{call.op} must be the data of a buffer in "
                         f"scope {', '.join(SCOPES)} (a WMMA fragment)", call.span)
    if ptr.scope not in scopes:
        raise Diagnostic(f"T.{call.op}: argument {i + 1} ('{a.name}') is a {ptr.scope} fragment; "
                         f"this operand takes {' or '.join(scopes)}", call.span)
    dtype = str(ptr.dtype)
    known = _ACCUMULATORS if ptr.scope == ACCUMULATOR else _MULTIPLICANDS
    if dtype == "bfloat16":
        raise Diagnostic(f"T.{call.op}: bfloat16 WMMA fragments ('{a.name}') are not supported by "
                         "tirc: it stores bfloat16 as uint16 (BF16StorageLegalize)", call.span)
    if dtype not in known:
        raise Diagnostic(f"T.{call.op}: a {ptr.scope} fragment of {dtype} ('{a.name}') is not "
                         f"supported by tirc (only {', '.join(known)})", call.span)
    if not index.dtype.is_integer or index.dtype.lanes != 1:
        raise Diagnostic(f"T.{call.op}: a fragment index must be an integer, not {index.dtype}",
                         call.span)
    return Fragment(a, index, ptr.scope, dtype)


def _shape(call: Call) -> tuple[int, int, int]:
    dims = []
    for i, what in ((1, "m"), (2, "n"), (3, "k")):
        a = call.args[i]
        if not isinstance(a, IntImm):
            raise Diagnostic(f"argument {i + 1} of T.{call.op} ({what}) must be a constant", call.span)
        dims.append(a.value)
    mnk = tuple(dims)
    if mnk not in _SHAPES:
        raise Diagnostic(f"T.{call.op}: no WMMA shape m{mnk[0]}n{mnk[1]}k{mnk[2]} (tirc builds "
                         f"{', '.join('m%dn%dk%d' % s for s in _SHAPES)})", call.span)
    return mnk


def _memory(call: Call) -> tuple[PrimExpr, PrimExpr, str]:
    ptr, stride, layout = call.args[5], call.args[6], call.args[7]
    if not ptr.dtype.is_handle or isinstance(ptr, StringImm):
        raise Diagnostic(f"argument 6 of T.{call.op} must be a pointer (T.tvm_access_ptr or a "
                         "buffer's .data)", call.span)
    if not stride.dtype.is_integer or stride.dtype.lanes != 1:
        raise Diagnostic(f"argument 7 of T.{call.op} (the stride) must be an integer, not "
                         f"{stride.dtype}", call.span)
    if not isinstance(layout, StringImm) or layout.value not in LAYOUTS:
        got = layout.value if isinstance(layout, StringImm) else "not a string"
        raise Diagnostic(f"argument 8 of T.{call.op} (the layout) must be \"row_major\" or "
                         f"\"col_major\", not {got!r}", call.span)
    return ptr, stride, layout.value


def decode(call: Call) -> WmmaCall:
    """What a WMMA call does, its arguments checked (a located error where they are wrong)."""
    op = call.op
    if op == BMMA:
        raise Diagnostic("T.tvm_bmma_sync (1-bit WMMA) is not supported by tirc", call.span)
    if op == MMA:
        frags = tuple(_fragment(call, 2 * j, call.args[2 * j + 1], (s,))
                      for j, s in enumerate((ACCUMULATOR, MATRIX_A, MATRIX_B, ACCUMULATOR)))
        d, a, b, c = frags
        if a.dtype != b.dtype:
            raise Diagnostic(f"T.{op}: the multiplicands are {a.dtype} and {b.dtype}; WMMA "
                             "multiplies fragments of one type", call.span)
        accs = _MULTIPLICANDS[a.dtype][1]
        for f in (d, c):
            if f.dtype not in accs:
                raise Diagnostic(f"T.{op}: {a.dtype} multiplicands accumulate in "
                                 f"{' or '.join(accs)}, not {f.dtype} ('{f.data.name}')", call.span)
        return WmmaCall(op, (0, 0, 0), frags)
    mnk = _shape(call)
    if op == FILL:
        value = call.args[5]
        if value.dtype.lanes != 1 or not (value.dtype.is_float or value.dtype.is_integer):
            raise Diagnostic(f"T.{op}: the fill value must be a scalar number", call.span)
        return WmmaCall(op, mnk, (_fragment(call, 0, call.args[4]),), value=value)
    scopes = SCOPES if op == LOAD else (ACCUMULATOR,)
    frag = _fragment(call, 0, call.args[4], scopes)
    ptr, stride, layout = _memory(call)
    return WmmaCall(op, mnk, (frag,), ptr, stride, layout)


def is_wmma(op: object) -> bool:
    return isinstance(op, str) and op in SIGNATURES


def feature(d: WmmaCall) -> str:
    """The row of ``tirc.target.kinds.PTX_FEATURES`` a call needs (by its fragments' type)."""
    t = next((f.dtype for f in d.frags if f.scope != ACCUMULATOR), d.frags[0].dtype)
    return "wmma." + {"int8": "s8", "uint8": "s8", "int32": "s8"}.get(t, "f16")
