"""Function headers (decorator, name, parameters, return type) and the pre-scan
that finds mutable scalars."""
from __future__ import annotations

from tirc.diagnostics import Diagnostic, Span
from tirc.frontend.exprs import ExprBuilder
from tirc.frontend.scope import Scope
from tirc.ir.dtype import DataType, is_dtype_name, parse_dtype
from tirc.records import record
from tirc.syntax.tree import Tree


@record
class FunctionHeader:
    name: str
    name_span: Span | None
    private: bool
    params: list[tuple[str, Tree, Span | None]]
    param_types: list[DataType | None]
    ret_type: DataType | None
    body: Tree
    span: Span | None
    s_tir: bool = False  # @T.prim_func(s_tir=True): block-level TIR with an implicit root block


class _HeaderReader(ExprBuilder):
    def __init__(self, filename: str):
        super().__init__()
        self.filename = filename
        self.scope = Scope()
        self.module_name = None
        self.signatures = {}


def read_header(owner, decorated: Tree) -> FunctionHeader:
    r = _HeaderReader(owner.filename)
    *decorators, funcdef = decorated.children
    if funcdef.data != "funcdef":
        raise Diagnostic("expected a function definition", r.span(funcdef))
    private = False
    s_tir = False
    seen = False
    for d in decorators:
        text = ".".join(str(t) for t in d.children[0].children)
        if text != "T.prim_func":
            raise Diagnostic(f"unknown decorator '@{text}'; expected '@T.prim_func'", r.span(d))
        seen = True
        if d.data == "decorator_call":
            args, kwargs = r.arguments(d.children[1])
            if args:
                raise Diagnostic("@T.prim_func takes keyword arguments only", args[0][1])
            for key, (v, vspan) in kwargs.items():
                if key not in ("private", "check_well_formed", "s_tir"):
                    raise Diagnostic(f"unknown @T.prim_func argument '{key}'", vspan)
                if not isinstance(v, bool):
                    raise Diagnostic(f"'{key}' must be True or False", vspan)
                if key == "private":
                    private = v
                if key == "s_tir":
                    s_tir = v
    if not seen:
        raise Diagnostic("expected '@T.prim_func'", r.span(funcdef))
    name_tok, params_tree, ret_tree, body = funcdef.children
    params: list[tuple[str, Tree, Span | None]] = []
    types: list[DataType | None] = []
    if params_tree is not None:
        for p in params_tree.children:
            if p is None:
                continue
            pname, ann = p.children
            params.append((str(pname), ann, r.span(pname)))
            types.append(_simple_dtype(ann))
    ret_type = None
    if ret_tree is not None:
        v = r.value(ret_tree)
        if v is not None:
            ret_type = r.dtype_of(v, r.span(ret_tree))
    return FunctionHeader(str(name_tok), r.span(name_tok), private, params, types, ret_type,
                          body, r.span(funcdef), s_tir)


def _simple_dtype(ann: Tree) -> DataType | None:
    """``T.int32`` as an annotation: its dtype (used to type literal call arguments)."""
    if (isinstance(ann, Tree) and ann.data == "getattr"
            and isinstance(ann.children[0], Tree) and ann.children[0].data == "name"
            and str(ann.children[0].children[0]) == "T"):
        name = str(ann.children[1])
        if is_dtype_name(name):
            return parse_dtype(name)
    return None


def scan_mutable(stmts: list[Tree]) -> set[str]:
    """Names assigned again after their definition (``x: T.int32 = 0`` ... ``x = x + 1``):
    these are mutable scalars, everything else bound once is an immutable let."""
    defined: dict[str, int] = {}
    reassigned: set[str] = set()
    stack = list(reversed(stmts))
    while stack:
        node = stack.pop()
        if not isinstance(node, Tree):
            continue
        if node.data == "annassign_stmt" and node.children[-1] is None:
            target = node.children[0]
            if isinstance(target, Tree) and target.data == "name":
                reassigned.add(str(target.children[0]))
            continue
        if node.data in ("assign_stmt", "annassign_stmt"):
            target = node.children[0]
            rhs = node.children[-1]
            if isinstance(target, Tree) and target.data == "name" and not _is_declaration(rhs):
                name = str(target.children[0])
                if node.data == "assign_stmt" and name in defined:
                    reassigned.add(name)
                defined[name] = defined.get(name, 0) + 1
            continue
        if node.data in ("suite", "inline_suite", "simple_stmt", "for_stmt", "while_stmt",
                         "if_stmt", "elif_clause", "else_clause", "with_stmt"):
            stack.extend(reversed([c for c in node.children if isinstance(c, Tree)]))
    return reassigned


def _is_declaration(rhs) -> bool:
    """``T.<something>(...)`` on the right: a declaration, not a value."""
    if not (isinstance(rhs, Tree) and rhs.data == "call"):
        return False
    fn = rhs.children[0]
    if not (isinstance(fn, Tree) and fn.data == "getattr"):
        return False
    base = fn.children[0]
    if not (isinstance(base, Tree) and base.data == "name" and str(base.children[0]) == "T"):
        return False
    name = str(fn.children[1])
    if is_dtype_name(name) or name == "bool":
        return rhs.children[1] is None  # T.int32() declares; T.int32(5) is a value
    return name in ("Buffer", "match_buffer", "alloc_buffer", "alloc_shared", "alloc_local",
                    "decl_buffer", "allocate", "launch_thread", "env_thread", "bind", "handle")

