"""Scoped alias metadata for buffer accesses (``!alias.scope`` / ``!noalias``), so that
LLVM knows a store to one buffer does not change another buffer's elements.

Without it a loop that accumulates in an output buffer (``C[i, j] = C[i, j] + A[i, k] *
B[k, j]`` with the reduction innermost, as ``decompose_reduction`` schedules write it)
reloads and stores its accumulators on every iteration: the buffers' pointers come
from the packed arguments (or, in a ``T.parallel`` body, from the struct that carries the
captured values), so LLVM cannot tell them apart and keeps every access in memory. TVM
tells its LLVM the same with a TBAA type per buffer and ``noalias`` parameters.

A buffer's data pointer gets a scope of its own when it is known to be distinct memory:

* an allocation (``T.alloc_buffer``/``AllocBuffer``: fresh stack or heap memory);
* a buffer argument of a function marked ``tir.noalias``/``tirx.noalias`` (what
  ``te.create_prim_func`` and TVM's schedules write): after MakePackedAPI the data
  pointer bound by ``T.tvm_struct_get(handle, 0, 1, "handle")``; a C-API or internal
  function's buffer parameter itself.

Every load and store through such a pointer (through any buffer declared on it) carries
its scope and is declared not to alias the function's other scopes. Accesses through
any other pointer (``T.address_of``, pointer arithmetic, a function without the noalias
attribute) carry no metadata, so nothing is claimed about them. The outlined body of a
``T.parallel`` loop shares its function's scopes. The metadata is attached when the
function is finished, once all its scopes are known; with fewer than two scopes there
is nothing to say and none is attached.
"""
from __future__ import annotations

from llvmlite import ir

from tirc.ir.attrs import NOALIAS_KEYS
from tirc.ir.expr import Call, IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc

_ARR_DATA = 1  # DLTensor field index of the data pointer (ffi_abi.ARR_DATA)


def is_noalias(func: PrimFunc) -> bool:
    return any(bool(func.attrs.get(k)) for k in NOALIAS_KEYS)


def is_argument_data(value: PrimExpr) -> bool:
    """``T.tvm_struct_get(handle, 0, 1, "handle")``: the data pointer of a DLTensor
    argument, as MakePackedAPI binds it."""
    return (isinstance(value, Call) and value.op == "tvm_struct_get" and len(value.args) >= 3
            and isinstance(value.args[2], IntImm) and value.args[2].value == _ARR_DATA
            and value.dtype.is_handle)


class AliasScopes:
    """The scopes of one function (shared with its outlined parallel bodies)."""

    def __init__(self) -> None:
        self.order: list[tuple[int, str]] = []  # (id of the data var, its name), in order
        self.known: set[int] = set()
        self.accesses: list[tuple[ir.Instruction, int]] = []

    def add(self, data: Var) -> None:
        if id(data) not in self.known:
            self.known.add(id(data))
            self.order.append((id(data), data.name))

    def note(self, instr: ir.Instruction, data: PrimExpr) -> None:
        """Record an access through ``data`` (tagged in :meth:`finish` if it has a scope)."""
        if isinstance(data, Var) and id(data) in self.known:
            self.accesses.append((instr, id(data)))

    def finish(self, module: ir.Module, fname: str) -> None:
        if len(self.order) < 2 or not self.accesses:
            return
        # String-named domain and scopes (LLVM LangRef, "Scoped alias metadata"): unique
        # within the module because function names are.
        domain = module.add_metadata([ir.MetaDataString(module, f"tirc.alias.{fname}")])
        scopes = {key: module.add_metadata([ir.MetaDataString(module, f"{fname}.{k}.{name}"),
                                            domain])
                  for k, (key, name) in enumerate(self.order)}
        tags = {}
        for key in scopes:
            tags[key] = (module.add_metadata([scopes[key]]),
                         module.add_metadata([s for k, s in scopes.items() if k != key]))
        for instr, key in self.accesses:
            scope, others = tags[key]
            instr.set_metadata("alias.scope", scope)
            instr.set_metadata("noalias", others)
        self.accesses.clear()
