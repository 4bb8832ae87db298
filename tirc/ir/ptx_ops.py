"""The PTX intrinsics of TVM 0.27's CUDA namespaces that tirc builds, and what each call means.

TVM prints these calls in three namespaces (``python/tvm/backend/cuda/script.py``):

* ``T.ptx_legacy.mma(shape, A_layout, B_layout, A_dtype, B_dtype, C_dtype, a, a_off, b,
  b_off, c, c_off, saturate[, bit_op])``: one warp-wide ``mma.sync``; ``c`` is read and
  written (accumulator and result), each ``*_off`` counts elements of the pointer's dtype.
* ``T.ptx_legacy.ldmatrix(trans, num, ".b16", local, local_off, smem, smem_off)``: one
  warp-wide ``ldmatrix`` of ``num`` 8x8 b16 matrices from shared memory into registers.
* ``T.s_tir.cp_async_raw(dtype, dst, dst_off, src, src_off, size[, predicate])``: one
  ``cp.async`` of ``size`` bytes from global to shared memory (InjectPTXAsyncCopy's op).
* ``T.s_tir.ldg32(reg, guard, A[i], k)``: ``reg[k] = guard ? A[i] : 0`` with one
  ``ld.global.nc.f32`` under a predicate (InjectPTXLDG32's op; float32 only, as TVM's).
* ``T.ptx.cp("async", "commit_group", "")``, ``T.ptx.cp(n, "async", "wait_group", "")``,
  ``T.ptx.cp("async", "wait_all", "")``: the cp.async groups.
* ``T.tvm_fill_fragment``, ``T.tvm_load_matrix_sync``, ``T.tvm_store_matrix_sync``,
  ``T.tvm_mma_sync``: the warp-level matrix (WMMA) builtins, ``tirc.ir.wmma_ops``.
* ``T.ptx.add/sub/mul(d, a, b, rnd, ftz, sat, type, srctype, flags)`` and
  ``T.ptx.max/min(d, a, b, ftz, nan, xorsign, abs, relu, type, flags)``: one scalar
  floating-point instruction writing buffer element ``d``. The strings are the
  instruction's modifier slots, in the order of TVM's PTX table, "" for one left out;
  the last is TVM's flag set (``"pred"``, ...), of which tirc takes only "".

:func:`decode` checks a call's arguments (at the call) and returns what the backends
need. Which arch and PTX ISA version each instruction needs is ``tirc.target.kinds``'s
``PTX_FEATURES`` table; :func:`feature` names the row a call needs.
"""
from __future__ import annotations

import re

from tirc.diagnostics import Diagnostic
from tirc.ir import wmma_ops
from tirc.ir.dtype import DataType
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm
from tirc.records import record

MMA, LDMATRIX, CP_ASYNC, CP = "ptx_legacy.mma", "ptx_legacy.ldmatrix", "s_tir.cp_async_raw", "ptx.cp"
LDG32 = "s_tir.ldg32"
_ARITH = ("add", "sub", "mul")
_MINMAX = ("max", "min")
FLOAT_OPS = tuple(f"ptx.{n}" for n in (*_ARITH, *_MINMAX))

# name -> (min args, max args, result): registered in tirc.ir.ops.INTRINSICS
SIGNATURES = {
    MMA: (13, 14, "void"), LDMATRIX: (7, 7, "void"), CP_ASYNC: (6, 7, "dtype"), CP: (3, 4, "void"),
    LDG32: (4, 4, "float32"),
    **{f"ptx.{n}": (9, 9, "void") for n in _ARITH if n != "mul"}, "ptx.mul": (8, 8, "void"),
    **{f"ptx.{n}": (10, 10, "void") for n in _MINMAX},
    **wmma_ops.SIGNATURES,
}
NAMESPACES = ("ptx", "ptx_legacy", "s_tir")


def is_ptx(op: object) -> bool:
    return isinstance(op, str) and op in SIGNATURES


