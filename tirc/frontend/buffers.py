"""Buffer declarations: ``T.Buffer``, ``T.match_buffer``, ``T.alloc_buffer`` and kin."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.calls import Construct
from tirc.frontend.values import TileLayout, describe
from tirc.ir.buffer import STORAGE_RANKS, Buffer, constant_elements, dtype_view_of, is_storage_scope
from tirc.ir.dtype import FLOAT32, HANDLE, INT32, DataType
from tirc.ir.expr import IntImm, PointerType, PrimExpr, Var
from tirc.syntax.tree import Token, Tree

if TYPE_CHECKING:
    from tirc.frontend.builder import FunctionBuilder

# Positional parameters of each constructor, after any leading handle (match_buffer).
_SIGNATURES = {
    "Buffer": ("shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
               "offset_factor", "buffer_type", "axis_separators", "layout"),
    "match_buffer": ("shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                     "offset_factor", "buffer_type", "axis_separators", "layout"),
    "decl_buffer": ("shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                    "offset_factor", "buffer_type", "axis_separators", "layout"),
    "alloc_buffer": ("shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                     "offset_factor", "buffer_type", "axis_separators", "layout", "annotations"),
    "alloc_shared": ("shape", "dtype", "strides", "elem_offset", "align", "offset_factor", "layout",
                     "annotations"),
    "alloc_local": ("shape", "dtype", "strides", "elem_offset", "align", "offset_factor", "layout",
                    "annotations"),
    "allocate": ("extents", "dtype", "scope", "condition", "annotations"),
}
_FIXED_SCOPE = {"alloc_shared": "shared", "alloc_local": "local"}


def _check_scope(scope: str, span: Span | None) -> None:
    """A storage scope TVM knows (tirc builds only :data:`SCOPES`; the verifier says so)."""
    if not is_storage_scope(scope):
        raise Diagnostic(f"unknown storage scope '{scope}'; a scope is a storage rank ("
                         + ", ".join(STORAGE_RANKS) + ") with an optional tag, as 'local.L0A'",
                         span)


def bind_arguments(c: Construct, skip: int = 0) -> dict[str, tuple[object, Span | None]]:
    names = _SIGNATURES[c.name]
    args = c.args[skip:]
    if len(args) > len(names):
        raise Diagnostic(f"T.{c.name} takes at most {len(names) + skip} positional arguments", c.span)
    out = dict(zip(names, args))
    for key, val in c.kwargs.items():
        if key not in names:
            raise Diagnostic(f"T.{c.name} got an unexpected keyword argument '{key}'", val[1])
        if key in out:
            raise Diagnostic(f"T.{c.name} got two values for '{key}'", val[1])
        out[key] = val
    return out


def _shape(b: "FunctionBuilder", value: object, span: Span | None) -> tuple[PrimExpr, ...]:
    items = value if isinstance(value, (list, tuple)) else (value,)
    out: list[PrimExpr] = []
    for item in items:
        if isinstance(item, str):
            out.append(shape_string(b, item, span))
            continue
        if isinstance(item, bool) or item is None:
            raise Diagnostic(f"a shape holds integers, not {describe(item)}", span)
        e = b.as_expr(item, span)
        if not (e.dtype.is_integer and e.dtype.lanes == 1):
            raise Diagnostic(f"a shape holds integers, got {e.dtype}", span)
        if isinstance(e, IntImm) and e.value < 0:
            raise Diagnostic(f"negative extent {e.value} in shape", span)
        out.append(e)
    return tuple(out)


def _strides(b: "FunctionBuilder", value: object, span: Span | None) -> tuple[PrimExpr, ...]:
    """Strides; one written as a name defined nowhere (neither before nor by a
    ``name = T.int32()`` of the function) is a variable of this buffer alone
    (TVM's parser makes a fresh variable of each such string: two blocks' match_buffers
    both printed with ``strides=("C_s0", "C_s1")`` have strides of their own)."""
    items = value if isinstance(value, (list, tuple)) else (value,)
    out: list[PrimExpr] = []
    for item in items:
        if isinstance(item, str) and item.isidentifier() and b.scope.lookup(item) is None \
                and item not in b.typevars and item not in b.declared:
            out.append(Var(item, INT32, None, span))
        else:
            out.extend(_shape(b, item, span))
    return tuple(out)


def shape_string(b: "FunctionBuilder", text: str, span: Span | None) -> PrimExpr:
    """A shape entry written as a string: a name defines a size variable (``("n",)``); an
    expression (``("n * 8",)``, what TVM 0.27 prints when a parameter's shape uses a
    scalar parameter declared after it) defines each of its names not yet defined, then
    is read as an expression, as TVM's parser does."""
    if text.isidentifier():
        return b.shape_var(text, span)
    from tirc.syntax.read import parse_tree
    prefix = "_ = "
    try:
        tree = parse_tree(prefix + text + "\n", span.file if span else "<string>")
        stmts = [c for c in tree.children if isinstance(c, Tree)]
        if len(stmts) != 1 or stmts[0].data != "toplevel_assign":
            raise Diagnostic("not one expression", span)
    except Diagnostic:
        raise Diagnostic(f"invalid shape expression {text!r}", span) from None
    expr = stmts[0].children[1]
    if span is not None and "\n" not in text:
        _relocate(expr, span.line, span.col + 1 - len(prefix))  # past the opening quote
    objects = {id(t.children[0]) for t in expr.iter_subtrees() if t.data in ("getattr", "call")}
    for t in expr.iter_subtrees_topdown():
        if t.data == "name" and id(t) not in objects:
            name = str(t.children[0])
            if b.scope.lookup(name) is None and name not in ("T", "I"):
                b.shape_var(name, span)
    e = b.as_expr(b.value(expr), span)
    if not (e.dtype.is_integer and e.dtype.lanes == 1):
        raise Diagnostic(f"a shape holds integers, got {e.dtype}", span)
    return e


