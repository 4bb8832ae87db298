"""LiftThreadBinding: inside one kernel, every thread tag gets a single loop. All loops
bound to the same tag (``threadIdx.x`` in the loop nest that fills a shared buffer and
again in the one that computes) become one ``T.thread_binding`` loop placed at their
lowest common ancestor loop, and their variables become that loop's variable.

Lifting a thread loop above the blocks between it and that ancestor makes their local
allocations per thread (dlight's cross-thread reductions allocate a ``local`` buffer
outside the ``threadIdx.x`` loops that write it), and leaves UnifyThreadBinding one loop
per tag to hoist to the kernel's top.

As TVM 0.27 does it (``s_tir/transform/lift_thread_binding.cc``):

- a kernel is the subtree of an outermost thread-bound loop; each kernel is lifted on its
  own;
- the lifted loop of a tag takes its range from the first loop of that tag to finish in
  a post-order walk, and the annotations of all of them (later loops win a key);
- the ancestor is the deepest loop (thread-bound or not) enclosing every loop of the tag;
  the lifted loops go just inside it, and a thread-bound ancestor is itself replaced;
- several tags lifted to the same loop nest by tag length, longest innermost
  (``threadIdx.*`` inside ``blockIdx.*`` inside ``vthread.*``); among tags of one length
  the tag whose first loop finished last goes innermost. TVM leaves that tie to the
  iteration order of a C++ hash map (so to the standard library it was built with); this
  rule agrees with TVM 0.27's Linux build on about 99% of random kernels, and where it
  does not, only the nesting order of thread axes differs, which changes nothing;
- the new loop variable is named after the tag (``threadIdx_x``; TVM names it
  ``threadIdx.x``, which its printer writes the same way).

Unlike TVM, loops of one tag in one kernel must have the same range (the check
UnifyThreadBinding makes, a located error): TVM lifts a ``threadIdx.x`` loop of extent 16
nested in one of extent 32 into a single loop of extent 32, silently running the inner
body on threads it was not written for, and UnifyThreadBinding never sees the two.

Unlike TVM, a loop of the tag whose variable has another dtype than the lifted one (dlight
binds an argmax's write-back to an int64 ``threadIdx.x`` after the reduction's int32 one)
reads the lifted variable through a cast; TVM substitutes it as it is, leaving operators
over two dtypes.

Runs on block-level functions only (``s_tir`` or holding blocks): plain TIR passes
through unchanged (its thread axes are read as written), where TVM would lift its loops too.

Precondition: ConvertBlocksToOpaque ran (block iterators bound to thread variables are
gone, so only loop variables are renamed). Guarantees: within a kernel, no two loops
are bound to the same thread tag.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from tirc.diagnostics import Diagnostic, Span
from tirc.ir.visitor import contains_blocks
from tirc.ir.equal import structural_equal
from tirc.ir.expr import Cast, IntImm, PrimExpr, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import For, SeqStmt, seq
from tirc.ir.visitor import Mutator, Visitor


def axis_var_name(tag: str) -> str:
    """The name of the variable of a lifted or unified thread axis: TVM names it after the
    tag and prints the dot as ``_``."""
    return tag.replace(".", "_")


def _same_value(a: PrimExpr, b: PrimExpr) -> bool:
    """``a == b`` provably (integer constants of any dtype by value)."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return structural_equal(a, b)


def check_same_range(tag: str, first: tuple[PrimExpr, PrimExpr], lo: PrimExpr,
                     extent: PrimExpr, span: Span | None) -> None:
    """Another axis bound to ``tag`` in the same kernel as one over ``first`` (min,
    extent) must cover the same threads."""
    from tirc.ir.describe import expr_text
    if not _same_value(extent, first[1]):
        raise Diagnostic(
            f"all loops bound to '{tag}' in one kernel must have the same extent; this one "
            f"has {expr_text(extent)}, an earlier one {expr_text(first[1])}", span)
    if not _same_value(lo, first[0]):
        raise Diagnostic(
            f"all loops bound to '{tag}' in one kernel must start at the same value; this "
            f"one starts at {expr_text(lo)}, an earlier one at {expr_text(first[0])}", span)


