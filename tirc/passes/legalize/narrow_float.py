"""Shared machinery of BF16StorageLegalize and FP8StorageLegalize: narrow float formats
(bfloat16, float8_*) computed in float32 and stored as unsigned integers.

Not a pass itself. Each pass supplies a :class:`Format` per dtype it handles (the storage
integer and the conversion recipes) and a rule saying which targets handle the formats
natively; :func:`legalize_module` then rewrites every other function in two phases:

1. compute legalize (:class:`_Promote`): arithmetic, comparisons and math intrinsics on
   narrow values are done in float32. As in TVM, results of *implicit* intermediate
   operations stay in float32 (``A[i] + B[i] + C[i]`` rounds once, at the store); an
   explicit ``T.Cast`` to the narrow type still rounds.
2. storage legalize (:class:`_Store`): buffers, pointer variables, scalar variables,
   parameters and the return type of narrow dtype become the storage integer (lanes
   kept); a float32-to-narrow cast becomes the encode recipe, narrow-to-float32 the
   decode recipe; narrow constants become their integer encodings; ``T.reinterpret``
   to or from the narrow type becomes a no-op or a reinterpret of the integer.

The recipes (:mod:`tirc.passes.legalize.narrow_float_ops`) are built from integer, bitwise,
shift, ``Select`` and ``T.reinterpret`` operations, so no code generator needs to know
the narrow formats; values used more than once are bound with expression-level
``T.Let``, so a guarded load is never hoisted out of its guard.
"""
from __future__ import annotations

from dataclasses import fields, replace
from typing import Callable

from tirc.diagnostics import Diagnostic
from tirc.ir import describe
from tirc.ir.attrs import TARGET
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import FLOAT32, DataType
from tirc.ir.expr import (ARITH_OPS, COMPARE_OPS, BinOp, Broadcast, Call, Cast, FloatImm,
                          GlobalVar, IntImm, Let, PointerType, PrimExpr, Select, Var)
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.visitor import NODE_TYPES, Mutator, child_fields, push_reversed, walk
from tirc.passes.legalize.narrow_float_ops import Format
from tirc.target.kinds import Target

# Intrinsics computed in float32 when applied to narrow values (result dtype = argument's).
_MATH = frozenset({"exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                   "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
                   "asinh", "acosh", "atanh", "erf", "sigmoid", "floor", "ceil", "round",
                   "trunc", "nearbyint", "fabs", "abs", "pow", "atan2", "hypot", "copysign",
                   "nextafter", "fmod", "fma", "if_then_else"})
_PREDICATES = frozenset({"isnan", "isinf", "isfinite"})


def legalize_module(mod: IRModule, formats: dict[str, Format], native: Callable[[Target], bool],
                    pass_name: str, unsupported: tuple[str, ...] = ()) -> IRModule:
    """Rewrite every function whose target is not ``native`` for ``formats``."""
    new: dict[str, PrimFunc] = {}
    legalized: set[str] = set()
    _forget_others(mod)
    for name, func in mod.functions.items():
        target = func.attrs.get(TARGET)
        if not isinstance(target, Target):
            raise Diagnostic(f"function '{name}' has no target; BindTarget must run before "
                             f"{pass_name}", func.span)
        if native(target) or not _mentions(func, formats, unsupported):
            new[name] = func
            continue
        _check_supported(func, unsupported, pass_name, target)
        body = _Promote(formats).visit(func.body)
        new[name] = _Store(formats).function(func, body)
        legalized.add(name)
    if not legalized:
        return mod
    _check_calls(mod, new, legalized, formats, pass_name)
    record = mod.facts
    for name in legalized:  # a kernel's parameters now hold the storage type
        if record.kernel(name) is not None:
            record = record.with_kernel_params(name, describe.params(new[name]))
    return replace(mod, functions=new, facts=record)


def _dtypes(func: PrimFunc):
    """Every dtype a function mentions (params, buffers, pointers, expressions)."""
    for p in func.params:
        yield p.dtype, p.span
        if p.ptr is not None:
            yield p.ptr.dtype, p.span
    for _, b in func.buffer_map:
        yield b.dtype, b.span
    if func.ret_type is not None:
        yield func.ret_type, func.span
    for node in walk(func.body):
        dt = getattr(node, "dtype", None)
        if isinstance(dt, DataType):
            yield dt, getattr(node, "span", None)
        for b in (getattr(node, "buffer", None),):
            if isinstance(b, Buffer):
                yield b.dtype, b.span or getattr(node, "span", None)


_BASES: dict[int, tuple[PrimFunc, frozenset[str]]] = {}  # id(func) -> (func, dtype bases)


def _forget_others(mod: IRModule) -> None:
    """Keep only the entries of ``mod``'s functions: the cache holds one module, whatever
    its size (a fixed bound made the second pass rescan modules of thousands of
    functions)."""
    live = {id(f) for f in mod.functions.values()}
    for key in [k for k in _BASES if k not in live]:
        del _BASES[key]


