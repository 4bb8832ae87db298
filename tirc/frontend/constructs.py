"""Script constructs that make statements: ``T.func_attr``, ``T.match_buffer``,
allocations, ``T.launch_thread``, ``T.attr``, ``T.bind``, ``with T.LetStmt(...)``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.buffers import allocate_buffer, make_buffer, view_buffer
from tirc.frontend.calls import Construct, VarDecl
from tirc.frontend.loops import THREAD_TAGS
from tirc.frontend.values import Binder, ThreadDecl, attr_value, describe
from tirc.ir.attrs import REDUCE_SCOPE, THREAD_EXTENT
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32
from tirc.ir.expr import PrimExpr, StringImm, Var
from tirc.ir.reducer import CommReducer
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, Break, Continue, DeclBuffer,
                          Evaluate, IterVar, LetStmt, Stmt)
from tirc.syntax.tree import Token, Tree
from tirc.target.kinds import Target

if TYPE_CHECKING:
    from tirc.frontend.builder import FunctionBuilder


def _binder(wrap) -> Binder:
    return Binder(wrap)


def _arity(c: Construct, lo: int, hi: int) -> None:
    n = len(c.args)
    if not lo <= n <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise Diagnostic(f"T.{c.name} takes {want} arguments, got {n}", c.span)


def _no_kwargs(c: Construct, allowed: tuple[str, ...] = ()) -> None:
    for key, (_, span) in c.kwargs.items():
        if key not in allowed:
            raise Diagnostic(f"T.{c.name} got an unexpected keyword argument '{key}'", span)


def statement(b: "FunctionBuilder", c: Construct, top: bool) -> "Stmt | Binder | None":
    """A construct standing alone as a statement."""
    if c.name == "func_attr":
        if not top:
            raise Diagnostic("T.func_attr belongs at the top of a function body", c.span)
        _arity(c, 1, 1)
        _no_kwargs(c)
        attrs, aspan = c.args[0]
        if not isinstance(attrs, dict):
            raise Diagnostic("T.func_attr takes a dict", aspan)
        for key, value in attrs.items():
            b.attrs[key] = attr_value(value, aspan)
        return None
    if c.name in ("break_loop", "continue_loop"):
        _arity(c, 0, 0)
        _no_kwargs(c)
        return Break(c.span) if c.name == "break_loop" else Continue(c.span)
    if c.name == "evaluate":
        _arity(c, 1, 1)
        _no_kwargs(c)
        return Evaluate(b.as_expr(*c.args[0]), c.span)
    if c.name == "attr":
        attrs = _attr_list(b, c)
        return _binder(lambda body: _wrap_attrs(attrs, body, c.span))
    if c.name == "Assert":
        cond, kind, msg = _assert_args(b, c)
        return _binder(lambda body: AssertStmt(cond, kind, msg, body, c.span))
    if c.name == "launch_thread":
        iv, extent = _launch_args(b, c, None, None)
        return _binder(lambda body: AttrStmt(iv, THREAD_EXTENT, extent, body, c.span))
    if c.name in ("reads", "writes", "where", "sblock_attr", "block_attr"):
        from tirc.frontend.blocks import block_statement
        block_statement(b, c)
        return None
    if c.name in ("sblock", "block", "init"):
        raise Diagnostic(f"T.{c.name}(...) is used as 'with T.{c.name}(...):'", c.span)
    if c.name.startswith("axis."):
        raise Diagnostic(f"the result of T.{c.name} must be assigned to a name", c.span)
    if c.name in ("match_buffer", "Buffer", "decl_buffer", "view", "alloc_buffer", "alloc_shared",
                  "alloc_local", "allocate", "env_thread", "bind", "handle", "sblock_alloc_buffer"):
        raise Diagnostic(f"the result of T.{c.name} must be assigned to a name", c.span)
    raise Diagnostic(f"T.{c.name} cannot stand alone as a statement", c.span)


def named(b: "FunctionBuilder", name: str, v: "Construct | VarDecl", nspan: Span | None,
          top: bool) -> "Stmt | Binder | None":
    """``name = <construct>``."""
    if isinstance(v, VarDecl):
        _declare_var(b, name, Var(name, v.dtype, v.ptr, nspan), nspan)
        return None
    c = v
    if c.name.startswith("axis."):
        from tirc.frontend.blocks import axis
        axis(b, [(name, nspan)], c)
        return None
    if c.name in ("sblock_alloc_buffer", "alloc_buffer", "match_buffer"):
        handled = _block_buffer(b, name, c, nspan, top)
        if handled:
            return None
    if c.name == "handle":
        _declare_var(b, name, b.pointer_var(name, c, nspan), nspan)
        return None
    if c.name == "match_buffer":
        if not top:
            raise Diagnostic("T.match_buffer belongs at the top of a function body", c.span)
        if not c.args:
            raise Diagnostic("T.match_buffer needs a parameter and a shape", c.span)
        param, pspan = c.args[0]
        if not (isinstance(param, Var) and any(param is p for p in b.params)):
            raise Diagnostic(f"T.match_buffer needs a handle parameter, not {describe(param)}", pspan)
        if param.dtype != HANDLE:
            raise Diagnostic(f"parameter '{param.name}' is not a handle", pspan)
        if any(param is p for p, _ in b.buffer_map):
            raise Diagnostic(f"parameter '{param.name}' already has a buffer", pspan)
        buf = make_buffer(b, name, c, nspan, skip=1)
        b.buffer_map.append((param, buf))
        b.scope.define(name, buf)
        return None
    if c.name == "Buffer" and "data" not in c.kwargs and len(c.args) <= 2:
        from tirc.frontend.blocks import in_block
        if in_block(b):
            # a buffer as a value, for a block attribute ({"layout_free_placeholders":
            # [B]}): TVM's T.Buffer declares nothing and allocates nothing
            b.scope.define(name, make_buffer(b, name, c, nspan))
            return None
    if c.name in ("Buffer", "decl_buffer", "alloc_buffer", "alloc_shared", "alloc_local"):
        ann = _annotations(b, c)
        buf = make_buffer(b, name, c, nspan)
        aliases = "data" in c.kwargs or (c.name in ("Buffer", "decl_buffer") and len(c.args) > 2)
        source = _data_source(b, c, buf) if aliases else None
        b.scope.define(name, buf)
        if aliases:
            return _binder(lambda body: DeclBuffer(buf, body, c.span, data_from=source))
        return _binder(lambda body: AllocBuffer(buf, body, c.span, ann))
    if c.name == "view":
        base = c.args[0][0]
        buf = view_buffer(b, name, base, c.args[1:], c.kwargs, c.span)
        b.scope.define(name, buf)
        return _binder(lambda body: DeclBuffer(buf, body, c.span, base))
    if c.name == "allocate":
        buf = allocate_buffer(b, name, c, nspan)
        b.scope.define(name, buf.data)
        return _binder(lambda body: AllocBuffer(buf, body, c.span))
    if c.name == "launch_thread":
        iv, extent = _launch_args(b, c, name, nspan)
        return _binder(lambda body: AttrStmt(iv, THREAD_EXTENT, extent, body, c.span))
    if c.name == "env_thread":
        _arity(c, 1, 1)
        tag, tspan = c.args[0]
        _check_tag(tag, tspan)
        b.scope.define(name, ThreadDecl(Var(name, INT32, None, nspan), tag))
        return None
    if c.name == "bind":
        _arity(c, 1, 2)
        _no_kwargs(c, ("var",))
        value = b.as_expr(*c.args[0])
        dtype = b.dtype_of(*c.args[1]) if len(c.args) > 1 else value.dtype
        if value.dtype != dtype:
            raise Diagnostic(f"T.bind of a {value.dtype} value as {dtype}", c.span)
        var = Var(name, dtype, None, nspan)
        b.scope.define(name, var)
        return _binder(lambda body: LetStmt(var, value, body, c.span, "let"))
    raise Diagnostic(f"T.{c.name} cannot be assigned to a name", c.span)


def _data_source(b: "FunctionBuilder", c: Construct, buf: Buffer) -> Buffer | None:
    """The buffer ``X`` when the declaration's data is written ``X.data``."""
    tree = c.node
    if not (isinstance(tree, Tree) and tree.data == "call" and tree.children[1] is not None):
        return None
    positional = 0
    for arg in tree.children[1].children:
        if isinstance(arg, Tree) and arg.data == "kwarg":
            if str(arg.children[0]) != "data":
                continue
            expr = arg.children[1]
        else:
            positional += 1
            if positional != 3:
                continue
            expr = arg
        if (isinstance(expr, Tree) and expr.data == "getattr"
                and str(expr.children[1]) == "data" and isinstance(expr.children[0], Tree)
                and expr.children[0].data == "name"):
            found = b.scope.lookup(str(expr.children[0].children[0]))
            if isinstance(found, Buffer) and found.data is buf.data:
                return found
        return None
    return None


