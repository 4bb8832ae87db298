"""An llvmlite module as LLVM IR text: the text ``str(module)`` gives, byte for byte,
made with less Python work for the instructions the lowering makes most.

llvmlite formats an instruction through several layers (``_StrCaching.__str__``,
``NamedValue._to_string``, the instruction's ``descr`` with a ``str.format`` per
operand, ``_stringify_metadata``); for the 500-kernel module that was 1.0 s of the
host object's 3.4 s. Here each of the common instruction classes (matched by exact
class, so a subclass with its own ``descr`` is never caught) is one function writing the
same text as its ``descr``; every other value is formatted by llvmlite itself.
Written for llvmlite 0.50, as :mod:`tirc.backends.llvm.llvmlite_compat`; ``tests/backends/llvm/test_llvm_text.py`` compares
the two on modules using every fast path.
"""
from __future__ import annotations

import re
import string

from llvmlite import ir
from llvmlite.ir import instructions as ins

from tirc.backends.llvm.builder import formatted_constant
from tirc.backends.llvm.llvmlite_compat import FnPointer

_VOID = ir.VoidType
# llvmlite's _escape_string: these bytes stand for themselves in c"...", others as \XX
_PLAIN = frozenset(map(ord, string.ascii_letters + string.digits + " !#$%&'()*+,-./:;<=>?@[]^_`{|}~"))
_ESCAPES = {ch: "\\%02x" % ch for ch in range(256) if ch not in _PLAIN}
_ESCAPED = {chr(ch): text for ch, text in _ESCAPES.items()}
_NOT_PLAIN = re.compile("[^%s]" % re.escape("".join(map(chr, sorted(_PLAIN)))))


def _escape_match(m: re.Match) -> str:
    return _ESCAPED[m.group()]


def bytes_constant(ty: ir.ArrayType, data: bytes) -> ir.Constant:
    """``ir.Constant(ty, bytearray(data))``, its text made at once (llvmlite escapes byte
    by byte in a list comprehension: the embedded device images are megabytes). Text
    (error messages, PTX), where a byte to escape is rare, has those bytes replaced by a
    regular expression: 5 times faster than ``str.translate``, which looks up every byte
    (16,000 messages of 500 kernels: 0.10 -> 0.02 s; 390 KB of PTX: 22 -> 8 ms); binary
    images keep ``str.translate``."""
    text = data.decode("latin-1")
    if data.isascii():
        text = _NOT_PLAIN.sub(_escape_match, text)
    else:
        text = text.translate(_ESCAPES)
    return formatted_constant(ty, 'c"%s"' % text)


def _meta(instr) -> str:
    """``_stringify_metadata(leading_comma=True)``."""
    md = instr.metadata
    if not md:
        return ""
    return "".join([f", !{k} {v.get_reference()}" for k, v in md.items()])


def _typed(op) -> str:
    return f"{op.type} {op.get_reference()}"


def _plain(i) -> str:  # Instruction.descr: binary operators
    opname = i.opname
    if i.flags:
        opname = " ".join([opname] + i.flags)
    ops = ", ".join([op.get_reference() for op in i.operands])
    return f"{opname} {i.type} {ops}{_meta(i)}"


def _gep(i) -> str:
    indices = ", ".join([f"{x.type} {x.get_reference()}" for x in i.indices])
    op = "getelementptr inbounds" if i.inbounds else "getelementptr"
    p = i.pointer
    return f"{op} {i.source_etype}, {p.type} {p.get_reference()}, {indices} {_meta(i)}"


def _cmp(i) -> str:
    a, b = i.operands
    flags = "".join([" " + f for f in i.flags])
    return f"{i.opname}{flags} {i.op} {a.type} {a.get_reference()}, {b.get_reference()} {_meta(i)}"


def _load(i) -> str:
    [p] = i.operands
    align = "" if i.align is None else ", align %d" % i.align
    return f"load {i.type}, {p.type} {p.get_reference()}{align}{_meta(i)}"


def _store(i) -> str:
    v, p = i.operands
    align = "" if i.align is None else ", align %d" % i.align
    return f"store {v.type} {v.get_reference()}, {p.type} {p.get_reference()}{align}{_meta(i)}"


def _terminator(i) -> str:  # Terminator.descr: br
    ops = ", ".join([f"{op.type} {op.get_reference()}" for op in i.operands])
    return f"{i.opname} {ops}{_meta(i)}"


