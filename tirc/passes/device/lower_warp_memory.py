"""LowerWarpMemory: buffers in ``warp`` memory become registers of each thread and loads
from another lane become warp shuffles, as TVM's pass of the same name does.

No GPU has memory a warp shares. A buffer ``W`` of ``warp`` scope whose stores index it
as ``m * tx + (width * m) * y + x`` (``tx`` the ``threadIdx.x`` of extent ``width``, a
divisor of the target's ``thread_warp_size``; ``x`` in ``[0, m)``) is striped over the
threads: thread ``tx`` keeps the elements it stores in a ``local`` buffer of
``size / width`` elements (the size rounded up to a multiple of ``width * m``), at
``m * y + x``. A store writes its own element; a load of ``m * z + (width * m) * y + x``
reads element ``m * y + x`` of lane ``z``:
``T.tvm_warp_shuffle(T.tvm_warp_activemask(), W_local[m * y + x], z, width, warp_size)``
(a plain load where ``z`` is provably the thread's own lane).

The allocation must be outside the ``threadIdx.x`` launch it is striped over (as TVM
requires: the lane is found in the allocation's scope). Refused with a located error,
where TVM's pass fails: a size that is not constant, a ``threadIdx.x`` extent that does
not divide the warp size (or two different ``threadIdx.x`` axes), a store index not
linear in the lane with one positive constant coefficient, a load whose local index still
depends on the lane, a vector access that is not a contiguous ramp, and a use of the
buffer's pointer other than a load or store. A target whose warp is one thread
(``thread_warp_size`` 1) is left as it is, as in TVM.

Runs on device code after the host/device split (TVM's finalize-device pass list),
after FlattenBuffer: warp buffers are flat.
"""
from __future__ import annotations

from dataclasses import replace

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import TARGET, THREAD_EXTENT
from tirc.ir.buffer import Buffer, constant_elements
from tirc.ir.dtype import INT32, UINT32
from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, PointerType, PrimExpr, Ramp, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import AllocBuffer, AttrStmt, BufferStore, For, IterVar
from tirc.ir.visitor import Mutator, walk
from tirc.passes.analysis.arith_analyzer import Analyzer
from tirc.target.kinds import Target

WARP = "warp"


def lower_warp_memory(mod: IRModule, ctx=None) -> IRModule:
    functions = dict(mod.functions)
    changed = False
    for name, func in mod.functions.items():
        target = func.attrs.get(TARGET)
        warp_size = target.get("thread_warp_size", 1) if isinstance(target, Target) else 1
        if warp_size == 1 or not any(isinstance(n, AllocBuffer) and n.buffer.scope == WARP
                                     for n in walk(func.body)):
            continue
        analyzer = Analyzer()
        _bind_ranges(func.body, analyzer)
        body = _Lower(warp_size, analyzer).visit(func.body)
        functions[name] = func.with_body(body)
        changed = True
    return replace(mod, functions=functions) if changed else mod


def _bind_ranges(body, analyzer: Analyzer) -> None:
    """The ranges of loop and thread variables (TVM's BindVarBoundInfo)."""
    for n in walk(body):
        if isinstance(n, For):
            analyzer.bind_range(n.loop_var, n.min, n.extent)
        elif (isinstance(n, AttrStmt) and n.key == THREAD_EXTENT and isinstance(n.node, IterVar)
              and id(n.node.var) not in analyzer.bounds):
            analyzer.bind_range(n.node.var, IntImm(n.value.dtype, 0), n.value)


class _Lower(Mutator):
    def __init__(self, warp_size: int, analyzer: Analyzer):
        self.warp_size, self.analyzer = warp_size, analyzer

    def visit_AllocBuffer(self, s: AllocBuffer):
        s = self.generic_visit(s)
        if s.buffer.scope != WARP:
            return s
        return _Striping(s, self.warp_size, self.analyzer).rewrite()


def _error(buf: Buffer, why: str, node) -> Diagnostic:
    return Diagnostic(f"warp memory '{buf.name}' cannot be lowered to registers and shuffles: "
                      f"{why}", getattr(node, "span", None) or buf.span)


