"""CommonSubexprElim (TVM's ``tirx.transform.CommonSubexprElim``, the two-phase version
of TVM 0.27): an expression computed more than once is computed once, into a variable
``cse_v<n>: T.let[...] = <expr>`` bound just before the first statement that needs it
in the innermost scope holding all its uses.

* Eligible: arithmetic, ``min``/``max``, casts and selects that compute something (not a
  variable or constant), hold no call and no buffer load (side effects, memory), are not
  ``Ramp``/``Broadcast`` themselves and are not boolean (conditions stay inline for the
  ``if``/``Select`` and the simplifier). Bitwise operators and shifts are calls in TVM,
  so they are not eligible here either. Expressions inside a ``Let`` body are not
  counted (they may use its variable); buffer shapes are not rewritten.
* Scopes: a loop body, each branch of an ``if``, a ``while`` body and an attribute's
  body are scopes; a loop's bounds, a condition, an attribute's value belong to the
  enclosing one. The binding goes before the first use when that is in the innermost
  common scope, else before the statement that opens the scope holding the first use.
* Counting: shallower expressions first; an occurrence inside a deeper expression that
  is itself bound counts once (``(x + y) * 2`` twice binds ``x + y`` only if it is also
  used elsewhere); only expressions with two independent uses are bound. A deeper
  binding's value uses the shallower variables.
* A statement that occurs at several places of the tree (the same object) gets the
  bindings at its first place and fresh copies of them at the others.

tirc binds an expression only where all its variables are defined at the binding's
place (a tree that reuses a variable in two scopes would otherwise get a binding out of
scope), and replaces an occurrence only inside its binding's scope. Nor does it bind an
integer expression that adds a constant to the rest of it (``x + 512``, ``(i + 1) * 512
+ j``): the CPU backend splits such an index into a base shared by the rows of a
register tile plus a constant, which is how LLVM sees the rows apart; a binding hides the
split (TVM's simplifier puts the constant outside first; tirc's does not).

Preconditions: none beyond a well-formed module (it runs after Simplify and UnrollLoop).
Guarantees: every expression evaluates as before; bindings dominate their uses; the
result verifies.
"""
from __future__ import annotations

from dataclasses import field, fields

from tirc.ir.expr import (BITWISE_OPS, BinOp, BufferLoad, Call, Cast, IntImm, Let, Not,
                          PrimExpr, Select, Var)
from tirc.ir.function import IRModule
from tirc.ir.renew import substitute
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, BufferStore, DeclBuffer, Evaluate,
                          For, IfThenElse, IterVar, LetStmt, Return, SeqStmt, Stmt, While, seq)
from tirc.ir.trampoline import drive
from tirc.ir.visitor import Mutator, child_fields, is_node, walk
from tirc.records import record

_RECORDED = (BinOp, Not, Cast, Select)


def common_subexpr_elim(mod: IRModule, ctx=None) -> IRModule:
    def run(body: Stmt) -> Stmt:
        planner = _Planner()
        planner.stmt_(body)
        insert, remap = planner.plan()
        if not insert:
            return body
        return _Rewriter(insert, remap, planner.canon, planner.table).visit(body)
    return mod.map_bodies(run)


def _children(e) -> list[PrimExpr]:
    if e.__class__ is BinOp:
        return [e.a, e.b]
    out = []
    for name in child_fields(type(e)):
        v = getattr(e, name)
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, PrimExpr) and is_node(x):
                out.append(x)
    return out


def _offset(e: PrimExpr, kids: list[int]) -> int:
    """The constant an integer expression adds to the rest of it, distributing through
    ``+``, ``-`` and ``*`` by constants (``(i + 1) * 512 + j`` adds 512), from the
    offsets of its children ``kids`` (in :func:`_children`'s order)."""
    if isinstance(e, IntImm):
        return e.value
    if not (isinstance(e, BinOp) and e.dtype.is_int and e.dtype.lanes == 1):
        return 0
    if e.op == "add":
        return kids[0] + kids[1]
    if e.op == "sub":
        return kids[0] - kids[1]
    if e.op == "mul":
        if isinstance(e.b, IntImm):
            return kids[0] * e.b.value
        if isinstance(e.a, IntImm):
            return kids[1] * e.a.value
    return 0


_KEY_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _key_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """The fields equality compares, each with whether it may hold sub-expressions."""
    spec = _KEY_FIELDS.get(cls)
    if spec is None:
        kids = set(child_fields(cls))
        spec = _KEY_FIELDS[cls] = tuple((f.name, f.name in kids) for f in fields(cls)
                                        if f.compare)
    return spec


