"""The WMMA builtins (``tirc.ir.wmma_ops``) as PTX ``wmma`` instructions in LLVM inline
assembly, the instructions ``nvcuda::wmma`` compiles to (TVM's CUDA code calls those).

A fragment buffer is a per-thread array (an ``alloca``, as ``local`` memory): fragment
``i`` is ``fragment_regs`` 32-bit registers at byte ``4 * regs * i``, loaded from there
before an instruction reads them and stored there after it writes them, so that with
constant indices LLVM keeps them in registers. The memory side of ``wmma.load`` and
``wmma.store`` is a generic address (64-bit) with the stride in elements.

``wmma.mma`` needs the layouts its A and B fragments were loaded with: InferFragment's
``fragment_layout`` attributes, which ``NVPTXContext.lower_attr`` records.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.diagnostics import Diagnostic
from tirc.ir import wmma_ops
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call

GENERIC = 0
_LETTER = {wmma_ops.MATRIX_A: "a", wmma_ops.MATRIX_B: "b", wmma_ops.ACCUMULATOR: "c"}
_LAYOUT = {"row_major": "row", "col_major": "col"}


def _shape(mnk) -> str:
    return "m%dn%dk%d" % mnk


def _reg(ptx: str) -> tuple[str, ir.Type]:
    return ("f", ir.FloatType()) if ptx == "f32" else ("r", lt.I32)


def _group(first: int, count: int) -> str:
    return "{" + ", ".join(f"${i}" for i in range(first, first + count)) + "}"


def _asm(fl, result: ir.Type, text: str, constraints: str, args: list[ir.Value]) -> ir.Value:
    fnty = ir.FunctionType(result, [a.type for a in args])
    return fl.b.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), args)


def _slot(fl, frag: "wmma_ops.Fragment", regs: int) -> ir.Value:
    """The address of the fragment's registers in its buffer's per-thread array."""
    base = fl.expr(frag.data)
    index = fl.int_cast(fl.expr(frag.index), lt.I64, signed=True)
    off = fl.b.mul(index, ir.Constant(lt.I64, 4 * regs))
    return fl.b.gep(base, [off], source_etype=lt.I8)


def _read_regs(fl, at: ir.Value, regs: int, t: ir.Type) -> list[ir.Value]:
    return [fl.b.load(fl.b.gep(at, [ir.Constant(lt.I64, i)], source_etype=t), typ=t, align=4)
            for i in range(regs)]


def _write_regs(fl, at: ir.Value, value: ir.Value, regs: int, t: ir.Type) -> None:
    for i in range(regs):
        v = value if regs == 1 else fl.b.extract_value(value, i)
        fl.b.store(v, fl.b.gep(at, [ir.Constant(lt.I64, i)], source_etype=t), align=4)


def _struct(regs: int, t: ir.Type) -> ir.Type:
    return t if regs == 1 else ir.LiteralStructType([t] * regs)


def _generic(fl, pointer) -> ir.Value:
    p = fl.expr(pointer)
    if p.type.addrspace != GENERIC:
        p = fl.b.addrspacecast(p, ir.PointerType(addrspace=GENERIC))
    return fl.b.ptrtoint(p, lt.I64)


def _stride(fl, d: "wmma_ops.WmmaCall") -> ir.Value:
    return fl.int_cast(fl.expr(d.stride), lt.I32, signed=True)


def load_text(d: "wmma_ops.WmmaCall") -> tuple[str, int, str]:
    """The instruction of a load, its register count and register class."""
    f = d.frags[0]
    ptx = wmma_ops.PTX_TYPES[f.dtype]
    regs = wmma_ops.fragment_regs(f.scope, ptx, d.shape)
    text = (f"wmma.load.{_LETTER[f.scope]}.sync.aligned.{_LAYOUT[d.layout]}.{_shape(d.shape)}.{ptx} "
            f"{_group(0, regs)}, [${regs}], ${regs + 1};")
    return text, regs, _reg(ptx)[0]


def _load(fl, d: "wmma_ops.WmmaCall") -> None:
    text, regs, cls = load_text(d)
    t = _reg(wmma_ops.PTX_TYPES[d.frags[0].dtype])[1]
    out = _asm(fl, _struct(regs, t), text, ",".join([f"={cls}"] * regs + ["l", "r", "~{memory}"]),
               [_generic(fl, d.pointer), _stride(fl, d)])
    _write_regs(fl, _slot(fl, d.frags[0], regs), out, regs, t)


def store_text(d: "wmma_ops.WmmaCall") -> tuple[str, int, str]:
    f = d.frags[0]
    ptx = wmma_ops.PTX_TYPES[f.dtype]
    regs = wmma_ops.fragment_regs(f.scope, ptx, d.shape)
    text = (f"wmma.store.d.sync.aligned.{_LAYOUT[d.layout]}.{_shape(d.shape)}.{ptx} "
            f"[$0], {_group(1, regs)}, ${regs + 1};")
    return text, regs, _reg(ptx)[0]


def _store(fl, d: "wmma_ops.WmmaCall") -> None:
    text, regs, cls = store_text(d)
    t = _reg(wmma_ops.PTX_TYPES[d.frags[0].dtype])[1]
    values = _read_regs(fl, _slot(fl, d.frags[0], regs), regs, t)
    _asm(fl, ir.VoidType(), text, ",".join(["l"] + [cls] * regs + ["r", "~{memory}"]),
         [_generic(fl, d.pointer), *values, _stride(fl, d)])


def _fill(fl, d: "wmma_ops.WmmaCall", call: Call) -> None:
    """Every register of the fragment holds the value (f16 and 8-bit values repeated
    through their 32-bit registers): the value is converted to the fragment's type."""
    f = d.frags[0]
    ptx = wmma_ops.PTX_TYPES[f.dtype]
    regs = wmma_ops.fragment_regs(f.scope, ptx, d.shape)
    ftype = DataType(f.dtype)
    v = fl.convert(fl.expr(d.value), d.value.dtype, ftype, call.span)
    bits = ftype.bits
    if bits < 32:
        word = fl.b.bitcast(v, ir.IntType(bits)) if ftype.is_float else v
        word = fl.b.zext(word, lt.I32)
        acc = word
        for shift in range(bits, 32, bits):
            acc = fl.b.or_(acc, fl.b.shl(word, ir.Constant(lt.I32, shift)))
        v, t = acc, lt.I32
    else:
        t = _reg(ptx)[1]
    at = _slot(fl, f, regs)
    for i in range(regs):
        fl.b.store(v, fl.b.gep(at, [ir.Constant(lt.I64, i)], source_etype=t), align=4)


