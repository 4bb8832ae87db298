"""Calls in expressions: ``T.<intrinsic>(...)``, dtype constructors, ``Module.f(...)``.

Script constructs that only make sense as statements (``T.alloc_buffer``,
``T.launch_thread``, ...) evaluate to a :class:`Construct` the statement builder reads.
"""
from __future__ import annotations

import math
from dataclasses import field
from typing import TYPE_CHECKING, Any

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend import not_built
from tirc.frontend.arith import binary, cast_to
from tirc.frontend.values import (Arg, arity, no_kwargs, TileLayout, TName, check_float_range, check_int_range, describe,
                                  literal_expr)
from tirc.ir import ptx_ops
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import BOOL, DataType, HANDLE, MAX_LANES, VOID, is_dtype_name, parse_dtype
from tirc.ir.expr import (BinOp, Broadcast, Call, Cast, FloatImm, GlobalVar, IntImm, Let,
                          PointerType, PrimExpr, Ramp, Select, Shuffle, StringImm, Var)
from tirc.ir.ops import INTRINSICS, result_dtype
from tirc.records import record
from tirc.target.kinds import Target, TargetError, parse_target
from tirc.frontend.values import HandleType, Lambda
from tirc.ir.expr import Not

if TYPE_CHECKING:
    from tirc.frontend.exprs import ExprBuilder


# Constructs read by the statement builder, with the statement form they take.
STATEMENT_CONSTRUCTS = frozenset({
    "Buffer", "match_buffer", "alloc_buffer", "alloc_shared", "alloc_local", "decl_buffer",
    "allocate", "launch_thread", "env_thread", "attr", "func_attr", "bind", "evaluate",
    "LetStmt", "Assert", "grid", "serial", "parallel", "vectorized", "unroll",
    "thread_binding", "handle", "prim_func", "I.ir_module", "Ptr", "break_loop",
    "continue_loop", "sblock", "block", "init", "reads", "writes", "where", "sblock_attr",
    "block_attr", "sblock_alloc_buffer", "axis.spatial", "axis.reduce", "axis.scan",
    "axis.opaque", "axis.remap", "axis.S", "axis.R",
})

_BINARY_BUILDERS = {
    "min": "min", "max": "max", "Min": "min", "Max": "max", "floordiv": "floordiv",
    "floormod": "floormod", "FloorDiv": "floordiv", "FloorMod": "floormod",
    "truncdiv": "div", "Div": "div", "truncmod": "mod", "Mod": "mod",
    "shift_left": "shift_left", "shift_right": "shift_right", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "Add": "add", "Sub": "sub",
    "Mul": "mul", "EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge",
    "And": "and", "Or": "or", "LShift": "shift_left", "RShift": "shift_right",
    "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
}


@record
class Construct:
    """A statement-level script construct with its evaluated arguments."""

    name: str
    args: list[Arg]
    kwargs: dict[str, Arg]
    span: Span | None
    node: Any = field(default=None, repr=False)

    def with_name(self, name: str) -> "Construct":
        return Construct(name, self.args, self.kwargs, self.span, self.node)


@record(frozen=True)
class VarDecl:
    """``T.int32()`` / ``T.handle("float32", "shared")``: declares a variable."""

    dtype: DataType
    ptr: PointerType | None = None