def _relocate(tree, line: int, col_offset: int) -> None:
    """Positions of a tree parsed from one line of a string literal, moved to where the
    literal stands in the file."""
    for t in tree.iter_subtrees():
        meta = t.meta
        if not getattr(meta, "empty", True):
            meta.line = meta.end_line = line
            meta.column += col_offset
            meta.end_column += col_offset
        for tok in t.children:
            if isinstance(tok, Token) and tok.line is not None:
                tok.line = tok.end_line = line
                tok.column += col_offset
                if tok.end_column is not None:
                    tok.end_column += col_offset


def _int(value: object, span: Span | None, what: str) -> int:
    if isinstance(value, IntImm):
        value = value.value
    if not isinstance(value, int) or isinstance(value, bool):
        raise Diagnostic(f"{what} must be an integer constant", span)
    return value


def make_buffer(b: "FunctionBuilder", name: str, c: Construct, span: Span | None,
                skip: int = 0) -> Buffer:
    """A buffer from ``T.Buffer(...)``-like arguments (``skip`` leading ones)."""
    a = bind_arguments(c, skip)
    if "shape" not in a:
        raise Diagnostic(f"T.{c.name} needs a shape", c.span)
    shape = _shape(b, *a["shape"])
    dtype = b.dtype_of(*a["dtype"]) if "dtype" in a else FLOAT32
    scope = _FIXED_SCOPE.get(c.name, "global")
    if "scope" in a:
        scope, sspan = a["scope"]
        if not isinstance(scope, str):
            raise Diagnostic("scope must be a string", sspan)
        _check_scope(scope, sspan)
    data_value = a.get("data", (None, None))
    if data_value[0] is not None:
        data = data_value[0]
        if not (isinstance(data, Var) and data.dtype == HANDLE):
            raise Diagnostic(f"'data' must be a handle variable, not {describe(data)}", data_value[1])
        if data.ptr is not None and "scope" not in a:
            scope = data.ptr.scope
    else:
        data = Var(name, HANDLE, PointerType(dtype, scope), span)
    strides: tuple[PrimExpr, ...] = ()
    if a.get("strides", (None, None))[0] is not None:
        strides = _strides(b, *a["strides"])
        if len(strides) != len(shape):
            raise Diagnostic(f"{len(strides)} strides for {len(shape)} dimensions", a["strides"][1])
    elem_offset = None
    if a.get("elem_offset", (None, None))[0] is not None:
        v, vspan = a["elem_offset"]
        elem_offset = b.shape_var(v, vspan) if isinstance(v, str) else b.as_expr(v, vspan, INT32)
    layout, lspan = a.get("layout", (None, None))
    if isinstance(layout, TileLayout):
        elements = constant_elements(shape)
        if elements is None or not layout.row_major_over(elements):
            raise Diagnostic(f"layout T.S[{layout.shape}:{layout.strides}] is not supported: tirc "
                             "lays buffers out in row-major order (a layout that is that order "
                             "is read)", lspan)
        del a["layout"]  # the row-major order: what a buffer without a layout has
    elif layout not in (None, (), []):
        raise Diagnostic("'layout' is not supported", lspan)
    if a.get("axis_separators", (None, None))[0] not in (None, (), []):
        raise Diagnostic("'axis_separators' is not supported", a["axis_separators"][1])
    layout_none = "layout" in a
    if a.get("buffer_type", ("", None))[0] not in ("", "default", None):
        raise Diagnostic("only the default buffer_type is supported", a["buffer_type"][1])
    align = _int(*a["align"], "align") if "align" in a else 0
    offset_factor = _int(*a["offset_factor"], "offset_factor") if "offset_factor" in a else 0
    if elem_offset is None and offset_factor:
        # TVM: an offset factor without an offset declares the offset unknown, a variable
        # of the shape's index type (a tensor's byte_offset binds it; X.elem_offset reads it)
        elem_offset = Var(f"{name}_elem_offset", shape[0].dtype if shape else INT32, None, span)
    return Buffer(name, data, dtype, shape, strides, elem_offset, max(align, 0), offset_factor, span,
                  layout_none)


