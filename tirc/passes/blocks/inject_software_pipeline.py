"""InjectSoftwarePipeline (TVM's ``s_tir.InjectSoftwarePipeline``): a loop annotated
``software_pipeline_stage`` and ``software_pipeline_order`` (one entry per statement of
its body, as dlight and meta-schedule write them on GPU main loops) becomes a prologue,
a steady-state body and an epilogue. Statement ``k`` of iteration ``i`` runs at
iteration ``i + stage[k]`` of the new loop, in the order ``order`` gives; a buffer
allocated in the loop's block that a later stage reads while an earlier one writes it
gets one version per stage in flight (a leading dimension indexed by the iteration
modulo the number of versions). A block annotated ``double_buffer_scope`` (``sch.double_buffer``)
asks for two versions of the buffer it writes where one would do. Calls that reach a
versioned buffer through its pointer (``T.tvm_access_ptr``, the WMMA builtins' fragment
indices, ``T.ptx_legacy.ldmatrix``/``mma``) get the version's offset
(``software_pipeline_opaque``); any other such call is a located error.

Stages listed in ``software_pipeline_async_stages`` are asynchronous: their statements
run under ``T.attr({"async_scope": 1})`` in a ``async_commit_queue_scope`` group, and
the first consumer waits under ``async_wait_queue_scope``/``async_wait_inflight_count``
for all but the groups still allowed in flight (InjectPTXAsyncCopy and the CUDA code
generator make these ``cp.async`` and its commit and wait).

The rewrite and its wait counts follow TVM's pass step by step (the new blocks' regions
inferred as TVM infers them), so the result is TVM's. A body that is not a sequence,
annotations of the wrong length, two statements of one order, and an order that breaks
a dependence are located errors, as TVM refuses them. So is a buffer allocated outside
the pipelined loop (which cannot be versioned) that a later iteration would overwrite
before an earlier one reads it: TVM builds that and reads the wrong data.

Precondition: LowerMatchBuffer (no matched buffers in the pipelined body).
Guarantees: no loop carries a ``software_pipeline_*`` annotation.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.block import SBlock, SBlockRealize
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm
from tirc.ir.function import IRModule
from tirc.ir.ssa import convert_ssa
from tirc.ir.stmt import For, SeqStmt
from tirc.ir.visitor import Mutator
from tirc.passes.blocks.software_pipeline_body import depends, make_sblock
from tirc.passes.blocks.software_pipeline_opaque import fragment_elements
from tirc.passes.blocks.software_pipeline_rewrite import PipelineRewriter, Stage

_STAGE = "software_pipeline_stage"
_ORDER = "software_pipeline_order"
_ASYNC = "software_pipeline_async_stages"
_DOUBLE = "double_buffer_scope"


def inject_software_pipeline(mod: IRModule, ctx=None) -> IRModule:
    for name, func in list(mod.functions.items()):
        injector = _Injector(name, func.body)
        for _, buf in func.buffer_map:
            injector.visible[id(buf.data)] = buf
        body = injector.visit(func.body)
        if injector.changed:
            mod = mod.with_function(name, func.with_body(convert_ssa(body)))
    return mod


def _ints(value, what: str, loop: For) -> list[int]:
    items = value if isinstance(value, (list, tuple)) else None
    if items is None or not all(isinstance(v, (int, IntImm)) for v in items):
        raise Diagnostic(f"loop '{loop.loop_var.name}': the annotation \"{what}\" must be a "
                         "list of integers", loop.span)
    return [v.value if isinstance(v, IntImm) else int(v) for v in items]


class _Injector(Mutator):
    def __init__(self, name: str, body):
        self.name = name
        self.body = body
        self._fragments: dict[int, int] | None = None
        self.visible: dict[int, Buffer] = {}
        self.double_buffers: set[int] = set()  # ids of buffers marked double_buffer_scope
        self.changed = False

    def fragments(self) -> dict[int, int]:
        """The elements of a fragment of each WMMA fragment buffer of the function."""
        if self._fragments is None:
            self._fragments = fragment_elements(self.body)
        return self._fragments

    def visit_SBlock(self, b: SBlock):
        for buf in b.alloc_buffers:
            self.visible[id(buf.data)] = buf
        for key, value in b.annotations:
            if key == _DOUBLE:
                index = value.value if isinstance(value, IntImm) else value
                if not isinstance(index, int) or not 0 <= index < len(b.writes):
                    raise Diagnostic(
                        f"block '{b.name_hint}': \"{_DOUBLE}\" = {index} is not the index of "
                        f"one of its {len(b.writes)} written regions", b.span)
                self.double_buffers.add(id(b.writes[index].buffer))
        out = self.generic_visit(b)
        for buf in b.alloc_buffers:
            self.visible.pop(id(buf.data), None)
        return out

    def _scoped_buffer(self, s):
        # buffers allocated or declared by statements (not blocks) are seen as well, so
        # that a pipeline over them is checked (TVM sees only parameters and blocks')
        self.visible[id(s.buffer.data)] = s.buffer
        try:
            return self.generic_visit(s)
        finally:
            self.visible.pop(id(s.buffer.data), None)

    visit_AllocBuffer = _scoped_buffer
    visit_DeclBuffer = _scoped_buffer

    def visit_For(self, loop: For):
        new = self.generic_visit(loop)
        keys = dict(loop.annotations)
        if _STAGE not in keys and _ORDER not in keys:
            return new
        if _STAGE not in keys or _ORDER not in keys:
            missing = "order" if _ORDER not in keys else "stage"
            raise Diagnostic(f"loop '{loop.loop_var.name}' is software-pipelined but the "
                             f"{missing} of the software pipeline is not defined "
                             f"(\"software_pipeline_{missing}\")", loop.span)
        self.changed = True
        return self._pipeline(loop, new, keys)

    def _pipeline(self, loop: For, new: For, keys: dict):
        body = new.body
        allocs: list[Buffer] = []
        added: list[Buffer] = []
        if isinstance(body, SBlockRealize):
            for buf in body.block.alloc_buffers:
                self.visible[id(buf.data)] = buf
                added.append(buf)
            allocs.extend(body.block.alloc_buffers)
            body = body.block.body
        if not isinstance(body, SeqStmt):
            raise Diagnostic(f"loop '{loop.loop_var.name}': the body of a software pipeline "
                             f"must be a sequence of statements, not {type(body).__name__}",
                             loop.span)
        children = []
        for child in body.stmts:
            if (isinstance(child, SBlockRealize) and _is_true(child.predicate)
                    and isinstance(child.block.body, SeqStmt)):
                nested = child.block
                if nested.match_buffers:
                    raise Diagnostic(f"block '{nested.name_hint}' still matches buffers: "
                                     "LowerMatchBuffer must run first", nested.span)
                for buf in nested.alloc_buffers:
                    allocs.append(buf)
                    self.visible[id(buf.data)] = buf
                    added.append(buf)
                children.extend(nested.body.stmts)
            else:
                children.append(child)
        blocks = [make_sblock(c, self.visible) for c in children]
        stages = _ints(keys[_STAGE], _STAGE, loop)
        orders = _ints(keys[_ORDER], _ORDER, loop)
        for what, values in ((_STAGE, stages), (_ORDER, orders)):
            if len(values) != len(blocks):
                raise Diagnostic(
                    f"loop '{loop.loop_var.name}' of '{self.name}' pipelines {len(blocks)} "
                    f"statements but \"{what}\" has {len(values)} entries", loop.span)
        async_stages = set(_ints(keys[_ASYNC], _ASYNC, loop)) if _ASYNC in keys else set()
        preserved = tuple((k, v) for k, v in new.annotations if k not in (_STAGE, _ORDER, _ASYNC))
        info = [Stage(s, o, s in async_stages) for s, o in zip(stages, orders)]
        self._validate(loop, blocks, info)
        pipelined_loop = For(new.loop_var, new.min, new.extent, new.kind, new.body,
                             new.thread_tag, new.annotations, new.step, new.span)
        out = PipelineRewriter(dict(self.visible), self.double_buffers, allocs, pipelined_loop,
                               blocks, info, preserved,
                               self.fragments).build()
        for buf in added:
            self.visible.pop(id(buf.data), None)
        return out

    def _validate(self, loop: For, blocks: list[SBlock], info: list[Stage]) -> None:
        seen: set[int] = set()
        for st in info:
            if st.order in seen:
                raise Diagnostic(f"loop '{loop.loop_var.name}': two statements in the software "
                                 f"pipeline have the same order {st.order}", loop.span)
            seen.add(st.order)
        for src, dst in depends(blocks):
            a, b = info[src], info[dst]
            if a.stage > b.stage:
                raise Diagnostic(
                    f"loop '{loop.loop_var.name}': statement {dst} in stage {b.stage} reads what "
                    f"statement {src} writes in a later stage {a.stage}", loop.span)
            if a.stage == b.stage and a.order >= b.order:
                raise Diagnostic(
                    f"loop '{loop.loop_var.name}': statements {src} and {dst} depend on each "
                    f"other through a buffer in stage {a.stage}; the software pipeline cannot "
                    f"reorder them (orders {a.order} and {b.order})", loop.span)


def _is_true(e) -> bool:
    return isinstance(e, IntImm) and e.value != 0