class _Striping(Mutator):
    """The accesses of one warp buffer, rewritten for its striping over the lanes."""

    def __init__(self, alloc: AllocBuffer, warp_size: int, analyzer: Analyzer):
        self.alloc, self.buf = alloc, alloc.buffer
        self.warp_size, self.analyzer = warp_size, analyzer

    def rewrite(self) -> AllocBuffer:
        buf, alloc = self.buf, self.alloc
        size = constant_elements(buf.shape)
        if size is None:
            raise _error(buf, "its size is not a constant", alloc)
        size *= buf.dtype.lanes
        self.lane, self.width = self._find_lane()
        self.coeff = self._find_coefficient()
        factor = self.width * self.coeff
        self.groups = (size + factor - 1) // factor
        local = Var(buf.data.name, buf.data.dtype, PointerType(buf.dtype, "local"), buf.data.span)
        self.new = replace(buf, data=local, shape=(IntImm(INT32, self.groups * factor // self.width),),
                           strides=(), elem_offset=None)
        return replace(alloc, buffer=self.new, body=self.visit(alloc.body))

    def _find_lane(self) -> tuple[Var, int]:
        """The ``threadIdx.x`` variable in the allocation's scope and its extent."""
        found: IterVar | None = None
        width = 0
        for n in walk(self.alloc.body):
            if not (isinstance(n, AttrStmt) and n.key == THREAD_EXTENT
                    and isinstance(n.node, IterVar) and n.node.thread_tag == "threadIdx.x"):
                continue
            if (not isinstance(n.value, IntImm) or n.value.value > self.warp_size
                    or self.warp_size % n.value.value):
                raise _error(self.buf, f"the extent of threadIdx.x must be a constant divisor "
                             f"of the warp size ({self.warp_size}), not {_show(n.value)}", n)
            if found is None:
                found, width = n.node, n.value.value
            elif found.var is not n.node.var:
                raise _error(self.buf, "two different threadIdx.x axes launched in its scope", n)
        if found is None:
            raise _error(self.buf, "no threadIdx.x is launched inside the allocation's scope "
                         "(allocate it outside the threadIdx.x launch)", self.alloc)
        return found.var, width

    def _find_coefficient(self) -> int:
        """``m``: the coefficient of the lane in every store's index (all the same)."""
        coeff = 0
        for n in walk(self.alloc.body):
            if not (isinstance(n, BufferStore) and n.buffer is self.buf):
                continue
            index = self._scalar_index(n.indices, n)
            c = _linear_coefficient(index, self.lane)
            c = self.analyzer.simplify(c) if c is not None else None
            if not isinstance(c, IntImm) or c.value <= 0:
                raise _error(self.buf, f"the index of a store must be linear in {self.lane.name} "
                             "with a positive constant coefficient", n)
            if coeff and coeff != c.value:
                raise _error(self.buf, f"two stores index it with different coefficients of "
                             f"{self.lane.name} ({coeff} and {c.value})", n)
            coeff = c.value
        if not coeff:
            raise _error(self.buf, f"no store indexes it by {self.lane.name}", self.alloc)
        return coeff

    def _scalar_index(self, indices, node) -> PrimExpr:
        if len(indices) != 1:
            raise _error(self.buf, "it is not flat (FlattenBuffer has not run)", node)
        (index,) = indices
        if index.dtype.lanes != 1:
            if not (isinstance(index, Ramp) and isinstance(index.stride, IntImm)
                    and index.stride.value == 1):
                raise _error(self.buf, "a vector access that is not contiguous", node)
            return index.base
        return index

    def _split(self, index: PrimExpr, node) -> tuple[PrimExpr, PrimExpr]:
        """``(local index, lane)`` of a flat warp index."""
        if index.dtype.lanes != 1:
            local, lane = self._split(self._scalar_index((index,), node), node)
            return Ramp(local, IntImm(local.dtype, 1), index.dtype.lanes), lane
        simplify, dt = self.analyzer.simplify, index.dtype
        m = IntImm(dt, self.coeff)
        x = simplify(BinOp("floormod", index, m, dt))
        if self.groups == 1:
            return x, simplify(BinOp("floordiv", index, m, dt))
        row = IntImm(dt, self.coeff * self.width)
        y = BinOp("add", BinOp("mul", BinOp("floordiv", index, row, dt), m, dt), x, dt)
        z = BinOp("floordiv", BinOp("floormod", index, row, dt), m, dt)
        return simplify(y), simplify(z)

    def visit_Var(self, v: Var):
        if v is self.buf.data:
            raise _error(self.buf, "its address is used directly (only loads and stores can "
                         "be striped over the lanes)", v)
        return v

    def visit_BufferStore(self, s: BufferStore):
        value = self.visit(s.value)
        indices = tuple(self.visit(i) for i in s.indices)
        if s.buffer is not self.buf:
            if value is s.value and all(a is b for a, b in zip(indices, s.indices)):
                return s
            return replace(s, value=value, indices=indices)
        if len(indices) != 1:
            self._scalar_index(indices, s)
        local, _ = self._split(indices[0], s)
        return replace(s, buffer=self.new, value=value, indices=(local,))

    def visit_BufferLoad(self, e: BufferLoad):
        indices = tuple(self.visit(i) for i in e.indices)
        if e.buffer is not self.buf:
            if all(a is b for a, b in zip(indices, e.indices)):
                return e
            return replace(e, indices=indices)
        if len(indices) != 1:
            self._scalar_index(indices, e)
        local, lane = self._split(indices[0], e)
        if any(n is self.lane for n in walk(local)):
            raise _error(self.buf, f"the index {_show(indices[0])} of a load does not name its "
                         f"element within the lane apart from {self.lane.name}", e)
        load = replace(e, buffer=self.new, indices=(local,))
        if self.analyzer.can_prove_equal(lane, self.lane):
            return load
        mask = Call(UINT32, "tvm_warp_activemask", ())
        return Call(load.dtype, "tvm_warp_shuffle",
                    (mask, load, lane, IntImm(INT32, self.width), IntImm(INT32, self.warp_size)),
                    e.span)


def _show(e: PrimExpr) -> str:
    from tirc.ir.describe import expr_text
    return expr_text(e)


def _linear_coefficient(e: PrimExpr, v: Var) -> PrimExpr | None:
    """The coefficient of ``v`` in ``e`` when ``e`` is linear in ``v`` (sums, differences
    and products by expressions free of ``v``), else None."""
    if e is v:
        return IntImm(e.dtype, 1)
    if not any(n is v for n in walk(e)):
        return IntImm(e.dtype, 0)
    if isinstance(e, BinOp) and e.op in ("add", "sub"):
        a, b = _linear_coefficient(e.a, v), _linear_coefficient(e.b, v)
        if a is None or b is None:
            return None
        return BinOp(e.op, a, b, e.dtype)
    if isinstance(e, BinOp) and e.op == "mul":
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if not any(n is v for n in walk(y)):
                c = _linear_coefficient(x, v)
                return None if c is None else BinOp("mul", c, y, e.dtype)
    return None
