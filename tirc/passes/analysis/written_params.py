"""Which parameters' memory each function of a module may write.

A parameter is written when the function, or a function of the module it calls or
launches, may store through it: a buffer parameter's data, or a pointer (``T.handle``)
parameter. What counts as a write:

- a ``BufferStore`` whose buffer's data is the parameter, or a variable bound to it
  (``x = A_data``, ``T.handle_add_byte_offset(A_data, k)``, ``T.address_of(A[i])``,
  ``T.tvm_access_ptr(..., A_data, ...)``);
- a call of a module function (``Module.f(A, ...)``) or a kernel launch
  (``T.call_ffi_kernel("f_kernel", A, ...)``) passing it where the callee writes;
- ``T.masked_store(A, ...)`` (its access is a ``BufferLoad`` argument);
- ``T.tvm_access_ptr`` whose access mask is not a constant without the write bit (2);
- any other call that has side effects (``T.call_extern``, ``T.call_packed``, ...) and is
  given it: what the callee does is not known, so it may write (conservative).

Only module functions (``op`` a GlobalVar, or a launched kernel's name) are followed;
a cycle of calls counts every pointer parameter of the functions in it as written.
"""
from __future__ import annotations

from tirc.ir.block import BufferRegion
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Call, GlobalVar, IntImm, PrimExpr, StringImm, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.ops import INTRINSICS
from tirc.ir.stmt import BufferStore, LetStmt
from tirc.ir.visitor import walk


def written_params(mod: IRModule) -> dict[str, frozenset[int]]:
    """For each function of ``mod``, the positions of the parameters it may write."""
    done: dict[str, frozenset[int]] = {}
    for name in mod.functions:
        _of(mod, name, done, set())
    return done


def _param_memory(f: PrimFunc) -> dict[Var, int]:
    """The variable holding each parameter's memory (a buffer's data, or the handle)."""
    out: dict[Var, int] = {}
    for i, p in enumerate(f.params):
        buf = f.buffer_of(p)
        if buf is not None:
            out[buf.data] = i
        elif p.dtype.is_handle:
            out[p] = i
    return out


def _of(mod: IRModule, name: str, done: dict, visiting: set) -> frozenset[int]:
    if name in done:
        return done[name]
    f = mod.functions[name]
    memory = _param_memory(f)
    if name in visiting:  # a cycle: assume the worst
        return frozenset(memory.values())
    visiting.add(name)
    alias: dict[Var, Var] = {}

    def root(e: PrimExpr) -> Var | None:
        """The variable whose memory ``e`` points into, when it is one we track."""
        while True:
            if isinstance(e, (Buffer, BufferRegion)):  # Module.f(A, B[0:8]): by reference
                e = e.data if isinstance(e, Buffer) else e.buffer.data
                continue
            if isinstance(e, Var):
                return alias.get(e, e)
            if isinstance(e, Call) and e.args:
                if e.op == "address_of" and isinstance(e.args[0], BufferLoad):
                    e = e.args[0].buffer.data
                    continue
                if e.op == "handle_add_byte_offset":
                    e = e.args[0]
                    continue
                if e.op == "tvm_access_ptr" and len(e.args) > 1:
                    e = e.args[1]
                    continue
            return None

    written: set[Var] = set()
    for node in walk(f.body):
        if isinstance(node, LetStmt) and node.var.dtype.is_handle:
            r = root(node.value)
            if r is not None:
                alias[node.var] = r
        elif isinstance(node, BufferStore):
            written.add(root(node.buffer.data))
        elif isinstance(node, Call):
            written.update(root(a) for a in _written_args(mod, node, done, visiting))
    visiting.discard(name)
    result = frozenset(i for v, i in memory.items() if v in written)
    done[name] = result
    return result


def _written_args(mod: IRModule, call: Call, done: dict, visiting: set) -> list[PrimExpr]:
    """The arguments of ``call`` whose memory it may write."""
    if isinstance(call.op, GlobalVar):
        # a buffer element where the callee takes a buffer: the region from there
        args = [a.buffer if isinstance(a, BufferLoad) else a for a in call.args]
        if call.op.name not in mod.functions:
            return args
        return [args[i] for i in _of(mod, call.op.name, done, visiting) if i < len(args)]
    if call.op == "call_ffi_kernel":
        kernel = call.args[0].value if isinstance(call.args[0], StringImm) else None
        if kernel not in mod.functions:
            return list(call.args[1:])
        return [call.args[1 + i] for i in _of(mod, kernel, done, visiting)
                if 1 + i < len(call.args)]
    if call.op == "tvm_access_ptr":
        mask = call.args[4] if len(call.args) > 4 else None
        return [] if isinstance(mask, IntImm) and not mask.value & 2 else [call.args[1]]
    if call.op in ("masked_load", "masked_store") and isinstance(call.args[0], BufferLoad):
        return [call.args[0].buffer] if call.op == "masked_store" else []
    intrinsic = INTRINSICS.get(call.op)
    if intrinsic is not None and intrinsic.pure:
        return []
    # an access pointer among the arguments says itself whether it writes (above)
    return [a for a in call.args if not (isinstance(a, Call) and a.op == "tvm_access_ptr")]
