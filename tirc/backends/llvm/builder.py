"""llvmlite's IRBuilder with less Python work per instruction: the same objects (llvmlite's
own instruction and block classes, with the attributes their constructors set), the
same names, the same text.

llvmlite makes an instruction through a chain of constructors (the builder method, the
instruction class, ``Instruction``, ``NamedValue``), each checking its arguments, and
names it through ``NameScope.register``/``deduplicate``/``is_used``; every instruction,
``store`` and ``br`` included, takes a name (``.N`` when none is given). A host module of
500 CUDA kernels has 150,000 instructions and 30,000 blocks. Here the kinds the lowering
makes most (GEPs, loads, stores, integer compares, branches, returns, selects, integer
binary operators, casts, calls of functions, stack slots, blocks) are made in one step
each, their reference text (``%"name"``) set at once; anything else, and any case the
fast paths do not cover (typed pointers, vector compares, a GEP without
``source_etype``, calls with attributes), goes to llvmlite's own method.
:class:`FastScope` registers names with llvmlite's algorithm in one function. With
``private_constant`` for the module's strings, the lowering of those 500 kernels went
from 1.16 to 0.89 s and their ``module_text`` from 0.65 to 0.47 s.

Written for llvmlite 0.50, as :mod:`tirc.backends.llvm.llvmlite_compat`; ``tests/backends/llvm/test_llvm_builder.py`` checks
that both builders make the same module text.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import _utils, builder as _builder
from llvmlite.ir import instructions as ins
from llvmlite.ir import types

_CMP = _builder._CMP_MAP  # '==' -> 'eq', ...
_I1 = types.IntType(1)
_new = object.__new__


class FastScope(_utils.NameScope):
    """``NameScope`` with ``register`` and ``deduplicate`` in one function: the same names
    (``name``, else ``name.1``, ``name.2``, ... the first one not used, counting on from
    the last number given to ``name``)."""

    def register(self, name, deduplicate=False):
        used = self._useset
        if name in used:
            if not deduplicate:
                raise _utils.DuplicatedNameError(name)
            counts = self._basenamemap
            base, ident = name, counts[name]
            while name in used:
                ident += 1
                name = f"{base}.{ident}"
            counts[base] = ident
        used.add(name)
        return name


def fast_names(value: ir.Function | ir.Module) -> None:
    """Let a function or module name its values with :class:`FastScope` from now on
    (the names given so far stay taken: the scope object keeps its state)."""
    if type(value.scope) is _utils.NameScope:
        value.scope.__class__ = FastScope


_REF = "_StringReferenceCaching__cached_refstr"  # where llvmlite keeps get_reference()


def _name(value, scope: _utils.NameScope, name: str) -> None:
    """Give ``value`` its unique ``name`` in ``scope`` and its reference text now (what
    ``get_reference()`` caches at its first call; names with a quote or backslash, which
    llvmlite escapes, are left to it). The builder's values are never renamed (a let
    names its value only when it has no name, and these always have one), so the
    reference stays right."""
    value._name = name = scope.register(name, True)
    if '"' not in name and "\\" not in name:
        value.__dict__[_REF] = f'%"{name}"'


def _make(cls, block: ir.Block, typ: ir.Type, opname: str, operands, name: str, flags=()):
    """An instruction of ``cls`` in ``block``, as ``Instruction.__init__`` leaves it."""
    i = _new(cls)
    i.parent, i.type = block, typ
    _name(i, block.scope, name)
    i.opname, i.operands, i.flags, i.metadata = opname, operands, list(flags), {}
    return i


def new_block(func: ir.Function, name: str = "") -> ir.Block:
    """``func.append_basic_block(name)``."""
    blk = _new(ir.Block)
    blk.parent, blk.type = func, types.LabelType()
    blk.scope = scope = func.scope
    _name(blk, scope, name)
    blk.instructions, blk.terminator = [], None
    func.blocks.append(blk)
    return blk


def _binop(opname: str):
    def method(self, lhs, rhs, name="", flags=()):
        if lhs.type != rhs.type:
            raise ValueError("Operands must be the same type, got (%s, %s)" % (lhs.type, rhs.type))
        return self._put(_make(ins.Instruction, self._block, lhs.type, opname, (lhs, rhs), name, flags))
    method.__name__ = method.__qualname__ = opname
    return method


def _cast(opname: str):
    def method(self, val, typ, name=""):
        if val.type == typ:
            return val
        return self._put(_make(ins.CastInstr, self._block, typ, opname, [val], name))
    method.__name__ = method.__qualname__ = opname
    return method


class Builder(ir.IRBuilder):
    """``ir.IRBuilder``; the methods below make what llvmlite's do, faster."""

    def _put(self, instr):
        """``_insert``: at the insertion point, with the builder's debug location."""
        if self.debug_metadata is not None:
            instr.metadata["dbg"] = self.debug_metadata
        self._block.instructions.insert(self._anchor, instr)
        self._anchor += 1
        return instr

    def _end(self, term):
        """``_set_terminator``."""
        block = self._block
        assert block.terminator is None
        self._put(term)
        block.terminator = term
        return term

    add, sub, mul = _binop("add"), _binop("sub"), _binop("mul")
    and_, or_, xor = _binop("and"), _binop("or"), _binop("xor")
    shl, lshr, ashr = _binop("shl"), _binop("lshr"), _binop("ashr")
    trunc, zext, sext = _cast("trunc"), _cast("zext"), _cast("sext")
    bitcast, ptrtoint, inttoptr = _cast("bitcast"), _cast("ptrtoint"), _cast("inttoptr")

    def _icmp(self, prefix, cmpop, lhs, rhs, name):
        op = _CMP.get(cmpop)
        if op is None or isinstance(lhs.type, types.VectorType):
            return super()._icmp(prefix, cmpop, lhs, rhs, name)
        if cmpop != "==" and cmpop != "!=":
            op = prefix + op
        i = _make(ins.ICMPInstr, self._block, _I1, "icmp", [lhs, rhs], name)
        i.op = op
        return self._put(i)

    def select(self, cond, lhs, rhs, name="", flags=()):
        assert lhs.type == rhs.type
        return self._put(_make(ins.SelectInstr, self._block, lhs.type, "select",
                               [cond, lhs, rhs], name, flags))

    def load(self, ptr, name="", align=None, typ=None):
        if typ is None or not isinstance(ptr.type, types.PointerType):
            return super().load(ptr, name, align, typ)
        i = _make(ins.LoadInstr, self._block, typ, "load", [ptr], name)
        i.align = align
        return self._put(i)

    def store(self, value, ptr, align=None):
        pt = ptr.type
        if not isinstance(pt, types.PointerType) or not pt.is_opaque:
            return super().store(value, ptr, align)
        i = _make(ins.StoreInstr, self._block, types.VoidType(), "store", [value, ptr], "")
        i.align = align
        return self._put(i)

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        if source_etype is None:
            return super().gep(ptr, indices, inbounds, name, source_etype)
        i = _make(ins.GEPInstr, self._block, ptr.type, "getelementptr", [ptr] + list(indices), name)
        i.source_etype, i.pointer, i.indices, i.inbounds = source_etype, ptr, indices, inbounds
        return self._put(i)

    def call(self, fn, args, name="", cconv=None, tail=False, fastmath=(), attrs=(),
             arg_attrs=None):
        if (type(fn) is not ir.Function or cconv is not None or tail or fastmath or attrs
                or arg_attrs):
            return super().call(fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)
        fnty = fn.function_type
        params = fnty.args
        if len(args) < len(params) or any(
                a.type != t or isinstance(t, types.MetaDataType) for a, t in zip(args, params)):
            return super().call(fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)
        i = _make(ins.CallInstr, self._block, fnty.return_type, "call", [fn, *args], name)
        i.cconv, i.tail = fn.calling_convention, ""
        i.fastmath, i.attributes, i.arg_attributes = ins.FastMathFlags(), ins.CallInstrAttributes(), {}
        return self._put(i)

    def alloca(self, typ, size=None, name=""):
        if size is not None and not isinstance(size, ir.Value):
            return super().alloca(typ, size, name)
        assert size is None or isinstance(size.type, types.IntType)
        i = _make(ins.AllocaInstr, self._block, typ.as_pointer(), "alloca",
                  [size] if size else (), name)
        i.allocated_type, i.align = typ, None
        return self._put(i)

    def ret(self, value):
        return self._end(_make(ins.Ret, self._block, types.VoidType(), "ret", [value], ""))

    def ret_void(self):
        return self._end(_make(ins.Ret, self._block, types.VoidType(), "ret void", [], ""))

    def unreachable(self):
        return self._end(_make(ins.Unreachable, self._block, types.VoidType(), "unreachable", (), ""))

    def branch(self, target):
        return self._end(_make(ins.Branch, self._block, types.VoidType(), "br", [target], ""))

    def cbranch(self, cond, truebr, falsebr):
        return self._end(_make(ins.ConditionalBranch, self._block, types.VoidType(), "br",
                               [cond, truebr, falsebr], ""))


def private_constant(module: ir.Module, name: str, initializer: ir.Constant,
                     ptr: ir.PointerType) -> ir.GlobalVariable:
    """A ``private unnamed_addr constant`` global ``name`` holding ``initializer``, with
    the opaque pointer type ``ptr`` (in its address space): what ``ir.GlobalVariable``
    and the attributes set after it make (a module of 500 CUDA kernels has 16,000 error
    messages, each one such global)."""
    g = _new(ir.GlobalVariable)
    g.parent, g.type = module, ptr
    g._name = name = module.scope.register(name)
    g.linkage, g.storage_class, g.section, g.metadata = "private", "", "", {}
    g.value_type, g.initializer = initializer.type, initializer
    g.unnamed_addr, g.global_constant, g.addrspace, g.align = True, True, ptr.addrspace, None
    assert name not in module.globals
    module.globals[name] = g
    return g


def formatted_constant(ty: ir.Type, text: str) -> ir.FormattedConstant:
    """``ir.FormattedConstant(ty, text)`` without its checks (the module's strings)."""
    c = _new(ir.FormattedConstant)
    c.type, c.constant = ty, text
    return c