def _annotations(b: "FunctionBuilder", c: Construct) -> tuple:
    """``annotations={...}`` of an allocation (make_buffer accepts and skips the key)."""
    if "annotations" not in c.kwargs:
        return ()
    value, span = c.kwargs["annotations"]
    if not isinstance(value, dict):
        raise Diagnostic("annotations must be a dict", span)
    from tirc.frontend.blocks import annotation_items
    return annotation_items(b, value, span)


def _block_buffer(b: "FunctionBuilder", name: str, c: Construct, nspan: Span | None,
                  top: bool) -> bool:
    """Allocations and matched regions owned by a block (the implicit root block at the
    top of a function); False when ``c`` is an ordinary statement-level buffer."""
    from tirc.frontend import blocks
    if blocks.in_block(b) and (c.name != "alloc_buffer" or b.old_blocks):
        frame = b.block_frames[-1]
        if c.name == "match_buffer":
            blocks.match_buffer(b, name, c, nspan)
            return True
        buf = make_buffer(b, name, c.with_name("alloc_buffer"), nspan)
        frame.alloc_buffers.append(buf)
        b.scope.define(name, buf)
        return True
    if c.name == "sblock_alloc_buffer":
        if not top:
            raise Diagnostic("T.sblock_alloc_buffer belongs directly inside a block or at the "
                             "top of a function body (the root block)", c.span)
        buf = make_buffer(b, name, c.with_name("alloc_buffer"), nspan)
        b.root_allocs.append(buf)
        b.scope.define(name, buf)
        return True
    return False