def _bases(func: PrimFunc) -> frozenset[str]:
    """The dtype bases ``func`` mentions, remembered for the next legalization pass (BF16
    and FP8 run back to back over the same, mostly untouched, functions)."""
    hit = _BASES.get(id(func))
    if hit is not None and hit[0] is func:
        return hit[1]
    bases = _scan_bases(func)
    _BASES[id(func)] = (func, bases)
    return bases


def _scan_bases(func: PrimFunc) -> frozenset[str]:
    """The bases of the dtypes :func:`_dtypes` yields, without its generator and spans:
    the nodes :func:`walk` gives, in a loop of its own (order does not matter here) that
    reads each class's fields by a plan made once per class (:func:`_scan_plan`)."""
    found: set[str] = set()
    add = found.add
    for p in func.params:
        for dt in (p.dtype, p.ptr.dtype if p.ptr is not None else None):
            if dt is not None:
                add(dt.base)
    for dt in [b.dtype for _, b in func.buffer_map] + [func.ret_type]:
        if dt is not None:
            add(dt.base)
    plans = _SCAN_PLANS
    stack = [func.body]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        cls = type(node)
        plan = plans.get(cls)
        if plan is None:
            plan = plans[cls] = _scan_plan(cls)
        has_dtype, has_buffer, names = plan
        if has_dtype:
            dt = node.dtype
            if isinstance(dt, DataType):
                add(dt.base)
        if has_buffer:
            b = node.buffer
            if isinstance(b, Buffer) and b.dtype is not None:
                add(b.dtype.base)
        for name in names:
            value = getattr(node, name)
            if isinstance(value, NODE_TYPES):
                push(value)
            elif isinstance(value, tuple):
                push_reversed(value, stack)  # the order does not matter here
    return frozenset(found)


_SCAN_PLANS: dict[type, tuple[bool, bool, tuple[str, ...]]] = {}


def _scan_plan(cls: type) -> tuple[bool, bool, tuple[str, ...]]:
    """For :func:`_scan_bases`: whether ``cls`` has a ``dtype`` (a field or a property),
    whether it has a ``buffer`` field, and the fields :func:`walk` descends into."""
    names = {f.name for f in fields(cls)}
    return ("dtype" in names or hasattr(cls, "dtype"), "buffer" in names, child_fields(cls))


def _mentions(func: PrimFunc, formats: dict[str, Format], unsupported: tuple[str, ...]) -> bool:
    bases = _bases(func)
    return any(f in bases for f in formats) or any(u in bases for u in unsupported)


def _check_supported(func: PrimFunc, unsupported: tuple[str, ...], pass_name: str,
                     target: Target) -> None:
    for dt, span in _dtypes(func):
        if dt is not None and dt.base in unsupported:
            raise Diagnostic(f"{dt.base} is not supported by {pass_name}: the target "
                             f"'{target.describe()}' has no native support for it and tirc "
                             "has no conversion for it", span or func.span)


def _signature_narrow(func: PrimFunc, formats: dict[str, Format]) -> bool:
    dts = [p.dtype for p in func.params] + [func.ret_type]
    return any(dt is not None and dt.base in formats for dt in dts)


def _check_calls(old: IRModule, new: dict[str, PrimFunc], legalized: set[str],
                 formats: dict[str, Format], pass_name: str) -> None:
    """A call between a legalized and an untouched function cannot pass narrow scalars:
    one side would hold the integer, the other the float."""
    for name, func in old.functions.items():
        for node in walk(func.body):
            if isinstance(node, Call) and isinstance(node.op, GlobalVar) \
                    and node.op.name in old.functions:
                callee = node.op.name
                if (name in legalized) != (callee in legalized) and \
                        _signature_narrow(old.functions[callee], formats):
                    raise Diagnostic(
                        f"'{name}' calls '{callee}' with narrow float arguments or result, but "
                        f"{pass_name} legalizes only one of the two for its target; give both "
                        "the same kind of target", node.span or func.span)


