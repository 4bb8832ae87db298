"""MakeCAPI: give public host functions a plain C signature (``--abi c``; docs/codegen-runtime.md).

Runs in place of MakePackedAPI (the pipeline picks one by ``PassContext.abi``). Skipped
as there: kernels, private functions, functions with a calling convention already,
device-target functions without a host. Each other ``f`` becomes

    int32_t f(T0* A, ..., scalar params as they are, int64_t n, ..., R* out)

with ``"tirc.c_api": True``, exported as the C symbol of its ``global_symbol``
attribute, else its name, after the symbol prefix (``--symbol-prefix P``: ``Pf``, also
recorded as its ``global_symbol``; ``main`` without a prefix is refused: it would clash
with a program's, and TVM's ``te.create_prim_func`` always names its function so):

- a buffer parameter is its data pointer (``T.handle`` pointing at the element type),
  already offset to the first element: its ``elem_offset`` is 0, its strides compact;
- a symbolic size in a buffer shape is taken from the scalar parameter of that name
  when there is one (``f(A: T.Buffer((n,)), n: T.int32)`` keeps its signature);
  otherwise it becomes an extra ``int64`` parameter after the original ones, in order
  of first appearance in the shapes, and is checked to be non-negative and to fit the
  variable's type (an ``int32`` size given 2**32 + 4 is an error, never 4); a stride
  variable is bound to the compact stride, computed in 64 bits and checked the same way;
- a function that returns a value gets a trailing out-pointer ``out`` (``R*``): each
  ``return v`` stores ``v`` through it and returns 0;
- the function returns 0 on success; a failed check (a NULL buffer pointer when the
  buffer is not empty, a NULL ``out``, a size out of range) or any other assertion of the
  body returns nonzero (-1), and the host backend records ``"Kind: message"`` where
  ``<module>_last_error()`` returns it (a thread-local buffer; see ``tirc.backends.cpu.backend``).

Not expressible through a C signature: vector-typed and narrow-float (float16,
bfloat16, float8) scalar parameters and return values — a Diagnostic.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.ffi_abi import binop, cast, dtype_range, empty_condition, fits, i32, mul, not_null, wide
from tirc.ir.attrs import C_API, GLOBAL_SYMBOL, SYMBOL_PREFIX
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import IntImm, PointerType, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (
    AssertStmt,
    BufferStore,
    DeclBuffer,
    LetStmt,
    Return,
    SeqStmt,
    Stmt,
    ends_with_return,
    seq,
)
from tirc.ir.visitor import Mutator, walk
from tirc.passes.abi.make_packed_api import export_functions
from tirc.passes.pass_context import PassContext


def make_c_api(mod: IRModule, ctx: PassContext) -> IRModule:
    return export_functions(mod, lambda name, f: _CFunction(name, f, ctx.symbol_prefix).run(),
                            "c")


def _scalar_ok(dtype, what: str, where: str, span) -> None:
    if dtype.lanes != 1:
        raise Diagnostic(f"{what} of vector type {dtype} cannot be passed through the C API "
                         f"({where})", span)
    if dtype.is_float and (dtype.bits < 32 or dtype.base == "bfloat16"):
        raise Diagnostic(f"{what} of type {dtype} cannot be passed through the C API "
                         f"({where}); use float32", span)


class _CFunction:
    def __init__(self, name: str, func: PrimFunc, prefix: str = ""):
        self.name, self.func, self.prefix = name, func, prefix
        self.symbol = prefix + str(func.attrs.get(GLOBAL_SYMBOL, name))
        self.bound: set[int] = set()
        self.lets: list[tuple[Var, PrimExpr]] = []
        self.checks: list[tuple[PrimExpr, str, str]] = []

    def run(self) -> PrimFunc:
        f, span = self.func, self.func.span
        if self.symbol == "main":
            raise Diagnostic(f"function '{self.name}' would be the C symbol 'main' under the C "
                             "API; give the symbols a prefix (--symbol-prefix P exports "
                             "'Pmain'), or the function another name or a \"global_symbol\" "
                             "attribute", span)
        params: list[Var] = []
        buffers: list[tuple[Var, Buffer, Var]] = []
        for p in f.params:
            buf = f.buffer_of(p)
            if buf is None:
                _scalar_ok(p.dtype, f"parameter '{p.name}'", f"function '{self.name}'", p.span or span)
                self.bound.add(id(p))
                params.append(p)
            else:
                ptr = Var(buf.name, HANDLE, PointerType(buf.dtype), buf.span)
                buffers.append((p, buf, ptr))
                params.append(ptr)
        extra: list[Var] = []
        for _, buf, _ in buffers:
            for s in buf.shape:
                for v in _vars(s):
                    if id(v) not in self.bound:
                        extra.append(self.size_param(v))
            for k, s in enumerate(buf.strides):
                if isinstance(s, Var) and id(s) not in self.bound:
                    compact: PrimExpr = IntImm(INT64, 1)
                    for t in buf.shape[k + 1:]:
                        compact = mul(compact, wide(t))
                    ok = fits(compact, s.dtype)
                    if ok is not None:
                        self.checks.append((ok, "ValueError", f"stride '{s.name}' of '{buf.name}' "
                                            f"of {self.symbol} does not fit {s.dtype}"))
                    self.bind(s, cast(s.dtype, compact))
            eo = buf.elem_offset
            if isinstance(eo, Var) and id(eo) not in self.bound:
                self.bind(eo, IntImm(eo.dtype, 0))
        for _, buf, ptr in buffers:
            ok = not_null(ptr)
            empty = empty_condition(buf)
            if isinstance(empty, IntImm):
                continue
            if empty is not None:
                ok = binop("or", empty, ok)
            self.checks.append((ok, "ValueError",
                                f"argument '{buf.name}' of {self.symbol} is a NULL pointer"))
        for _, buf, _ in buffers:
            for e in (*buf.shape, *buf.strides):
                for v in _vars(e):
                    if id(v) not in self.bound:
                        raise Diagnostic(f"cannot determine '{v.name}' in the shape of "
                                         f"'{buf.name}' of function '{self.name}'", span)
        params += extra
        body, out = self.body(params)
        if out is not None:
            params.append(out)
        for _, buf, ptr in reversed(buffers):
            body = DeclBuffer(buf, body, buf.span)
            body = LetStmt(buf.data, ptr, body, span, form="let")
        for p, buf, ptr in reversed(buffers):
            if any(node is p for node in walk(f.body)):
                body = LetStmt(p, ptr, body, span, form="let")
        for cond, kind, msg in reversed(self.checks):
            body = AssertStmt(cond, kind, (msg,), body, span)
        for var, value in reversed(self.lets):
            body = LetStmt(var, value, body, span, form="let")
        attrs = {**f.attrs, C_API: True}  # the symbol: "global_symbol", else the name
        if self.prefix:
            attrs.update({GLOBAL_SYMBOL: self.symbol, SYMBOL_PREFIX: self.prefix})
        return replace(f, params=tuple(params), body=body, ret_type=INT32, buffer_map=(),
                       attrs=attrs)

    def bind(self, var: Var, value: PrimExpr) -> None:
        self.lets.append((var, value))
        self.bound.add(id(var))

    def size_param(self, v: Var) -> Var:
        """An extra int64 parameter for the size variable ``v``, checked non-negative and
        within ``v``'s type before it is narrowed to it."""
        self.bound.add(id(v))
        if v.dtype == INT64:
            param = v
        else:
            param = Var(v.name, INT64, None, v.span)
            self.lets.append((v, cast(v.dtype, param)))
        self.checks.append((binop("ge", param, IntImm(INT64, 0)), "ValueError",
                            f"size '{v.name}' of {self.symbol} is negative"))
        hi = dtype_range(v.dtype)[1]
        if hi < dtype_range(INT64)[1]:
            self.checks.append((binop("le", param, IntImm(INT64, hi)), "ValueError",
                                f"size '{v.name}' of {self.symbol} is larger than {hi}, the "
                                f"largest {v.dtype}"))
        return param

    def body(self, params: list[Var]) -> tuple[Stmt, Var | None]:
        f = self.func
        ret = f.ret_type
        if ret is None or ret.is_void:
            return seq([f.body, Return(i32(0), f.span)], f.span), None
        _scalar_ok(ret, "a return value", f"function '{self.name}'", f.span)
        taken = {p.name for p in params}
        name = "out"
        while name in taken:
            name += "_"
        out = Var(name, HANDLE, PointerType(ret), f.span)
        out_buf = Buffer(f"{name}_buf", out, ret, (i32(1),), span=f.span)
        body = _Returns(out_buf).visit(f.body)
        if not ends_with_return(body):
            body = seq([body, Return(i32(0), f.span)], f.span)
        self.checks.append((not_null(out), "ValueError",
                            f"the result pointer '{name}' of {self.symbol} is NULL"))
        return DeclBuffer(out_buf, body, f.span), out


def _vars(e: PrimExpr) -> list[Var]:
    seen: list[Var] = []
    for node in walk(e):
        if isinstance(node, Var) and all(node is not s for s in seen):
            seen.append(node)
    return seen


class _Returns(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def __init__(self, out_buf: Buffer):
        self.out_buf = out_buf

    def visit_Return(self, r: Return) -> Stmt:
        store = BufferStore(self.out_buf, cast(self.out_buf.dtype, r.value), (i32(0),), r.span)
        return seq([store, Return(i32(0), r.span)])

    def visit_SeqStmt(self, s: SeqStmt):
        new = (yield from self.descend(s))
        return new if new is s else seq(new.stmts, s.span)