# -- mma ----------------------------------------------------------------------------------
# TVM's spellings of an mma operand type -> (PTX type, bits)
_MMA_TYPES = {
    "float16": ("f16", 16), "fp16": ("f16", 16), ".f16": ("f16", 16),
    "bfloat16": ("bf16", 16), "bf16": ("bf16", 16), "tf32": ("tf32", 32),
    "float32": ("f32", 32), "fp32": ("f32", 32), ".f32": ("f32", 32),
    "float64": ("f64", 64), "fp64": ("f64", 64), ".f64": ("f64", 64),
    "int8": ("s8", 8), ".s8": ("s8", 8), "uint8": ("u8", 8), ".u8": ("u8", 8),
    "int4": ("s4", 4), ".s4": ("s4", 4), "uint4": ("u4", 4), ".u4": ("u4", 4),
    "int1": ("b1", 1), ".b1": ("b1", 1), "int32": ("s32", 32), ".s32": ("s32", 32),
    "float8_e4m3fn": ("e4m3", 8), "e4m3": ("e4m3", 8), "float8_e5m2": ("e5m2", 8), "e5m2": ("e5m2", 8),
}
# the shapes of each multiplicand type (PTX ISA "Matrix shape"; TVM's valid_mma_configs)
_MMA_SHAPES = {
    "f64": ((8, 8, 4),), "f16": ((8, 8, 4), (16, 8, 8), (16, 8, 16)),
    "bf16": ((16, 8, 8), (16, 8, 16)), "tf32": ((16, 8, 4), (16, 8, 8)),
    "s8": ((8, 8, 16), (16, 8, 16), (16, 8, 32)), "u8": ((8, 8, 16), (16, 8, 16), (16, 8, 32)),
    "s4": ((8, 8, 32), (16, 8, 32), (16, 8, 64)), "u4": ((8, 8, 32), (16, 8, 32), (16, 8, 64)),
    "b1": ((8, 8, 128), (16, 8, 128), (16, 8, 256)),
    "e4m3": ((16, 8, 32),), "e5m2": ((16, 8, 32),),
}
_MMA_ACCUM = {"f64": ("f64",), "f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",),
              "e4m3": ("f32",), "e5m2": ("f32",), **{t: ("s32",) for t in ("s8", "u8", "s4", "u4", "b1")}}
_MMA_PARTNERS = {"s8": ("s8", "u8"), "u8": ("s8", "u8"), "s4": ("s4", "u4"), "u4": ("s4", "u4"),
                 "e4m3": ("e4m3", "e5m2"), "e5m2": ("e4m3", "e5m2")}
# register class of a fragment: (inline-asm constraint, bits); f16 pairs share a 32-bit register
_FRAGMENT = {"f32": ("f", 32), "f64": ("d", 64)}


@record(frozen=True)
class Operand:
    """One fragment operand: its pointer, element offset and registers."""

    pointer: PrimExpr
    offset: PrimExpr
    count: int  # registers
    constraint: str  # "r" (32-bit integer), "f" (f32), "d" (f64)


@record(frozen=True)
class MmaCall:
    shape: str  # m16n8k16
    layouts: tuple[str, str]
    types: tuple[str, str, str]  # PTX types of A, B and C/D
    a: Operand
    b: Operand
    c: Operand  # read as C, written as D
    saturate: bool
    bit_op: str  # "" or "xor"/"and"

    def instruction(self) -> str:
        ta, tb, tc = self.types
        sat = ".satfinite" if self.saturate else ""
        bit = f".{self.bit_op}.popc" if self.bit_op else ""
        return (f"mma.sync.aligned.{self.shape}.{self.layouts[0]}.{self.layouts[1]}{sat}"
                f".{tc}.{ta}.{tb}.{tc}{bit}")


@record(frozen=True)
class LdmatrixCall:
    trans: bool
    num: int
    local: PrimExpr
    local_offset: PrimExpr
    smem: PrimExpr
    smem_offset: PrimExpr

    def instruction(self) -> str:
        return f"ldmatrix.sync.aligned.m8n8.x{self.num}{'.trans' if self.trans else ''}.shared.b16"


@record(frozen=True)
class CpAsyncCall:
    dst: PrimExpr
    dst_offset: PrimExpr
    src: PrimExpr
    src_offset: PrimExpr
    size: int  # bytes: 4, 8 or 16
    predicate: PrimExpr | None

    def instruction(self) -> str:
        # as TVM: .cg (L2 only) where it exists, for 16 bytes; .ca otherwise
        return f"cp.async.{'cg' if self.size == 16 else 'ca'}.shared.global"