class _Promote(Mutator):
    """Phase 1: arithmetic on narrow values is done in float32."""

    def __init__(self, formats: dict[str, Format]):
        self.formats = formats

    def narrow(self, dt: DataType) -> Format | None:
        return self.formats.get(dt.base)

    def f32(self, e: PrimExpr) -> PrimExpr:
        """The float32 value of the narrow expression ``e``."""
        f32 = FLOAT32.with_lanes_of(e.dtype)
        if isinstance(e, BinOp) and e.op in ARITH_OPS:
            return BinOp(e.op, self.f32(e.a), self.f32(e.b), f32, e.span)
        if isinstance(e, Select):
            return Select(self.visit(e.condition), self.f32(e.true_value),
                          self.f32(e.false_value), e.span)
        if isinstance(e, Call) and e.op in _MATH:
            args = [self.f32(a) if a.dtype == e.dtype else self.visit(a) for a in e.args]
            return Call(f32, e.op, tuple(args), e.span)
        if isinstance(e, Let):
            return Let(e.var, self.visit(e.value), self.f32(e.body), e.span)
        if isinstance(e, Broadcast):
            return Broadcast(self.f32(e.value), e.lanes, e.span, e.scalable)
        if isinstance(e, FloatImm):
            return FloatImm(f32, self.narrow(e.dtype).round_const(e.value), e.span)
        if isinstance(e, Cast) and e.value.dtype == e.dtype:
            return self.f32(e.value)
        return Cast(f32, self.visit(e), e.span)

    def visit_BinOp(self, e: BinOp):
        if self.narrow(e.dtype) and e.op in ARITH_OPS:
            return Cast(e.dtype, self.f32(e), e.span)
        if e.op in COMPARE_OPS and self.narrow(e.a.dtype):
            return BinOp(e.op, self.f32(e.a), self.f32(e.b), e.dtype, e.span)
        return self.generic_visit(e)

    def visit_Call(self, e: Call):
        if self.narrow(e.dtype) and e.op in _MATH:
            return Cast(e.dtype, self.f32(e), e.span)
        if e.op in _PREDICATES and self.narrow(e.args[0].dtype):
            return Call(e.dtype, e.op, (self.f32(e.args[0]),), e.span)
        return self.generic_visit(e)

    def visit_Cast(self, e: Cast):
        src = self.narrow(e.value.dtype)
        if src is not None and e.dtype == e.value.dtype:
            return self.visit(e.value)
        if src is not None and not self.narrow(e.dtype):
            value = self.f32(e.value)
            return value if value.dtype == e.dtype else Cast(e.dtype, value, e.span)
        return self.generic_visit(e)


class _Store(Mutator):
    """Phase 2: narrow values are held in their storage integers."""

    def __init__(self, formats: dict[str, Format]):
        self.formats = formats
        self.vars: dict[int, Var] = {}
        self.buffers: dict[int, Buffer] = {}

    def narrow(self, dt: DataType | None) -> Format | None:
        return self.formats.get(dt.base) if dt is not None else None

    def function(self, func: PrimFunc, body) -> PrimFunc:
        params = tuple(self.visit_Var(p) for p in func.params)
        bmap = tuple((self.visit_Var(p), self.visit_buffer(b)) for p, b in func.buffer_map)
        body = self.visit(body)
        fmt = self.narrow(func.ret_type)
        ret = fmt.storage_type(func.ret_type) if fmt else func.ret_type
        return replace(func, params=params, buffer_map=bmap, body=body, ret_type=ret)

    def visit_Var(self, v: Var) -> Var:
        if id(v) in self.vars:
            return self.vars[id(v)]
        fmt, pfmt = self.narrow(v.dtype), self.narrow(v.ptr.dtype if v.ptr else None)
        if fmt is None and pfmt is None:
            return v
        ptr = PointerType(pfmt.storage_type(v.ptr.dtype), v.ptr.scope) if pfmt else v.ptr
        new = Var(v.name, fmt.storage_type(v.dtype) if fmt else v.dtype, ptr, v.span)
        self.vars[id(v)] = new
        return new

    def visit_buffer(self, b: Buffer) -> Buffer:
        if id(b) in self.buffers:
            return self.buffers[id(b)]
        fmt = self.narrow(b.dtype)
        data = self.visit_Var(b.data)
        new = b
        if fmt is not None or data is not b.data:
            new = replace(b, data=data, dtype=fmt.storage_type(b.dtype) if fmt else b.dtype)
        self.buffers[id(b)] = new
        return new

    def visit_BufferLoad(self, e):
        e = self.generic_visit(e)
        fmt = self.narrow(e.dtype)
        return replace(e, dtype=fmt.storage_type(e.dtype)) if fmt else e

    def visit_FloatImm(self, e: FloatImm):
        fmt = self.narrow(e.dtype)
        return IntImm(fmt.storage_type(e.dtype), fmt.encode_const(e.value), e.span) if fmt else e

    def visit_Cast(self, e: Cast):
        src, dst = self.narrow(e.value.dtype), self.narrow(e.dtype)
        if src is None and dst is None:
            return self.generic_visit(e)
        value = self.visit(e.value)
        if src is not None:
            value = src.decode_ir(value)
        if dst is None:
            return value if value.dtype == e.dtype else Cast(e.dtype, value, e.span)
        if value.dtype != FLOAT32.with_lanes_of(e.dtype):
            value = Cast(FLOAT32.with_lanes_of(e.dtype), value, e.span)
        return dst.encode_ir(value)

    def visit_Call(self, e: Call):
        if e.op == "reinterpret" and (self.narrow(e.dtype) or self.narrow(e.args[0].dtype)):
            arg = self.visit(e.args[0])
            fmt = self.narrow(e.dtype)
            want = fmt.storage_type(e.dtype) if fmt else e.dtype
            return arg if arg.dtype == want else Call(want, "reinterpret", (arg,), e.span)
        e = self.generic_visit(e)
        fmt = self.narrow(e.dtype)
        return replace(e, dtype=fmt.storage_type(e.dtype)) if fmt else e

    def visit_BinOp(self, e: BinOp):
        e = self.generic_visit(e)
        fmt = self.narrow(e.dtype)
        return replace(e, dtype=fmt.storage_type(e.dtype)) if fmt else e
