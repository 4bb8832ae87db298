"""TVM's ``ConvertSSA`` on one statement: a variable or buffer defined a second time
(the copies of a loop body that LoopPartition makes) gets a fresh copy in the scope of
that definition, so that no Var or Buffer is defined twice."""
from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Let, PrimExpr, Var
from tirc.ir.renew import map_buffer
from tirc.ir.stmt import AllocBuffer, DeclBuffer, For, LetStmt, Stmt
from tirc.ir.visitor import Mutator


class _SSA(Mutator):

    def __init__(self) -> None:
        self.defined: set[int] = set()
        self.vars: dict[int, Var] = {}
        self.buffers: dict[int, Buffer] = {}
        self.cache: dict[int, Buffer] = {}

    def visit_Var(self, v: Var) -> Var:
        return self.vars.get(id(v), v)

    def visit_buffer(self, b: Buffer) -> Buffer:
        new = self.buffers.get(id(b)) or self.cache.get(id(b))
        if new is None:
            new = self.cache[id(b)] = map_buffer(self, b)
        return new

    def _define(self, old: Var, fresh_needed: list) -> None:
        if id(old) in self.defined:
            fresh_needed.append(old)
        self.defined.add(id(old))

    def _scoped(self, s, names: list[Var], buffer: Buffer | None, rebuild):
        saved_vars = {id(v): self.vars.get(id(v)) for v in names}
        saved_buf = self.buffers.get(id(buffer)) if buffer is not None else None
        for v in names:
            self.vars[id(v)] = Var(v.name, v.dtype, v.ptr, v.span)
        self.cache = {}
        try:
            return rebuild()
        finally:
            for k, v in saved_vars.items():
                if v is None:
                    self.vars.pop(k, None)
                else:
                    self.vars[k] = v
            if buffer is not None:
                if saved_buf is None:
                    self.buffers.pop(id(buffer), None)
                else:
                    self.buffers[id(buffer)] = saved_buf
            self.cache = {}

    def _def_vars(self, s, vars_: list[Var], buffer: Buffer | None = None):
        fresh: list[Var] = []
        for v in vars_:
            self._define(v, fresh)
        buffer_fresh = buffer is not None and id(buffer) in self.defined
        if buffer is not None:
            self.defined.add(id(buffer))
        if not fresh and not buffer_fresh:
            return self.generic_visit(s)

        def rebuild():
            if buffer_fresh:
                self.buffers[id(buffer)] = map_buffer(self, buffer, force=True)
            return self.generic_visit(s)
        return self._scoped(s, fresh, buffer if buffer_fresh else None, rebuild)

    def visit_For(self, s: For) -> Stmt:
        return self._def_vars(s, [s.loop_var])

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        return self._def_vars(s, [s.var])

    def visit_Let(self, e: Let) -> PrimExpr:
        return self._def_vars(e, [e.var])

    def visit_AllocBuffer(self, s: AllocBuffer) -> Stmt:
        return self._def_vars(s, [s.buffer.data], s.buffer)

    def visit_DeclBuffer(self, s: DeclBuffer) -> Stmt:
        return self._def_vars(s, [], s.buffer)


def convert_ssa(s: Stmt) -> Stmt:
    """``s`` with every second definition of a variable or buffer renewed."""
    return _SSA().visit(s)
