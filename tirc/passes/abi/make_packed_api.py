"""MakePackedAPI: give public host functions tvm-ffi's packed (safe-call) signature.

Runs after LowerDeviceKernelLaunch (docs/pipeline.md); every function has a ``target`` and
kernels carry ``"calling_conv": 2``. Skipped: kernels, private functions, functions
already packed (``calling_conv`` 1), device-target functions without a host. Each other
``f`` becomes ``f(self_handle, args, num_args: T.int32, result) -> T.int32`` with
``"calling_conv": 1``, ``"global_symbol": "__tvm_ffi_f"`` and its target kept: the C
``int __tvm_ffi_f(void*, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result)``;
with a symbol prefix P (``--symbol-prefix``), ``__tvm_ffi_Pf``, which tvm-ffi finds as ``Pf``.

Guarantees, before the original body runs (AssertStmts raising TypeError/ValueError
whose messages name the argument and show the signature as TVM does): ``num_args``;
each argument's type index (int/bool params take ints and bools, float params also
ints); for tensors ndim, dtype, device type (1 CPU; 2 CUDA for a cuda target with a
host), one device id, each shape dimension (a size variable is bound by a LetStmt where
it first occurs and checked where it recurs), strides (compact unless declared), byte
offset and non-NULL data. Shape, stride and offset fields are compared in 64 bits; one
that binds a variable must fit its dtype first (a size is also non-negative), as must an
integer scalar: a ValueError naming the argument, never a truncation (an ``int32`` ``n``
bound from 2**31 + 8 elements would wrap negative and index outside the array). An empty
tensor (some dimension 0) may have any strides and a NULL data pointer: the call runs
and touches nothing. Every parameter is bound by a LetStmt (a buffer's data
variable from the tensor's data pointer, then its DeclBuffer); the tensors' device id
``dev_id`` is recorded as TVM does, ``T.attr("default", "device_id", dev_id)`` and
``T.attr("default", "device_type", t)`` around the body; kernel launches stay as they
are. ``return v`` stores ``v`` into ``result`` (type index, padding, value) and returns
0; a void function stores None.

Differs from TVM: tensors must have type index 7 (DLTensor*) or 70 (Tensor object),
where TVM also admits None, opaque pointers and any object; the target is kept (TVM
swaps in the host); no ``__tvm_set_device`` call or ``compute_scope`` attribute; a
misaligned byte offset for a symbolic ``elem_offset`` is a ValueError; TVM casts each
field and scalar to its variable's type unchecked and compares the narrowed values; the
strides of an empty tensor are not checked (NumPy gives a (4, 0) array strides (0, 0)).

Intrinsics introduced, documented with their struct fields in ``tirc.ir.ffi_abi`` (the host
code generator implements them): ``T.tvm_struct_get``, ``T.tvm_struct_set``,
``T.handle_add_byte_offset``; also ``T.isnullptr``.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.ir import ffi_abi as abi
from tirc.diagnostics import Diagnostic, Span
from tirc.ir.ffi_abi import (
    any_value,
    binop,
    cast,
    compact_condition,
    dl_dtype,
    empty_condition,
    fits,
    fold,
    i32,
    mul,
    not_null,
    range_text,
    struct_get,
    struct_set,
    wide,
)
from tirc.ir import describe
from tirc.ir.attrs import (CallingConv, CALLING_CONV, DEVICE_ID, DEVICE_TYPE, GLOBAL_SYMBOL,
    TARGET)
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, HANDLE, INT32, INT64
from tirc.ir.expr import BinOp, Call, Cast, GlobalVar, IntImm, PrimExpr, Select, StringImm, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (
    AssertStmt,
    AttrStmt,
    DeclBuffer,
    IfThenElse,
    LetStmt,
    Return,
    SeqStmt,
    Stmt,
    ends_with_return,
    seq,
)
from tirc.ir.visitor import Mutator, walk
from tirc.passes.pass_context import PassContext
from tirc.passes.abi.exported_calls import rewrite_exported_calls
from tirc.passes.analysis.written_params import written_params
from tirc.target.kinds import KINDS, Target

WHEN, EXPECTED = " when calling:\n  `", "`,\n  expected "


def make_packed_api(mod: IRModule, ctx: PassContext) -> IRModule:
    symbols = {name: f"__tvm_ffi_{ctx.symbol_prefix}{name}"
               for name, f in mod.functions.items() if _needs_packing(f)}
    if symbols:  # calls of them from private host functions are refused
        mod = replace(mod, functions={
            name: f if name in symbols or _is_device(f) else
            replace(f, body=rewrite_exported_calls(f.body, name, symbols, None))
            for name, f in mod.functions.items()})
    return export_functions(
        mod, lambda name, f: _Packer(name, f, ctx.symbol_prefix, symbols).run(), "packed")


def _is_device(f: PrimFunc) -> bool:
    target = f.attrs.get(TARGET)
    return isinstance(target, Target) and target.is_device and target.host is None


def export_functions(mod: IRModule, make, abi: str) -> IRModule:
    """``mod`` with every public host function rewritten by ``make(name, func)`` for the
    host ABI ``abi``, and recorded as exported in the build's facts (both ABI passes),
    with the parameters each may write (:func:`written_params`)."""
    funcs = {name: (make(name, f) if _needs_packing(f) else f)
             for name, f in mod.functions.items()}
    if all(funcs[n] is f for n, f in mod.functions.items()):
        return mod
    return replace(mod, functions=funcs,
                   facts=describe.with_exported(mod, funcs, abi, written_params(mod)))


def _needs_packing(f: PrimFunc) -> bool:
    target = f.attrs.get(TARGET)
    if (f.private or f.attrs.get(CALLING_CONV, 0) != CallingConv.DEFAULT
            or not isinstance(target, Target)):
        return False
    return not target.is_device or target.host is not None


class _Packer:
    """Builds one packed function: LetStmts and checks in order, then the body."""

    def __init__(self, name: str, func: PrimFunc, prefix: str = "",
                 symbols: dict[str, str] | None = None):
        self.name, self.func, self.prefix = name, func, prefix
        self.symbols = symbols or {}  # exported functions' symbols, for calls of them
        self.args = Var("args", HANDLE)
        self.bound: dict[int, str] = {}  # variable -> where its value came from
        self.early: list[tuple] = []  # ("let", var, value) / ("assert", cond, kind, msg)
        self.late: list[tuple] = []  # checks that may use any bound variable
        self.pending: list[tuple[PrimExpr, str]] = []  # expressions checked late
        target: Target = func.attrs[TARGET]
        kind = KINDS[target.kind] if target.is_device else KINDS["llvm"]
        self.dev_type, self.dev_name = kind.dl_device_type, kind.device_type
        self.signature = f"{name}({', '.join(self.param_text(p) for p in func.params)})"
        self.first_tensor = ""

    def param_text(self, p: Var) -> str:
        buf = self.func.buffer_of(p)
        if buf is not None:
            shape = ", ".join(describe.script_text(s) for s in buf.shape)
            return f"{buf.name}: Tensor([{shape}], {buf.dtype})"
        return f"{p.name}: {'T.handle' if p.dtype.is_handle else p.dtype}"

    def msg(self, head: str, expected: str | None = None) -> tuple[str, ...]:
        return (head, WHEN, self.signature, "`" if expected is None else EXPECTED + expected)

    def expected_text(self, e: PrimExpr):
        """What a late check's message says is expected: ``e`` with each variable shown
        as the argument field it is bound from (``B.shape[0] + 1``, as TVM's message
        says), made when every variable is bound."""
        return lambda: describe.expr_text(e, self.bound)

    def lazy_msg(self, head: str, expected, suffix: str = ""):
        """:meth:`msg` made when the checks are written (``expected()`` then)."""
        return lambda: self.msg(head, expected() + suffix)

    def let(self, var: Var, value: PrimExpr, origin: str | None = None) -> None:
        self.early.append(("let", var, value))
        if origin is not None:
            self.bound[id(var)] = origin

    def check(self, cond: PrimExpr, kind: str, msg: tuple[str, ...], late: bool = False) -> None:
        (self.late if late else self.early).append(("assert", cond, kind, msg))

    def run(self) -> PrimFunc:
        f, n = self.func, len(self.func.params)
        sp = f.span  # the code this pass writes stands for the function's signature
        num_args, result = Var("num_args", INT32), Var("result", HANDLE)
        self.check(binop("eq", num_args, i32(n)), "TypeError", self.msg(f"Expected {n} arguments"))
        if n:
            self.check(not_null(self.args), "TypeError", self.msg("args pointer is NULL"))
        tensors: list[tuple[int, Var, Buffer, Var]] = []
        for i, p in enumerate(f.params):
            buf = f.buffer_of(p)
            if buf is not None:
                tensors.append((i, p, buf, self.tensor_arg(i, buf.name)))
            else:
                self.scalar_arg(i, p)
        dev_id = Var("dev_id", INT32)
        for i, p, buf, handle in tensors:
            self.tensor_checks(i, buf, handle, dev_id, first=p is tensors[0][1])
        for e, where in self.pending:
            self.need_bound(e, where)
        for i, p, buf, handle in tensors:
            self.data_check(i, buf, handle)
        used, calls_exported = _uses(f.body, self.symbols)
        body = self.body(result)
        if calls_exported:  # the code body() adds calls nothing
            body = rewrite_exported_calls(body, self.name, self.symbols,
                                          {id(buf): handle for _, _, buf, handle in tensors})
        if tensors:
            body = AttrStmt(StringImm("default"), DEVICE_TYPE, i32(self.dev_type), body, sp)
            body = AttrStmt(StringImm("default"), DEVICE_ID, dev_id, body, sp)
        for i, p, buf, handle in reversed(tensors):
            body = DeclBuffer(buf, body, buf.span)
            if id(p) in used:
                body = LetStmt(p, handle, body, sp, form="let")
            data = struct_get(handle, 0, abi.ARR_DATA, HANDLE)
            body = LetStmt(buf.data, data, body, sp, form="let")
        for item in reversed(self.early + self.late):
            if item[0] == "let":
                body = LetStmt(item[1], item[2], body, sp, form="let")
            elif item[0] == "if_strides":  # a NULL strides array means compact
                check = AssertStmt(item[2], "ValueError", item[3], SeqStmt((), sp), sp)
                body = seq([IfThenElse(not_null(item[1]), check, None, sp), body], sp)
            else:
                msg = item[3]() if callable(item[3]) else item[3]
                body = AssertStmt(item[1], item[2], msg, body, sp)
        params = (Var("self_handle", HANDLE), self.args, num_args, result)
        attrs = {**f.attrs, CALLING_CONV: int(CallingConv.CPACKED_FUNC),
                 GLOBAL_SYMBOL: f"__tvm_ffi_{self.prefix}{self.name}"}
        return replace(f, params=params, body=body, ret_type=INT32, buffer_map=(), attrs=attrs)

    # -- arguments -----------------------------------------------------------------------
    def arg(self, i: int, field: int, dtype=HANDLE) -> PrimExpr:
        return struct_get(self.args, i, field, dtype)

    def type_index(self, i: int, name: str, accepted: tuple[int, ...], what: str) -> Var:
        idx = Var(f"{name}_type_index", INT32)
        self.let(idx, self.arg(i, abi.ANY_TYPE_INDEX, INT32))
        conds = [binop("eq", idx, i32(t)) for t in accepted]
        if what == "pointer":
            conds.append(binop("ge", idx, i32(abi.OBJECT_BEGIN)))
        msg = self.msg(f"Mismatched type on argument #{i}", what)
        self.check(fold("or", conds), "TypeError", msg)
        return idx

    def object_pointer(self, i: int, idx: Var) -> PrimExpr:
        """The argument's pointer; a Tensor object's DLTensor lies after its header."""
        offset = Select(binop("eq", idx, i32(abi.TENSOR)), i32(abi.TENSOR_HEADER_BYTES), i32(0))
        return Call(HANDLE, "handle_add_byte_offset", (self.arg(i, abi.ANY_VALUE), offset))

    def tensor_arg(self, i: int, name: str) -> Var:
        idx = self.type_index(i, name, (abi.DLTENSOR_PTR, abi.TENSOR), "Tensor")
        handle = Var(f"{name}_handle", HANDLE)
        self.let(handle, self.object_pointer(i, idx))
        return handle

    def scalar_arg(self, i: int, p: Var) -> None:
        d, span = p.dtype, p.span or self.func.span
        if d.lanes != 1:
            raise Diagnostic(f"parameter '{p.name}' of vector type {d} cannot be passed "
                             f"through the packed API", span)
        as_int = self.arg(i, abi.ANY_VALUE, INT64)
        if d.is_handle:
            accepted = (abi.NONE, abi.OPAQUE_PTR, abi.DLTENSOR_PTR)
            value = self.object_pointer(i, self.type_index(i, p.name, accepted, "pointer"))
        elif d.is_bool:
            self.type_index(i, p.name, (abi.BOOL_T, abi.INT), "boolean")
            value = Cast(BOOL, as_int)
        elif d.is_integer:
            self.type_index(i, p.name, (abi.INT, abi.BOOL_T), "int")
            ok = fits(as_int, d)
            if ok is not None:  # never truncated: 2**40 is no int32
                self.check(ok, "ValueError", self.msg(
                    f"Out-of-range value on argument #{i} ({p.name}: {d})",
                    f"a value from {range_text(d)}"))
            value = cast(d, as_int)
        elif d.is_float:
            idx = self.type_index(i, p.name, (abi.FLOAT, abi.INT, abi.BOOL_T), "float")
            as_float = cast(d, self.arg(i, abi.ANY_VALUE, abi.FLOAT64))
            value = Select(binop("eq", idx, i32(abi.FLOAT)), as_float, Cast(d, as_int))
        else:
            raise Diagnostic(f"parameter '{p.name}' of type {d} cannot be passed through the "
                             f"packed API", span)
        self.let(p, value, origin=p.name)

    # -- tensors -------------------------------------------------------------------------
    def tensor_checks(self, i: int, buf: Buffer, h: Var, dev_id: Var, first: bool) -> None:
        name, arg, d = buf.name, f" on argument #{i}", buf.dtype
        self.check(not_null(h), "TypeError", self.msg(f"Mismatched type{arg}", "Tensor"))
        self.check(binop("eq", i32(buf.ndim), struct_get(h, 0, abi.ARR_NDIM, INT32)), "ValueError",
                   self.msg(f"Mismatched {name}.ndim{arg}", str(buf.ndim)))
        fields = zip((abi.ARR_CODE, abi.ARR_BITS, abi.ARR_LANES),
                     (abi.UINT8, abi.UINT8, abi.UINT16), dl_dtype(d))
        same = [binop("eq", struct_get(h, 0, f, t), IntImm(t, v)) for f, t, v in fields]
        self.check(fold("and", same), "TypeError", self.msg(f"Mismatched {name}.dtype{arg}", str(d)))
        shape, strides = Var(f"{name}_shape", HANDLE), Var(f"{name}_strides", HANDLE)
        self.let(shape, struct_get(h, 0, abi.ARR_SHAPE, HANDLE))
        self.let(strides, struct_get(h, 0, abi.ARR_STRIDES, HANDLE))
        device_type = struct_get(h, 0, abi.ARR_DEVICE_TYPE, INT32)
        self.check(binop("eq", device_type, i32(self.dev_type)), "ValueError",
                   self.msg(f"Mismatched {name}.device_type{arg}", self.dev_name))
        device_id = struct_get(h, 0, abi.ARR_DEVICE_ID, INT32)
        if first:
            self.let(dev_id, device_id)
            self.first_tensor = name
        else:
            self.check(binop("eq", dev_id, device_id), "ValueError", self.msg(
                f"Mismatched {name}.device_id{arg}", f"to match {self.first_tensor}.device_id"))
        for k, s in enumerate(buf.shape):
            value = struct_get(shape, k, abi.INT64_ELEM, INT64)
            self.bind_or_check(s, value, f"{name}.shape[{k}]", arg, size=True)
        if buf.strides:
            for k, s in enumerate(buf.strides):
                compact: PrimExpr = IntImm(INT64, 1)
                for j in range(k + 1, buf.ndim):
                    compact = mul(compact, struct_get(shape, j, abi.INT64_ELEM, INT64))
                given = struct_get(strides, k, abi.INT64_ELEM, INT64)
                value = Call(INT64, "if_then_else",
                             (Call(BOOL, "isnullptr", (strides,)), compact, given))
                self.bind_or_check(s, value, f"{name}.strides[{k}]", arg)
        else:
            self.compact_check(buf, strides, arg)
        self.offset_check(buf, h, arg)

    def compact_check(self, buf: Buffer, strides: Var, arg: str) -> None:
        cond = compact_condition(buf, strides)
        if cond is not None:
            msg = self.msg(f"Mismatched {buf.name}.strides{arg}", "to be compact array")
            self.late.append(("if_strides", strides, cond, msg))

    def bind_elem_offset(self, name: str, eo: Var, value: PrimExpr, arg: str) -> None:
        """Buffer ``name``'s element offset variable ``eo`` bound to ``value`` (computed
        from the byte offset), after a check that it fits ``eo``'s dtype."""
        ok = fits(value, eo.dtype)
        if ok is not None:
            self.check(ok, "ValueError", self.msg(
                f"Out-of-range {name}.byte_offset{arg}",
                f"{name}.elem_offset ({eo.name}: {eo.dtype}) from {range_text(eo.dtype, True)}"))
        self.let(eo, cast(eo.dtype, value), origin=f"{name}.elem_offset")

    def offset_check(self, buf: Buffer, h: Var, arg: str) -> None:
        """The byte offset is the element offset times the element size."""
        d, name, eo = buf.dtype, buf.name, buf.elem_offset
        if d.is_subbyte and d.bits * d.lanes < 8:
            return self.packed_offset_check(buf, h, arg)
        size = d.lanes if d.is_bool else max(1, d.bits * d.lanes // 8)
        offset, usize = struct_get(h, 0, abi.ARR_BYTE_OFFSET, abi.UINT64), IntImm(abi.UINT64, size)
        if isinstance(eo, Var) and id(eo) not in self.bound:
            self.bind_elem_offset(name, eo, BinOp("div", offset, usize, abi.UINT64), arg)
            if size > 1:
                aligned = binop("eq", BinOp("mod", offset, usize, abi.UINT64), IntImm(abi.UINT64, 0))
                self.check(aligned, "ValueError", self.msg(f"Misaligned {name}.byte_offset{arg}",
                                                           f"a multiple of {size}"), late=True)
            if buf.offset_factor > 1:
                # the declared offset factor: the offset is a multiple of it (TVM's binder)
                factor = IntImm(eo.dtype, buf.offset_factor)
                multiple = binop("eq", BinOp("mod", eo, factor, eo.dtype), IntImm(eo.dtype, 0))
                self.check(multiple, "ValueError", self.msg(
                    f"Misaligned {name}.elem_offset{arg}",
                    f"a multiple of offset_factor={buf.offset_factor} "
                    f"({buf.offset_factor * size} bytes)"), late=True)
        elif eo is None or isinstance(eo, IntImm):
            want = (eo.value if eo is not None else 0) * size
            self.check(binop("eq", IntImm(abi.UINT64, want), offset), "ValueError",
                       self.msg(f"Invalid {name}.byte_offset{arg}", str(want)), late=True)
        else:
            self.pending.append((eo, f"{name}.elem_offset"))
            self.check(binop("eq", binop("mul", cast(abi.UINT64, wide(eo)), usize), offset), "ValueError",
                       self.lazy_msg(f"Invalid {name}.byte_offset{arg}",
                                     self.expected_text(eo), f" * {size}"),
                       late=True)

    def packed_offset_check(self, buf: Buffer, h: Var, arg: str) -> None:
        """A sub-byte buffer (``per`` elements to a byte, DLPack's packing): the byte
        offset is the element offset divided by ``per``, so the element offset is a
        multiple of ``per`` (a part of a byte has no byte offset)."""
        d, name, eo = buf.dtype, buf.name, buf.elem_offset
        per = 8 // (d.bits * d.lanes)
        offset, uper = struct_get(h, 0, abi.ARR_BYTE_OFFSET, abi.UINT64), IntImm(abi.UINT64, per)
        if isinstance(eo, Var) and id(eo) not in self.bound:
            self.bind_elem_offset(name, eo, BinOp("mul", offset, uper, abi.UINT64), arg)
        elif eo is None or isinstance(eo, IntImm):
            elems = eo.value if eo is not None else 0
            if elems % per:
                raise Diagnostic(f"sub-byte buffer '{name}' ({d}) has elem_offset {elems}, "
                                 f"not a multiple of the {per} elements a byte holds: DLPack's "
                                 "byte_offset cannot express it", buf.span)
            want = elems // per
            self.check(binop("eq", IntImm(abi.UINT64, want), offset), "ValueError",
                       self.msg(f"Invalid {name}.byte_offset{arg}", str(want)), late=True)
        else:
            self.pending.append((eo, f"{name}.elem_offset"))
            self.check(binop("eq", binop("mul", offset, uper), cast(abi.UINT64, wide(eo))),
                       "ValueError", self.lazy_msg(f"Invalid {name}.byte_offset{arg}",
                                                   self.expected_text(eo), f" / {per}"),
                       late=True)

    def bind_or_check(self, expected: PrimExpr, value: PrimExpr, where: str, arg: str,
                      size: bool = False) -> None:
        """A variable seen for the first time is bound, after a check that ``value`` (the
        int64 field; a ``size`` is also non-negative) fits its dtype; anything else is
        checked against it in 64 bits, so no field is truncated to match."""
        d = expected.dtype
        if isinstance(expected, Var) and id(expected) not in self.bound:
            ok = fits(value, d, non_negative=size)
            if ok is not None:
                self.check(ok, "ValueError", self.msg(
                    f"Out-of-range {where}{arg}",
                    f"a value from {range_text(d, size)} ({expected.name} is {d})"))
            self.let(expected, cast(d, value), origin=where)
        elif isinstance(expected, Var):
            msg = self.msg(f"Mismatched {where}{arg}", f"to match {self.bound[id(expected)]}")
            self.check(binop("eq", wide(expected), value), "ValueError", msg, late=True)
        else:
            if not isinstance(expected, IntImm):
                self.pending.append((expected, where))
            self.check(binop("eq", value, wide(expected)), "ValueError",
                       self.lazy_msg(f"Invalid {where}{arg}", self.expected_text(expected)),
                       late=True)

    def need_bound(self, e: PrimExpr, where: str) -> None:
        for node in walk(e):
            if isinstance(node, Var) and id(node) not in self.bound:
                raise Diagnostic(f"cannot determine '{node.name}' in {where} of function "
                                 f"'{self.name}' from its arguments", self.func.span)

    def data_check(self, i: int, buf: Buffer, h: Var) -> None:
        """Non-NULL data, unless the tensor is empty (a dimension is 0)."""
        empty = empty_condition(buf)
        if isinstance(empty, IntImm):
            return
        ok = not_null(struct_get(h, 0, abi.ARR_DATA, HANDLE))
        if empty is not None:
            ok = binop("or", empty, ok)
        self.check(ok, "ValueError", self.msg(f"{buf.name} data pointer is NULL on argument #{i}",
                                              "non-NULL data pointer"), late=True)

    # -- body and result -----------------------------------------------------------------
    def body(self, result: Var) -> Stmt:
        """The original body; returns store into ``result`` and return 0."""
        ret, sp = self.func.ret_type, self.func.span
        if ret is None or ret.is_void:
            none = self.store(result, abi.NONE, IntImm(INT64, 0), sp)
            return seq([self.func.body, *none, Return(i32(0), sp)], sp)
        body = _Returns(self, result).visit(self.func.body)
        return body if ends_with_return(body) else seq([body, Return(i32(0), sp)], sp)

    def store(self, result: Var, index: int, value: PrimExpr, span: Span | None) -> list[Stmt]:
        return [struct_set(result, abi.ANY_TYPE_INDEX, i32(index), span),
                struct_set(result, abi.ANY_PADDING, i32(0), span),
                struct_set(result, abi.ANY_VALUE, value, span)]

    def returned(self, result: Var, r: Return) -> Stmt:
        d, span = r.value.dtype, r.span or self.func.span
        stored = any_value(r.value)
        if stored is None:
            what = f"a vector ({d})" if d.lanes != 1 else str(d)
            raise Diagnostic(f"a packed function cannot return {what}", span)
        return seq([*self.store(result, *stored, span), Return(i32(0), span)], span)


def _uses(body: Stmt, symbols: dict[str, str]) -> tuple[set[int], bool]:
    """Ids of the variables ``body`` uses, and whether it calls a function named in
    ``symbols`` (an exported one): one walk."""
    used: set[int] = set()
    calls = False
    for node in walk(body):
        if isinstance(node, Var):
            used.add(id(node))
        elif isinstance(node, Call) and isinstance(node.op, GlobalVar) and node.op.name in symbols:
            calls = True
    return used, calls


class _Returns(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self, packer: _Packer, result: Var):
        self.packer, self.result = packer, result

    def visit_Return(self, r: Return) -> Stmt:
        return self.packer.returned(self.result, r)

    def visit_SeqStmt(self, s: SeqStmt):
        new = (yield from self.descend(s))
        return new if new is s else seq(new.stmts, s.span)