def call(b: "ExprBuilder", func: object, args: list[Arg], kwargs: dict[str, Arg],
         span: Span | None, node: Any) -> object:
    if isinstance(func, tuple) and func and func[0] == "function":
        return module_call(b, func[1], args, kwargs, span)
    if isinstance(func, tuple) and func and func[0] == "view":
        return Construct("view", [(func[1], span), *args], kwargs, span, node)
    if not isinstance(func, TName):
        raise Diagnostic(f"{describe(func)} is not callable", span)
    name = func.name
    if name in STATEMENT_CONSTRUCTS:
        return Construct(name, args, kwargs, span, node)
    if name == "bool" or is_dtype_name(name):
        return dtype_call(b, parse_dtype(name), args, kwargs, span)
    if name in _BINARY_BUILDERS:
        no_kwargs(name, kwargs)
        arity(name, args, 2, 2, span)
        op = _BINARY_BUILDERS[name]
        a, c = (b.as_expr(v, s) if not isinstance(v, (int, float)) else v for v, s in args)
        if isinstance(a, (int, float)) and isinstance(c, (int, float)):
            a = literal_expr(a, args[0][1])
        result = binary(op, a, c, span, fold=not name[0].isupper())
        if not isinstance(result, PrimExpr):
            result = literal_expr(result, span)
        return result
    if name in ("Not", "BitwiseNot"):
        no_kwargs(name, kwargs)
        arity(name, args, 1, 1, span)
        e = b.as_expr(*args[0])
        if name == "Not":
            return Not(e, span)
        return make_call(b, "bitwise_not", [e], {}, span)
    builder = _BUILDERS.get(name)
    if builder is not None:
        return builder(b, name, args, kwargs, span)
    if name == "tvm_access_ptr" and len(args) > 1 and isinstance(args[1][0], Buffer):
        # TVM prints an allocation's data variable by its buffer's name:
        # T.tvm_access_ptr(..., A_shared, ...) means A_shared.data
        args = [args[0], (args[1][0].data, args[1][1]), *args[2:]]
    if name in INTRINSICS:
        raw = INTRINSICS[name].result in ("dtype", "dtype_last") or name == "call_ffi_kernel"
        exprs = args if raw else [b.as_expr(v, s) for v, s in args]
        result = make_call(b, name, exprs, kwargs, span)
        if ptx_ops.is_ptx(name):
            ptx_ops.decode(result)  # its arguments checked here, at the call
        return result
    if name in not_built.NAMES:
        raise Diagnostic(not_built.NAMES[name], span)
    raise Diagnostic(f"unknown name 'T.{name}'", span)


def make_call(b: "ExprBuilder", name: str, args: list, kwargs: dict[str, Arg], span: Span | None) -> Call:
    intr = INTRINSICS[name]
    if name == "call_ffi_kernel":
        return _ffi_kernel_call(b, args, kwargs, span)
    given = None  # dtype="...": the result type, where TVM's Python API takes one
    if "dtype" in kwargs and name in _DTYPE_KWARG:
        given = b.dtype_of(*kwargs["dtype"])
        if _DTYPE_KWARG[name] is not None and given != _DTYPE_KWARG[name]:
            raise Diagnostic(f"T.{name} returns {_DTYPE_KWARG[name]}, not {given}", kwargs["dtype"][1])
        kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
    no_kwargs(name, kwargs)
    arity(name, args, intr.min_args, intr.max_args, span)
    if intr.result == "dtype":
        dtype = b.dtype_of(args[0][0], args[0][1])
        rest = [b.as_expr(v, s) for v, s in args[1:]]
        if name in ("call_extern", "call_pure_extern") and not isinstance(rest[0], StringImm):
            raise Diagnostic(f"T.{name} needs the function name as a string", args[1][1])
        return Call(dtype, name, tuple(rest), span, ptr=_pointer_type(args[0][0]))
    if intr.result == "dtype_last":
        dtype = b.dtype_of(args[-1][0], args[-1][1])
        return Call(dtype, name, tuple(b.as_expr(v, s) for v, s in args[:-1]), span,
                    ptr=_pointer_type(args[-1][0]))
    exprs: list[PrimExpr] = list(args)
    if name == "if_then_else":
        cond = exprs[0]
        if not cond.dtype.element().is_bool:
            raise Diagnostic(f"T.if_then_else needs a bool condition, got {cond.dtype}", span)
        t, f = _match(exprs[1], exprs[2], span)
        exprs = [cond, t, f]
    elif intr.result == "arg0" and len(exprs) > 1:
        first = exprs[0]
        exprs = [first] + [cast_to(e, first.dtype, span) if isinstance(e, (IntImm, FloatImm)) else e
                           for e in exprs[1:]]
    dtype = given or result_dtype(intr, [e.dtype for e in exprs])
    return Call(dtype, name, tuple(exprs), span)


# Intrinsics that take TVM's ``dtype=`` keyword: the result type it must be (None: any, the
# type of the packed function's result)
_DTYPE_KWARG = {"tvm_stack_make_shape": HANDLE, "tvm_stack_make_array": HANDLE,
                **{n: None for n in ("call_packed", "call_cpacked", "tvm_call_packed",
                                     "tvm_call_cpacked")}}


def _pointer_type(v: object):
    """The pointer type of a call's dtype written ``T.handle("int64", "global").ty``."""
    return v.ptr if isinstance(v, HandleType) else None


