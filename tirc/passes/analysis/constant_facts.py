"""Constant facts that make a program undefined, each a located diagnostic:

* an integer division or modulo (``//``, ``%``, ``T.floordiv``, ``T.floormod``,
  ``T.truncdiv``, ``T.truncmod``) by a divisor that folds to 0. TVM's operators refuse
  it as they build the node ("Divide by zero"); LLVM took it for unreachable code and
  dropped the store;
* a load or store whose indices fold to constants (immediates, or ramps and
  broadcasts of them) and whose flat element lies outside the buffer: outside the
  elements its constant shape, strides and offset span. An index outside one
  dimension but inside the buffer (``A[0, 20]`` of a 4x16 buffer is its element 20) is
  not an error: TVM-printed modules (and TVM's own tests) do that, and it touches only
  the buffer's memory; it is a warning, at the access (:func:`check_function` returns
  them);
* one whose flat element lies outside the memory under the buffer: the allocation or
  constant-shaped parameter its data pointer comes from. A view
  (``T.decl_buffer(..., data=A.data, elem_offset=12)``, a region argument ``A[14:18]``,
  a buffer placed in a shared allocation) is measured in bits against that memory, so
  views of another dtype are covered;
* a buffer passed to a module function (a region argument, a view) that extends outside
  that memory, and a ``T.match_buffer`` source region with constant bounds outside its
  buffer.

Only code that can run is checked: the branches of an ``if`` (or ``while``) whose
condition folds to a constant that rules them out are skipped, and so are the branches
of ``T.if_then_else``, which runs only the one its condition picks (a guarded ``x // 0``
or ``A[n]`` is how code avoids the fact; ``T.Select`` evaluates both and is checked).
``T.address_of(A[i])`` forms an address and accesses nothing; ``T.masked_load`` and
``T.masked_store`` access only the lanes their mask has on, which is not checked.

Checked by Verify on the text as written and by VerifyConstants late in the pipeline,
after unrolling, inlining and simplification have made more indices and divisors constant.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic, Span
from tirc.ir.block import MatchBufferRegion, SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.const_fold import fold_cast, fold_imms
from tirc.ir.dtype import DataType
from tirc.ir.expr import (BinOp, Broadcast, BufferLoad, Call, Cast, GlobalVar, IntImm, Not,
                          PrimExpr, Ramp)
from tirc.ir.function import PrimFunc
from tirc.ir.index_arith import constant_layout
from tirc.ir.stmt import AllocBuffer, BufferStore, IfThenElse, While
from tirc.ir.visitor import NODE_TYPES, Visitor, child_fields

_FIELDS: dict[type, tuple[str, ...]] = {}  # child_fields, reversed (Checker.check's stack)

_DIVISIONS = {"div": "division (T.truncdiv)", "mod": "modulo (T.truncmod)",
              "floordiv": "division (//)", "floormod": "modulo (%)"}


def check_function(func: PrimFunc) -> list[Diagnostic]:
    """Raise a :class:`Diagnostic` for the first such fact in ``func``; return the
    warnings (severity ``"warning"``): constant indices outside their dimension but inside
    the buffer, in the order of the text."""
    checker = _Checker(func.span)
    for _, buf in func.buffer_map:
        checker.add_root(buf)
    checker.visit(func.body)
    return checker.warnings


def fold(e: PrimExpr) -> int | None:
    """The value of a scalar integer or bool expression of immediates, or None."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, BinOp) and e.dtype.lanes == 1:
        a, b = fold(e.a), fold(e.b)
        if a is None or b is None:
            return None
        r = fold_imms(e.op, IntImm(e.a.dtype, a), IntImm(e.b.dtype, b), e.dtype)
        return r.value if isinstance(r, IntImm) else None
    if isinstance(e, Not):
        a = fold(e.a)
        return None if a is None else int(not a)
    if isinstance(e, Cast) and e.dtype.lanes == 1 and e.value.dtype.lanes == 1:
        a = fold(e.value)
        r = None if a is None else fold_cast(e.dtype, IntImm(e.value.dtype, a))
        return r.value if isinstance(r, IntImm) else None
    if isinstance(e, Call) and e.op == "likely" and len(e.args) == 1:
        return fold(e.args[0])
    return None


def const_range(e: PrimExpr) -> tuple[int, int] | None:
    """The least and greatest lane of an index that folds to constants, or None."""
    if isinstance(e, Broadcast):
        v = fold(e.value)
        return None if v is None else (v, v)
    if isinstance(e, Ramp):
        base, stride = fold(e.base), fold(e.stride)
        if base is None or stride is None:
            return None
        last = base + (e.lanes - 1) * stride
        return min(base, last), max(base, last)
    v = fold(e) if e.dtype.lanes == 1 else None
    return None if v is None else (v, v)


