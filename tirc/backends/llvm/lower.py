"""The one TIR -> LLVM IR lowering: a module's functions, their statements (this file),
expressions (:mod:`tirc.backends.llvm.expr`) and calls (:mod:`tirc.backends.llvm.intrin`). Everything target-specific is
asked of the :class:`~tirc.backends.llvm.context.LLVMTargetContext`.

Variables are SSA values (TIR lets are immutable); loops use phi nodes; a buffer is its
data pointer plus ``elem_offset``. Statements after a ``return``/``break``/``continue``
land in a fresh unreachable block. Heap allocations still live when a function returns
or fails, or when a loop is left by ``break``/``continue``, are freed on the way out.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

from llvmlite import ir

from tirc.backends.llvm import types as lt
from tirc.backends.llvm.alias import AliasScopes, is_argument_data, is_noalias
from tirc.backends.llvm.builder import Builder, fast_names, new_block, private_constant
from tirc.backends.llvm.context import LLVMTargetContext
from tirc.backends.llvm.expr import ExprLowering, LaneByLane
from tirc.backends.llvm.text import bytes_constant
from tirc.backends.llvm.llvmlite_compat import opaque
from tirc.diagnostics import Diagnostic, Span
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.trampoline import drive
from tirc.ir.stmt import (
    AllocBuffer,
    AssertStmt,
    AttrStmt,
    Break,
    BufferStore,
    Continue,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    Return,
    SeqStmt,
    Stmt,
    While,
)
from tirc.records import record


class ModuleLowering:
    """One LLVM module: declares every function first (so calls may go forward), then
    lowers each body. Names and constants are created in a fixed order: same input, same IR."""

    def __init__(self, mod: IRModule, ctx: LLVMTargetContext, name: str = "module",
                 debug: str | None = None):
        self.mod, self.ctx = mod, ctx
        self.ir = ir.Module(name)
        fast_names(self.ir)
        self.ir.triple = ctx.triple
        if ctx.data_layout:
            self.ir.data_layout = ctx.data_layout
        # ``debug``: a kind of llvm_debug.KINDS, source lines in the IR; None: none
        self.debug = None  # an llvm_debug.DebugInfo with -g or -lineinfo
        if debug is not None:  # -g and -lineinfo only: not imported otherwise
            from tirc.backends.llvm.debug import DebugInfo
            spans = (f.span for f in mod.functions.values() if f.span is not None)
            self.debug = DebugInfo(self.ir, debug, next(spans, Span("<input>", 0, 0)).file)
        self.functions: dict[str, tuple[ir.Function, PrimFunc]] = {}
        self.strings: dict[str, ir.GlobalVariable] = {}
        self.loop_functions: set[str] = set()  # LLVM names of functions with a loop
        self.may_fail: set[str] | None = None  # functions that may fail (cpu_errors), when asked
        self.declared_at: dict[str, Span | None] = {}  # external functions: first use
        self.uncontracted: set[int] = set()  # id() of float adds not to contract
        self.constants: dict = {}  # integer constants (ExprLowering.const)

    def lower(self) -> ir.Module:
        for name, func in self.mod.functions.items():
            self.functions[name] = (self.declare_prim_func(name, func), func)
        for name, (llfunc, func) in self.functions.items():
            if self.ctx.split_accumulator_chains and "contract" in self.ctx.float_flags:
                from tirc.backends.llvm.accumulator_chains import latency_bound_adds
                self.uncontracted |= latency_bound_adds(func.body)
            FunctionLowering(self, name, func, llfunc).run()
        return self.ir

    def declare_prim_func(self, name: str, func: PrimFunc) -> ir.Function:
        ptr = self.ctx.pointer()
        ret = lt.value_type(func.ret_type, ptr, func.span) if func.ret_type else ir.VoidType()
        param_ptr = self.ctx.param_pointer(func)
        params = [lt.value_type(p.dtype, param_ptr, p.span or func.span) for p in func.params]
        llfunc = ir.Function(self.ir, ir.FunctionType(ret, params), self.ctx.symbol(name, func))
        fast_names(llfunc)
        for arg, p in zip(llfunc.args, func.params):
            arg.name = p.name
        self.ctx.decorate(llfunc, func)
        return llfunc

    def callee(self, name: str, span: Span | None) -> tuple[ir.Function, PrimFunc]:
        if name not in self.functions:
            raise Diagnostic(f"function '{name}' is called but not compiled for this target", span)
        return self.functions[name]

    def declare(self, name: str, fnty: ir.FunctionType, span: Span | None = None) -> ir.Function:
        """An external function (C symbol or LLVM intrinsic), declared once."""
        existing = self.ir.globals.get(name)
        if existing is None:
            self.declared_at[name] = span
            return ir.Function(self.ir, fnty, name)
        if not isinstance(existing, ir.Function) or existing.function_type != fnty:
            raise Diagnostic(f"'{name}' is used with two different signatures", span)
        return existing

    def string(self, text: str) -> ir.GlobalVariable:
        g = self.strings.get(text)
        if g is None:
            data = text.encode("utf-8") + b"\0"
            ty = ir.ArrayType(lt.I8, len(data))
            # in the address space of the target's pointers (NVPTX: global), which the
            # string's uses take it to be
            g = private_constant(self.ir, f".str.{len(self.strings)}", bytes_constant(ty, data),
                                 self.ctx.pointer())
            self.strings[text] = g
        return g


@record
class _FailBlock:
    """A shared failure block (``FunctionLowering.shared_fail``) and what jumps to it."""

    block: ir.Block
    heap: list  # the heap allocations live where its checks are, freed when it fails
    where: object  # the debug location of its first check (-g), or None
    entries: list = field(default_factory=list)  # (from block, kind, message parts)


@record
class _Loop:
    continue_to: ir.Block
    break_to: ir.Block
    heap_depth: int


class FunctionLowering(ExprLowering):
    """Lowers one function body. ``on_error`` decides what a failure does (default:
    record the error with the context and return -1); outlined parallel bodies change it."""

    def __init__(self, module: ModuleLowering, name: str, func: PrimFunc, llfunc: ir.Function):
        self.module, self.ctx, self.name, self.func, self.llfunc = module, module.ctx, name, func, llfunc
        self.constants = module.constants
        self.entry = llfunc.append_basic_block("entry")
        self.b = Builder(self.entry)
        self.vars: dict[int, ir.Value] = {}
        self.let_exprs: dict[int, PrimExpr] = {}  # let-bound var -> its value (llvm_subbyte)
        self.data_align: dict[int, int] = {}  # data pointer var -> known alignment
        self.offset_applied: set[int] = set()  # buffers whose pointer includes elem_offset
        self.loops: list[_Loop] = []
        self.heap: list[ir.Value] = []  # live heap allocations, innermost last
        # how a heap allocation that is not libc's is given back (device memory), by id
        self.releases: dict[int, Callable[[FunctionLowering, ir.Value], None]] = {}
        # the data of the first buffer declared (in a packed function, of its first
        # buffer argument: where an OpenCL allocation finds its context)
        self.first_declared: ir.Value | None = None
        self.fail_blocks: dict[tuple[int, ...], _FailBlock] = {}
        self.counter = 0
        self.alias = AliasScopes() if self.ctx.alias_scopes else None
        self.noalias = is_noalias(func)
        self.outlines = False  # its outermost loops become functions (ctx.outline_loop)
        self.scope = None  # the function's DISubprogram, with line info
        self.outer_lines: list = []  # debug locations of the statements being lowered
        if module.debug is not None:
            self.scope = module.debug.subprogram(llfunc, func.span)
            if func.span is not None:
                self.b.debug_metadata = module.debug.location(func.span, self.scope)

    def run(self) -> None:
        for arg, p in zip(self.llfunc.args, self.func.params):
            self.vars[id(p)] = arg
            buf = self.func.buffer_of(p)
            if buf is not None:  # a buffer argument: the caller passed data + elem_offset
                self.vars[id(buf.data)] = arg
                self.offset_applied.add(id(buf))
                if self.alias is not None and self.noalias:
                    self.alias.add(buf.data)
        self.outlines = self.ctx.outlines_loops(self)
        self.stmt(self.func.body)
        if not self.b.block.is_terminated:
            ret = self.llfunc.function_type.return_type
            self.free_heap(0)
            if isinstance(ret, ir.VoidType):
                self.b.ret_void()
            else:
                self.b.ret(ir.Constant(ret, None))
        self.seal()
        if self.outlines:
            self.ctx.loops_outlined(self)
        if self.alias is not None:
            self.alias.finish(self.module.ir, self.llfunc.name)

    def seal(self) -> None:
        """Fill the shared failure blocks; end the unreachable blocks left after
        terminators."""
        self._finish_fail_blocks()
        for bb in self.llfunc.blocks:
            if not bb.is_terminated:
                self.b.position_at_end(bb)
                self.b.unreachable()

    # -- helpers ----------------------------------------------------------------------
    def block(self, hint: str) -> ir.Block:
        self.counter += 1
        return new_block(self.llfunc, f"{hint}{self.counter}")

    def string(self, text: str) -> ir.Value:
        return self.module.string(text)

    def alloca(self, t: ir.Type, count: int | None = None, name: str = "", align: int = 0) -> ir.Value:
        """A stack slot in the entry block (so loops do not grow the stack)."""
        here = self.b.block
        at = self.entry.instructions[0] if self.entry.instructions else None
        b = Builder(self.entry)
        if at is not None:
            b.position_before(at)
        slot = b.alloca(t, size=ir.Constant(lt.I64, count) if count is not None else None, name=name)
        if align:
            slot.align = align
        opaque(slot, self.ctx.pointer("local"))
        self.b.position_at_end(here)
        return slot

    def call_intrinsic(self, name: str, args: list[ir.Value], ret: ir.Type | None = None,
                       suffix: str | None = None) -> ir.Value:
        """Overloaded LLVM intrinsic ``name``, its suffix the first argument's type."""
        ret = ret or args[0].type
        fnty = ir.FunctionType(ret, [a.type for a in args])
        suffix = suffix or lt.mangle(args[0].type)
        return self.b.call(self.module.declare(f"{name}.{suffix}", fnty), args)

    def math(self, name: str, base: str, args: list[ir.Value]) -> ir.Value:
        """A float math function, as the context provides it (lane by lane for C calls)."""
        choice = self.ctx.math(name, base)
        if choice is None:
            raise Diagnostic(f"T.{name} is not available on this target", self.func.span)
        how, symbol = choice
        if how == "llvm":
            return self.call_intrinsic(symbol, args)
        lanes = [self.lanes_of(a) for a in args]
        out = []
        for parts in zip(*lanes):
            t = parts[0].type
            wide = isinstance(t, ir.HalfType)
            if wide:
                parts = tuple(self.b.fpext(p, ir.FloatType()) for p in parts)
            ct = parts[0].type
            v = self.b.call(self.module.declare(symbol, ir.FunctionType(ct, [ct] * len(parts))), list(parts))
            out.append(self.b.fptrunc(v, t) if wide else v)
        return self.pack(out)

    def dead_block(self) -> None:
        """Continue in a fresh block after a terminator (unreachable code)."""
        self.b.position_at_end(self.block("after"))

    def free_heap(self, depth: int) -> None:
        for p in reversed(self.heap[depth:]):
            self.release(p)

    def release(self, p: ir.Value) -> None:
        """Give heap allocation ``p`` back: ``free``, or what the context that made it
        asked for (``allocate_buffer``)."""
        how = self.releases.get(id(p))
        if how is not None:
            how(self, p)
        else:
            free = self.module.declare("free", ir.FunctionType(ir.VoidType(), [self.ctx.pointer()]))
            self.b.call(free, [p])

    def emit_return(self, value: ir.Value | None) -> None:
        self.free_heap(0)
        if value is None or isinstance(self.llfunc.function_type.return_type, ir.VoidType):
            self.b.ret_void()
        else:
            self.b.ret(value)
        self.dead_block()

    @property
    def handles_errors(self) -> bool:
        """Whether an error of a private callee becomes this function's own error (an
        exported function raises it) rather than being left for the caller."""
        return self.ctx.is_exported(self.func)

    def fail(self, kind: ir.Value | None, message: ir.Value | None) -> None:
        """Raise an error (``kind``/``message`` C strings; None: already set) and leave."""
        if kind is not None:
            self.ctx.raise_error(self, kind, message)
        self.free_heap(0)
        ret = self.llfunc.function_type.return_type
        if isinstance(ret, ir.VoidType):
            self.b.ret_void()
        else:
            self.b.ret(ir.Constant(ret, -1) if isinstance(ret, ir.IntType) else ir.Constant(ret, None))
        self.dead_block()

    # -- statements -------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        """Lower ``s``. A ``stmt_*`` method that is a generator yields the statements
        under it, lowered in one loop (:mod:`tirc.ir.trampoline`), so long chains of
        statements use no Python stack."""
        inner, _ = self._begin_stmt(s)
        if inner is not None:
            drive(inner, self._begin_stmt, self._end_stmt)
            self._end_stmt(s, None)

    def _begin_stmt(self, s: Stmt):
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise Diagnostic(f"the LLVM backend cannot compile a {type(s).__name__} statement",
                             getattr(s, "span", None))
        lines = self.scope is not None and s.span is not None
        if lines:  # the enclosing statement's line, restored after
            self.outer_lines.append(self.b.debug_metadata)
            self.b.debug_metadata = self.module.debug.location(s.span, self.scope)
        steps = method(s)
        if steps is not None:
            if not lines:
                self.outer_lines.append(_SAME)
            return steps, None
        if lines:
            self.b.debug_metadata = self.outer_lines.pop()
        return None, None

    def _end_stmt(self, s: Stmt, _) -> None:
        outer = self.outer_lines.pop()
        if outer is not _SAME:
            self.b.debug_metadata = outer

    def stmt_SeqStmt(self, s: SeqStmt):
        for item in s.stmts:
            yield item

    def stmt_BufferStore(self, s: BufferStore) -> None:
        if len(s.indices) != 1:
            raise Diagnostic(f"buffer '{s.buffer.name}' is not flattened", s.span)
        try:
            self.store(s.buffer, s.indices[0], s.value, s.span)
        except LaneByLane:  # a scatter of a scalable vector
            raise Diagnostic(f"a store of scalable vectors ({s.value.dtype}) to elements that "
                             "are not consecutive is not supported", s.span) from None

    def stmt_LetStmt(self, s: LetStmt):
        v = self.expr(s.value)
        if isinstance(v, ir.NamedValue) and not v.name:
            v.name = s.var.name
        self.vars[id(s.var)] = v
        self.let_exprs[id(s.var)] = s.value
        if self.alias is not None and self.noalias and is_argument_data(s.value):
            self.alias.add(s.var)
        yield s.body

    def stmt_AttrStmt(self, s: AttrStmt):
        if not self.ctx.lower_attr(self, s):
            yield s.body

    def stmt_AssertStmt(self, s: AssertStmt):
        self.fail_unless(self.expr(s.condition), s.kind, tuple(s.message), "assert_ok")
        yield s.body

    def fail_unless(self, good: ir.Value, kind: str, message: str | tuple[str, ...],
                    hint: str = "check_ok") -> None:
        """Fail with ``kind: message`` unless the i1 ``good`` (almost always set); go on
        after. ``message``: a string, or parts whose concatenation is the message (an
        assert's: MakePackedAPI's share the function's signature as one part)."""
        ok = self.block(hint)
        fail = self.shared_fail()
        fail.entries.append((self.b.block, kind,
                             (message,) if isinstance(message, str) else message))
        likely(self.b.cbranch(good, ok, fail.block))
        self.b.position_at_end(ok)

    def shared_fail(self) -> _FailBlock:
        """The block the failing checks jump to: one failure path per function instead of
        one per check (a packed function has dozens), filled once the function is lowered
        (``_finish_fail_blocks``). One per set of live heap allocations, since failing
        frees them."""
        key = tuple(id(v) for v in self.heap)
        found = self.fail_blocks.get(key)
        if found is None:
            found = self.fail_blocks[key] = _FailBlock(
                self.block("assert_fail"), list(self.heap), self.b.debug_metadata)
        return found

    def _finish_fail_blocks(self) -> None:
        """Each shared failure block raises what the check that jumped there says: a phi
        per part of the kind and message that differs between its checks, the constant
        where they agree. The parts are raised as they are where the context takes
        parts (``error_parts``: tvm-ffi's ``TVMFFIErrorSetRaisedFromCStrParts``, so a
        packed function's checks share its signature string and the module shares the
        rest), joined into one message otherwise."""
        here, heap, where = self.b.block, self.heap, self.b.debug_metadata
        parts_ok = self.ctx.error_parts(self)
        ptr = self.ctx.pointer()
        for fb in self.fail_blocks.values():
            entries = fb.entries if parts_ok else [
                (bb, kind, ("".join(parts),)) for bb, kind, parts in fb.entries]
            self.b.position_at_end(fb.block)
            self.b.debug_metadata = fb.where
            self.heap = fb.heap
            width = max(1, *(len(parts) for _, _, parts in entries))
            columns = [[kind for _, kind, _ in entries]]
            columns += [[parts[i] if i < len(parts) else "" for _, _, parts in entries]
                        for i in range(width)]
            values = []
            for i, column in enumerate(columns):
                if all(text == column[0] for text in column):
                    values.append(self.string(column[0]))
                    continue
                phi = self.b.phi(ptr, "error_kind" if i == 0 else
                                 "error_message" if width == 1 else f"error_part{i - 1}")
                for (bb, _, _), text in zip(entries, column):
                    phi.add_incoming(self.string(text), bb)
                values.append(phi)
            if width == 1:
                self.fail(values[0], values[1])
            else:
                self.ctx.raise_error_parts(self, values[0], values[1:])
                self.fail(None, None)
        self.fail_blocks.clear()
        self.heap, self.b.debug_metadata = heap, where
        self.b.position_at_end(here)

    def stmt_Evaluate(self, s: Evaluate) -> None:
        if not isinstance(s.value, IntImm):
            self.expr(s.value)

    def stmt_Return(self, s: Return) -> None:
        self.emit_return(self.expr(s.value))

    def stmt_IfThenElse(self, s: IfThenElse):
        then_bb, end_bb = self.block("then"), self.block("endif")
        else_bb = self.block("else") if s.else_case is not None else end_bb
        self.b.cbranch(self.condition(s.condition), then_bb, else_bb)
        for bb, body in ((then_bb, s.then_case), (else_bb, s.else_case)):
            if body is None:
                continue
            self.b.position_at_end(bb)
            yield body
            if not self.b.block.is_terminated:
                self.b.branch(end_bb)
        self.b.position_at_end(end_bb)

    def condition(self, cond) -> ir.Value:
        """An ``if``/``while`` condition as an i1: an integer one (TVM keeps ``if n:`` as
        written) is true when nonzero."""
        value = self.expr(cond)
        if cond.dtype.is_bool:
            return value
        return self.b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))

    def stmt_While(self, s: While):
        self.module.loop_functions.add(self.llfunc.name)
        head, body, end = self.block("while_cond"), self.block("while_body"), self.block("while_end")
        self.b.branch(head)
        self.b.position_at_end(head)
        self.b.cbranch(self.condition(s.condition), body, end)
        self.b.position_at_end(body)
        self.loops.append(_Loop(head, end, len(self.heap)))
        yield s.body
        self.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(head)
        self.b.position_at_end(end)

    def stmt_Break(self, s: Break) -> None:
        self.jump_out(s, "break")

    def stmt_Continue(self, s: Continue) -> None:
        self.jump_out(s, "continue")

    def jump_out(self, s: Stmt, what: str) -> None:
        if not self.loops:
            raise Diagnostic(f"'{what}' outside a loop", s.span)
        loop = self.loops[-1]
        self.free_heap(loop.heap_depth)
        self.b.branch(loop.break_to if what == "break" else loop.continue_to)
        self.dead_block()

    def stmt_For(self, s: For):
        if self.outlines and not self.loops:
            self.ctx.outline_loop(self, s)
            return
        self.module.loop_functions.add(self.llfunc.name)
        if s.kind == "parallel":
            self.ctx.lower_parallel(self, s)
        elif s.kind == "thread_binding":
            raise Diagnostic("a thread-bound loop reached host code generation", s.span)
        else:  # serial; unrolled and vectorized leftovers run as serial loops
            yield from self.loop_steps(s.loop_var, self.expr(s.min), self.expr(s.extent),
                                       self.expr(s.step) if s.step is not None else None, s.body)

    def serial_loop(self, var: Var, start: ir.Value, extent: ir.Value, step: ir.Value | None,
                    body: Stmt) -> None:
        """``for var in range(start, start + extent, step)`` with a phi for ``var``."""
        drive(self.loop_steps(var, start, extent, step, body), self._begin_stmt, self._end_stmt)

    def loop_steps(self, var: Var, start: ir.Value, extent: ir.Value, step: ir.Value | None,
                   body: Stmt):
        """:meth:`serial_loop` as steps of a statement walk (yields ``body``)."""
        self.module.loop_functions.add(self.llfunc.name)
        if extent.type != start.type:
            extent = self.int_cast(extent, start.type)
        end_value = self.b.add(start, extent)
        pre = self.b.block
        head, body_bb, latch, end = (self.block(n) for n in ("for_head", "for_body", "for_next", "for_end"))
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.phi(start.type, name=var.name)
        i.add_incoming(start, pre)
        self.b.cbranch(self.b.icmp_signed("<", i, end_value), body_bb, end)
        self.b.position_at_end(body_bb)
        self.vars[id(var)] = i
        self.loops.append(_Loop(latch, end, len(self.heap)))
        yield body
        self.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(latch)
        self.b.position_at_end(latch)
        one = ir.Constant(start.type, 1) if step is None else self.int_cast(step, start.type)
        nxt = self.b.add(i, one)
        i.add_incoming(nxt, latch)
        self.b.branch(head)
        self.b.position_at_end(end)

    def stmt_DeclBuffer(self, s: DeclBuffer):
        data = self.expr(s.buffer.data)  # defined before the view (a clear error otherwise)
        if self.first_declared is None:
            self.first_declared = data
        yield s.body

    def stmt_AllocBuffer(self, s: AllocBuffer):
        if self.outlines and not self.loops:  # the allocation and its uses, outlined together
            self.ctx.outline_loop(self, s)
            return
        buf = s.buffer
        elem = lt.memory_type(buf.dtype, self.ctx.pointer(), s.span)
        count_expr = _product(buf.shape)
        count = count_expr.value if isinstance(count_expr, IntImm) else None
        size = lt.byte_size(buf.dtype)
        if buf.dtype.is_subbyte:  # packed: bytes, not elements
            from tirc.backends.llvm.subbyte import allocation_bytes
            if count is None:
                raise Diagnostic(f"sub-byte buffer '{buf.name}' ({buf.dtype}) needs a constant "
                                 "size", s.span)
            elem, count, size = lt.I8, allocation_bytes(buf.dtype, count), 1
        if count is not None:
            nbytes: ir.Value = ir.Constant(lt.I64, count * size)
        else:
            n = self.int_cast(self.expr(count_expr), lt.I64)
            nbytes = self.b.mul(n, ir.Constant(lt.I64, size))
        ptr, align, heap = self.ctx.allocate_buffer(self, buf, nbytes,
                                                    count * size if count is not None else None,
                                                    elem, count)
        self.vars[id(buf.data)] = ptr
        self.data_align[id(buf.data)] = align
        if self.alias is not None:
            self.alias.add(buf.data)
        if heap:
            self.heap.append(ptr)
            if callable(heap):
                self.releases[id(ptr)] = heap
        yield s.body
        if heap:
            self.heap.pop()
            if not self.b.block.is_terminated:
                self.release(ptr)


_SAME = object()  # a statement that left the line as it was (outer_lines)


def likely(branch: ir.Instruction) -> ir.Instruction:
    """Mark a conditional branch as almost always taking its first (true) successor, as
    TVM does for its checks: without it LLVM weighs every error exit 50/50, so the code
    after a few dozen argument checks looks cold (no loop alignment, cold layout)."""
    module = branch.module
    weights = getattr(module, "tirc_likely_weights", None)
    if weights is None:  # one metadata node per module (add_metadata is slow to look up)
        branch.set_weights([(1 << 20) - 1, 1])
        module.tirc_likely_weights = branch.metadata["prof"]
    else:
        branch.set_metadata("prof", weights)
    return branch


def _product(shape: tuple[PrimExpr, ...]) -> PrimExpr:
    from tirc.ir.ffi_abi import mul
    out: PrimExpr = IntImm(shape[0].dtype if shape else DataType("int64"), 1)
    for s in shape:
        out = mul(out, s)
    return out
