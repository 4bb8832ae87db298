"""Parse tree to IR: modules, functions and statements.

TVM prints several statements flat (``x: T.int32 = v``, ``A = T.alloc_buffer(...)``,
``bx = T.launch_thread(...)``, ``T.attr(...)``); each of them scopes over the rest of
its block, and becomes a scoped IR statement whose body is that rest.
"""
from __future__ import annotations


from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.arith import cast_to
from tirc.frontend.calls import Construct, VarDecl
from tirc.frontend.exprs import ExprBuilder, subscript_items
from tirc.frontend.functions import FunctionHeader, read_header, scan_mutable
from tirc.frontend.loops import build_for
from tirc.frontend.buffers import make_buffer, scalar_buffer
from tirc.frontend.scope import Scope
from tirc.frontend.values import Binder, LetType, Slot, TName, describe, is_scalar_buffer
from tirc.nesting import MAX_BLOCK_DEPTH
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType, HANDLE
from tirc.ir.expr import FloatImm, IntImm, PointerType, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (AllocBuffer, AssertStmt, DeclBuffer, Break, BufferStore, Continue,
                          Evaluate, IfThenElse, LetStmt, Return, Stmt,
                          While, seq)
from tirc.syntax.tree import Tree
from tirc.ir.block import SBlock, SBlockRealize



def build_module(tree: Tree, filename: str) -> IRModule:
    return ModuleBuilder(filename).module(tree)


def _chain(results: list) -> "Binder | Stmt | None":
    """Several assignments of one statement (``a, b = x, y``) as one: the values were all
    read before any name was bound, as in Python."""
    kept = [r for r in results if r is not None]
    if not kept:
        return None
    if all(isinstance(r, Binder) for r in kept):
        def wrap(body: Stmt) -> Stmt:
            for r in reversed(kept):
                body = r.wrap(body)
            return body
        return Binder(wrap)
    if all(isinstance(r, Stmt) for r in kept):
        return seq(kept)
    raise Diagnostic("cannot mix declarations and stores in one assignment",
                     getattr(kept[0], "span", None))


def root_block(body: Stmt, allocs: list[Buffer], old_blocks: bool, span: Span | None) -> Stmt:
    """The implicit root block of a block-level function (TVM's ScriptComplete): inserted
    when the function allocates at its root or holds blocks not already under a single
    iterator-free block. Older text allocated at the root with a plain T.alloc_buffer."""
    from tirc.ir.visitor import contains_blocks
    allocs = list(allocs)
    if old_blocks:
        while isinstance(body, AllocBuffer):
            allocs.append(body.buffer)
            body = body.body
    realize = body if isinstance(body, SBlockRealize) else None
    needed = bool(allocs) or (realize is not None and realize.block.iter_vars) or (
        realize is None and contains_blocks(body))
    if not needed:
        return body
    root = SBlock("root", (), (), (), body, None, tuple(allocs), (), (), span)
    return SBlockRealize((), IntImm(DataType("bool"), 1, span), root, span)


