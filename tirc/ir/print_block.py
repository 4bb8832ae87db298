"""Printing block-level TIR the way TVM 0.27 does (``src/tirx/script/printer/block.cc``):
iterators (consecutive plain loop bindings grouped into ``T.axis.remap``), ``T.where``,
``T.reads``/``T.writes``, ``T.sblock_attr``, allocations, matched buffers, ``T.init()``,
then the body. A mixin of the function printer."""
from __future__ import annotations

from tirc.ir.block import BlockIterVar, BufferRegion, SBlock, SBlockRealize, annotation_buffers
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.print_expr import plus, py_value, quote
from tirc.ir.stmt import For

_AXIS = {"spatial": "spatial", "reduce": "reduce", "scan": "scan", "opaque": "opaque"}


def implicit_root(body) -> SBlock | None:
    """The root block TVM leaves implicit (printed as a comment), or None."""
    if not (isinstance(body, SBlockRealize) and not body.iter_values and _is_true(body.predicate)):
        return None
    root = body.block
    if root.annotations or root.match_buffers or root.reads or root.writes or root.init is not None:
        return None
    inner = root.body
    from tirc.ir.visitor import contains_blocks
    if root.alloc_buffers or (isinstance(inner, SBlockRealize) and inner.block.iter_vars) or (
            not isinstance(inner, SBlockRealize) and contains_blocks(inner)):
        return root
    return None


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype.is_bool and e.value == 1


class BlockPrinter:
    """Needs the host printer's ``emit``, ``expr``, ``define``, ``buffer_name``,
    ``buffer_args``, ``block`` and ``name_scope``; ``loops`` maps loop variables to loops."""

    loops: dict[int, For]

    def print_root(self, root: SBlock, level: int) -> None:
        self.emit(level, '# with T.sblock("root"):')
        for buf in root.alloc_buffers:
            self.emit(level, f"{self.buffer_name(buf)} = T.sblock_alloc_buffer({self.buffer_args(buf, [], omit_float32=True)})")
            self.data_owner.setdefault(id(buf.data), buf)
        self.stmt(root.body, level)

    def print_realize(self, r: SBlockRealize, level: int) -> None:
        block = r.block
        self.emit(level, f"with T.sblock({quote(block.name_hint)}):")
        with self.name_scope():
            self._block_header(r, level + 1)
            self.block(block.body, level + 1)

    def _block_header(self, r: SBlockRealize, level: int) -> None:
        block = r.block
        group: list[int] = []
        for i, iv in enumerate(block.iter_vars):
            if self._remappable(iv, r.iter_values[i]):
                group.append(i)
            else:
                self._flush_remap(r, group, level)
                self._single_axis(r, i, level)
        self._flush_remap(r, group, level)
        if not _is_true(r.predicate):
            self.emit(level, f"T.where({self.expr(r.predicate)})")
        self.emit(level, f"T.reads({', '.join(self.region(x) for x in block.reads)})")
        self.emit(level, f"T.writes({', '.join(self.region(x) for x in block.writes)})")
        if block.annotations:
            for buf in annotation_buffers(block.annotations):
                if id(buf) not in self.names:  # a buffer only named here: T.Buffer declares it
                    self.emit(level, f"{self.buffer_name(buf)} = T.Buffer("
                                     f"{self.buffer_args(buf, [], omit_float32=True)})")
            self.emit(level, f"T.sblock_attr({py_value(dict(block.annotations), self)})")
        for buf in block.alloc_buffers:
            self.emit(level, f"{self.buffer_name(buf)} = T.sblock_alloc_buffer({self.buffer_args(buf, [], omit_float32=True)})")
            self.data_owner.setdefault(id(buf.data), buf)
        for m in block.match_buffers:
            source = self.region(m.source)
            self.emit(level, f"{self.buffer_name(m.buffer)} = T.match_buffer({source}, "
                             f"{self.buffer_args(m.buffer, [], omit_float32=True)})")
            self.data_owner.setdefault(id(m.buffer.data), m.buffer)
        if block.init is not None:
            self.emit(level, "with T.init():")
            self.block(block.init, level + 1)

    def _remappable(self, iv: BlockIterVar, value: PrimExpr) -> bool:
        if iv.iter_type not in ("spatial", "reduce") or not isinstance(value, Var):
            return False
        loop = self.loops.get(id(value))
        return loop is not None and loop.min == iv.dom.min and loop.extent == iv.dom.extent

    def _flush_remap(self, r: SBlockRealize, group: list[int], level: int) -> None:
        if not group:
            return
        if len(group) == 1:
            self._single_axis(r, group[0], level)
        else:
            ivs = [r.block.iter_vars[i] for i in group]
            values = ", ".join(self.expr(r.iter_values[i]) for i in group)
            kinds = "".join("S" if iv.iter_type == "spatial" else "R" for iv in ivs)
            names = ", ".join(self.define(iv.var, iv.var.name) for iv in ivs)
            self.emit(level, f"{names} = T.axis.remap({quote(kinds)}, [{values}])")
        group.clear()

    def _single_axis(self, r: SBlockRealize, i: int, level: int) -> None:
        iv = r.block.iter_vars[i]
        dom = iv.dom
        if isinstance(dom.min, IntImm) and dom.min.value == 0:
            dom_text = self.expr(dom.extent)
        else:
            dom_text = f"({self.expr(dom.min)}, {self.expr(plus(dom.min, dom.extent))})"
        value = self.expr(r.iter_values[i])
        name = self.define(iv.var, iv.var.name)
        self.emit(level, f"{name} = T.axis.{_AXIS[iv.iter_type]}({dom_text}, {value})")

    def region(self, r: BufferRegion) -> str:
        items = []
        for rng in r.region:
            if isinstance(rng.extent, IntImm) and rng.extent.value == 1:
                items.append(self.expr(rng.min))
            else:
                items.append(f"{self.expr(rng.min)}:{self.expr(plus(rng.min, rng.extent))}")
        return f"{self.buffer_name(r.buffer)}[{', '.join(items) or '()'}]"