def _forbidden(e: PrimExpr) -> bool:
    return (isinstance(e, (Call, BufferLoad))
            or (isinstance(e, BinOp) and e.op in BITWISE_OPS))


@record(eq=False)
class _Info:
    repr: PrimExpr  # the first occurrence recorded
    scope: int  # the innermost scope holding every use (LCA)
    first_scope: int
    first_stmt: Stmt
    count: int = 0
    depth: int = 1
    children: list[list] = field(default_factory=list)  # [child's number, multiplicity]
    consumed: int = 0


class _Planner:
    """Phase 1 (TVM's ``CSEPlanner``): the scope tree, every eligible expression with its
    uses, then the bindings to insert and the expressions to replace."""

    def __init__(self) -> None:
        self.scopes: list[tuple[int, int, Stmt | None]] = [(-1, 0, None)]  # parent, depth, opener
        self.scope = 0
        self.stmt: Stmt | None = None
        # Expressions are numbered by structure (hash-consing): the number of a node is
        # the id of the first node seen with its structure, found from its class, its
        # other fields and its children's numbers, so no tree is hashed or compared
        # twice. table: number -> info, in order of discovery.
        self.table: dict[int, _Info] = {}
        self.canon: dict[int, PrimExpr] = {}  # id(node) -> the first node of its structure
        self.forms: dict[tuple, PrimExpr] = {}  # a node's form (children canonical) -> it
        self.let_depth = 0
        self.defs: tuple | None = None  # the variables defined here, as a linked list
        self.defs_at: dict[int, tuple | None] = {}
        self.defined: set[int] = set()  # every variable the body defines
        # statements followed by others in their sequence: the body of such a let, assert,
        # allocation or declaration ends before them, so it is a scope of its own
        self.bounded: set[int] = set()

    # -- scopes ------------------------------------------------------------------------------
    def _open(self, opener: Stmt) -> int:
        parent = self.scopes[self.scope]
        self.scopes.append((self.scope, parent[1] + 1, opener))
        return len(self.scopes) - 1

    def _lca(self, a: int, b: int) -> int:
        while self.scopes[a][1] > self.scopes[b][1]:
            a = self.scopes[a][0]
        while self.scopes[b][1] > self.scopes[a][1]:
            b = self.scopes[b][0]
        while a != b:
            a, b = self.scopes[a][0], self.scopes[b][0]
        return a

    def _in_scope(self, body: Stmt, opener: Stmt):
        saved = self.scope
        self.scope = self._open(opener)
        yield body
        self.scope = saved

    def _body(self, s: Stmt):
        """The body of a let, assert, allocation or declaration: in the current scope
        when it runs to the end of the sequence, a scope of its own when statements follow
        (a binding for uses inside and after it goes before ``s``, not inside)."""
        if id(s) in self.bounded:
            yield from self._in_scope(s.body, s)
        else:
            yield s.body

    def _define(self, v: Var) -> None:
        self.defined.add(id(v))
        self.defs = (id(v), self.defs)

    # -- statements --------------------------------------------------------------------------
    def stmt_(self, s: Stmt) -> None:
        """Record ``s``'s scopes and expressions; the statements under it in one loop."""
        drive(self._stmt_steps(s), lambda child: (self._stmt_steps(child), None), _nothing)

    def _stmt_steps(self, s: Stmt):
        self.stmt = s
        self.defs_at.setdefault(id(s), self.defs)
        saved_defs = self.defs
        if isinstance(s, SeqStmt):
            self.bounded.update(id(x) for x in s.stmts[:-1])
            for x in s.stmts:
                yield x
        elif isinstance(s, For):
            for e in (s.min, s.extent) + (() if s.step is None else (s.step,)):
                self.expr(e)
            self._define(s.loop_var)
            yield from self._in_scope(s.body, s)
        elif isinstance(s, IfThenElse):
            self.expr(s.condition)
            yield from self._in_scope(s.then_case, s)
            if s.else_case is not None:
                yield from self._in_scope(s.else_case, s)
        elif isinstance(s, While):
            self.expr(s.condition)
            yield from self._in_scope(s.body, s)
        elif isinstance(s, AttrStmt):
            if isinstance(s.value, PrimExpr):
                self.expr(s.value)
            if isinstance(s.node, IterVar):
                self._define(s.node.var)
            yield from self._in_scope(s.body, s)
        elif isinstance(s, LetStmt):
            self.expr(s.value)
            self._define(s.var)
            yield from self._body(s)
        elif isinstance(s, AssertStmt):
            self.expr(s.condition)
            yield from self._body(s)
        elif isinstance(s, AllocBuffer):
            self._define(s.buffer.data)
            yield from self._body(s)
        elif isinstance(s, DeclBuffer):
            yield from self._body(s)
        elif isinstance(s, BufferStore):
            self.expr(s.value)
            for i in s.indices:
                self.expr(i)
        elif isinstance(s, (Evaluate, Return)):
            self.expr(s.value)
        else:  # anything else: its expressions, its statements in place
            for name in child_fields(type(s)):
                v = getattr(s, name)
                for x in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(x, PrimExpr) and is_node(x):
                        self.expr(x)
                    elif isinstance(x, Stmt):
                        yield x
        self.defs = saved_defs

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e: PrimExpr) -> tuple[bool, int]:
        """Record ``e`` and its sub-expressions bottom-up: whether it holds a call or a
        load, and the constant it adds (:func:`_offset`)."""
        cls = e.__class__
        if cls is Var:
            self.canon[id(e)] = e
            return False, 0
        if cls is Let:
            bad = self.expr(e.value)[0]
            self.let_depth += 1
            bad = self.expr(e.body)[0] or bad
            self.let_depth -= 1
            canon = self.canon
            form = (Let, id(e.var), id(canon[id(e.value)]), id(canon[id(e.body)]))
        else:
            kids = _children(e)
            bad = False
            offsets = []
            for c in kids:
                b, off = self.expr(c)
                bad = b or bad
                offsets.append(off)
            form = self._form(e, cls)
        node = self.forms.setdefault(form, e)
        self.canon[id(e)] = node
        if cls is Let:
            return bad, 0
        offset = _offset(e, offsets)
        bad = bad or _forbidden(e)
        if (not bad and isinstance(e, _RECORDED) and not e.dtype.is_bool
                and self.let_depth == 0 and not offset):
            self.record(e, id(node), kids)
        return bad, offset

    def _form(self, e: PrimExpr, cls: type) -> tuple:
        """What equality compares of ``e`` (its class and compared fields), with each
        sub-expression the identity of its canonical node (ints hash and compare without
        calling back into Python): equal forms, equal expressions."""
        canon = self.canon
        if cls is BinOp:
            return (BinOp, e.op, id(canon[id(e.a)]), id(canon[id(e.b)]), e.dtype)
        form: list = [cls]
        for name, may_hold in _key_fields(cls):
            v = getattr(e, name)
            if may_hold:
                if isinstance(v, PrimExpr):
                    v = id(canon[id(v)])
                elif isinstance(v, tuple):
                    v = tuple(id(canon[id(x)]) if isinstance(x, PrimExpr) else x for x in v)
            form.append(v)
        return tuple(form)

    def record(self, e: PrimExpr, number: int, kids: list[PrimExpr]) -> None:
        info = self.table.get(number)
        if info is None:
            info = self.table[number] = _Info(e, self.scope, self.scope, self.stmt)
            deepest = 0
            for c in kids:
                k = id(self.canon[id(c)])
                ci = self.table.get(k)
                if ci is None:
                    continue
                deepest = max(deepest, ci.depth)
                for pair in info.children:
                    if pair[0] == k:
                        pair[1] += 1
                        break
                else:
                    info.children.append([k, 1])
            info.depth = 1 + deepest
        else:
            info.scope = self._lca(info.scope, self.scope)
        info.count += 1

    # -- the plan ----------------------------------------------------------------------------
    def _insertion(self, info: _Info) -> Stmt:
        if info.first_scope == info.scope:
            return info.first_stmt
        s = info.first_scope
        while self.scopes[s][0] != info.scope:
            s = self.scopes[s][0]
        return self.scopes[s][2]

    def _defined_at(self, stmt: Stmt, e: PrimExpr) -> bool:
        needed = {id(n) for n in walk(e) if isinstance(n, Var) and id(n) in self.defined}
        chain = self.defs_at.get(id(stmt))
        while needed and chain is not None:
            needed.discard(chain[0])
            chain = chain[1]
        return not needed

    def plan(self) -> tuple[dict[int, list[LetStmt]], dict[int, Var]]:
        """The bindings to insert (by the id of the statement they go before) and the
        expressions to replace (by number). A binding's value has the bindings of
        shallower expressions replaced in it, in the order they were made."""
        entries = sorted(self.table.items(), key=lambda kv: kv[1].depth)  # stable
        for _, info in entries:
            if info.count >= 2:
                for c, mult in info.children:
                    self.table[c].consumed += (info.count - 1) * mult
        insert: dict[int, list[LetStmt]] = {}
        remap: dict[int, Var] = {}
        made: dict[int, tuple[int, int, PrimExpr, Var]] = {}  # number -> (order, depth, value, var)
        counter = 0
        for order, (number, info) in enumerate(entries):
            if info.count - info.consumed < 2:
                continue
            at = self._insertion(info)
            if not self._defined_at(at, info.repr):
                continue
            counter += 1
            value = self._value(info, made)
            var = Var(f"cse_v{counter}", value.dtype)
            insert.setdefault(id(at), []).append(LetStmt(var, value, None, form="let"))
            remap[number] = var
            made[number] = (order, info.depth, value, var)
        return insert, remap

    def _value(self, info: _Info, made: dict) -> PrimExpr:
        """``info``'s expression with every binding made so far for a shallower
        expression replaced in it, one after the other in the order they were made (each
        binding's own value so replaced). Only the bindings whose expression occurs in
        it (by number) are tried: any other one would replace nothing, since a
        sub-expression that matches a binding's value after the earlier replacements
        was equal to its expression before them."""
        canon = self.canon
        found = {}
        for n in walk(info.repr):
            node = canon.get(id(n))
            m = made.get(id(node)) if node is not None else None
            if m is not None and m[1] < info.depth:
                found[m[0]] = m
        value = info.repr
        for order in sorted(found):
            _, _, target, var = found[order]
            value = _Replace(target, var).visit(value)
        return value


