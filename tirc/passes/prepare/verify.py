"""Verify: well-formedness of a module. Every variable and buffer is defined before use
and used only inside its scope; stores match their buffer's dtype; indices match a
buffer's rank; calls name functions of the module with matching arguments; ``return``
stands only in functions that return a value; storage scopes are known; no constant
fact makes the program undefined (:mod:`tirc.passes.analysis.constant_facts`: an integer
division by a constant 0, a constant index outside its buffer)."""
from __future__ import annotations

from contextlib import contextmanager

from tirc.diagnostics import Diagnostic, Span
from tirc.ir.attrs import GLOBAL_SYMBOL, THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import access_dtype, SCOPES, Buffer, is_storage_scope
from tirc.ir.expr import (BinOp, BufferLoad, Call, GlobalVar, IntImm, Let, PrimExpr, Select,
                          StringImm, Var)
from tirc.ir.function import IRModule, PrimFunc
import re

from tirc.ir.dtype import MAX_LANES
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, Break, BufferStore, Continue,
                          DeclBuffer, For, IfThenElse, IterVar, LetStmt, Return, While,
                          is_loop_pragma)
from tirc.ir.visitor import Visitor, walk
from tirc.ir.block import BufferRegion, SBlock, SBlockRealize
from tirc.passes.analysis.constant_facts import check_function


def verify(mod: IRModule, buildable_scopes: bool = True) -> IRModule:
    """Raise a :class:`Diagnostic` for the first problem found; return ``mod``, with the
    warnings found in its facts (``mod.facts.warnings``).
    Storage scopes must be TVM's; with ``buildable_scopes`` (the pipeline), also ones tirc
    builds (``tirc check`` and ``tirc print`` accept TVM's others, as ``local.L0A``)."""
    symbols: dict[str, str] = {}
    warnings: list[Diagnostic] = []
    for name, func in mod.functions.items():
        if not func.private:
            symbol = func.attrs.get(GLOBAL_SYMBOL, name)
            if symbol in symbols:
                raise Diagnostic(f"functions '{symbols[symbol]}' and '{name}' both export the "
                                 f"symbol '{symbol}'", func.span)
            symbols[symbol] = name
        _FunctionVerifier(mod, name, func, buildable_scopes).run()
        # constant division by zero, constant index out of bounds; warnings: a constant
        # index outside its dimension but inside the buffer
        warnings += check_function(func)
    if warnings:
        from dataclasses import replace
        from tirc.ir.facts import BuildWarning
        mod = replace(mod, facts=mod.facts.with_warnings(
            BuildWarning(w.message, w.span) for w in warnings))
    return mod


# A symbol every assembler and linker takes unquoted: C identifiers, with '.', '$' and '@'
# (versioned and mangled names, CUDA's __nv_* and llvm.* intrinsics).
_SYMBOL = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$@]*")


def check_extern_name(name: str, span: Span | None) -> None:
    """An external function's name must be a symbol a linker accepts."""
    if not name:
        raise Diagnostic("the name of an external function is empty", span)
    if not _SYMBOL.fullmatch(name):
        bad = next((c for c in name if not re.fullmatch(r"[A-Za-z0-9_.$@]", c)), name[0])
        raise Diagnostic(f"external function name {name!r} is not a linker symbol: it holds "
                         f"{bad!r}; a symbol is letters, digits, '_', '.', '$' and '@', not "
                         "starting with a digit", span)


def _bound_vars(body) -> set[int]:
    """Ids of every variable some statement of ``body`` binds."""
    out: set[int] = set()
    for node in walk(body):
        if isinstance(node, For):
            out.add(id(node.loop_var))
        elif isinstance(node, (LetStmt, Let)):
            out.add(id(node.var))
        elif isinstance(node, AttrStmt) and isinstance(node.node, IterVar):
            out.add(id(node.node.var))
        elif isinstance(node, AllocBuffer):
            out.add(id(node.buffer.data))
        elif isinstance(node, SBlock):
            out.update(id(iv.var) for iv in node.iter_vars)
    return out


