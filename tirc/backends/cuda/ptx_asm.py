"""The PTX instructions of TVM's CUDA namespaces (``tirc.ir.ptx_ops``) as LLVM inline
assembly, written as TVM's CUDA code generator writes them (``ptx.cc``'s mma and ldmatrix,
the cp.async helpers of ``backend/cuda/cpp/asm.py``, the ``T.ptx`` table's rows), in
LLVM's spelling: operands ``$N``, register classes ``r`` (32-bit), ``l`` (64-bit), ``f``
(f32), ``d`` (f64).

* mma: the fragments of A, B and C are loaded from their pointers (plus the element
  offset, in elements of the pointer's type) as 32-bit (or f32/f64) registers, and the
  result D is stored where C was read.
* ldmatrix: its registers are stored to the local pointer; the shared address goes in as
  a 32-bit shared-window address (CUDA's ``__cvta_generic_to_shared``).
* cp.async: a 32-bit shared destination and a 64-bit global source; with a predicate,
  the destination is zero-filled where it is false.

Every instruction is volatile (``asm volatile``, as TVM writes them); those that touch
memory behind LLVM's back (ldmatrix, cp.async and its groups) clobber ``memory`` so that
no load or store moves across them.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.cuda.wmma_asm import lower_wmma_call
from tirc.ir import ptx_ops, wmma_ops
from tirc.ir.expr import Call, PrimExpr
from tirc.ir.function import IRModule
from tirc.ir.visitor import walk
from tirc.target.kinds import PTX_FEATURES

GLOBAL, SHARED = 1, 3  # NVPTX address spaces (nvptx.py)
_REG_TYPES = {"r": lt.I32, "l": lt.I64, "f": ir.FloatType(), "d": ir.DoubleType()}
_FLOAT_REG = {"f32": "f", "f64": "d"}


def required_ptx_version(mod: IRModule) -> int:
    """The PTX ISA version (x10) the module's PTX instructions need, 0 for none."""
    need = 0
    for func in mod.functions.values():
        for node in walk(func.body):
            if isinstance(node, Call) and ptx_ops.is_ptx(node.op):
                need = max(need, PTX_FEATURES[ptx_ops.feature(node)][1])
    return need


def lower_ptx_call(fl, call: Call) -> ir.Value:
    """Emit ``call`` (a ``ptx_ops`` intrinsic); its value (they have none) is 0."""
    d = ptx_ops.decode(call)
    if isinstance(d, wmma_ops.WmmaCall):
        lower_wmma_call(fl, d, call, fl.ctx.fragments)
    elif isinstance(d, ptx_ops.MmaCall):
        _mma(fl, d)
    elif isinstance(d, ptx_ops.LdmatrixCall):
        _ldmatrix(fl, d)
    elif isinstance(d, ptx_ops.CpAsyncCall):
        _cp_async(fl, d)
    elif isinstance(d, ptx_ops.CpGroupCall):
        _asm(fl, ir.VoidType(), d.text, "~{memory}", [])
    elif isinstance(d, ptx_ops.Ldg32Call):
        _ldg32(fl, d)
    else:
        _float_op(fl, d, call)
    return ir.Constant(lt.I32, 0)


def _asm(fl, result: ir.Type, text: str, constraints: str, args: list[ir.Value]) -> ir.Value:
    fnty = ir.FunctionType(result, [a.type for a in args])
    return fl.b.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), args)


def _address(fl, pointer: PrimExpr, offset: PrimExpr) -> ir.Value:
    """``pointer`` plus ``offset`` elements of its type, as an ``i8`` address."""
    p = fl.expr(pointer)
    step = ptx_ops.elem_bytes(pointer)
    off = fl.int_cast(fl.expr(offset), lt.I64, signed=True)
    if step != 1:
        off = fl.b.mul(off, ir.Constant(lt.I64, step))
    return fl.b.gep(p, [off], source_etype=lt.I8)


def _in_space(fl, p: ir.Value, space: int, bits: int) -> ir.Value:
    """``p`` as an integer address of address space ``space`` (converted from a generic
    pointer where it is one: cvta)."""
    if p.type.addrspace != space:
        p = fl.b.addrspacecast(p, ir.PointerType(addrspace=space))
    return fl.b.ptrtoint(p, ir.IntType(bits))


def _fragment(fl, base: ir.Value, count: int, constraint: str) -> list[ir.Value]:
    t = _REG_TYPES[constraint]
    size = 8 if constraint == "d" else 4
    return [fl.b.load(fl.b.gep(base, [ir.Constant(lt.I64, i)], source_etype=t), typ=t, align=size)
            for i in range(count)]


def _outputs(fl, value: ir.Value, count: int) -> list[ir.Value]:
    if count == 1:
        return [value]
    return [fl.b.extract_value(value, i) for i in range(count)]


def _result_type(count: int, t: ir.Type) -> ir.Type:
    return t if count == 1 else ir.LiteralStructType([t] * count)


def _group(first: int, count: int) -> str:
    return "{" + ", ".join(f"${i}" for i in range(first, first + count)) + "}"


