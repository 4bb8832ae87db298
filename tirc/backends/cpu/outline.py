"""Exported packed functions as a cold wrapper and outlined loops.

After MakePackedAPI an exported function is mostly its argument checks: dozens of
compares and branches, with the kernel's loops at the end. LLVM's -O3 pipeline and
its SelectionDAG instruction selector spend most of their time on those checks (about
nine tenths of a small elementwise function's optimisation and emission), which run
once per call. So a function whose statements outside its loops only check, bind and
return is lowered as two kinds of LLVM function:

* each outermost loop nest, or allocation with the loops that use it, becomes an
  internal function ``<symbol>.loop<N>`` taking the values it uses as arguments and
  returning 0, or -1 after raising an error (as the function itself would, its heap
  allocations freed), which gets the whole -O3 pipeline as before;
* the function itself, its checks, unpacking and the calls of those loop functions,
  is marked ``optnone noinline``: LLVM runs no optimisation passes on it and selects
  its instructions with the fast selector.

The loop functions see the same alias scopes and known alignments as an inlined loop
would, and the values of the enclosing device attributes (``device_id``, which a kernel
launch in the loop uses) as arguments; the data of a ``tirx.noalias`` function's buffers
are ``noalias`` parameters, as in TVM's compute function. Functions with anything else
outside their loops and allocations (stores, ``while`` loops), and loops that return,
run in parallel, set device attributes or call module or packed functions, are lowered
whole as before.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.backends.cpu.packed_call import PACKED_CALLS
from tirc.backends.llvm import types as lt
from tirc.backends.llvm.lower import FunctionLowering, likely
from tirc.ir.attrs import C_API, DEVICE_ID, DEVICE_TYPE
from tirc.ir.expr import Call, GlobalVar
from tirc.ir.freevars import region_uses
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, DeclBuffer, Evaluate, For,
                          IfThenElse, LetStmt, Return, SeqStmt)
from tirc.ir.visitor import walk, walk_statements

# Outside the loops: statements that check, bind and return (what MakePackedAPI makes)
_WRAPPER_STMTS = (SeqStmt, LetStmt, AttrStmt, AssertStmt, DeclBuffer, IfThenElse, Evaluate,
                  Return)
_LOOP_KINDS = ("serial", "vectorized", "unrolled")
# calls that leave the function from where they are (a loop function would leave itself)
_LEAVING_CALLS = ("ret", "tvm_throw_last_error")


def splits(fl: FunctionLowering) -> bool:
    """Whether ``fl``'s function is lowered as a wrapper and outlined loops."""
    func = fl.func
    if (fl.module.debug is not None or not fl.ctx.is_exported(func) or func.attrs.get(C_API)
            or type(fl) is not FunctionLowering):
        return False
    loops = []
    stack = [func.body]
    while stack:
        s = stack.pop()
        if isinstance(s, (For, AllocBuffer)):  # an allocation goes out with its uses
            loops.append(s)
        elif not isinstance(s, _WRAPPER_STMTS):
            return False
        elif isinstance(s, SeqStmt):
            stack.extend(s.stmts)
        elif isinstance(s, IfThenElse):
            stack.append(s.then_case)
            if s.else_case is not None:
                stack.append(s.else_case)
        elif not isinstance(s, (Evaluate, Return)):
            stack.append(s.body)
    # an allocation whose uses are kernel launches alone is straight-line code: with no
    # loop to optimise, the function is lowered whole (and its module, with no loop at
    # all, gets the short pipeline of argument checks and launches)
    return (any(_has_loop(s) for s in loops)
            and all(_outlinable(loop) for loop in loops))


def _has_loop(s) -> bool:
    return isinstance(s, For) or any(isinstance(n, For) for n in walk_statements(s))


def _outlinable(loop: For) -> bool:
    for n in walk(loop):
        if isinstance(n, For):
            if n.kind not in _LOOP_KINDS:
                return False
        elif isinstance(n, Return):
            return False
        elif isinstance(n, AttrStmt):
            if n.key in (DEVICE_ID, DEVICE_TYPE):
                return False
        elif isinstance(n, Call):
            if isinstance(n.op, GlobalVar) or n.op in PACKED_CALLS or n.op in _LEAVING_CALLS:
                return False
    return True


class _LoopFunction(FunctionLowering):
    """An outlined loop nest: the values it uses are its arguments."""

    def setup(self, parent: FunctionLowering) -> None:
        self.data_align = dict(parent.data_align)
        self.offset_applied = set(parent.offset_applied)
        self.let_exprs = dict(parent.let_exprs)
        self.alias = parent.alias  # the function's scopes, attached at its end
        self.noalias = parent.noalias


def outline_loop(fl: FunctionLowering, loop: For) -> None:
    """Lower ``loop`` as a call of a new internal function that runs it; fail as the
    loop would have when it returns nonzero."""
    captured = [v for v in region_uses(loop).vars if id(v) in fl.vars]
    passed = [v for v in captured if not isinstance(fl.vars[id(v)], ir.Constant)]
    values = [fl.vars[id(v)] for v in passed]
    # the enclosing device attributes (a launch's or allocation's device) are values
    # of the caller too: passed, and seen by the body as its arguments
    attrs = list(fl.ctx.device_attrs)
    values += [v for _, v in attrs if not isinstance(v, ir.Constant)]
    fl.counter += 1
    outlined = ir.Function(fl.module.ir, ir.FunctionType(lt.I32, [v.type for v in values]),
                           f"{fl.llfunc.name}.loop{fl.counter}")
    outlined.linkage = "internal"
    outlined.attributes.add("nounwind")
    outlined.attributes.add("noinline")
    body = _LoopFunction(fl.module, fl.name, fl.func, outlined)
    body.setup(fl)
    for var in captured:
        if isinstance(fl.vars[id(var)], ir.Constant):
            body.vars[id(var)] = fl.vars[id(var)]
    for var, arg in zip(passed, outlined.args):
        arg.name = var.name
        body.vars[id(var)] = arg
        if fl.alias is not None and fl.noalias and id(var) in fl.alias.known:
            # a buffer's data that no other argument's data overlaps (its alias scope),
            # as TVM's compute function takes it: LLVM's loop idioms (memcpy, memset)
            # and dependence checks read parameters, not scopes
            arg.add_attribute("noalias")
    extra = iter(outlined.args[len(passed):])
    inner = []
    for key, v in attrs:
        if not isinstance(v, ir.Constant):
            v = next(extra)
            v.name = key
        inner.append((key, v))
    fl.ctx.device_attrs = inner
    try:
        body.stmt(loop)
    finally:
        fl.ctx.device_attrs = attrs
    if not body.b.block.is_terminated:
        body.b.ret(ir.Constant(lt.I32, 0))
    body.seal()
    fl.module.loop_functions.add(outlined.name)

    status = fl.b.call(outlined, values)
    ok, bad = fl.block("loop_ok"), fl.block("loop_fail")
    likely(fl.b.cbranch(fl.b.icmp_signed("==", status, ir.Constant(lt.I32, 0)), ok, bad))
    fl.b.position_at_end(bad)
    fl.fail(None, None)
    fl.b.position_at_end(ok)


def mark_wrapper(llfunc: ir.Function) -> None:
    """The wrapper left after its loops were outlined: not optimised, fast selection."""
    llfunc.attributes.add("noinline")
    llfunc.attributes.add("optnone")