def _storage_bits(d: DataType) -> int:
    return 8 * d.lanes if d.is_bool else d.bits * d.lanes


def _layout(b: Buffer) -> tuple[list[int], list[int], int] | None:
    """Constant shape, strides (row-major when none are declared) and element offset."""
    return constant_layout(b, fold)


def _extent(layout) -> tuple[int, int]:
    """The elements ``[lo, hi)`` a constant layout spans, relative to the data pointer."""
    shape, strides, offset = layout
    if 0 in shape:
        return offset, offset
    lo = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + 1
    return lo, hi


def _shape_text(b: Buffer) -> str:
    dims = ", ".join(str(fold(e)) if fold(e) is not None else "?" for e in b.shape)
    return f"({dims}{',' if len(b.shape) == 1 else ''})"


def _index_text(ranges) -> str:
    parts = [str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in ranges]
    return parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"


class _Checker(Visitor):
    """Statements are walked by the visitor (``where`` holds their locations); the
    expressions under each one by :meth:`check`, a loop that carries the nearest location
    down to each node."""

    def __init__(self, span: Span | None):
        self.roots: dict[int, tuple[Buffer, int, int]] = {}  # data var -> buffer, bit range
        self.where: list[Span | None] = [span]
        self.warnings: list[Diagnostic] = []

    def span(self, node=None) -> Span | None:
        own = getattr(node, "span", None)
        if own is not None:
            return own
        return next((s for s in reversed(self.where) if s is not None), None)

    def enter(self, node) -> None:
        self.where.append(getattr(node, "span", None))

    def leave(self, node) -> None:
        self.where.pop()

    def add_root(self, b: Buffer) -> None:
        layout = _layout(b)
        if layout is not None and id(b.data) not in self.roots:
            lo, hi = _extent(layout)
            bits = _storage_bits(b.dtype)
            self.roots[id(b.data)] = (b, lo * bits, hi * bits)

    def _visit_value(self, value) -> None:
        self.check(value)

    # -- code that can run ----------------------------------------------------------------
    def visit_IfThenElse(self, s: IfThenElse):
        self.check(s.condition)
        taken = fold(s.condition)
        if taken is None or taken:
            yield s.then_case
        if s.else_case is not None and not taken:
            yield s.else_case

    def visit_While(self, s: While):
        self.check(s.condition)
        if fold(s.condition) != 0:
            yield s.body

    def visit_SBlockRealize(self, s: SBlockRealize):
        if fold(s.predicate) != 0:
            yield from self.descend(s)

    def check(self, root) -> None:
        """The facts of the expressions (and block regions) in ``root``, in the order of
        the text; each located at the node, or the nearest enclosing node with a location."""
        stack = [(root, self.span())]
        pop, push = stack.pop, stack.append
        while stack:
            node, outer = pop()
            if type(node) is tuple:
                for item in reversed(node):
                    push((item, outer))
                continue
            if not isinstance(node, NODE_TYPES):
                continue  # a buffer, or plain data
            own = getattr(node, "span", None)
            here = outer if own is None else own
            cls = type(node)
            if cls is BinOp:
                if (node.op in _DIVISIONS and node.dtype.element().is_integer
                        and const_range(node.b) == (0, 0)):
                    raise Diagnostic(f"integer {_DIVISIONS[node.op]} by zero", here)
            elif cls is BufferLoad:
                self.check_access(node.buffer, node.indices, here, "load from")
            elif cls is Call:
                op, args = node.op, node.args
                if op == "if_then_else" and len(args) == 3:
                    push((args[0], here))  # only the branch its condition picks runs
                    continue
                if op == "address_of":  # an address, not an access; its indices are code
                    push((tuple(i for a in args if isinstance(a, BufferLoad)
                                for i in a.indices), here))
                    continue
                if op in ("masked_load", "masked_store") and isinstance(args[0], BufferLoad):
                    # the lanes the mask has off are not accessed: a tail past the end is fine
                    push(((*args[0].indices, *args[1:]), here))
                    continue
                if isinstance(op, GlobalVar):
                    for a in args:
                        if isinstance(a, Buffer):
                            self.check_view(a, op, here)
            elif cls is MatchBufferRegion:
                self.check_match(node, here)
            names = _FIELDS.get(cls)
            if names is None:
                names = _FIELDS[cls] = child_fields(cls)[::-1]
            for name in names:
                push((getattr(node, name), here))

    # -- memory ---------------------------------------------------------------------------
    def visit_AllocBuffer(self, s: AllocBuffer):
        self.add_root(s.buffer)
        yield from self.descend(s)

    def visit_SBlock(self, s: SBlock):
        for b in s.alloc_buffers:
            self.add_root(b)
        yield from self.descend(s)

    def check_match(self, m: MatchBufferRegion, here: Span | None) -> None:
        src = m.source
        for k, (rng, n) in enumerate(zip(src.region, src.buffer.shape)):
            lo, ext, size = const_range(rng.min), const_range(rng.extent), fold(n)
            if lo is None or ext is None or size is None:
                continue
            if lo[0] < 0 or lo[1] + ext[1] > size:
                dim = f" of dimension {k}" if len(src.buffer.shape) > 1 else ""
                raise Diagnostic(
                    f"the region [{lo[0]}:{lo[1] + ext[1]}]{dim} of buffer '{src.buffer.name}' "
                    f"{_shape_text(src.buffer)} that '{m.buffer.name}' matches is outside "
                    f"the buffer", src.span or here)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.check_access(s.buffer, s.indices, self.span(s), "store to")
        self.generic_visit(s)

    def check_access(self, b: Buffer, indices, here: Span | None, what: str) -> None:
        ranges = [const_range(i) for i in indices]
        if None in ranges or len(ranges) != len(b.shape):
            return
        layout = _layout(b)
        if layout is None:
            return
        _, strides, offset = layout
        lo = offset + sum((r[0] if s >= 0 else r[1]) * s for r, s in zip(ranges, strides))
        hi = offset + sum((r[1] if s >= 0 else r[0]) * s for r, s in zip(ranges, strides))
        own_lo, own_hi = _extent(layout)
        if lo < own_lo or hi >= own_hi:
            flat = lo if lo < own_lo else hi
            where = "" if len(ranges) == 1 and offset == 0 else f" (element {flat})"
            raise Diagnostic(f"{what} buffer '{b.name}' {_shape_text(b)} at index "
                             f"{_index_text(ranges)}{where}: outside the buffer", here)
        self.check_dimensions(b, ranges, lo, hi, here, what)
        root = self.roots.get(id(b.data))
        if root is not None and root[0] is not b:
            bits = _storage_bits(b.dtype)
            self.check_memory(b, root, lo * bits, (hi + 1) * bits, here,
                              f"{what} buffer '{b.name}', a view of '{root[0].name}' "
                              f"{_shape_text(root[0])},")

    def check_dimensions(self, b: Buffer, ranges, lo: int, hi: int, here: Span | None,
                         what: str) -> None:
        """A warning where a constant index lies outside its dimension (the access is in
        the buffer: :meth:`check_access` made sure)."""
        if len(ranges) < 2:
            return
        for k, ((first, last), n) in enumerate(zip(ranges, b.shape)):
            size = fold(n)
            if size is not None and (first < 0 or last >= size):
                index = first if first < 0 else last
                reach = f"element {lo}" if lo == hi else f"elements {lo}..{hi}"
                self.warnings.append(Diagnostic(
                    f"{what} buffer '{b.name}' {_shape_text(b)} at index "
                    f"{_index_text(ranges)}: index {index} is outside dimension {k} (extent "
                    f"{size}); it reaches {reach}, inside the buffer", here,
                    severity="warning"))
                return

    def check_view(self, b: Buffer, callee: GlobalVar, here: Span | None) -> None:
        root, layout = self.roots.get(id(b.data)), _layout(b)
        if root is None or layout is None or root[0] is b:
            return
        lo, hi = _extent(layout)
        if lo < hi:
            bits = _storage_bits(b.dtype)
            self.check_memory(b, root, lo * bits, hi * bits, here,
                              f"the view of '{root[0].name}' {_shape_text(root[0])} passed "
                              f"to '{callee.name}'")

    def check_memory(self, b: Buffer, root, lo: int, hi: int, here: Span | None,
                     head: str) -> None:
        """Bits ``[lo, hi)`` of ``b``'s data lie in ``root``'s; ``head`` names the use."""
        rb, rlo, rhi = root
        if rlo <= lo and hi <= rhi:
            return
        rbits = _storage_bits(rb.dtype)
        if _storage_bits(b.dtype) == rbits:
            first, last = lo // rbits, (hi - 1) // rbits
            reach = f"elements {first}..{last}" if first != last else f"element {first}"
            size = f"{(rhi - rlo) // rbits} elements"
        else:
            reach, size = f"bytes {lo // 8}..{(hi - 1) // 8}", f"{(rhi - rlo) // 8} bytes"
        raise Diagnostic(f"{head} reaches {reach} of '{rb.name}', which has {size}: outside "
                         "its memory", here)