class _Lifted:
    """The one loop a thread tag gets in a kernel."""

    def __init__(self, first: For, path: list[For]):
        self.var = Var(axis_var_name(first.thread_tag), first.loop_var.dtype, None,
                       first.loop_var.span)
        self.first = first
        self.path = path  # the loops enclosing every loop of the tag so far, outermost first
        self.annotations: dict[str, Any] = {}

    def loop(self, body) -> For:
        f = self.first
        return For(self.var, f.min, f.extent, "thread_binding", body, f.thread_tag,
                   tuple(sorted(self.annotations.items())), None, f.span)


class _FindAncestors(Visitor):
    """Per thread tag of one kernel: its lifted loop and the loops enclosing all of its
    loops. Expressions hold no loops, so only statements are walked."""

    def __init__(self) -> None:
        self.stack: list[For] = []
        self.tags: dict[str, _Lifted] = {}  # in the order their first loop finished
        self.subst: dict[int, PrimExpr] = {}

    expressions = False

    def visit_For(self, s: For):
        self.stack.append(s)
        yield s.body
        if s.kind == "thread_binding":
            self._add(s)
        self.stack.pop()

    def _add(self, s: For) -> None:
        lifted = self.tags.get(s.thread_tag)
        if lifted is None:
            lifted = self.tags[s.thread_tag] = _Lifted(s, list(self.stack))
        else:
            check_same_range(s.thread_tag, (lifted.first.min, lifted.first.extent), s.min,
                             s.extent, s.span)
            common = 0
            for a, b in zip(lifted.path, self.stack):
                if a is not b:
                    break
                common += 1
            del lifted.path[common:]
        lifted.annotations.update(s.annotations)
        # the lifted variable has the first loop's dtype; a loop of another dtype (dlight
        # binds an int64 threadIdx.x after an int32 one) reads it through a cast
        v = s.loop_var
        self.subst[id(v)] = lifted.var if v.dtype == lifted.var.dtype else \
            Cast(v.dtype, lifted.var, v.span)


class _Lift(Mutator):
    def __init__(self) -> None:
        self.lift_into: dict[int, list[_Lifted]] = {}  # id(ancestor loop) -> loops, inner first
        self.subst: dict[int, PrimExpr] = {}

    def visit_SeqStmt(self, s: SeqStmt):
        # A removed thread loop leaves its body in the sequence; flatten it, as TVM does.
        new = (yield from self.descend(s))
        if new is not s and any(isinstance(x, SeqStmt) for x in new.stmts):
            return seq(new.stmts, s.span)
        return new

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.subst.get(id(v), v)

    def visit_For(self, s: For):
        kernel_root = s.kind == "thread_binding" and not self.lift_into
        if kernel_root:
            self._plan(s)
        body = (yield s.body)
        for lifted in self.lift_into.get(id(s), ()):
            body = lifted.loop(body)
        if kernel_root:
            self.lift_into, self.subst = {}, {}
        if s.kind == "thread_binding":
            return body
        lo, extent = self.visit(s.min), self.visit(s.extent)
        step = None if s.step is None else self.visit(s.step)
        if lo is s.min and extent is s.extent and step is s.step and body is s.body:
            return s
        return replace(s, min=lo, extent=extent, step=step, body=body)

    def _plan(self, root: For) -> None:
        finder = _FindAncestors()
        finder.visit(root)
        self.subst = finder.subst
        # Longest tag innermost; among equal lengths, the tag first seen last innermost.
        order = sorted(reversed(list(finder.tags)), key=len, reverse=True)
        for tag in order:
            lifted = finder.tags[tag]
            self.lift_into.setdefault(id(lifted.path[-1]), []).append(lifted)


def is_block_level(func) -> bool:
    """Whether ``func`` is schedulable TIR (TVM's s_tir flag, or blocks in its body)."""
    return func.s_tir or contains_blocks(func.body)


def lift_thread_binding(mod: IRModule, ctx=None) -> IRModule:
    funcs = {}
    for name, f in mod.functions.items():
        body = _Lift().visit(f.body) if is_block_level(f) else f.body
        funcs[name] = f if body is f.body else f.with_body(body)
    return replace(mod, functions=funcs)