def view_buffer(b: "FunctionBuilder", name: str, base: Buffer, args, kwargs, span: Span | None) -> Buffer:
    """``Y = X.view(8, 8)``: the same memory as ``X`` under another shape; ``Y =
    X.view("float16")``: under another dtype, the last dimension scaled by the ratio of
    their sizes (as TVM's ``Buffer.view`` makes both). ``X``'s element offset carries
    over, in the view's elements."""
    if kwargs:
        key, (_, kspan) = next(iter(kwargs.items()))
        raise Diagnostic(f"view() got an unexpected keyword argument '{key}'", kspan)
    if not args:
        raise Diagnostic("view() needs a shape or a dtype", span)
    if base.strides:
        raise Diagnostic(f"view() of buffer '{base.name}', which has strides: declare the "
                         "view with T.decl_buffer(..., data=...) and its own strides", span)
    if len(args) == 1 and isinstance(args[0][0], str):
        return _dtype_view(b, name, base, *args[0], span)
    dims = args[0][0] if len(args) == 1 and isinstance(args[0][0], (tuple, list)) else tuple(v for v, _ in args)
    shape = _shape(b, dims, span)
    return Buffer(name, base.data, base.dtype, shape, elem_offset=base.elem_offset, span=span)


def _dtype_view(b: "FunctionBuilder", name: str, base: Buffer, text: str, dspan: Span | None,
                span: Span | None) -> Buffer:
    dtype = b.dtype_of(text, dspan)
    found = dtype_view_of(base, dtype)
    if found is None:
        raise Diagnostic(f"buffer '{base.name}' of {base.dtype} cannot be viewed as {dtype}: one "
                         "element size must divide the other, and its last dimension and "
                         "element offset must hold whole elements of the view", span)
    shape, offset = found
    return Buffer(name, base.data, dtype, shape, elem_offset=offset, span=span)


def scalar_buffer(name: str, dtype: DataType, span: Span | None) -> Buffer:
    """The one-element local buffer behind a mutable scalar."""
    data = Var(name, HANDLE, PointerType(dtype, "local"), span)
    return Buffer(name, data, dtype, (IntImm(INT32, 1, span),), span=span, tile_layout=True)


def allocate_buffer(b: "FunctionBuilder", name: str, c: Construct, span: Span | None) -> Buffer:
    """``ptr = T.allocate([n], "float32", "shared")``: ``ptr`` names the data pointer."""
    a = bind_arguments(c)
    if "extents" not in a or "dtype" not in a:
        raise Diagnostic("T.allocate needs extents and a dtype", c.span)
    shape = _shape(b, *a["extents"])
    dtype = b.dtype_of(*a["dtype"])
    scope, sspan = a.get("scope", ("global", None))
    if not isinstance(scope, str):
        raise Diagnostic("scope must be a string", sspan)
    _check_scope(scope, sspan)
    data = Var(name, HANDLE, PointerType(dtype, scope), span)
    return Buffer(name, data, dtype, shape, span=span)