def _declare_var(b: "FunctionBuilder", name: str, var: Var, span: Span | None) -> None:
    existing = b.scope.lookup(name)
    if isinstance(existing, Var) and b.block_depth == 1 and not any(existing is p for p in b.params):
        # A size variable first named by a parameter's shape (T.Buffer(("n",), ...)).
        if existing.dtype != var.dtype:
            raise Diagnostic(f"'{name}' was used as {existing.dtype} before this declaration "
                             f"as {var.dtype}", span)
        return
    b.scope.define(name, var)


def _check_tag(tag: object, span: Span | None) -> None:
    if not isinstance(tag, str) or tag not in THREAD_TAGS:
        raise Diagnostic(f"unknown thread tag {tag!r}; expected one of: " + ", ".join(THREAD_TAGS), span)


def _launch_args(b: "FunctionBuilder", c: Construct, name: str | None, nspan: Span | None):
    _arity(c, 2, 2)
    _no_kwargs(c)
    (first, fspan), (extent_v, espan) = c.args
    extent = b.as_expr(extent_v, espan)
    if not (extent.dtype.is_integer and extent.dtype.lanes == 1):
        raise Diagnostic(f"thread extent must be an integer, got {extent.dtype}", espan)
    if isinstance(first, str):
        _check_tag(first, fspan)
        if name is None:
            raise Diagnostic("T.launch_thread with a thread tag must be assigned to a name", c.span)
        var = Var(name, extent.dtype, None, nspan)
        b.scope.define(name, var)
        return IterVar(var, first, fspan), extent
    if isinstance(first, Var):
        decl = _thread_decl(b, first)
        if decl is None:
            raise Diagnostic(f"'{first.name}' is not a thread variable from T.env_thread", fspan)
        if name is not None:
            b.scope.define(name, decl.var)
        return IterVar(decl.var, decl.tag, fspan), extent
    raise Diagnostic("T.launch_thread needs a thread tag or a T.env_thread variable", fspan)


def _thread_decl(b: "FunctionBuilder", var: Var) -> ThreadDecl | None:
    found = b.scope.lookup(var.name)
    return found if isinstance(found, ThreadDecl) and found.var is var else None


def _attr_list(b: "FunctionBuilder", c: Construct) -> list[tuple[object, str, PrimExpr]]:
    """``T.attr(node, key, value)``, or TVM's annotation form ``T.attr({key: value, ...})``."""
    if len(c.args) == 1 and isinstance(c.args[0][0], dict):
        _no_kwargs(c)
        entries, espan = c.args[0]
        if not entries:
            raise Diagnostic("T.attr needs at least one entry", espan)
        return [(None, key, b.as_expr(value, espan)) for key, value in entries.items()]
    return [_attr_args(b, c)]


def _wrap_attrs(attrs, body: Stmt, span: Span | None) -> Stmt:
    for node, key, value in reversed(attrs):
        body = AttrStmt(node, key, value, body, span)
    return body


