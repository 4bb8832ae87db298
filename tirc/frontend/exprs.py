"""Expressions of the parse tree to values and IR expressions."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend import calls, not_built
from tirc.frontend.arith import binary, cast_to, difference, typed_binary
from tirc.frontend.scope import Scope
from tirc.frontend.values import (HandleType, Lambda, LetType, ModuleRef, Namespace, Slot,
                                  ThreadDecl, TileLayout, TName, describe, is_scalar_buffer,
                                  literal_expr, scalar_element)
from tirc.ir import ptx_ops
from tirc.ir.buffer import Buffer, access_dtype
from tirc.ir.dtype import DataType, INT32, is_dtype_name, parse_dtype
from tirc.nesting import MAX_EXPR_DEPTH
from tirc.ir.block import BufferRegion, Range
from tirc.ir.expr import BinOp, BufferLoad, FloatImm, IntImm, Not, PrimExpr, Ramp, Var
from tirc.syntax.tree import Token, Tree
from tirc.frontend.calls import check_lanes, scalable_lanes

_REGION_CONSTRUCTS = frozenset({"reads", "writes", "match_buffer"})

_BINARY_TOKENS = {
    "+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "floormod",
    "<<": "shift_left", ">>": "shift_right", "&": "bitwise_and", "|": "bitwise_or",
    "^": "bitwise_xor",
}
_COMPARE_TOKENS = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}


def unquote(token: str) -> str:
    """The value of a string literal, escapes decoded by hand (never evaluated)."""
    body = token[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "x" and i + 3 < len(body) + 0:
                try:
                    out.append(chr(int(body[i + 2:i + 4], 16)))
                    i += 4
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def subscript_items(subscripts) -> list:
    """The items of ``X[...]``; ``X[()]``, the element of a rank-0 buffer, has none."""
    items = [c for c in subscripts.children if c is not None]
    if (len(items) == 1 and isinstance(items[0], Tree) and items[0].data == "tuple_lit"
            and not items[0].children):
        return []
    return items


class ExprBuilder:
    """Evaluates expression subtrees. Subclasses provide ``filename`` and ``scope``."""

    filename: str
    scope: Scope
    module_name: str | None
    signatures: dict[str, Any]

    def __init__(self) -> None:
        self._depth = 0
        self.pending_views: list[Buffer] = []
        self.region_count = 0

    # -- locations -------------------------------------------------------------------
    def span(self, node: Tree | Token | None) -> Span | None:
        if node is None:
            return None
        if isinstance(node, Token):
            if node.line is None:
                return None
            return Span(self.filename, node.line, node.column, node.end_line, node.end_column)
        meta = node.meta
        if getattr(meta, "empty", True):
            return None
        return Span(self.filename, meta.line, meta.column, meta.end_line, meta.end_column)

    # -- evaluation ------------------------------------------------------------------
    def value(self, node: Tree | Token) -> object:
        """Evaluate an expression subtree to a value (see :mod:`tirc.frontend.values`)."""
        self._depth += 1
        try:
            if self._depth > MAX_EXPR_DEPTH:
                raise self._too_deep(node)
            if isinstance(node, Token):
                return self._name(str(node), self.span(node))
            handler = getattr(self, "_x_" + node.data, None)
            if handler is None:
                raise Diagnostic(f"unexpected {node.data.replace('_', ' ')} here", self.span(node))
            return handler(node, self.span(node))
        finally:
            self._depth -= 1

    def _too_deep(self, node) -> Diagnostic:
        return Diagnostic(f"expression nested more than {MAX_EXPR_DEPTH} levels deep (each "
                          "operator of a chain is a level)", self.span(node))

    @contextmanager
    def _chain(self, node, operators: int):
        """The operands of a chain of ``operators`` operators: as deep in the IR as
        ``operators`` levels (the first is one, counted by :meth:`value`)."""
        self._depth += operators - 1
        try:
            if self._depth > MAX_EXPR_DEPTH:
                raise self._too_deep(node)
            yield
        finally:
            self._depth -= operators - 1

    def expr(self, node: Tree | Token, dtype: DataType | None = None) -> PrimExpr:
        """Evaluate to an IR expression (typing bare literals with ``dtype`` if given)."""
        return self.as_expr(self.value(node), self.span(node), dtype)

    def as_expr(self, v: object, span: Span | None, dtype: DataType | None = None) -> PrimExpr:
        if isinstance(v, Slot):
            return scalar_element(v.buffer, span)
        if is_scalar_buffer(v):
            return scalar_element(v, span)
        if isinstance(v, PrimExpr):
            return v
        if isinstance(v, (bool, int, float)) or (isinstance(v, str) and dtype is None):
            return literal_expr(v, span, dtype)
        raise Diagnostic(f"expected an expression, got {describe(v)}", span)

    def _name(self, name: str, span: Span | None) -> object:
        found = self.scope.lookup(name)
        if found is not None:
            if isinstance(found, ThreadDecl):
                return found.var
            return found
        if name == "T":
            return Namespace("T")
        if name == "I":
            return Namespace("I")
        if self.module_name is not None and name == self.module_name:
            return ModuleRef(name)
        implicit = self.implicit_name(name, span)
        if implicit is not None:
            return implicit
        raise Diagnostic(f"undefined name '{name}'", span)

    def implicit_name(self, name: str, span: Span | None) -> object | None:
        """A name defined by context rather than by a statement (module-level TypeVars)."""
        return None

    def _x_name(self, node, span):
        return self._name(str(node.children[0]), span)

    def _x_int_lit(self, node, span):
        text = str(node.children[0]).lower()
        if text.startswith("0x"):
            return int(text, 16)
        if text.startswith("0b"):
            return int(text, 2)
        if text.startswith("0o"):
            return int(text, 8)
        return int(text, 10)

    def _x_float_lit(self, node, span):
        return float(str(node.children[0]))

    def _x_string_lit(self, node, span):
        return "".join(unquote(str(t)) for t in node.children)

    def _x_true_lit(self, node, span):
        return True

    def _x_false_lit(self, node, span):
        return False

    def _x_none_lit(self, node, span):
        return None

    def _x_paren(self, node, span):
        return self.value(node.children[0])

    def _x_lambda_expr(self, node, span):
        params_t, body = node.children
        params = tuple(str(t) for t in params_t.children) if params_t is not None else ()
        if len(set(params)) != len(params):
            raise Diagnostic("a lambda parameter is named twice", span)
        return Lambda(params, body, span)

    def apply_lambda(self, fn: Lambda, args: list[Var]) -> object:
        """Evaluate ``fn``'s body with its parameters bound to ``args``."""
        self.scope.push()
        try:
            for name, var in zip(fn.params, args):
                self.scope.define(name, var)
            return self.value(fn.body)
        finally:
            self.scope.pop()

    def _x_tuple_lit(self, node, span):
        return tuple(self.value(c) for c in node.children if c is not None)

    def _x_list_lit(self, node, span):
        return [self.value(c) for c in node.children if c is not None]

    def _x_dict_lit(self, node, span):
        out: dict[Any, Any] = {}
        for item in node.children:
            if item is None:
                continue
            key = self.value(item.children[0])
            # Variables key the ``where=`` dict of ``T.Let(body, where={v: value})``.
            if not isinstance(key, (str, Var)):
                raise Diagnostic("dict keys must be strings", self.span(item.children[0]))
            out[key] = self.value(item.children[1])
        return out

    # -- operators ---------------------------------------------------------------------
    def _x_binary(self, node, span):
        children = node.children
        with self._chain(node, len(children) // 2):
            return self._binary_chain(children)

    def _binary_chain(self, children):
        acc = self.value(children[0])
        for i in range(1, len(children), 2):
            tok = str(children[i])
            rhs = self.value(children[i + 1])
            op_span = self.span(children[i])
            if tok == "/":
                acc = self._true_div(acc, rhs, op_span)
            else:
                acc = binary(_BINARY_TOKENS[tok], self._operand(acc), self._operand(rhs), op_span)
        return acc

    def _operand(self, v: object) -> object:
        if isinstance(v, Slot):
            return self.as_expr(v, None)
        return v

    def _true_div(self, a: object, b: object, span: Span | None) -> object:
        a, b = self._operand(a), self._operand(b)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, PrimExpr):
            if b == 0:
                raise Diagnostic("division by zero", span)
            return a / b
        result = binary("div", a, b, span)
        if isinstance(result, BinOp) and not result.dtype.element().is_float:
            raise Diagnostic("'/' on integers is ambiguous; use '//' (floor division) or "
                             "T.truncdiv", span)
        return result

    def _x_compare(self, node, span):
        children = node.children
        if len(children) > 3:
            raise Diagnostic("chained comparisons are not supported; use 'and'", span)
        a, b = self._operand(self.value(children[0])), self._operand(self.value(children[2]))
        op_token = children[1].children[0]
        return binary(_COMPARE_TOKENS[str(op_token)], a, b, self.span(op_token))

    def _logic(self, op: str, node, span):
        with self._chain(node, len(node.children) - 1):
            values = [self.value(c) for c in node.children]
        acc = self._as_bool(values[0], self.span(node.children[0]))
        for c, v in zip(node.children[1:], values[1:]):
            acc = typed_binary(op, acc, self._as_bool(v, self.span(c)), span)
        return acc

    def _as_bool(self, v: object, span: Span | None) -> PrimExpr:
        e = self.as_expr(v, span)
        if not e.dtype.element().is_bool:
            raise Diagnostic(f"expected a bool condition, got {e.dtype}", span)
        return e

    def _x_or_expr(self, node, span):
        return self._logic("or", node, span)

    def _x_and_expr(self, node, span):
        return self._logic("and", node, span)

    def _x_not_expr(self, node, span):
        v = self.value(node.children[0])
        if isinstance(v, bool):
            return not v
        return Not(self._as_bool(v, self.span(node.children[0])), span)

    def _x_unary(self, node, span):
        tok = str(node.children[0])
        v = self._operand(self.value(node.children[1]))
        if tok == "+":
            if not isinstance(v, (int, float, PrimExpr)):
                raise Diagnostic(f"unary '+' needs an expression, not {describe(v)}", span)
            return v
        if tok == "-":
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v
            e = self.as_expr(v, span)
            if isinstance(e, IntImm) and e.dtype.is_int:
                return IntImm(e.dtype, -e.value, span)
            if isinstance(e, FloatImm):
                return FloatImm(e.dtype, -e.value, span)
            minus_one = (FloatImm(e.dtype.element(), -1.0, span) if e.dtype.element().is_float
                         else IntImm(e.dtype.element(), -1, span))
            return typed_binary("mul", e, cast_to(minus_one, e.dtype, span), span)
        # "~"
        if isinstance(v, int) and not isinstance(v, bool):
            return ~v
        e = self.as_expr(v, span)
        if not e.dtype.element().is_integer:
            raise Diagnostic(f"'~' needs an integer operand, got {e.dtype}", span)
        return calls.make_call(self, "bitwise_not", [e], {}, span)

    # -- attribute access, subscripts, calls -------------------------------------------
    def _x_getattr(self, node, span):
        obj = self.value(node.children[0])
        attr = str(node.children[1])
        if isinstance(obj, Namespace):
            return TName(attr) if obj.name == "T" else TName("I." + attr)
        if isinstance(obj, TName) and obj.name == "axis":
            return TName("axis." + attr)
        if isinstance(obj, TName) and obj.name in ptx_ops.NAMESPACES and ptx_ops.is_ptx(f"{obj.name}.{attr}"):
            return TName(f"{obj.name}.{attr}")
        if isinstance(obj, ModuleRef):
            if attr not in self.signatures:
                raise Diagnostic(f"module '{obj.name}' has no function '{attr}'", self.span(node.children[1]))
            return ("function", attr)
        if isinstance(obj, calls.Construct) and obj.name == "handle" and attr == "ty":
            return HandleType(self.pointer_var("", obj, span).ptr)
        if isinstance(obj, Buffer):
            if attr == "data":
                return obj.data
            if attr == "dtype":
                return str(obj.dtype)
            if attr == "shape":
                return tuple(obj.shape)
            if attr == "strides":
                return tuple(obj.strides)
            if attr == "elem_offset":
                # a buffer declared without an offset starts at element 0 (TVM's IntImm 0)
                if obj.elem_offset is not None:
                    return obj.elem_offset
                return IntImm(obj.shape[0].dtype if obj.shape else INT32, 0, span)
            if attr == "view":
                return ("view", obj)
        raise Diagnostic(f"{describe(obj)} has no attribute '{attr}'", self.span(node.children[1]))

    def _x_subscript(self, node, span):
        obj = self.value(node.children[0])
        items = subscript_items(node.children[1])
        if isinstance(obj, TName) and obj.name == "S":
            return self.tile_shard(items, span)
        if isinstance(obj, TName) and obj.name == "let":
            if len(items) != 1:
                raise Diagnostic("T.let[...] takes one dtype", span)
            item = self.value(items[0])
            if isinstance(item, calls.Construct) and item.name == "handle":
                return LetType(DataType("handle"), item)
            return LetType(self.dtype_of(item, self.span(items[0])))
        if isinstance(obj, tuple):
            if len(items) != 1:
                raise Diagnostic("a tuple takes one index", span)
            index = self.value(items[0])
            if not isinstance(index, int) or not -len(obj) <= index < len(obj):
                raise Diagnostic("tuple index out of range", self.span(items[0]))
            return obj[index]
        if isinstance(obj, Slot):
            raise Diagnostic(f"'{obj.buffer.name}' is a scalar and cannot be indexed", span)
        if not isinstance(obj, Buffer):
            raise Diagnostic(f"{describe(obj)} cannot be indexed", span)
        indices = tuple(self.index(item) for item in items)
        return self.load(obj, indices, span)

    def tile_shard(self, items, span) -> TileLayout:
        """``T.S[(8, 2):(2, 1)]``: a layout's shape and strides (constant integers)."""
        if len(items) != 1 or not (isinstance(items[0], Tree) and items[0].data == "slice"):
            raise Diagnostic("T.S[...] takes one 'shape:strides' item", span)
        start, stop, step = items[0].children
        parts = []
        for part in (start, stop):
            v = self.value(part) if part is not None else None
            v = (v,) if isinstance(v, int) else v
            if not isinstance(v, tuple) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
                raise Diagnostic("T.S[shape:strides] takes constant integers", span)
            parts.append(v)
        if step is not None or len(parts[0]) != len(parts[1]):
            raise Diagnostic("T.S[shape:strides] needs one stride per axis", span)
        return TileLayout(parts[0], parts[1], span)

    def index(self, item) -> PrimExpr:
        if isinstance(item, Tree) and item.data == "slice":
            start, stop, step = item.children
            span = self.span(item)
            if start is None or stop is None:
                raise Diagnostic("a slice index needs a start and a stop", span)
            a = self.expr(start)
            lanes_v = difference(self.expr(stop, a.dtype), a, span)
            step_v = self.value(step) if step is not None else 1
            k = scalable_lanes(lanes_v)
            if k is not None and step is None:  # A[b:b + T.vscale() * k]: scalable
                if k < 2:
                    raise Diagnostic("a scalable slice of T.vscale() * 1 elements is not supported", span)
                return Ramp(a, literal_expr(1, span, a.dtype), k, span, True)
            if isinstance(lanes_v, IntImm):
                lanes_v = lanes_v.value
            if not isinstance(lanes_v, int) or not isinstance(step_v, int) or step_v <= 0:
                raise Diagnostic("a slice index needs constant bounds and step", span)
            lanes = -(-lanes_v // step_v)
            if lanes < 1:
                raise Diagnostic("empty slice", span)
            check_lanes(lanes, span, "a slice")
            if lanes == 1:
                return a
            return Ramp(a, literal_expr(step_v, span, a.dtype), lanes, span)
        e = self.expr(item)
        if not e.dtype.element().is_integer:
            raise Diagnostic(f"buffer index must be an integer, got {e.dtype}", self.span(item))
        return e

    def load(self, buf: Buffer, indices: tuple[PrimExpr, ...], span: Span | None) -> BufferLoad:
        scalable = [i for i in indices if i.dtype.scalable]
        if scalable:  # A[T.Ramp(b, 1, T.vscale() * 4)]
            if len(scalable) != 1 or buf.dtype.lanes != 1 or any(
                    i.dtype.lanes != 1 for i in indices if not i.dtype.scalable):
                raise Diagnostic("a scalable vector index must be the only vector index of a "
                                 "buffer of scalars", span)
        return BufferLoad(buf, indices, access_dtype(buf, indices), span)

    def _x_call(self, node, span):
        func = self.value(node.children[0])
        module_call = isinstance(func, tuple) and func and func[0] == "function"
        if isinstance(func, TName) and func.name in _REGION_CONSTRUCTS:
            args, kwargs = self.arguments(node.children[1], buffer_regions=True)
        else:
            args, kwargs = self.arguments(node.children[1], regions=module_call)
        return calls.call(self, func, args, kwargs, span, node)

    def region_argument(self, tree) -> Buffer | None:
        """``A[0:64]`` (or ``A[i, 0:64]``) as an argument of a module call: a view of that
        region of ``A``, declared around the statement, passed by reference."""
        if not (isinstance(tree, Tree) and tree.data == "subscript"):
            return None
        items = [c for c in tree.children[1].children if c is not None]
        if not any(isinstance(i, Tree) and i.data == "slice" for i in items):
            return None
        base = self.value(tree.children[0])
        if not isinstance(base, Buffer):
            return None
        span = self.span(tree)
        if len(items) != len(base.shape):
            raise Diagnostic(f"buffer '{base.name}' has {len(base.shape)} dimensions but the "
                             f"region names {len(items)}", span)
        strides = list(base.strides) if base.strides else _row_major(base.shape)
        offset = base.elem_offset if base.elem_offset is not None else IntImm(strides[-1].dtype, 0, span)
        shape, kept = [], []
        for item, stride in zip(items, strides):
            if isinstance(item, Tree) and item.data == "slice":
                start_t, stop_t, step_t = item.children
                if step_t is not None:
                    raise Diagnostic("a region argument cannot have a step", self.span(item))
                start = self.expr(start_t) if start_t is not None else IntImm(stride.dtype, 0, span)
                stop = self.expr(stop_t) if stop_t is not None else None
                extent = difference(stop, start, span) if stop is not None else None
                if extent is None:
                    raise Diagnostic("a region argument needs explicit bounds", self.span(item))
                shape.append(extent)
                kept.append(stride)
            else:
                start = self.index(item)
            offset = _fold_add(offset, typed_binary("mul", start, cast_to(stride, start.dtype, span), span, True), span)
        self.region_count += 1
        view = Buffer(f"{base.name}_region_{self.region_count}", base.data, base.dtype, tuple(shape),
                      tuple(kept) if len(kept) > 1 or base.strides else (), offset, span=span)
        self.pending_views.append(view)
        return view

    def arguments(self, arglist, regions: bool = False, buffer_regions: bool = False) -> tuple[list[tuple[object, Span | None]], dict[str, tuple[object, Span | None]]]:
        args: list[tuple[object, Span | None]] = []
        kwargs: dict[str, tuple[object, Span | None]] = {}
        if arglist is None:
            return args, kwargs
        for a in arglist.children:
            if a is None:
                continue
            if isinstance(a, Tree) and a.data == "kwarg":
                key = str(a.children[0])
                if key in kwargs:
                    raise Diagnostic(f"keyword argument '{key}' given twice", self.span(a))
                kwargs[key] = (self.value(a.children[1]), self.span(a.children[1]))
            else:
                if kwargs:
                    raise Diagnostic("positional argument after keyword argument", self.span(a))
                view = self.region_argument(a) if regions else None
                if buffer_regions:
                    view = self._region_value(a)
                args.append((view if view is not None else self.value(a), self.span(a)))
        return args, kwargs

    def _region_value(self, tree) -> object | None:
        """An argument of T.reads/T.writes/T.match_buffer: regions stay regions, also
        inside a list (``T.reads([A[i, 0:16], B[i]])``)."""
        if isinstance(tree, Tree) and tree.data == "list_lit":
            return [self._region_value(c) or self.value(c) for c in tree.children if c is not None]
        return buffer_region(self, tree)

    # -- dtypes --------------------------------------------------------------------------
    def dtype_of(self, v: object, span: Span | None) -> DataType:
        """A dtype from ``"float32"``, ``T.float32`` or ``T.float32x4``."""
        if isinstance(v, str):
            name = v
        elif isinstance(v, TName):
            name = v.name
        elif isinstance(v, HandleType):
            name = "handle"
        else:
            raise Diagnostic(f"expected a dtype, got {describe(v)}", span)
        if name == "bool" or is_dtype_name(name):
            return parse_dtype(name)
        reason = not_built.dtype_reason(name)
        if reason is not None:
            raise Diagnostic(reason, span)
        raise Diagnostic(f"unknown dtype '{name}'", span)




def _row_major(shape) -> list[PrimExpr]:
    strides: list[PrimExpr] = []
    acc: PrimExpr = IntImm(shape[-1].dtype if shape else INT32, 1)
    for extent in reversed(shape):
        strides.append(acc)
        acc = typed_binary("mul", acc, cast_to(extent, acc.dtype, None), None, True)
    return list(reversed(strides))


def _fold_add(a: PrimExpr, b: PrimExpr, span) -> PrimExpr:
    if isinstance(b, IntImm) and b.value == 0:
        return a
    if isinstance(a, IntImm) and a.value == 0:
        return b
    return typed_binary("add", a, cast_to(b, a.dtype, span), span, True)


def buffer_region(b: "ExprBuilder", tree: Tree) -> BufferRegion | None:
    """``A[i, 0:16]`` read as a region (a plain index covers one element)."""
    if not (isinstance(tree, Tree) and tree.data == "subscript"):
        return None
    base = b.value(tree.children[0])
    if not isinstance(base, Buffer):
        return None
    span = b.span(tree)
    items = subscript_items(tree.children[1])
    if len(items) != len(base.shape):
        raise Diagnostic(f"buffer '{base.name}' has {len(base.shape)} dimensions but the region "
                         f"names {len(items)}", span)
    ranges = []
    for item, dim in zip(items, base.shape):
        ispan = b.span(item)
        if isinstance(item, Tree) and item.data == "slice":
            start_t, stop_t, step_t = item.children
            if step_t is not None:
                raise Diagnostic("a buffer region cannot have a step", ispan)
            start = b.expr(start_t) if start_t is not None else IntImm(dim.dtype, 0, ispan)
            stop = b.expr(stop_t, start.dtype) if stop_t is not None else dim
            ranges.append(Range(start, difference(stop, start, ispan), ispan))
        else:
            start = b.index(item)
            ranges.append(Range(start, IntImm(start.dtype, 1, ispan), ispan))
    return BufferRegion(base, tuple(ranges), span)