def _unreachable(i) -> str:  # its descr writes no metadata
    return i.opname


def _ret(i) -> str:
    if i.operands:
        v = i.operands[0]
        return f"{i.opname} {v.type} {v.get_reference()}{_meta(i)}"
    return f"{i.opname}{_meta(i)}"


def _cast(i) -> str:
    [v] = i.operands
    return f"{i.opname} {v.type} {v.get_reference()} to {i.type} {_meta(i)}"


def _select(i) -> str:
    c, a, b = i.operands
    return (f"select {' '.join(i.flags)} {c.type} {c.get_reference()}, {a.type} "
            f"{a.get_reference()}, {b.type} {b.get_reference()} {_meta(i)}")


def _call(i) -> str:
    if i.arg_attributes or i.attributes or i.fastmath or i.cconv or i.opname != "call":
        return None
    callee = i.operands[0]
    fnty = callee.function_type
    ty = fnty if fnty.var_arg else fnty.return_type
    args = ", ".join([f"{a.type} {a.get_reference()}" for a in i.operands[1:]])
    tail = f"{i.tail} " if i.tail else ""
    return f"{tail}call {ty} {callee.get_reference()}({args}){_meta(i)}"


_FORMAT = {
    ins.Instruction: _plain,
    ins.GEPInstr: _gep,
    ins.ICMPInstr: _cmp,
    ins.LoadInstr: _load,
    FnPointer: _load,
    ins.StoreInstr: _store,
    ins.Branch: _terminator,
    ins.ConditionalBranch: _terminator,
    ins.Unreachable: _unreachable,
    ins.Ret: _ret,
    ins.CastInstr: _cast,
    ins.SelectInstr: _select,
    ins.CallInstr: _call,
}
_CACHED = "_StrCaching__cached_str"  # where llvmlite keeps a value's text once made


def instruction_text(i) -> str:
    """``str(i)``."""
    cached = i.__dict__.get(_CACHED)
    if cached is not None:
        return cached
    fmt = _FORMAT.get(type(i))
    text = fmt(i) if fmt is not None else None
    if text is None:
        return str(i)
    if not isinstance(i.type, _VOID):
        text = f"{i.get_reference()} = {text}"
    return text.rstrip()


def function_text(f: ir.Function) -> str:
    """``str(f)``."""
    buf: list[str] = []
    f.descr_prototype(buf)
    if f.blocks:
        buf.append("{\n")
        for blk in f.blocks:
            buf.append(f"{blk._format_name()}:\n")
            buf += [f"  {instruction_text(i)}\n" for i in blk.instructions]
        buf.append("}\n")
    return "".join(buf)


def global_text(g: ir.GlobalVariable) -> str:
    """``str(g)`` (``GlobalVariable.descr``) for a global with an initializer of its
    type and no metadata (the module's strings and tables); any other by llvmlite."""
    init = g.initializer
    if init is None or g.metadata or init.type != g.value_type or _CACHED in g.__dict__:
        return str(g)
    buf = [g.get_reference(), " = "]
    if g.linkage:
        buf.append(g.linkage + " ")
    if g.storage_class:
        buf.append(g.storage_class + " ")
    if g.unnamed_addr:
        buf.append("unnamed_addr ")
    if g.addrspace != 0:
        buf.append("addrspace(%d) " % g.addrspace)
    buf += ["constant " if g.global_constant else "global ", str(g.value_type), " ",
            init.get_reference()]
    if g.section:
        buf.append(', section "%s"' % (g.section,))
    if g.align is not None:
        buf.append(", align %d" % g.align)
    return "".join(buf).rstrip()


_GLOBAL_TEXT = {ir.Function: function_text, ir.GlobalVariable: global_text}


def module_text(m: ir.Module) -> str:
    """``str(m)``."""
    lines = ['; ModuleID = "%s"' % (m.name,), 'target triple = "%s"' % (m.triple,),
             'target datalayout = "%s"' % (m.data_layout,), '']
    lines += [t.get_declaration() for t in m.get_identified_types().values()]
    lines += [_GLOBAL_TEXT.get(type(v), str)(v) for v in m.globals.values()]
    lines += m._get_metadata_lines()
    return "\n".join(lines)