class _Replace(Mutator):
    """Every outermost occurrence of ``target`` replaced by ``by``."""

    def __init__(self, target: PrimExpr, by: Var):
        self.target, self.by = target, by
        self.hash = hash(target)

    def visit(self, node):
        if isinstance(node, PrimExpr) and hash(node) == self.hash and node == self.target:
            return self.by
        return super().visit(node)


def _nothing(child, value) -> None:
    return None


class _Rewriter(Mutator):
    """Phase 2 (TVM's ``CSERewriter``): bindings before their statements (their body the
    rest of the sequence), occurrences replaced inside the bindings' scope."""

    def __init__(self, insert: dict[int, list[LetStmt]], remap: dict[int, Var],
                 canon: dict[int, PrimExpr], table: dict[int, _Info]):
        self.insert, self.remap, self.canon = insert, remap, canon
        # an expression the planner did not visit (where it reads no expressions) is
        # looked up by structure
        self.by_structure = {table[n].repr: var for n, var in remap.items()}
        self.active: set[int] = set()
        self.rename: dict[int, Var] = {}  # a later copy of a shared statement
        self.done: set[int] = set()

    def _recorded(self, e: PrimExpr) -> PrimExpr:
        node = self.canon.get(id(e))
        var = self.remap.get(id(node)) if node is not None else self.by_structure.get(e)
        if var is not None and id(var) in self.active:
            return self.rename.get(id(var), var)
        return self.generic_visit(e)

    visit_BinOp = visit_Not = visit_Cast = visit_Select = _recorded  # the kinds of _RECORDED

    def intercept(self, node):
        if isinstance(node, Stmt) and id(node) in self.insert:
            return self._bound(node)
        return None

    def _bound(self, s: Stmt, rest: tuple[Stmt, ...] = ()):
        """Steps of a statement walk: ``s`` visited under the bindings planned before it
        (then, in a sequence, the statements after it, ``rest``: the bindings' body is the
        rest of the sequence). A later copy of a shared statement binds fresh variables,
        used in that copy only."""
        binds = self.insert[id(s)]
        fresh = id(s) in self.done
        self.done.add(id(s))
        local: dict[int, Var] = {}
        made: list[tuple[Var, PrimExpr]] = []
        for b in binds:
            renames = {**self.rename, **local}
            value = substitute(b.value, renames) if renames else b.value
            var = b.var
            if fresh:
                var = local[id(b.var)] = Var(b.var.name, b.var.dtype)
            made.append((var, value))
            self.active.add(id(b.var))
        saved = self.rename
        self.rename = {**saved, **local}
        body = self._finish(s, (yield from self.steps_of(s)))
        self.rename = saved
        if rest:  # walked as a sequence of its own: one more step, not a deeper one
            after = yield SeqStmt(rest)
            body = seq([body] + (list(after.stmts) if isinstance(after, SeqStmt) else [after]))
        for b in binds:
            self.active.discard(id(b.var))
        for var, value in reversed(made):
            body = LetStmt(var, value, body, s.span, form="let")
        return body

    def visit_SeqStmt(self, s: SeqStmt):
        items: list[Stmt] = []
        for k, x in enumerate(s.stmts):
            if id(x) in self.insert:
                items.append((yield from self._bound(x, s.stmts[k + 1:])))
                break
            items.append((yield x))
        if all(a is b for a, b in zip(items, s.stmts)) and len(items) == len(s.stmts):
            return s
        return seq(items, s.span)