def mma_text(d: "ptx_ops.MmaCall") -> tuple[str, str]:
    """The asm template and constraints of an mma (outputs D, then inputs A, B, C)."""
    nd, na, nb = d.c.count, d.a.count, d.b.count
    text = (f"{d.instruction()} {_group(0, nd)}, {_group(nd, na)}, {_group(nd + na, nb)}, "
            f"{_group(nd + na + nb, nd)};")
    constraints = ",".join([f"={d.c.constraint}"] * nd + [d.a.constraint] * na
                           + [d.b.constraint] * nb + [d.c.constraint] * nd)
    return text, constraints


def _mma(fl, d: "ptx_ops.MmaCall") -> None:
    a = _address(fl, d.a.pointer, d.a.offset)
    b = _address(fl, d.b.pointer, d.b.offset)
    c = _address(fl, d.c.pointer, d.c.offset)
    inputs = (_fragment(fl, a, d.a.count, d.a.constraint) + _fragment(fl, b, d.b.count, d.b.constraint)
              + _fragment(fl, c, d.c.count, d.c.constraint))
    text, constraints = mma_text(d)
    t = _REG_TYPES[d.c.constraint]
    out = _asm(fl, _result_type(d.c.count, t), text, constraints, inputs)
    size = 8 if d.c.constraint == "d" else 4
    for i, v in enumerate(_outputs(fl, out, d.c.count)):
        fl.b.store(v, fl.b.gep(c, [ir.Constant(lt.I64, i)], source_etype=t), align=size)


def ldmatrix_text(d: "ptx_ops.LdmatrixCall") -> tuple[str, str]:
    return (f"{d.instruction()} {_group(0, d.num)}, [${d.num}];",
            ",".join(["=r"] * d.num + ["r", "~{memory}"]))


def _ldmatrix(fl, d: "ptx_ops.LdmatrixCall") -> None:
    smem = _in_space(fl, _address(fl, d.smem, d.smem_offset), SHARED, 32)
    text, constraints = ldmatrix_text(d)
    out = _asm(fl, _result_type(d.num, lt.I32), text, constraints, [smem])
    local = _address(fl, d.local, d.local_offset)
    for i, v in enumerate(_outputs(fl, out, d.num)):
        fl.b.store(v, fl.b.gep(local, [ir.Constant(lt.I64, i)], source_etype=lt.I32), align=4)


def cp_async_text(d: "ptx_ops.CpAsyncCall") -> tuple[str, str]:
    if d.predicate is None:
        return f"{d.instruction()} [$0], [$1], {d.size};", "r,l,~{memory}"
    zeros = ", ".join(["$3"] * (d.size // 4))
    store = {4: "st.shared.u32", 8: "st.shared.v2.u32", 16: "st.shared.v4.u32"}[d.size]
    text = ("{ .reg .pred p; setp.ne.u32 p, $2, 0; "
            f"@p {d.instruction()} [$0], [$1], {d.size}; "
            f"@!p {store} [$0], {{{zeros}}}; }}")
    return text, "r,l,r,r,~{memory}"


def _cp_async(fl, d: "ptx_ops.CpAsyncCall") -> None:
    dst = _in_space(fl, _address(fl, d.dst, d.dst_offset), SHARED, 32)
    src = _in_space(fl, _address(fl, d.src, d.src_offset), GLOBAL, 64)
    args = [dst, src]
    if d.predicate is not None:
        p = fl.expr(d.predicate)
        args += [fl.int_cast(p, lt.I32, signed=False) if p.type != lt.I32 else p, ir.Constant(lt.I32, 0)]
    text, constraints = cp_async_text(d)
    _asm(fl, ir.VoidType(), text, constraints, args)


def _ldg32(fl, d: "ptx_ops.Ldg32Call") -> None:
    """``reg[k] = guard ? A[i] : 0``: TVM's predicated ``ld.global.nc.f32``."""
    src = _in_space(fl, _address(fl, d.load.buffer.data, d.load.indices[0]), GLOBAL, 64)
    g = fl.expr(d.guard)
    g = fl.int_cast(g, lt.I32, signed=False) if g.type != lt.I32 else g
    text = ("{ .reg .pred p; setp.ne.b32 p, $2, 0; @!p mov.b32 $0, 0; "
            "@p ld.global.nc.f32 $0, [$1]; }")
    value = _asm(fl, ir.FloatType(), text, "=f,l,r", [src, g])
    fl.b.store(value, _address(fl, d.reg, d.reg_offset), align=4)


def _float_op(fl, d: "ptx_ops.FloatOpCall", call: Call) -> None:
    reg = _FLOAT_REG[d.dtype]
    t = _REG_TYPES[reg]
    value = _asm(fl, t, f"{d.opcode} $0, $1, $2;", f"={reg},{reg},{reg}", [fl.expr(d.a), fl.expr(d.b)])
    dest, size = d.dest, 8 if reg == "d" else 4
    ptr, _ = fl.buffer_pointer(dest.buffer, dest.indices[0], call.span)
    store = fl.b.store(value, ptr, align=fl.alignment(dest.buffer, dest.indices[0], size))
    fl.note_access(store, dest.buffer)