@record(frozen=True)
class Ldg32Call:
    reg: PrimExpr
    guard: PrimExpr
    load: BufferLoad
    reg_offset: PrimExpr


@record(frozen=True)
class CpGroupCall:
    text: str  # the whole instruction: cp.async.wait_group 0


@record(frozen=True)
class FloatOpCall:
    dest: BufferLoad
    a: PrimExpr
    b: PrimExpr
    opcode: str  # add.rn.f32
    dtype: str  # f32 / f64


def _string(call: Call, i: int, what: str) -> str:
    a = call.args[i]
    if not isinstance(a, StringImm):
        raise Diagnostic(f"argument {i + 1} of T.{call.op} ({what}) must be a string", call.span)
    return a.value


def _const(call: Call, i: int, what: str) -> int:
    a = call.args[i]
    if not isinstance(a, IntImm):
        raise Diagnostic(f"argument {i + 1} of T.{call.op} ({what}) must be a constant", call.span)
    return a.value


def _pointer(call: Call, i: int, what: str) -> PrimExpr:
    a = call.args[i]
    if not a.dtype.is_handle or isinstance(a, StringImm):
        got = "a string" if isinstance(a, StringImm) else a.dtype
        raise Diagnostic(f"argument {i + 1} of T.{call.op} ({what}) must be a pointer (a "
                         f"buffer's .data), not {got}", call.span)
    return a


def _index(call: Call, i: int, what: str) -> PrimExpr:
    a = call.args[i]
    if not a.dtype.is_integer or a.dtype.lanes != 1:
        raise Diagnostic(f"argument {i + 1} of T.{call.op} ({what}) must be an integer, not "
                         f"{a.dtype}", call.span)
    return a


def _packed_offset(call: Call, i: int, name: str) -> None:
    """An offset from a pointer to packed sub-byte elements smaller than a byte (an
    ``int4`` buffer's data) has no byte address in general, and TVM's CUDA code counts it
    in 32-bit words (it prints such pointers as ``int*``): only 0 is taken."""
    dtype = getattr(getattr(call.args[i], "ptr", None), "dtype", None)
    off = call.args[i + 1]
    if dtype is not None and dtype.is_subbyte and dtype.bits * dtype.lanes < 8 and not (
            isinstance(off, IntImm) and off.value == 0):
        raise Diagnostic(f"argument {i + 2} of T.{call.op} ({name}'s offset) must be 0 with a "
                         f"pointer to packed {dtype} elements ({dtype.packs} to a byte): offset "
                         "the buffer's index instead, by a whole number of bytes", call.span)


