"""What LowerAutoCopy's rewrite rules share (TVM's ``memhammer_rewrite_rule.h``): the
constraints of one copy, what a rule hands back, storage ranks, loop nests.

A copy is the body of a block annotated ``auto_copy``: a perfect nest of loops around one
store. Each rule (``auto_copy_coalesce``, ``auto_copy_cache_stage``,
``auto_copy_tensor_core``) applies when the copy goes between the storage ranks it
handles, and rewrites the nest; a nest a rule cannot rewrite is a located error naming
the block.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tirc.diagnostics import Diagnostic
from tirc.ir.block import BufferRegion
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, Var
from tirc.ir.stmt import For, Stmt

ANNOTATION = "auto_copy"


def rank(scope: str) -> str:
    """The storage rank of a scope (TVM's ``StorageScope::Create(scope).rank``): the
    scope without its tag (``shared.dyn`` is ``shared``), fragments by their kind."""
    if scope.startswith(("wmma.", "m16n8k8.")):
        return scope
    return scope.split(".", 1)[0] or "global"


@dataclass
class Constraints:
    """TVM's ``ConstraintSet``: what every rule may read about the copy."""

    block_name: str
    span: object
    thread_extent: dict[str, int]
    outer_loops: tuple[For, ...]
    read_region: BufferRegion
    write_region: BufferRegion
    data_bits: int
    local_stage: int = 0
    vector_bytes: int = 1

    def copies(self, src: str, dst: str) -> bool:
        return (rank(self.read_region.buffer.scope) == src
                and rank(self.write_region.buffer.scope) == dst)

    def error(self, what: str, span=None) -> Diagnostic:
        return Diagnostic(f"block '{self.block_name}' is annotated \"{ANNOTATION}\", but {what}: "
                          "LowerAutoCopy cannot lower it", span or self.span)


@dataclass
class Outputs:
    """TVM's ``OutputSet``: buffers a rule allocates in the copy's block, and the least
    padding (in elements) a shared buffer's rows must keep."""

    alloc_buffers: list[Buffer] = field(default_factory=list)
    padding_min: dict[int, tuple[Buffer, int]] = field(default_factory=dict)

    def pad_at_least(self, buffer: Buffer, n: int) -> None:
        old = self.padding_min.get(id(buffer), (buffer, 1))[1]
        self.padding_min[id(buffer)] = (buffer, max(old, n))


def loop_nest(stmt: Stmt) -> tuple[list[For], Stmt]:
    """The perfect nest of loops at the top of ``stmt`` (outermost first) and what they hold."""
    loops: list[For] = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def wrap(loops, body: Stmt) -> Stmt:
    """``body`` inside copies of ``loops`` (outermost first), each otherwise as it was."""
    from dataclasses import replace
    for loop in reversed(loops):
        body = replace(loop, body=body)
    return body


def with_suffix(v: Var, suffix: str) -> Var:
    """A fresh variable named after ``v`` (TVM's ``CopyWithSuffix``)."""
    return Var(v.name + suffix, v.dtype, None, v.span)


def const_int(e) -> int | None:
    return e.value if isinstance(e, IntImm) and not e.dtype.is_bool else None