class ModuleBuilder:
    def __init__(self, filename: str):
        self.filename = filename

    def _span(self, node) -> Span | None:
        return ExprBuilder.span(self, node)  # type: ignore[arg-type]

    def module(self, tree: Tree) -> IRModule:
        items = [c for c in tree.children if isinstance(c, Tree) and c.data == "decorated"]
        if not items:
            raise Diagnostic("expected an '@I.ir_module' class or a '@T.prim_func' function",
                             Span(self.filename, 1, 1))
        if len(items) > 1:
            raise Diagnostic("only one module or function per file; put several functions "
                             "in one '@I.ir_module' class", self._span(items[1]))
        decorated = items[0]
        typevars = self._typevars(tree)
        *decorators, definition = decorated.children
        if definition.data == "classdef":
            self._expect_decorator(decorators, "I.ir_module", definition)
            module_name = str(definition.children[0])
            funcs = [c for c in definition.children[1:] if isinstance(c, Tree) and c.data == "decorated"]
            for c in definition.children[1:]:
                if isinstance(c, Tree) and c.data == "decorated" and c.children[-1].data != "funcdef":
                    raise Diagnostic("expected a function definition", self._span(c))
        else:
            module_name = None
            funcs = [decorated]
        headers: list[FunctionHeader] = []
        names: dict[str, FunctionHeader] = {}
        for f in funcs:
            header = read_header(self, f)
            if header.name in names:
                raise Diagnostic(f"duplicate function '{header.name}'", header.name_span)
            names[header.name] = header
            headers.append(header)
        signatures = {h.name: (h.ret_type, h.param_types) for h in headers}
        functions: dict[str, PrimFunc] = {}
        for h in headers:
            functions[h.name] = FunctionBuilder(self.filename, module_name, signatures, typevars).function(h)
        return IRModule(functions, module_name, self._span(decorated))

    def _typevars(self, tree: Tree) -> set[str]:
        """``n = TypeVar("n")`` at module level: TVM's spelling of an int64 size variable."""
        names: set[str] = set()
        for c in tree.children:
            if not (isinstance(c, Tree) and c.data == "toplevel_assign"):
                continue
            name, rhs = str(c.children[0]), c.children[1]
            ok = (isinstance(rhs, Tree) and rhs.data == "call"
                  and isinstance(rhs.children[0], Tree) and rhs.children[0].data == "name"
                  and str(rhs.children[0].children[0]) == "TypeVar" and rhs.children[1] is not None
                  and len(rhs.children[1].children) == 1
                  and isinstance(rhs.children[1].children[0], Tree)
                  and rhs.children[1].children[0].data == "string_lit")
            if not ok:
                raise Diagnostic("only 'NAME = TypeVar(\"NAME\")' may stand at module level",
                                 self._span(c))
            names.add(name)
        return names

    def _expect_decorator(self, decorators, name: str, definition) -> None:
        found = [".".join(str(t) for t in d.children[0].children) for d in decorators]
        if name not in found:
            raise Diagnostic(f"expected '@{name}' on this definition", self._span(definition))
        for d, text in zip(decorators, found):
            if text != name:
                raise Diagnostic(f"unknown decorator '@{text}'", self._span(d))