def _mma(call: Call) -> MmaCall:
    shape = _string(call, 0, "the shape")
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape)
    if m is None:
        raise Diagnostic(f"T.{call.op}: '{shape}' is not an mma shape (mMnNkK, e.g. m16n8k16)", call.span)
    mnk = tuple(int(g) for g in m.groups())
    layouts = (_string(call, 1, "A's layout"), _string(call, 2, "B's layout"))
    for lay in layouts:
        if lay not in ("row", "col"):
            raise Diagnostic(f"T.{call.op}: layout '{lay}' is neither 'row' nor 'col'", call.span)
    types = []
    for i, what in ((3, "A's dtype"), (4, "B's dtype"), (5, "C's dtype")):
        name = _string(call, i, what)
        if name not in _MMA_TYPES:
            raise Diagnostic(f"T.{call.op}: '{name}' is not an mma operand dtype", call.span)
        types.append(_MMA_TYPES[name])
    (ta, bits_a), (tb, bits_b), (tc, bits_c) = types
    if ta not in _MMA_SHAPES:
        raise Diagnostic(f"T.{call.op}: {ta} is not a multiplicand type of mma", call.span)
    if tb not in _MMA_PARTNERS.get(ta, (ta,)):
        raise Diagnostic(f"T.{call.op}: the multiplicand types .{ta} and .{tb} do not match", call.span)
    if tc not in _MMA_ACCUM[ta]:
        want = "/".join(_MMA_ACCUM[ta])
        raise Diagnostic(f"T.{call.op}: for multiplicands .{ta} the accumulator is {want}, not .{tc}",
                         call.span)
    saturate = bool(_const(call, 12, "saturate"))
    bit_op = _string(call, 13, "the 1-bit operation") if len(call.args) > 13 else ""
    if bit_op not in ("", "xor", "and"):
        raise Diagnostic(f"T.{call.op}: unknown 1-bit operation '{bit_op}' (xor or and)", call.span)
    if (ta == "b1") != bool(bit_op):
        raise Diagnostic(f"T.{call.op}: a 1-bit operation (xor/and) goes with .b1 multiplicands "
                         "and only with them", call.span)
    if saturate and ta not in ("s8", "u8", "s4", "u4"):
        raise Diagnostic(f"T.{call.op}: saturation applies only to s8/u8/s4/u4 multiplicands", call.span)
    if mnk not in _MMA_SHAPES[ta]:
        raise Diagnostic(f"T.{call.op}: no mma of shape {shape} for .{ta} multiplicands "
                         f"(shapes: {', '.join('m%dn%dk%d' % s for s in _MMA_SHAPES[ta])})", call.span)
    if layouts != ("row", "col") and not (mnk == (8, 8, 4) and ta == "f16"):
        raise Diagnostic(f"T.{call.op}: layouts {layouts[0]},{layouts[1]}: only the f16 m8n8k4 "
                         "mma takes layouts other than row,col", call.span)
    mm, nn, kk = mnk
    threads = 8 if (mnk == (8, 8, 4) and ta == "f16") else 32  # f16 m8n8k4: four mmas of 8 threads

    def operand(i: int, name: str, ptx: str, bits: int, elements: int) -> Operand:
        constraint, reg_bits = _FRAGMENT.get(ptx, ("r", 32))
        _packed_offset(call, i, name)
        return Operand(_pointer(call, i, f"{name}'s pointer"), _index(call, i + 1, f"{name}'s offset"),
                       elements * bits // reg_bits // threads, constraint)

    return MmaCall(shape, layouts, (ta, tb, tc), operand(6, "A", ta, bits_a, mm * kk),
                   operand(8, "B", tb, bits_b, kk * nn), operand(10, "C", tc, bits_c, mm * nn),
                   saturate, bit_op)


def _ldmatrix(call: Call) -> LdmatrixCall:
    trans = bool(_const(call, 0, "trans"))
    num = _const(call, 1, "the number of matrices")
    if num not in (1, 2, 4):
        raise Diagnostic(f"T.{call.op} loads 1, 2 or 4 matrices, not {num}", call.span)
    kind = _string(call, 2, "the element type")
    if kind not in (".b16", "b16"):
        raise Diagnostic(f"T.{call.op} loads .b16 matrices, not '{kind}'", call.span)
    return LdmatrixCall(trans, num, _pointer(call, 3, "the local pointer"), _index(call, 4, "the local offset"),
                        _pointer(call, 5, "the shared pointer"), _index(call, 6, "the shared offset"))


def _cp_async(call: Call) -> CpAsyncCall:
    size = _const(call, 4, "the size in bytes")
    if size not in (4, 8, 16):
        raise Diagnostic(f"T.{call.op} copies 4, 8 or 16 bytes, not {size}", call.span)
    pred = call.args[5] if len(call.args) > 5 else None
    if isinstance(pred, IntImm) and pred.value == -1:
        pred = None  # TVM's "no predicate"
    if pred is not None and not (pred.dtype.is_integer or pred.dtype.is_bool):
        raise Diagnostic(f"T.{call.op}: the predicate must be an integer or bool, not {pred.dtype}", call.span)
    return CpAsyncCall(_pointer(call, 0, "the shared destination"), _index(call, 1, "the destination offset"),
                       _pointer(call, 2, "the global source"), _index(call, 3, "the source offset"),
                       size, pred)


def _cp(call: Call) -> CpGroupCall:
    n = len(call.args)
    strings = [_string(call, i, "a modifier") for i in range(n - 3, n)]
    if strings[-1] != "":
        raise Diagnostic(f"T.{call.op}: predicated or flagged forms ('{strings[-1]}') are not "
                         "supported by tirc", call.span)
    form = tuple(strings[:2])
    if form == ("async", "commit_group") and n == 3:
        return CpGroupCall("cp.async.commit_group;")
    if form == ("async", "wait_all") and n == 3:
        return CpGroupCall("cp.async.wait_all;")
    if form == ("async", "wait_group") and n == 4:
        group = _const(call, 0, "the number of pending groups")
        if not 0 <= group <= 7:
            raise Diagnostic(f"T.{call.op}: cp.async.wait_group takes 0 to 7, not {group}", call.span)
        return CpGroupCall(f"cp.async.wait_group {group};")
    raise Diagnostic(f"T.{call.op}({', '.join(repr(s) for s in strings)}): tirc builds cp.async's "
                     "commit_group, wait_group N and wait_all only", call.span)


_FLOAT_TYPES = {"f32": "float32", "f64": "float64"}
_ROUNDING = ("", "rn", "rz", "rm", "rp")


def _float_op(call: Call) -> FloatOpCall:
    name = call.op.split(".", 1)[1]
    n = len(call.args)
    slots = [_string(call, i, "a modifier") for i in range(3, n)]
    *mods, flags = slots
    if flags != "":
        raise Diagnostic(f"T.{call.op}: predicated or flagged forms ('{flags}') are not supported "
                         "by tirc", call.span)
    if name in _ARITH:
        rnd, ftz, sat, ty, *src = mods
        if rnd not in _ROUNDING or ftz not in ("", "ftz") or sat not in ("", "sat") or any(src):
            raise Diagnostic(f"T.{call.op}: modifiers {mods} are not {name}{{.rnd}}{{.ftz}}{{.sat}}.type",
                             call.span)
        if ty == "f64" and (ftz or sat):
            raise Diagnostic(f"T.{call.op}: .ftz and .sat exist only on the .f32 line", call.span)
        words = [rnd, ftz, sat, ty]
    else:
        ftz, nan, xorsign, absolute, relu, ty = mods
        if ftz not in ("", "ftz") or nan not in ("", "NaN") or xorsign not in ("", "xorsign") \
                or absolute not in ("", "abs") or relu:
            raise Diagnostic(f"T.{call.op}: modifiers {mods} are not {name}{{.ftz}}{{.NaN}}"
                             "{.xorsign.abs}.type", call.span)
        if bool(xorsign) != bool(absolute):
            raise Diagnostic(f"T.{call.op}: .xorsign and .abs go together", call.span)
        if ty == "f64" and (ftz or nan or xorsign):
            raise Diagnostic(f"T.{call.op}: .ftz, .NaN and .xorsign exist only on the .f32 line", call.span)
        words = [ftz, nan, xorsign, absolute, ty]
    if ty not in _FLOAT_TYPES:
        raise Diagnostic(f"T.{call.op}: tirc builds the .f32 and .f64 forms only, not '{ty}'", call.span)
    dest = call.args[0]
    if not isinstance(dest, BufferLoad):
        raise Diagnostic(f"T.{call.op}: the destination must be a buffer element", call.span)
    for what, e in (("destination", dest), ("first operand", call.args[1]), ("second operand", call.args[2])):
        if str(e.dtype) != _FLOAT_TYPES[ty]:
            raise Diagnostic(f"T.{call.op}: the {what} is {e.dtype}, not {_FLOAT_TYPES[ty]} (.{ty})",
                             call.span)
    return FloatOpCall(dest, call.args[1], call.args[2], ".".join([name, *(w for w in words if w)]), ty)


def _ldg32(call: Call) -> Ldg32Call:
    load = call.args[2]
    if not isinstance(load, BufferLoad) or len(load.indices) != 1 or load.dtype != DataType("float32"):
        raise Diagnostic(f"T.{call.op} loads one float32 element of a flat buffer (A[i])", call.span)
    if load.buffer.scope != "global":
        raise Diagnostic(f"T.{call.op} loads global memory, not '{load.buffer.scope}'", call.span)
    guard = call.args[1]
    if not (guard.dtype.is_integer or guard.dtype.is_bool) or guard.dtype.lanes != 1:
        raise Diagnostic(f"T.{call.op}: the guard must be a scalar integer or bool, not {guard.dtype}",
                         call.span)
    return Ldg32Call(_pointer(call, 0, "the destination"), guard, load,
                     _index(call, 3, "the destination offset"))


_DECODERS = {MMA: _mma, LDMATRIX: _ldmatrix, CP_ASYNC: _cp_async, CP: _cp, LDG32: _ldg32,
             **{n: _float_op for n in FLOAT_OPS}, **{n: wmma_ops.decode for n in wmma_ops.NAMES}}


def decode(call: Call):
    """What a PTX call does, its arguments checked (a located error where they are wrong)."""
    return _DECODERS[call.op](call)


def feature(call: Call) -> str:
    """The row of ``tirc.target.kinds.PTX_FEATURES`` (arch and PTX version) ``call`` needs."""
    d = decode(call)
    if isinstance(d, wmma_ops.WmmaCall):
        return wmma_ops.feature(d)
    if isinstance(d, MmaCall):
        t = d.types[0]
        t = {"u8": "s8", "u4": "s4", "e5m2": "e4m3"}.get(t, t)
        return f"mma.{d.shape}.{t}" + (".and" if d.bit_op == "and" else "")
    if isinstance(d, LdmatrixCall):
        return "ldmatrix"
    if isinstance(d, (CpAsyncCall, CpGroupCall)):
        return "cp.async"
    if isinstance(d, FloatOpCall) and any(w in d.opcode.split(".") for w in ("NaN", "xorsign")):
        return "minmax." + ("xorsign" if "xorsign" in d.opcode else "NaN")
    return "base"


def elem_bytes(pointer: PrimExpr) -> int:
    """Bytes one unit of an offset from ``pointer`` moves: the size of the element type
    of a typed pointer variable (C's pointer arithmetic, which TVM's CUDA code uses), 1 for
    any other handle (``T.tvm_access_ptr``'s result, as TVM's helpers treat it). The
    address of an element, ``T.address_of(A[i])`` (MergeSharedMemoryAllocations writes a
    merged buffer's views so), points at ``A``'s element type."""
    if (isinstance(pointer, Call) and pointer.op == "address_of" and pointer.args
            and isinstance(pointer.args[0], BufferLoad)):
        dtype: DataType | None = pointer.args[0].buffer.dtype
    else:
        dtype = getattr(getattr(pointer, "ptr", None), "dtype", None)
    if dtype is None or dtype.bits * dtype.lanes % 8:
        return 1
    return dtype.bits * dtype.lanes // 8


# -- the asynchronous copy queues of a software pipeline ------------------------------------
COMMIT_QUEUE, WAIT_QUEUE, WAIT_COUNT = ("async_commit_queue_scope", "async_wait_queue_scope",
                                        "async_wait_inflight_count")


def queue_call(attr) -> Call | None:
    """The ``cp.async`` group instruction an async queue attribute (InjectSoftwarePipeline's
    ``async_commit_queue_scope`` after its body, ``async_wait_queue_scope`` before it)
    means in CUDA device code, as TVM's CUDA code generator emits it; None for another
    attribute. CUDA has one queue, 0; the wait count must be a constant by then."""
    key = getattr(attr, "key", None)
    if key not in (COMMIT_QUEUE, WAIT_QUEUE):
        return None
    if not (isinstance(attr.value, IntImm) and attr.value.value == 0):
        from tirc.ir.describe import expr_text
        raise Diagnostic(f"\"{key}\" names async queue {expr_text(attr.value)}: CUDA has one "
                         "queue, 0 (one asynchronous stage per software pipeline)", attr.span)
    from tirc.ir.dtype import VOID
    if key == COMMIT_QUEUE:
        args = (StringImm("async"), StringImm("commit_group"), StringImm(""))
    else:
        inner = attr.body
        if getattr(inner, "key", None) != WAIT_COUNT:
            raise Diagnostic(f"an \"{WAIT_QUEUE}\" must hold an \"{WAIT_COUNT}\" attribute",
                             attr.span)
        if not isinstance(inner.value, IntImm):
            from tirc.ir.describe import expr_text
            raise Diagnostic(f"the number of asynchronous copy groups left in flight here "
                             f"({expr_text(inner.value)}) is not a constant: cp.async.wait_group needs one "
                             "(unroll the pipeline's epilogue)", attr.span)
        args = (inner.value, StringImm("async"), StringImm("wait_group"), StringImm(""))
    return Call(VOID, CP, args, attr.span)

