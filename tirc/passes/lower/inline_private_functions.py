"""InlinePrivateFunctions: inline calls of private functions where the code generator
cannot emit calls (target option ``supports_calls=false``, as TVM's pass of the same name).

A call site is inlined when the target it runs under lacks calls: the function's own
target for its top level (the host target when that target carries one), the device
target inside thread scopes, a region's target inside ``T.attr(T.target(...), "target",
0)``. Only private callees are inlined:

* a call used as an expression, to a function whose body is ``return expr`` (possibly
  after LetStmts), becomes that expression; the let variables become ``Let``
  expressions over fresh variables;
* a call statement (``Evaluate``) to a void function becomes the callee's body, with
  fresh variables and buffers; a buffer parameter is replaced by the caller's buffer
  when dtype and shape agree, and otherwise declared (``T.decl_buffer``) over the
  caller's data pointer;
* arguments that are variables or immediates are substituted; other arguments are bound
  once (``Let``/``LetStmt``) to the parameter's fresh variable, unless an expression
  callee uses a pure argument at most once;
* inlining is transitive: the callee's own calls are inlined first.

A recursive call, or a callee whose value is not a single tail ``return``, is a
Diagnostic at the call. Private functions that were called before and are called by no
one afterwards are removed. With ``supports_calls`` true everywhere (the default for
llvm and cuda), the module is returned as it is.

Preconditions: BindTarget (every function has a ``target``). Guarantees: the calls left
at call sites whose target lacks calls are calls of public functions only.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import TARGET
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Call, FloatImm, GlobalVar, IntImm, Let, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.renew import renew_defs
from tirc.ir.stmt import DeclBuffer, Evaluate, LetStmt, Return, Stmt
from tirc.ir.visitor import Mutator, walk
from tirc.passes.analysis.context import DEVICE, HOST, body_context, scope_change
from tirc.passes.analysis.simplify_rules import is_pure
from tirc.target.kinds import Target


def inline_private_functions(mod: IRModule, ctx=None) -> IRModule:
    new: dict[str, PrimFunc] = {}
    changed = False
    for name, func in mod.functions.items():
        target = func.attrs.get(TARGET)
        if not isinstance(target, Target):
            new[name] = func
            continue
        body = _Inliner(mod, target, _start_target(func, target), (name,)).visit(func.body)
        changed |= body is not func.body
        new[name] = func if body is func.body else func.with_body(body)
    if not changed:
        return mod
    before, after = _called(mod.functions), _called(new)
    new = {n: f for n, f in new.items() if not (f.private and n in before and n not in after)}
    return replace(mod, functions=new)


def _start_target(func: PrimFunc, target: Target) -> Target:
    if body_context(func) == HOST and target.is_device and target.host is not None:
        return target.host
    return target


def _called(funcs: dict[str, PrimFunc]) -> set[str]:
    return {n.op.name for f in funcs.values() for n in walk(f.body)
            if isinstance(n, Call) and isinstance(n.op, GlobalVar)}


class _Subst(Mutator):
    """Replace variables by expressions and buffers by buffers; rebuild buffers whose
    shape mentions a replaced variable."""

    def __init__(self, vars: dict[int, PrimExpr], buffers: dict[int, Buffer]):
        self.vars = vars
        self.buffers = dict(buffers)

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vars.get(id(v), v)

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b))
        if new is None:
            data = self.vars.get(id(b.data), b.data)
            new = replace(b, data=data if isinstance(data, Var) else b.data,
                          shape=tuple(self.visit(e) for e in b.shape),
                          strides=tuple(self.visit(e) for e in b.strides),
                          elem_offset=None if b.elem_offset is None else self.visit(b.elem_offset))
            self.buffers[id(b)] = new
        return new


def _uses(node, var: Var) -> int:
    return sum(1 for n in walk(node) if n is var)


class _Inliner(Mutator):
    def __init__(self, mod: IRModule, func_target: Target, current: Target, stack: tuple[str, ...]):
        self.mod = mod
        self.device = func_target.without_host() if func_target.is_device else func_target
        self.current = current
        self.stack = stack
        self.outer: list[Target] = []  # ``current`` outside each region entered

    def enter(self, node) -> None:
        change = scope_change(node) if isinstance(node, Stmt) else None
        if change is None:
            return
        self.outer.append(self.current)
        region = getattr(node, "node", None)
        if isinstance(region, Target):
            self.current = region
        elif change == DEVICE:
            self.current = self.device

    def leave(self, node) -> None:
        if isinstance(node, Stmt) and scope_change(node) is not None:
            self.current = self.outer.pop()

    def callee(self, e: PrimExpr) -> PrimFunc | None:
        if not isinstance(e, Call) or not isinstance(e.op, GlobalVar) or self.current.supports_calls:
            return None
        f = self.mod.functions.get(e.op.name)
        if f is None or not f.private:
            return None
        if e.op.name in self.stack:
            raise Diagnostic(f"cannot inline the call to '{e.op.name}': it is recursive "
                             f"({' -> '.join(self.stack + (e.op.name,))}) and target "
                             f"'{self.current.kind}' does not support calls", e.span)
        return f

    def prepare(self, e: Call, f: PrimFunc) -> PrimFunc:
        """A fresh copy of the callee with its own calls inlined."""
        fresh = renew_defs(f)
        inner = _Inliner(self.mod, self.device, self.current, self.stack + (e.op.name,))
        return fresh.with_body(inner.visit(fresh.body))

    def visit_Call(self, e: Call) -> PrimExpr:
        e = self.generic_visit(e)
        f = self.callee(e)
        if f is None:
            return e
        return self.inline_expr(e, self.prepare(e, f))

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        call = s.value
        if isinstance(call, Call) and isinstance(call.op, GlobalVar):
            call = self.generic_visit(call)
            f = self.callee(call)
            if f is not None and (f.ret_type is None or f.ret_type.is_void):
                return self.inline_stmt(call, self.prepare(call, f))
            if f is not None:
                return Evaluate(self.inline_expr(call, self.prepare(call, f)), s.span)
            return s if call is s.value else replace(s, value=call)
        return self.generic_visit(s)

    # -- expression calls ------------------------------------------------------------------
    def inline_expr(self, e: Call, f: PrimFunc) -> PrimExpr:
        lets: list[tuple[Var, PrimExpr]] = []
        s = f.body
        while isinstance(s, LetStmt):
            lets.append((s.var, s.value))
            s = s.body
        if not isinstance(s, Return):
            raise Diagnostic(f"cannot inline the call to '{e.op.name}': its value is not a "
                             "single tail 'return' (possibly after let bindings)", e.span)
        vars: dict[int, PrimExpr] = {}
        buffers: dict[int, Buffer] = {}
        outer: list[tuple[Var, PrimExpr]] = []
        for param, arg in zip(f.params, e.args):
            buf = f.buffer_of(param)
            if buf is not None:
                if not (isinstance(arg, Buffer) and arg.dtype == buf.dtype and arg.shape == buf.shape):
                    raise Diagnostic(f"cannot inline the call to '{e.op.name}' in an expression: "
                                     f"argument for '{buf.name}' is not a buffer of the same "
                                     "shape", e.span)
                buffers[id(buf)] = arg
                vars[id(buf.data)] = arg.data
            elif _trivial(arg) or (is_pure(arg) and _uses(f.body, param) <= 1):
                vars[id(param)] = arg
            else:
                outer.append((param, arg))
        sub = _Subst(vars, buffers)
        result = sub.visit(s.value)
        for var, value in reversed(lets):
            result = Let(var, sub.visit(value), result, e.span)
        for var, value in reversed(outer):
            result = Let(var, value, result, e.span)
        return result

    # -- statement calls -------------------------------------------------------------------
    def inline_stmt(self, e: Call, f: PrimFunc) -> Stmt:
        for n in walk(f.body):
            if isinstance(n, Return):
                raise Diagnostic(f"cannot inline the call to '{e.op.name}': it returns early",
                                 n.span or e.span)
        vars: dict[int, PrimExpr] = {}
        buffers: dict[int, Buffer] = {}
        lets: list[tuple[Var, PrimExpr]] = []
        aliases: list[tuple[Buffer, Var, PrimExpr | None, Buffer | None]] = []
        for param, arg in zip(f.params, e.args):
            buf = f.buffer_of(param)
            if buf is None:
                if _trivial(arg):
                    vars[id(param)] = arg
                else:
                    lets.append((param, arg))
            elif isinstance(arg, Buffer):
                vars[id(buf.data)] = arg.data
                aliases.append((buf, arg.data, arg.elem_offset, arg))
            elif isinstance(arg, Var) and arg.dtype.is_handle:
                vars[id(buf.data)] = arg
                aliases.append((buf, arg, None, None))
            else:
                raise Diagnostic(f"cannot inline the call to '{e.op.name}': argument for "
                                 f"'{buf.name}' is neither a buffer nor a data pointer", e.span)
        sub = _Subst(vars, buffers)
        decls: list[Buffer] = []
        for buf, data, offset, arg in aliases:
            shape = tuple(sub.visit(x) for x in buf.shape)
            if arg is not None and arg.dtype == buf.dtype and arg.shape == shape:
                sub.buffers[id(buf)] = arg
                continue
            view = replace(buf, data=data, shape=shape,
                           strides=tuple(sub.visit(x) for x in buf.strides), elem_offset=offset)
            sub.buffers[id(buf)] = view
            decls.append(view)
        body = sub.visit(f.body)
        for view in reversed(decls):
            body = DeclBuffer(view, body, e.span)
        for var, value in reversed(lets):
            body = LetStmt(var, value, body, e.span)
        return body


def _trivial(arg) -> bool:
    return isinstance(arg, (Var, IntImm, FloatImm))