def mma_text(d: "wmma_ops.WmmaCall", layouts: tuple[str, str], shape) -> tuple[str, list[int], list[str]]:
    dd, a, b, c = d.frags
    ta, td, tc = wmma_ops.PTX_TYPES[a.dtype], wmma_ops.PTX_TYPES[dd.dtype], wmma_ops.PTX_TYPES[c.dtype]
    counts = [wmma_ops.fragment_regs(f.scope, wmma_ops.PTX_TYPES[f.dtype], shape) for f in d.frags]
    kinds = f".{td}.{tc}" if ta == "f16" else f".{td}.{ta}.{ta}.{tc}"
    first, groups = 0, []
    for n in counts:
        groups.append(_group(first, n))
        first += n
    text = (f"wmma.mma.sync.aligned.{_LAYOUT[layouts[0]]}.{_LAYOUT[layouts[1]]}.{_shape(shape)}{kinds} "
            f"{', '.join(groups)};")
    classes = [_reg(wmma_ops.PTX_TYPES[f.dtype])[0] for f in d.frags]
    return text, counts, classes


def _mma(fl, d: "wmma_ops.WmmaCall", call: Call, fragments: dict[int, tuple[str, str]]) -> None:
    shapes, layouts = [], []
    for f in d.frags:
        known = fragments.get(id(f.data))
        if known is None:
            raise Diagnostic(f"T.tvm_mma_sync: fragment '{f.data.name}' has no fragment_shape "
                             "attribute (InferFragment gives every fragment one; run it)", call.span)
        shapes.append(known[0])
        layouts.append(known[1])
    if len(set(shapes)) > 1:
        raise Diagnostic("T.tvm_mma_sync multiplies fragments of different shapes", call.span)
    if not layouts[1] or not layouts[2]:
        raise Diagnostic("T.tvm_mma_sync: the A and B fragments need a fragment_layout attribute "
                         "(InferFragment's)", call.span)
    shape = tuple(int(x) for x in shapes[0].split(","))
    text, counts, classes = mma_text(d, (layouts[1], layouts[2]), shape)
    dd, a, b, c = d.frags
    types = [_reg(wmma_ops.PTX_TYPES[f.dtype])[1] for f in d.frags]
    inputs = []
    for f, n, t in zip((a, b, c), counts[1:], types[1:]):
        inputs += _read_regs(fl, _slot(fl, f, n), n, t)
    constraints = ",".join([f"={classes[0]}"] * counts[0] + [classes[1]] * counts[1]
                           + [classes[2]] * counts[2] + [classes[3]] * counts[3])
    out = _asm(fl, _struct(counts[0], types[0]), text, constraints, inputs)
    _write_regs(fl, _slot(fl, dd, counts[0]), out, counts[0], types[0])


def lower_wmma_call(fl, d: "wmma_ops.WmmaCall", call: Call, fragments: dict[int, tuple[str, str]]) -> None:
    """Emit one WMMA call; ``fragments``: (shape, layout) of each fragment's data variable
    (by id) from InferFragment's attributes."""
    if d.op == wmma_ops.LOAD:
        _load(fl, d)
    elif d.op == wmma_ops.STORE:
        _store(fl, d)
    elif d.op == wmma_ops.FILL:
        _fill(fl, d, call)
    else:
        _mma(fl, d, call, fragments)