def _attr_args(b: "FunctionBuilder", c: Construct):
    _arity(c, 3, 3)
    _no_kwargs(c)
    (node, nspan), (key, kspan), (value, vspan) = c.args
    if not isinstance(key, str):
        raise Diagnostic("the attribute key must be a string", kspan)
    if isinstance(node, str):
        node = StringImm(node, nspan)
    elif isinstance(node, Var):
        decl = _thread_decl(b, node)
        if decl is not None:
            node = IterVar(decl.var, decl.tag, nspan)
    elif isinstance(node, (int, float)):
        node = b.as_expr(node, nspan)
    elif isinstance(node, CommReducer):
        if key != REDUCE_SCOPE:
            raise Diagnostic(f"a reducer is the node of a \"reduce_scope\" attribute, not "
                             f"\"{key}\"", kspan)
    elif not isinstance(node, (Target, Buffer, PrimExpr)):
        raise Diagnostic(f"cannot attach an attribute to {describe(node)}", nspan)
    return node, key, b.as_expr(value, vspan)


def _assert_args(b: "FunctionBuilder", c: Construct):
    _arity(c, 2, 2)
    _no_kwargs(c)
    cond = b._as_bool(c.args[0][0], c.args[0][1])
    return (cond, *assert_message(*c.args[1]))


def assert_message(v: object, span: Span | None) -> tuple[str, tuple[str, ...]]:
    """``"msg"`` or TVM's ``("ValueError", ["part", "part"])``: the error kind and parts."""
    if isinstance(v, str):
        return "RuntimeError", (v,)
    if (isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)
            and isinstance(v[1], (list, tuple)) and all(isinstance(p, str) for p in v[1])):
        return v[0], tuple(v[1])
    raise Diagnostic("an assertion message is a string or (\"ErrorKind\", [\"text\", ...])", span)


def with_stmt(b: "FunctionBuilder", tree: Tree, span: Span | None) -> Stmt:
    expr_t, target, suite = tree.children
    c = b.value(expr_t)
    if not isinstance(c, Construct):
        raise Diagnostic(f"'with' needs a script construct such as T.LetStmt, not {describe(c)}",
                         b.span(expr_t))
    as_name = str(target) if isinstance(target, Token) else None
    as_span = b.span(target) if target is not None else None
    if target is not None and as_name is None:
        raise Diagnostic("'as' takes one name", as_span)
    b.scope.push()
    try:
        if c.name == "LetStmt":
            _arity(c, 1, 1)
            _no_kwargs(c, ("var",))
            if "var" not in c.kwargs:
                raise Diagnostic("T.LetStmt needs var=<variable>", c.span)
            var, vspan = c.kwargs["var"]
            if not isinstance(var, Var) or var.dtype == HANDLE and var.ptr is not None:
                raise Diagnostic(f"var= needs a variable declared like 'x = T.int32()', "
                                 f"not {describe(var)}", vspan)
            value = b.as_expr(c.args[0][0], c.args[0][1], var.dtype)
            if value.dtype != var.dtype:
                raise Diagnostic(f"value of type {value.dtype} bound to {var.dtype} variable "
                                 f"'{var.name}'", c.args[0][1])
            return LetStmt(var, value, b.suite(suite), span, "annotated")
        if c.name == "launch_thread":
            iv, extent = _launch_args(b, c, as_name, as_span)
            return AttrStmt(iv, THREAD_EXTENT, extent, b.suite(suite), span)
        if c.name in ("sblock", "block"):
            from tirc.frontend.blocks import build_block
            if as_name is not None:
                raise Diagnostic(f"'with T.{c.name}(...)' takes no 'as'", as_span)
            return build_block(b, c, suite, span)
        if c.name == "init":
            from tirc.frontend.blocks import init_block
            init_block(b, c, suite)
            return None
        if c.name == "attr":
            attrs = _attr_list(b, c)
            return _wrap_attrs(attrs, b.suite(suite), span)
        if c.name == "Assert":
            cond, kind, msg = _assert_args(b, c)
            return AssertStmt(cond, kind, msg, b.suite(suite), span)
        if c.name in ("allocate", "decl_buffer", "alloc_buffer"):
            if as_name is None:
                raise Diagnostic(f"'with T.{c.name}(...)' needs 'as <name>'", c.span)
            binder = named(b, as_name, c, as_span, False)
            return binder.wrap(b.suite(suite))  # type: ignore[union-attr]
    finally:
        b.scope.pop()
    raise Diagnostic(f"T.{c.name} cannot be used with 'with'", c.span)