def _ffi_kernel_call(b, args, kwargs, span) -> Call:
    """TVM's lowered kernel launch: ``T.call_ffi_kernel("k", args..., launch_params=[...],
    ret_ty="int32")``."""
    no_kwargs("call_ffi_kernel", kwargs, ("launch_params", "ret_ty"))
    arity("call_ffi_kernel", args, 1, None, span)
    exprs = tuple(b.as_expr(v, s) for v, s in args)
    dtype = b.dtype_of(*kwargs["ret_ty"]) if "ret_ty" in kwargs else parse_dtype("int32")
    options = []
    if "launch_params" in kwargs:
        params, pspan = kwargs["launch_params"]
        if not isinstance(params, (list, tuple)) or not all(isinstance(p, str) for p in params):
            raise Diagnostic("launch_params must be a list of strings", pspan)
        options.append(("launch_params", tuple(params)))
    return Call(dtype, "call_ffi_kernel", exprs, span, tuple(options))


def _match(a: PrimExpr, c: PrimExpr, span: Span | None) -> tuple[PrimExpr, PrimExpr]:
    if a.dtype == c.dtype:
        return a, c
    if isinstance(c, (IntImm, FloatImm)):
        return a, cast_to(c, a.dtype, span)
    if isinstance(a, (IntImm, FloatImm)):
        return cast_to(a, c.dtype, span), c
    raise Diagnostic(f"branches have different dtypes {a.dtype} and {c.dtype}", span)


def dtype_call(b: "ExprBuilder", dtype: DataType, args: list[Arg], kwargs: dict[str, Arg],
               span: Span | None) -> object:
    """``T.int32()`` declares; ``T.float32(1.5)`` is a literal; ``T.float32(x)`` casts."""
    no_kwargs(str(dtype), kwargs, ("is_size_var",))
    if not args:
        return VarDecl(dtype)
    arity(str(dtype), args, 1, 1, span)
    v, vspan = args[0]
    if isinstance(v, str) and dtype.is_float:
        special = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
        if v.lower() not in special:
            raise Diagnostic(f"invalid {dtype} literal '{v}'", vspan)
        return FloatImm(dtype, special[v.lower()], span)
    if isinstance(v, bool):
        return literal_expr(v, span, dtype)
    if isinstance(v, int):
        if dtype.is_integer:
            check_int_range(v, dtype, vspan)
        if dtype.lanes > 1:
            return Broadcast(literal_expr(v, span, dtype.element()), dtype.lanes, span, dtype.scalable)
        return literal_expr(v, span, dtype)
    if isinstance(v, float):
        if not dtype.is_float:
            raise Diagnostic(f"float literal {v!r} where {dtype} is expected", vspan)
        check_float_range(v, dtype, vspan)
        if dtype.lanes > 1:
            return Broadcast(FloatImm(dtype.element(), v, span), dtype.lanes, span, dtype.scalable)
        return FloatImm(dtype, v, span)
    e = b.as_expr(v, vspan)
    if e.dtype == dtype:
        return e
    return Cast(dtype, e, span)


def module_call(b: "ExprBuilder", fname: str, args: list[Arg], kwargs: dict[str, Arg],
                span: Span | None) -> Call:
    if kwargs:
        key, (_, kspan) = next(iter(kwargs.items()))
        raise Diagnostic(f"calls of module functions take no keyword arguments ('{key}')", kspan)
    ret, params = b.signatures[fname]
    values: list[object] = []
    for i, (v, s) in enumerate(args):
        if isinstance(v, Buffer):
            values.append(v)
            continue
        hint = params[i] if i < len(params) and isinstance(params[i], DataType) else None
        values.append(b.as_expr(v, s, hint))
    return Call(ret if ret is not None else VOID, GlobalVar(fname), tuple(values), span)


def _cast(b, name, args, kwargs, span):
    no_kwargs(name, kwargs)
    arity(name, args, 2, 2, span)
    if name == "Cast":  # T.Cast("float32", x)
        (dt, dspan), (v, vspan) = args
    else:  # T.cast(x, "float32")
        (v, vspan), (dt, dspan) = args
    dtype = b.dtype_of(dt, dspan)
    e = b.as_expr(v, vspan)
    return Cast(dtype, e, span)


def _select(b, name, args, kwargs, span):
    no_kwargs(name, kwargs)
    arity(name, args, 3, 3, span)
    cond, t, f = (b.as_expr(v, s) for v, s in args)
    if not cond.dtype.element().is_bool:
        raise Diagnostic(f"T.Select needs a bool condition, got {cond.dtype}", args[0][1])
    t, f = _match(t, f, span)
    return Select(cond, t, f, span)


