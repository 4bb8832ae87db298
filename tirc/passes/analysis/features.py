"""The kinds of construct a module holds, in one walk: what the pass manager reads to
skip a pass that has nothing to act on (``Pass.needs``, ``pipeline.run_pipeline``), so
that a module without vectorized loops, virtual threads, shared memory... neither runs
nor imports the passes that lower them.

A feature is a string:

* ``block``: a block or block realization (schedulable TIR); ``block.<key>``: a block
  annotated ``key`` (``T.sblock_attr``); ``block.alloc.<scope>``: a block allocating a
  buffer in ``scope``;
* ``loop.vectorized``, ``loop.unrolled``: a loop of that kind; ``loop.annotated``: a loop
  with annotations; ``loop.unit``: a serial loop of constant extent 1;
  ``loop.software_pipeline``: a loop with a ``software_pipeline_*`` annotation; ``loop.jump``:
  a ``T.break_loop()`` or ``T.continue_loop()``;
* ``thread.virtual``: a virtual thread axis (``vthread``, ``vthread.x``, ``cthread``) under an
  attribute or bound by a ``thread_binding`` loop;
* ``attr.<key>``: an attribute statement of that key (``attr.pragma_auto_unroll_max_step``,
  ``attr.reduce_scope``, ...); ``attr.pragma``: any ``pragma_*`` key;
* ``call.<op>``: a call of a named operator (``call.likely``, ``call.tvm_thread_allreduce``);
* ``alloc``: an allocation; ``shared``: any variable, buffer or access in ``shared`` or
  ``shared.dyn`` memory (parameters, allocations, declarations, lets, loads, stores);
  ``warp``: the same for ``warp`` memory; ``wmma``: the same for WMMA fragments
  (``wmma.matrix_a``, ``wmma.matrix_b``, ``wmma.accumulator``);
* ``select``: a ``T.Select``;
* ``int64``: a variable, constant or cast of a signed integer type wider than 32 bits;
* ``bfloat16``, ``float8``: a parameter, return type, variable (or what a pointer variable
  points to), constant, cast, call or buffer of ``bfloat16`` / of a ``float8_*`` type.
  Every narrow float value starts at one of those (arithmetic on it is of its
  operands' type), so a function without them mentions no such type;
* ``private``: a private function.

The walk covers statements and expressions of every function, so a feature is absent
only when no node of the module has it.
"""
from __future__ import annotations

from tirc.ir.buffer import SHARED_SCOPES
from tirc.ir.block import SBlock, SBlockRealize
from tirc.ir.dtype import NARROW_FLOAT_BASES
from tirc.ir.expr import BufferLoad, Call, Cast, FloatImm, IntImm, Select, Var
from tirc.ir.function import IRModule
from tirc.ir.stmt import (AllocBuffer, AttrStmt, Break, BufferStore, Continue, DeclBuffer, For,
                          IterVar)
from tirc.ir.visitor import walk


# the feature of each narrow float base
_NARROW = {base: "bfloat16" if base == "bfloat16" else "float8" for base in NARROW_FLOAT_BASES}


def is_virtual_thread(tag: str) -> bool:
    """Whether ``tag`` names a virtual thread axis (InjectVirtualThread's)."""
    return tag == "vthread" or tag.startswith(("vthread.", "cthread"))


def module_features(mod: IRModule, known: dict | None = None) -> frozenset[str]:
    """The features (module docstring) of ``mod``. ``known`` (``id(func) -> (func,
    features)``, kept by the caller between passes) spares the walk of the functions a
    pass left as they were."""
    found: set[str] = set()
    current = {}
    for func in mod.functions.values():
        entry = known.get(id(func)) if known is not None else None
        if entry is None or entry[0] is not func:
            entry = (func, function_features(func))
        current[id(func)] = entry
        found |= entry[1]
    if known is not None:  # only the module's functions stay (and stay alive)
        known.clear()
        known.update(current)
    return frozenset(found)


def function_features(func) -> frozenset[str]:
    """The features of one function."""
    found: set[str] = set()
    add = found.add
    if func.private:
        add("private")
    _narrow(func.ret_type, add)
    for var in func.params:
        _pointer(var, add)
        _narrow(var.dtype, add)
    for _, buf in func.buffer_map:
        _buffer(buf, add)
    for node in walk(func.body):
        cls = type(node)
        if cls is Var:
            _pointer(node, add)
            _scalar(node.dtype, add)
        elif cls is IntImm or cls is Cast:
            _scalar(node.dtype, add)
        elif cls is FloatImm:
            _narrow(node.dtype, add)
        elif cls is BufferLoad or cls is BufferStore:
            _buffer(node.buffer, add)
        elif cls is Call:
            if isinstance(node.op, str):
                add(f"call.{node.op}")
            _narrow(node.dtype, add)
        elif cls is For:
            _loop(node, add)
        elif cls is AttrStmt:
            add(f"attr.{node.key}")
            if node.key.startswith("pragma_"):
                add("attr.pragma")
            if isinstance(node.node, IterVar) and is_virtual_thread(node.node.thread_tag):
                add("thread.virtual")
        elif cls is AllocBuffer:
            add("alloc")
            _buffer(node.buffer, add)
        elif cls is DeclBuffer:
            _buffer(node.buffer, add)
        elif cls is SBlock or cls is SBlockRealize:
            add("block")
            if cls is SBlock:
                for key, _ in node.annotations:
                    add(f"block.{key}")
                for b in node.alloc_buffers:
                    add(f"block.alloc.{b.scope}")
        elif cls is Select:
            add("select")
        elif cls is Break or cls is Continue:
            add("loop.jump")
    return frozenset(found)


def _loop(loop: For, add) -> None:
    if loop.kind == "vectorized":
        add("loop.vectorized")
    elif loop.kind == "unrolled":
        add("loop.unrolled")
    elif loop.kind == "thread_binding" and is_virtual_thread(loop.thread_tag or ""):
        add("thread.virtual")
    if loop.annotations:
        add("loop.annotated")
        if any(k.startswith("software_pipeline_") for k, _ in loop.annotations):
            add("loop.software_pipeline")
    if loop.kind == "serial" and isinstance(loop.extent, IntImm) and loop.extent.value == 1:
        add("loop.unit")


def _scalar(dtype, add) -> None:
    """``int64`` or a narrow float feature for a variable's, constant's or cast's type."""
    base = dtype.base
    if base == "int64":
        add("int64")
    elif base in _NARROW:
        add(_NARROW[base])


def _narrow(dtype, add) -> None:
    """The narrow float feature of ``dtype`` (None: none)."""
    if dtype is not None and dtype.base in _NARROW:
        add(_NARROW[dtype.base])


def _buffer(buf, add) -> None:
    _pointer(buf.data, add)
    _narrow(buf.dtype, add)


def _pointer(var: Var, add) -> None:
    ptr = var.ptr
    if ptr is not None:
        _narrow(ptr.dtype, add)
        if ptr.scope in SHARED_SCOPES:
            add("shared")
        elif ptr.scope == "warp":
            add("warp")
        elif ptr.scope.startswith("wmma."):
            add("wmma")