class FunctionBuilder(ExprBuilder):
    def __init__(self, filename: str, module_name: str | None, signatures: dict,
                 typevars: set[str] = frozenset()):
        super().__init__()
        self.typevars = typevars
        self.filename = filename
        self.module_name = module_name
        self.signatures = signatures
        self.scope = Scope()
        self.block_depth = 0
        self.mutable: set[str] = set()
        self.attrs: dict = {}
        self.buffer_map: list[tuple[Var, Buffer]] = []
        self.params: list[Var] = []
        self.declared: dict[str, DataType] = {}
        # Block-level TIR: open blocks, loop domains for T.axis.remap, root allocations.
        self.block_frames: list = []
        self.loop_doms: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self.root_allocs: list[Buffer] = []
        self.returns: list[Return] = []  # the function's return statements, in order
        self.old_blocks = False  # the text spells blocks T.block (TVM before 0.27)

    # -- functions -------------------------------------------------------------------------
    def function(self, h: FunctionHeader) -> PrimFunc:
        body_tree = h.body
        stmts = body_tree.children if body_tree.data == "suite" else [body_tree.children[0]]
        self.mutable = scan_mutable(stmts)
        self.declared = self._leading_declarations(stmts)
        for name in self.typevars:
            self.declared.setdefault(name, DataType("int64"))
        # Scalar parameters first: a buffer's shape may name one declared after it.
        order = sorted(range(len(h.params)), key=lambda i: h.param_types[i] is None)
        params: list[Var | None] = [None] * len(h.params)
        for i in order:
            pname, ann, pspan = h.params[i]
            params[i] = self._param(pname, ann, pspan)
        self.params = [p for p in params if p is not None]
        body = self.block(stmts, top=True)
        s_tir = h.s_tir or self.old_blocks
        if s_tir:
            body = root_block(body, self.root_allocs, self.old_blocks, h.span)
        elif self.root_allocs:
            raise Diagnostic("T.sblock_alloc_buffer at the top of a function needs "
                             "@T.prim_func(s_tir=True)", self.root_allocs[0].span)
        ret = h.ret_type if h.ret_type is not None else self._returned_type()
        return PrimFunc(tuple(self.params), body, ret, tuple(self.buffer_map), self.attrs,
                        h.private, h.span, s_tir)

    def _returned_type(self) -> DataType | None:
        """The return type of a function written without one, as TVM reads it: the type of
        the values it returns (TVM prints ``return lhs + rhs`` with no ``-> T.float32``)."""
        if not self.returns:
            return None
        dtype = self.returns[0].value.dtype
        for r in self.returns[1:]:
            if r.value.dtype != dtype:
                raise Diagnostic(f"this function returns {dtype} and {r.value.dtype} values: "
                                 "write its return type (-> T.<dtype>)", r.span)
        return dtype

    def _leading_declarations(self, stmts) -> dict[str, DataType]:
        """``n = T.int32()`` at the top: the dtypes of shape variables named in params."""
        out: dict[str, DataType] = {}
        for s in stmts:
            small = s.children[0] if s.data == "simple_stmt" else None
            if small is None or small.data != "assign_stmt":
                continue
            lhs, rhs = small.children
            if (isinstance(lhs, Tree) and lhs.data == "name" and isinstance(rhs, Tree)
                    and rhs.data == "call" and rhs.children[1] is None):
                fn = rhs.children[0]
                if (fn.data == "getattr" and fn.children[0].data == "name"
                        and str(fn.children[0].children[0]) == "T"):
                    try:
                        out[str(lhs.children[0])] = self.dtype_of(TName(str(fn.children[1])), None)
                    except Diagnostic:
                        pass
        return out

    def _param(self, name: str, ann: Tree, span: Span | None) -> Var:
        if self.scope.defined_here(name):
            raise Diagnostic(f"duplicate parameter '{name}'", span)
        v = self.value(ann)
        if isinstance(v, TName):
            if v.name == "handle":
                var = Var(name, DataType("handle"), None, span)
            else:
                var = Var(name, self.dtype_of(v, self.span(ann)), None, span)
        elif isinstance(v, Construct) and v.name == "handle":
            var = self.pointer_var(name, v, span)
        elif isinstance(v, Construct) and v.name == "Buffer":
            var = Var(name, DataType("handle"), None, span)
            buf = make_buffer(self, name, v, span)
            self.buffer_map.append((var, buf))
            self.params.append(var)
            self.scope.define(name, buf)
            return var
        else:
            raise Diagnostic(f"parameter '{name}' needs a type: T.int32, T.handle or T.Buffer(...), "
                             f"not {describe(v)}", self.span(ann))
        self.params.append(var)
        self.scope.define(name, var)
        return var

    def pointer_var(self, name: str, c: Construct, span: Span | None) -> Var:
        dtype = self.dtype_of(*c.args[0]) if c.args else None
        scope = c.args[1][0] if len(c.args) > 1 else c.kwargs.get("storage_scope", ("global", None))[0]
        if not isinstance(scope, str):
            raise Diagnostic("storage scope must be a string", c.span)
        return Var(name, HANDLE, PointerType(dtype, scope) if dtype is not None else None, span)

    def shape_var(self, name: str, span: Span | None) -> Var:
        """A shape given as a string (``T.Buffer(("n",), ...)``) names a size variable."""
        found = self.scope.lookup(name)
        if isinstance(found, Var):
            return found
        if found is not None:
            raise Diagnostic(f"'{name}' is not a variable", span)
        var = Var(name, self.declared.get(name, DataType("int32")), None, span)
        self.scope.define_outermost(name, var)
        return var

    def implicit_name(self, name: str, span: Span | None) -> object | None:
        if name in self.typevars:
            return self.shape_var(name, span)
        return None

    # -- blocks ------------------------------------------------------------------------------
    def block(self, stmts, top: bool = False) -> Stmt:
        self.block_depth += 1
        if self.block_depth > MAX_BLOCK_DEPTH and stmts:
            raise Diagnostic(f"statements nested more than {MAX_BLOCK_DEPTH} levels deep",
                             self.span(stmts[0]))
        if not top:
            self.scope.push()
        frames: list[tuple[Binder, list[Stmt]]] = []
        current: list[Stmt] = []
        try:
            for s in stmts:
                r = self.stmt(s, top)
                if isinstance(r, Binder):
                    frames.append((r, current))
                    current = []
                elif r is not None:
                    current.append(r)
        finally:
            if not top:
                self.scope.pop()
            self.block_depth -= 1
        body = seq(current)
        for binder, before in reversed(frames):
            body = seq(before + [binder.wrap(body)])
        return body

    def suite(self, tree: Tree) -> Stmt:
        if tree.data == "inline_suite":
            return self.block([tree.children[0]])
        return self.block(tree.children)

    # -- statements ------------------------------------------------------------------------
    def stmt(self, tree: Tree, top: bool) -> Stmt | Binder | None:
        if tree.data == "simple_stmt":
            tree = tree.children[0]
        handler = getattr(self, "_s_" + tree.data)
        outer, self.pending_views = self.pending_views, []
        try:
            result = handler(tree, self.span(tree), top)
            views = self.pending_views
        finally:
            self.pending_views = outer
        if not views:
            return result
        # Region arguments of module calls (``Module.f(A[0:64])``) are views declared
        # around the statement that passes them.
        def declare(s: Stmt) -> Stmt:
            for view in reversed(views):
                s = DeclBuffer(view, s, view.span)
            return s
        if isinstance(result, Binder):
            inner = result.wrap
            return Binder(lambda body: declare(inner(body)))
        return declare(result) if result is not None else None

    def _s_pass_stmt(self, tree, span, top):
        return None

    def _s_break_stmt(self, tree, span, top):
        return Break(span)

    def _s_continue_stmt(self, tree, span, top):
        return Continue(span)

    def _s_return_stmt(self, tree, span, top):
        if tree.children[0] is None:
            raise Diagnostic("'return' needs a value", span)
        ret = Return(self.expr(tree.children[0]), span)
        self.returns.append(ret)
        return ret

    def _s_assert_stmt(self, tree, span, top):
        from tirc.frontend.constructs import assert_message
        cond = self._as_bool(self.value(tree.children[0]), self.span(tree.children[0]))
        msg = self.value(tree.children[1]) if tree.children[1] is not None else ""
        kind, parts = assert_message(msg, self.span(tree.children[1]) or span)
        return Binder(lambda body: AssertStmt(cond, kind, parts, body, span))

    def _s_expr_stmt(self, tree, span, top):
        v = self.value(tree.children[0])
        if isinstance(v, Construct):
            return self._construct_stmt(v, top)
        if isinstance(v, str):
            return None  # a docstring
        if isinstance(v, PrimExpr):
            return Evaluate(v, span)
        if isinstance(v, (int, bool)):
            return Evaluate(self.as_expr(v, span), span)
        raise Diagnostic(f"{describe(v)} is not a statement", span)

    def _construct_stmt(self, c: Construct, top: bool) -> Stmt | Binder | None:
        from tirc.frontend import constructs
        return constructs.statement(self, c, top)

    def _s_assign_stmt(self, tree, span, top):
        lhs, rhs = tree.children
        if isinstance(lhs, Tree) and lhs.data == "subscript":
            return self._store(lhs, rhs, span)
        if not (isinstance(lhs, Tree) and lhs.data == "name"):
            raise Diagnostic("can only assign to a name or a buffer element", self.span(lhs))
        return self._assign_name(str(lhs.children[0]), self.span(lhs), self.value(rhs),
                                 self.span(rhs), span, top)

    def _s_tuple_assign(self, tree, span, top):
        """``a, b = <one value>``: block iterators from ``T.axis.remap``, or a tuple."""
        names = [(str(t), self.span(t)) for t in tree.children[0].children]
        rhs = tree.children[1]
        v = self.value(rhs)
        if isinstance(v, Construct) and v.name.startswith("axis."):
            from tirc.frontend.blocks import axis
            axis(self, names, v)
            return None
        if not isinstance(v, (tuple, list)):
            raise Diagnostic(f"cannot unpack {describe(v)} into {len(names)} names", self.span(rhs))
        if len(v) != len(names):
            raise Diagnostic(f"{len(names)} names but {len(v)} values", span)
        results = [self._assign_name(n, ns, item, self.span(rhs), span, top)
                   for (n, ns), item in zip(names, v)]
        return _chain(results)

    def _s_multi_assign(self, tree, span, top):
        names = [(str(t), self.span(t)) for t in tree.children[0].children]
        values = [c for c in tree.children[1:] if c is not None]
        if len(names) != len(values):
            raise Diagnostic(f"{len(names)} names but {len(values)} values", span)
        evaluated = [(self.value(v), self.span(v)) for v in values]
        results = [self._assign_name(n, ns, v, vs, span, top) for (n, ns), (v, vs) in zip(names, evaluated)]
        return _chain(results)

    def _assign_name(self, name, nspan, v, rspan, span, top):
        from tirc.frontend import constructs
        if isinstance(v, (VarDecl, Construct)):
            return constructs.named(self, name, v, nspan, top)
        existing = self.scope.lookup(name)
        if isinstance(existing, Slot):
            value = self.as_expr(v, rspan, existing.buffer.dtype)
            return BufferStore(existing.buffer, self._coerce(value, existing.buffer.dtype, rspan),
                               (IntImm(DataType("int32"), 0, span),), span)
        if is_scalar_buffer(existing):  # ``B = v`` stores B's one element, as in TVM
            value = self.as_expr(v, rspan, existing.dtype)
            return BufferStore(existing, self._coerce(value, existing.dtype, rspan),
                               (IntImm(existing.shape[0].dtype, 0, span),), span)
        if isinstance(v, Buffer):
            raise Diagnostic("a buffer cannot be renamed by assignment", span)
        value = self.as_expr(v, rspan)
        return self._bind(name, value.dtype, value, nspan, span, "annotated")

    def _s_annassign_stmt(self, tree, span, top):
        target, ann, rhs = tree.children
        if not (isinstance(target, Tree) and target.data == "name"):
            raise Diagnostic("an annotated assignment needs a plain name", self.span(target))
        name = str(target.children[0])
        a = self.value(ann)
        pointer = a.pointer if isinstance(a, LetType) else a
        if isinstance(pointer, Construct) and pointer.name == "handle" and rhs is not None:
            # A typed-pointer binding: ``p: T.handle("float32") = ...`` (or ``T.let[...]``).
            var = self.pointer_var(name, pointer, self.span(target))
            value = self._coerce(self.as_expr(self.value(rhs), self.span(rhs)), var.dtype, self.span(rhs))
            self.scope.define(name, var)
            form = "let" if isinstance(a, LetType) else "annotated"
            return Binder(lambda body: LetStmt(var, value, body, span, form))
        if isinstance(a, LetType):
            dtype, form = a.dtype, "let"
        else:
            dtype, form = self.dtype_of(a, self.span(ann)), "annotated"
        if rhs is None:
            if form == "let":
                raise Diagnostic(f"'{name}' is immutable and needs a value", span)
            buf = scalar_buffer(name, dtype, self.span(target))
            self.scope.define(name, Slot(buf))
            return Binder(lambda body: AllocBuffer(buf, body, span))
        value = self.as_expr(self.value(rhs), self.span(rhs), dtype)
        value = self._coerce(value, dtype, self.span(rhs))
        if form == "let":
            return self._let(name, dtype, value, self.span(target), span, form)
        return self._bind(name, dtype, value, self.span(target), span, form)

    def _coerce(self, value: PrimExpr, dtype: DataType, span: Span | None) -> PrimExpr:
        if value.dtype == dtype:
            return value
        if isinstance(value, (IntImm, FloatImm)) and not value.dtype.is_bool:
            return cast_to(value, dtype, span)
        raise Diagnostic(f"value of type {value.dtype} where {dtype} is expected", span)

    def _bind(self, name, dtype, value, nspan, span, form) -> Binder:
        """``x: dtype = value``: a let, or a mutable scalar when ``x`` is reassigned."""
        if name in self.mutable:
            buf = scalar_buffer(name, dtype, nspan)
            store = BufferStore(buf, value, (IntImm(DataType("int32"), 0, span),), span)
            self.scope.define(name, Slot(buf))
            return Binder(lambda body: AllocBuffer(buf, seq([store, body]), span))
        return self._let(name, dtype, value, nspan, span, form)

    def _let(self, name, dtype, value, nspan, span, form) -> Binder:
        var = Var(name, dtype, None, nspan)
        self.scope.define(name, var)
        return Binder(lambda body: LetStmt(var, value, body, span, form))

    def _store(self, lhs, rhs, span) -> Stmt:
        obj = self.value(lhs.children[0])
        if not isinstance(obj, Buffer):
            raise Diagnostic(f"cannot store into {describe(obj)}", self.span(lhs.children[0]))
        indices = tuple(self.index(i) for i in subscript_items(lhs.children[1]))
        want = self.load(obj, indices, span).dtype
        value = self.as_expr(self.value(rhs), self.span(rhs), want.element())
        return BufferStore(obj, value, indices, span)

    def _s_for_stmt(self, tree, span, top):
        return build_for(self, tree, span)

    def _branch_cond(self, v: object, span: Span | None) -> PrimExpr:
        """The condition of ``if``/``elif``/``while``: a bool, or an integer, which TVM
        keeps as written (``if n:``) and which holds when nonzero."""
        e = self.as_expr(v, span)
        if e.dtype.is_bool or (e.dtype.is_integer and e.dtype.lanes == 1):
            return e
        raise Diagnostic(f"expected a bool or integer condition, got {e.dtype}", span)

    def _s_while_stmt(self, tree, span, top):
        cond = self._branch_cond(self.value(tree.children[0]), self.span(tree.children[0]))
        return While(cond, self.suite(tree.children[1]), span)

    def _s_if_stmt(self, tree, span, top):
        cond_t, then_t, *rest = tree.children
        elifs = [c for c in rest if isinstance(c, Tree) and c.data == "elif_clause"]
        else_t = rest[-1] if rest and isinstance(rest[-1], Tree) and rest[-1].data == "else_clause" else None
        else_stmt = self.suite(else_t.children[0]) if else_t is not None else None
        for clause in reversed(elifs):
            c = self._branch_cond(self.value(clause.children[0]), self.span(clause.children[0]))
            else_stmt = IfThenElse(c, self.suite(clause.children[1]), else_stmt, self.span(clause))
        cond = self._branch_cond(self.value(cond_t), self.span(cond_t))
        return IfThenElse(cond, self.suite(then_t), else_stmt, span)

    def _s_with_stmt(self, tree, span, top):
        from tirc.frontend import constructs
        return constructs.with_stmt(self, tree, span)