def scalable_lanes(e: object) -> int | None:
    """``k`` when ``e`` is ``T.vscale() * k`` (or ``k * T.vscale()``), the lanes of a
    scalable vector as TVM writes them; else None."""
    if not (isinstance(e, BinOp) and e.op == "mul"):
        return None
    for a, k in ((e.a, e.b), (e.b, e.a)):
        if isinstance(a, Cast):
            a = a.value
        if isinstance(a, Call) and a.op == "vscale" and isinstance(k, IntImm):
            return k.value
    return None


def _lanes(v: object, span: Span | None) -> tuple[int, bool]:
    """A vector's lanes: a constant, or ``T.vscale() * k`` (scalable, at least 2)."""
    k = scalable_lanes(v)
    if k is not None:
        if k < 2:
            raise Diagnostic(f"a scalable vector of T.vscale() * {k} lanes is not supported "
                             "(at least T.vscale() * 2)", span)
        check_lanes(k, span)
        return k, True
    if isinstance(v, IntImm):
        v = v.value
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise Diagnostic("lanes must be a positive integer constant or T.vscale() * k", span)
    check_lanes(v, span)
    return v, False


def check_lanes(lanes: int, span: Span | None, what: str = "a vector") -> None:
    if lanes > MAX_LANES:
        raise Diagnostic(f"{what} of {lanes} lanes: a vector has at most {MAX_LANES} (a TVM "
                         "dtype holds its lanes in 16 bits); copy with a loop", span)


def _ramp(b, name, args, kwargs, span):
    no_kwargs(name, kwargs)
    arity(name, args, 3, 3, span)
    base = b.as_expr(args[0][0], args[0][1])
    stride = b.as_expr(args[1][0], args[1][1], base.dtype)
    lanes, scalable = _lanes(*args[2])
    return Ramp(base, cast_to(stride, base.dtype, span), lanes, span, scalable)


def _broadcast(b, name, args, kwargs, span):
    no_kwargs(name, kwargs)
    arity(name, args, 2, 2, span)
    lanes, scalable = _lanes(*args[1])
    return Broadcast(b.as_expr(*args[0]), lanes, span, scalable)


def _shuffle(b, name, args, kwargs, span):
    no_kwargs(name, kwargs)
    arity(name, args, 2, 2, span)
    (vectors, vspan), (indices, ispan) = args
    if not isinstance(vectors, (list, tuple)) or not vectors:
        raise Diagnostic("T.Shuffle needs a list of vectors", vspan)
    if not isinstance(indices, (list, tuple)) or not indices:
        raise Diagnostic("T.Shuffle needs a list of lane indices", ispan)
    vecs = tuple(b.as_expr(v, vspan) for v in vectors)
    base = vecs[0].dtype.element()
    if any(v.dtype.element() != base for v in vecs):
        raise Diagnostic("T.Shuffle vectors must share one element type", vspan)
    total = sum(v.dtype.lanes for v in vecs)
    idx = []
    for i in indices:
        e = b.as_expr(i, ispan)
        if isinstance(e, IntImm) and not 0 <= e.value < total:
            raise Diagnostic(f"lane index {e.value} out of range for {total} lanes", ispan)
        idx.append(e)
    return Shuffle(vecs, tuple(idx), span)


def _abs(b, name, args, kwargs, span):
    no_kwargs(name, kwargs)
    arity(name, args, 1, 1, span)
    e = b.as_expr(*args[0])
    # as TVM expands it: fabs for floats, the value itself for unsigned integers,
    # Select(x >= 0, x, 0 - x) for signed ones (the backends know no "abs")
    if e.dtype.lanes == 1 and e.dtype.is_float:
        return Call(e.dtype, "fabs", (e,), span)
    if e.dtype.lanes == 1 and (e.dtype.is_uint or e.dtype.is_bool):
        return e
    if e.dtype.lanes == 1 and e.dtype.is_int:
        zero = IntImm(e.dtype, 0, span)
        return Select(BinOp("ge", e, zero, BOOL, span), e, BinOp("sub", zero, e, e.dtype, span), span)
    return Call(e.dtype, "abs", (e,), span)


def _limit(b, name, args, kwargs, span):
    no_kwargs(name, kwargs)
    arity(name, args, 1, 1, span)
    dtype = b.dtype_of(*args[0])
    return Call(dtype, name, (StringImm(str(dtype), span),), span)


