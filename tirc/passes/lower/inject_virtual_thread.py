"""InjectVirtualThread: virtual thread axes (``vthread``, ``vthread.x/y/z``, ``cthread``)
become loops inside each real thread, as TVM's pass of the same name does.

A virtual thread is no hardware thread: ``T.launch_thread("vthread", 2)`` (or
``T.thread_binding(2, thread="vthread.x")``, which LowerThreadBindings has made the same
AttrStmt) over a body means "the body once per virtual thread, in any interleaving". The
pass writes that as an unrolled loop over the axis's variable (UnrollLoop then makes the
copies). Where the body holds a barrier (``T.tvm_storage_sync``), every virtual thread
must reach it before any goes past it, so the loop is pushed inward instead, as TVM
interleaves: a statement sequence gets one loop per statement that uses the axis
(statements that do not are run once, as in TVM), through serial loops, ifs, lets and
attributes whose own expressions do not use the axis; an allocation over a barrier whose
body uses the axis gets one copy per virtual thread (``size * extent`` elements, copy
``v`` at ``v * size``). Anything else that would put a barrier inside a virtual-thread
loop is a diagnostic, as is an extent that is not a constant.

Runs after FlattenBuffer (allocations are one-dimensional) and before UnrollLoop.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import (AllocBuffer, AttrStmt, BufferStore, For, IfThenElse, IterVar,
                          LetStmt, SeqStmt, Stmt)
from tirc.ir.renew import substitute
from tirc.passes.analysis.features import is_virtual_thread
from tirc.ir.visitor import Mutator, walk
from tirc.ir.index_arith import arith, cast

_KEYS = (THREAD_EXTENT, VIRTUAL_THREAD)


def _has_barrier(node) -> bool:
    return any(isinstance(n, Call) and n.op == "tvm_storage_sync" for n in walk(node))


def _uses(node, var: Var) -> bool:
    return node is not None and any(n is var for n in walk(node))


class _Expand(Mutator):
    """Accesses of ``old`` become accesses of ``new`` at ``var * size + index``."""

    def __init__(self, old: Buffer, new: Buffer, var: Var, size: PrimExpr):
        self.old, self.new, self.var, self.size = old, new, var, size

    def _index(self, indices):
        (i,) = indices
        base = arith("mul", cast(self.var, i.dtype.element()), cast(self.size, i.dtype.element()))
        return (arith("add", base, i),)

    def visit_BufferLoad(self, e: BufferLoad):
        e = self.generic_visit(e)
        if e.buffer is not self.old:
            return e
        return replace(e, buffer=self.new, indices=self._index(e.indices))

    def visit_BufferStore(self, s: BufferStore):
        s = self.generic_visit(s)
        if s.buffer is not self.old:
            return s
        return replace(s, buffer=self.new, indices=self._index(s.indices))


class _Inject(Mutator):
    expressions = False  # its methods are for statements: expressions stay as they are

    def visit_AttrStmt(self, s: AttrStmt):
        s = (yield from self.descend(s))
        node = s.node
        if not (isinstance(node, IterVar) and s.key in _KEYS and is_virtual_thread(node.thread_tag)):
            return s
        if not isinstance(s.value, IntImm):
            raise Diagnostic(f"virtual thread '{node.thread_tag}' needs a constant extent",
                             s.span)
        return _Loop(node.var, s.value, node.thread_tag).inject(s.body)


class _Loop:
    """The loop of one virtual thread axis, pushed inward past barriers."""

    def __init__(self, var: Var, extent: IntImm, tag: str):
        self.var, self.extent, self.tag = var, extent, tag
        self.loops = 0

    def loop(self, body: Stmt) -> Stmt:
        """``body`` once per virtual thread; each loop binds a variable of its own (a
        barrier may split the axis into several loops, and no Var is defined twice)."""
        v = self.var
        if self.loops:
            v = Var(v.name, v.dtype, v.ptr, v.span)
            body = substitute(body, {id(self.var): v})
        self.loops += 1
        return For(v, IntImm(v.dtype, 0), IntImm(v.dtype, self.extent.value), "unrolled", body,
                   span=getattr(body, "span", None))

    def refuse(self, s: Stmt, what: str) -> Diagnostic:
        return Diagnostic(f"virtual thread '{self.tag}' around a barrier: {what} uses the "
                          "virtual thread, so the barrier cannot be reached by every virtual "
                          "thread at once", getattr(s, "span", None))

    def inject(self, s: Stmt) -> Stmt:
        if not _uses(s, self.var):
            return s
        if not _has_barrier(s):
            return self.loop(s)
        if isinstance(s, SeqStmt):
            return replace(s, stmts=tuple(self.inject(c) for c in s.stmts))
        if isinstance(s, For):
            if _uses(s.min, self.var) or _uses(s.extent, self.var) or _uses(s.step, self.var):
                raise self.refuse(s, "the bounds of a loop")
            return replace(s, body=self.inject(s.body))
        if isinstance(s, IfThenElse):
            if _uses(s.condition, self.var):
                raise self.refuse(s, "the condition of an if")
            return replace(s, then_case=self.inject(s.then_case),
                           else_case=None if s.else_case is None else self.inject(s.else_case))
        if isinstance(s, LetStmt):
            if _uses(s.value, self.var):
                raise self.refuse(s, "the value of a let")
            return replace(s, body=self.inject(s.body))
        if isinstance(s, AttrStmt):
            if _uses(s.value, self.var) or (isinstance(s.node, PrimExpr) and _uses(s.node, self.var)):
                raise self.refuse(s, "an attribute")
            return replace(s, body=self.inject(s.body))
        if isinstance(s, AllocBuffer):
            return self.expand(s)
        raise self.refuse(s, f"a {type(s).__name__}")

    def expand(self, s: AllocBuffer) -> Stmt:
        b = s.buffer
        if len(b.shape) != 1 or not isinstance(b.shape[0], IntImm):
            raise self.refuse(s, f"the allocation of '{b.name}' (not flat and constant)")
        n = b.shape[0]
        data = Var(b.data.name, b.data.dtype, b.data.ptr, b.data.span)
        new = replace(b, data=data, shape=(IntImm(n.dtype, n.value * self.extent.value),))
        body = _Expand(b, new, self.var, n).visit(s.body)
        return replace(s, buffer=new, body=self.inject(body))


def inject_virtual_thread(mod: IRModule, ctx) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        if not any(isinstance(n, AttrStmt) and isinstance(n.node, IterVar)
                   and is_virtual_thread(n.node.thread_tag) for n in walk(f.body)):
            funcs[name] = f
            continue
        funcs[name] = f.with_body(_Inject().visit(f.body))
    return replace(mod, functions=funcs)