class _FunctionVerifier(Visitor):
    def __init__(self, mod: IRModule, name: str, func: PrimFunc, buildable_scopes: bool = True):
        self.buildable_scopes = buildable_scopes
        self.mod = mod
        self.name = name
        self.func = func
        self.vars: set[int] = set()
        self.buffers: set[int] = set()
        self.where: list[Span | None] = [func.span]
        self.loop_depth = 0  # loops around the statement visited: break/continue need one

    # -- helpers ---------------------------------------------------------------------
    def span(self) -> Span | None:
        for s in reversed(self.where):
            if s is not None:
                return s
        return None

    def error(self, message: str, span: Span | None = None) -> None:
        raise Diagnostic(message, span or self.span())

    def enter(self, node) -> None:
        # A variable's own span is where it was defined; report uses at the enclosing node.
        self.where.append(None if isinstance(node, Var) else getattr(node, "span", None))

    def leave(self, node) -> None:
        self.where.pop()

    @contextmanager
    def scope(self, define_vars=(), define_buffers=()):
        """``define_vars`` and ``define_buffers`` defined inside."""
        added_v = [v for v in define_vars if id(v) not in self.vars]
        added_b = [b for b in define_buffers if id(b) not in self.buffers]
        self.vars.update(id(v) for v in added_v)
        self.buffers.update(id(b) for b in added_b)
        try:
            yield
        finally:
            self.vars.difference_update(id(v) for v in added_v)
            self.buffers.difference_update(id(b) for b in added_b)

    def check_buffer_decl(self, b: Buffer) -> None:
        if not is_storage_scope(b.scope):
            self.error(f"unknown storage scope '{b.scope}' of buffer '{b.name}'; expected one "
                       "of: " + ", ".join(SCOPES), b.span)
        if self.buildable_scopes and b.scope not in SCOPES:
            self.error(f"storage scope '{b.scope}' of buffer '{b.name}' is not supported: "
                       "tirc builds " + ", ".join(SCOPES), b.span)
        for e in (*b.shape, *b.strides, *([b.elem_offset] if b.elem_offset is not None else [])):
            self.visit(e)

    # -- the function ----------------------------------------------------------------------
    def run(self) -> None:
        f = self.func
        self.bound_somewhere = _bound_vars(f.body)
        for p in f.params:
            self.vars.add(id(p))
        for _, buf in f.buffer_map:
            self.vars.add(id(buf.data))
            self.buffers.add(id(buf))
            for e in (*buf.shape, *buf.strides, *([buf.elem_offset] if buf.elem_offset is not None else [])):
                if isinstance(e, Var):
                    self.vars.add(id(e))
        for _, buf in f.buffer_map:
            self.check_buffer_decl(buf)
        self.visit(f.body)

    # -- definitions -------------------------------------------------------------------
    def visit_Var(self, v: Var) -> None:
        if id(v) not in self.vars:
            if id(v) in self.bound_somewhere:
                self.error(f"variable '{v.name}' is used outside the scope that defines it")
            self.error(f"undefined variable '{v.name}'")

    def visit_BinOp(self, e: BinOp) -> None:
        # the front end types operators as TVM does; a pass that substitutes a variable of
        # another dtype (an int64 loop variable by an int32 thread axis) breaks this
        if e.a.dtype != e.b.dtype:
            self.error(f"the operands of '{e.op}' have different dtypes: {e.a.dtype} and "
                       f"{e.b.dtype}", e.span)
        self.generic_visit(e)

    def visit_Select(self, e: Select) -> None:
        if e.true_value.dtype != e.false_value.dtype:
            self.error(f"the values of T.Select have different dtypes: {e.true_value.dtype} "
                       f"and {e.false_value.dtype}", e.span)
        self.generic_visit(e)

    def visit_For(self, s: For):
        self.visit(s.min)
        self.visit(s.extent)
        for e, what in ((s.min, "start"), (s.extent, "extent")):
            if not e.dtype.is_integer or e.dtype.lanes != 1:
                self.error(f"loop {what} must be a scalar integer, got {e.dtype}", s.span)
        if s.kind == "thread_binding" and isinstance(s.extent, IntImm) and s.extent.value < 1:
            tag = s.thread_tag or "a thread"
            self.error(f"'{tag}' is bound with extent {s.extent.value}: a thread extent must "
                       "be at least 1", s.span)
        if s.kind == "vectorized" and isinstance(s.extent, IntImm) and s.extent.value > MAX_LANES:
            self.error(f"vectorized loop of {s.extent.value} lanes: a vector has at most "
                       f"{MAX_LANES} lanes (TVM's DataType limit, on every target)", s.span)
        self.loop_depth += 1
        try:
            with self.scope([s.loop_var]):
                yield s.body
        finally:
            self.loop_depth -= 1

    def visit_Break(self, s: Break) -> None:
        if self.loop_depth == 0:
            self.error("'break' outside a loop", s.span)

    def visit_Continue(self, s: Continue) -> None:
        if self.loop_depth == 0:
            self.error("'continue' outside a loop", s.span)

    def visit_LetStmt(self, s: LetStmt):
        self.visit(s.value)
        if s.value.dtype != s.var.dtype:
            self.error(f"'{s.var.name}' is {s.var.dtype} but is bound to a {s.value.dtype} value", s.span)
        with self.scope([s.var]):
            yield s.body

    def visit_Let(self, e: Let) -> None:
        self.visit(e.value)
        with self.scope([e.var]):
            self.visit(e.body)

    def visit_AttrStmt(self, s: AttrStmt):
        self.visit(s.value)
        if s.key in (THREAD_EXTENT, VIRTUAL_THREAD) and isinstance(s.value, IntImm) \
                and s.value.value < 1:
            tag = s.node.thread_tag if isinstance(s.node, IterVar) else s.key
            self.error(f"'{tag}' is launched with extent {s.value.value}: a thread extent "
                       "must be at least 1", s.span)
        if isinstance(s.node, IterVar):
            with self.scope([s.node.var]):
                yield s.body
            return
        if isinstance(s.node, Buffer):
            self.visit_buffer(s.node)
        elif isinstance(s.node, PrimExpr) and not is_loop_pragma(s):
            self.visit(s.node)
        yield s.body

    def visit_AllocBuffer(self, s: AllocBuffer):
        self.check_buffer_decl(s.buffer)
        with self.scope([s.buffer.data], [s.buffer]):
            yield s.body

    def visit_DeclBuffer(self, s: DeclBuffer):
        self.check_buffer_decl(s.buffer)
        self.visit(s.buffer.data)
        with self.scope((), [s.buffer]):
            yield s.body

    def visit_SBlockRealize(self, s: SBlockRealize):
        block = s.block
        if len(s.iter_values) != len(block.iter_vars):
            self.error(f"block '{block.name_hint}' has {len(block.iter_vars)} iterators but "
                       f"{len(s.iter_values)} bindings", s.span)
        for iv, value in zip(block.iter_vars, s.iter_values):
            self.visit(value)
            if value.dtype != iv.var.dtype:
                self.error(f"block iterator '{iv.var.name}' is {iv.var.dtype} but is bound to a "
                           f"{value.dtype} value", iv.span or s.span)
        self.check_condition(s.predicate, "T.where")
        self.visit(s.predicate)
        self.where.append(block.span)
        try:
            yield from self.visit_SBlock(block)
        finally:
            self.where.pop()

    def visit_SBlock(self, s: SBlock):
        for iv in s.iter_vars:
            self.visit(iv.dom.min)
            self.visit(iv.dom.extent)
        for b in s.alloc_buffers:
            self.check_buffer_decl(b)
        defined_vars = [iv.var for iv in s.iter_vars] + [b.data for b in s.alloc_buffers]
        defined_vars += [m.buffer.data for m in s.match_buffers]
        # the variables of a matched buffer's signature are bound by the match
        defined_vars += [e for m in s.match_buffers
                         for e in (*m.buffer.shape, *m.buffer.strides, m.buffer.elem_offset)
                         if isinstance(e, Var) and e not in defined_vars]
        buffers = list(s.alloc_buffers) + [m.buffer for m in s.match_buffers]
        with self.scope(defined_vars, buffers):
            for m in s.match_buffers:  # a matched region may use the block's iterators
                self.visit_BufferRegion(m.source)
                self.check_buffer_decl(m.buffer)
            for region in (*s.reads, *s.writes):
                self.visit_BufferRegion(region)
            if s.init is not None:
                yield s.init
            yield s.body

    def visit_BufferRegion(self, r: BufferRegion) -> None:
        self.visit_buffer(r.buffer)
        if len(r.region) != len(r.buffer.shape):
            self.error(f"buffer '{r.buffer.name}' has {len(r.buffer.shape)} dimensions but the "
                       f"region names {len(r.region)}", r.span)
        for rng in r.region:
            self.visit(rng.min)
            self.visit(rng.extent)

    # -- uses --------------------------------------------------------------------------
    def visit_buffer(self, b: Buffer) -> None:
        if id(b) not in self.buffers:
            self.error(f"buffer '{b.name}' is used outside the scope that defines it")

    def check_indices(self, b: Buffer, indices) -> None:
        if len(indices) != len(b.shape):
            self.error(f"buffer '{b.name}' has {len(b.shape)} dimension{'s' if len(b.shape) != 1 else ''} "
                       f"but is indexed with {len(indices)}")
        for i in indices:
            if not i.dtype.element().is_integer:
                self.error(f"index of buffer '{b.name}' must be an integer, got {i.dtype}")

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.visit_buffer(e.buffer)
        self.check_indices(e.buffer, e.indices)
        for i in e.indices:
            self.visit(i)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.visit_buffer(s.buffer)
        self.check_indices(s.buffer, s.indices)
        for i in s.indices:
            self.visit(i)
        self.visit(s.value)
        want = access_dtype(s.buffer, s.indices)
        if s.value.dtype != want:
            self.error(f"cannot store a {s.value.dtype} value into buffer '{s.buffer.name}' of "
                       f"{want}", s.span)

    def visit_IfThenElse(self, s: IfThenElse):
        self.check_condition(s.condition, "if", integer=True)
        yield from self.descend(s)

    def visit_While(self, s: While):
        self.check_condition(s.condition, "while", integer=True)
        self.loop_depth += 1
        try:
            yield from self.descend(s)
        finally:
            self.loop_depth -= 1

    def visit_AssertStmt(self, s: AssertStmt):
        self.check_condition(s.condition, "assert")
        yield from self.descend(s)

    def check_condition(self, cond: PrimExpr, what: str, integer: bool = False) -> None:
        """A bool; an ``if``/``while`` also takes a scalar integer (true when nonzero)."""
        if integer and cond.dtype.is_integer and cond.dtype.lanes == 1:
            return
        if not cond.dtype.is_bool:
            self.error(f"the condition of '{what}' must be bool, got {cond.dtype}",
                       getattr(cond, "span", None))

    def visit_Return(self, s: Return) -> None:
        ret = self.func.ret_type
        if ret is None or ret.is_void:
            self.error(f"'return' with a value in function '{self.name}', which declares no "
                       "return type", s.span)
        self.visit(s.value)
        if s.value.dtype != ret:
            self.error(f"function '{self.name}' returns {ret} but this returns {s.value.dtype}", s.span)

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar):
            self.check_module_call(e)
        elif e.op in ("call_extern", "call_pure_extern") and e.args \
                and isinstance(e.args[0], StringImm):
            check_extern_name(e.args[0].value, e.span or self.span())
        for a in e.args:
            if isinstance(a, Buffer):
                self.visit_buffer(a)
            else:
                self.visit(a)

    def check_module_call(self, e: Call) -> None:
        name = e.op.name
        if name not in self.mod.functions:
            self.error(f"call to '{name}', which is not a function of this module", e.span)
        callee = self.mod.functions[name]
        if len(e.args) != len(callee.params):
            self.error(f"'{name}' takes {len(callee.params)} argument"
                       f"{'s' if len(callee.params) != 1 else ''}, got {len(e.args)}", e.span)
        for i, (arg, param) in enumerate(zip(e.args, callee.params)):
            expected = callee.buffer_of(param)
            if expected is not None:
                self.check_buffer_arg(name, i, arg, expected, e.span)
            elif isinstance(arg, Buffer):
                self.error(f"argument {i + 1} of '{name}' is the buffer '{arg.name}', but "
                           f"parameter '{param.name}' is a {param.dtype} scalar", e.span)
            elif arg.dtype != param.dtype:
                self.error(f"argument {i + 1} of '{name}' is {arg.dtype}, but parameter "
                           f"'{param.name}' is {param.dtype}", e.span)

    def check_buffer_arg(self, name: str, i: int, arg, expected: Buffer, span) -> None:
        if not isinstance(arg, Buffer):
            if isinstance(arg, PrimExpr) and arg.dtype.is_handle:
                return  # a data pointer (A.data): the callee's buffer describes it
            self.error(f"argument {i + 1} of '{name}' must be a buffer like "
                       f"'{expected.name}', got a {arg.dtype} value", span)
        if arg.dtype != expected.dtype:
            self.error(f"argument {i + 1} of '{name}': buffer '{arg.name}' holds {arg.dtype}, "
                       f"parameter '{expected.name}' wants {expected.dtype}", span)
        if len(arg.shape) != len(expected.shape):
            self.error(f"argument {i + 1} of '{name}': buffer '{arg.name}' has "
                       f"{len(arg.shape)} dimensions, parameter '{expected.name}' has "
                       f"{len(expected.shape)}", span)
        for d, (a, b) in enumerate(zip(arg.shape, expected.shape)):
            if isinstance(a, IntImm) and isinstance(b, IntImm) and a.value != b.value:
                self.error(f"argument {i + 1} of '{name}': shape mismatch in dimension {d}: "
                           f"buffer '{arg.name}' has {a.value}, parameter '{expected.name}' "
                           f"wants {b.value}", span)