def _target(b, name, args, kwargs, span):
    no_kwargs(name, kwargs, ("host",))
    arity(name, args, 1, 1, span)
    spec, sspan = args[0]
    host = kwargs.get("host", (None, None))
    try:
        return parse_target(_plain(spec, sspan), _plain(host[0], host[1]) if host[0] is not None else None)
    except TargetError as e:
        raise Diagnostic(f"invalid target: {e}", sspan) from None


def _tile_layout(b, name, args, kwargs, span):
    """``T.TileLayout(T.S[shape:strides])``: the layout (see ``values.TileLayout``)."""
    no_kwargs(name, kwargs)
    arity(name, args, 1, 1, span)
    layout, lspan = args[0]
    if not isinstance(layout, TileLayout):
        raise Diagnostic("T.TileLayout takes T.S[shape:strides]; tirc reads no other layout", lspan)
    return layout


def _plain(v: object, span: Span | None) -> object:
    """A JSON-like Python value from an evaluated script value (for targets)."""
    if isinstance(v, (str, bool, int, float)) or v is None:
        return v
    if isinstance(v, Target):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x, span) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x, span) for k, x in v.items()}
    if isinstance(v, IntImm):
        return bool(v.value) if v.dtype == BOOL else v.value
    if isinstance(v, FloatImm):
        return v.value
    if isinstance(v, StringImm):
        return v.value
    raise Diagnostic(f"expected a constant, got {describe(v)}", span)


def _let(b, name, args, kwargs, span):
    """``T.Let(body, where={v: value})``: ``v`` (declared with ``v = T.uint32()``) is
    bound to ``value`` in ``body``; several entries nest, the first outermost."""
    no_kwargs(name, kwargs, ("where",))
    arity(name, args, 1, 1, span)
    where, wspan = kwargs.get("where", (None, span))
    if not isinstance(where, dict) or not where or not all(isinstance(k, Var) for k in where):
        raise Diagnostic("T.Let needs where={var: value, ...}", wspan)
    body = b.as_expr(*args[0])
    for var, value in reversed(list(where.items())):
        body = Let(var, cast_to(b.as_expr(value, wspan), var.dtype, wspan), body, span)
    return body



def _comm_reducer(b, name, args, kwargs, span):
    """``T.comm_reducer(lambda x0, .., y0, ..: (r0, ..), [id0, ..])``: the lambda's first
    half of parameters are the left values, the second half the right ones, each typed
    like its identity element."""
    from tirc.ir.reducer import CommReducer
    no_kwargs(name, kwargs)
    arity(name, args, 2, 2, span)
    (fn, fspan), (ids, ispan) = args
    if not isinstance(fn, Lambda):
        raise Diagnostic("T.comm_reducer needs a lambda as its combiner", fspan)
    if not isinstance(ids, (list, tuple)) or not ids:
        raise Diagnostic("T.comm_reducer needs a list of identity elements", ispan)
    identity = tuple(b.as_expr(v, ispan) for v in ids)
    n = len(identity)
    if len(fn.params) != 2 * n:
        raise Diagnostic(f"the combiner of a reducer of {n} value(s) takes {2 * n} parameters, "
                         f"not {len(fn.params)}", fspan)
    lhs = tuple(Var(p, e.dtype, span=fspan) for p, e in zip(fn.params[:n], identity))
    rhs = tuple(Var(p, e.dtype, span=fspan) for p, e in zip(fn.params[n:], identity))
    out = b.apply_lambda(fn, [*lhs, *rhs])
    results = tuple(out) if isinstance(out, (list, tuple)) else (out,)
    if len(results) != n:
        raise Diagnostic(f"the combiner gives {len(results)} value(s) for {n} identities", fspan)
    result = []
    for r, ident in zip(results, identity):
        e = b.as_expr(r, fspan, ident.dtype)
        if e.dtype != ident.dtype:
            raise Diagnostic(f"the combiner gives {e.dtype} for an identity of {ident.dtype}", fspan)
        result.append(e)
    return CommReducer(lhs, rhs, tuple(result), identity, span)


_BUILDERS = {
    "Let": _let, "Cast": _cast, "cast": _cast, "Select": _select, "Ramp": _ramp, "ramp": _ramp,
    "Broadcast": _broadcast, "broadcast": _broadcast, "Shuffle": _shuffle, "abs": _abs, "max_value": _limit,
    "min_value": _limit, "infinity": _limit, "target": _target, "comm_reducer": _comm_reducer,
    "TileLayout": _tile_layout,
}
from tirc.frontend.masked import BUILDERS as _MASKED
_BUILDERS.update(_MASKED)
