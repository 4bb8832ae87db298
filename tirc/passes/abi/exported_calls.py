"""Calls of exported functions under the packed ABI (part of MakePackedAPI).

Once MakePackedAPI has given a public function the packed signature, a call
``Module.f(...)`` from another function of the module can no longer pass the arguments
directly. As TVM's MakePackedAPI does (its ``SubroutineCallRewriter``), the call becomes
``T.call_cpacked("__tvm_ffi_<f>", args...)``: the arguments go through a ``TVMFFIAny``
array to the exported symbol, which checks them as it checks any caller's, and a failure
of ``f`` is the caller's failure (``tirc.backends.cpu.packed_call``).

A buffer argument is passed as a tensor (``DLTensor*``): a parameter buffer of the
calling exported function passes the tensor its own caller gave (the positions are the
call's ``tensors`` option, ``CPACKED_TENSORS``). Anything else is a located error: a buffer the caller
allocated has no tensor to pass, and a private function cannot call an exported one (an
error of the callee needs an exported caller to reach the user).
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import CPACKED_TENSORS
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Call, GlobalVar, StringImm
from tirc.ir.stmt import Stmt
from tirc.ir.visitor import Mutator


def rewrite_exported_calls(body: Stmt, caller: str, symbols: dict[str, str],
                           tensors: dict[int, object] | None) -> Stmt:
    """``body`` of function ``caller`` with its calls of the functions named in
    ``symbols`` (name -> exported symbol) made through ``T.call_cpacked``; ``tensors``:
    the caller's parameter buffers by id, each to its tensor handle (None: the caller is
    not exported)."""
    return _Rewriter(caller, symbols, tensors).visit(body)


class _Rewriter(Mutator):
    def __init__(self, caller: str, symbols: dict[str, str], tensors):
        self.caller, self.symbols, self.tensors = caller, symbols, tensors

    def visit_Call(self, call: Call):
        call = self.generic_visit(call)
        if not isinstance(call.op, GlobalVar) or call.op.name not in self.symbols:
            return call
        name = call.op.name
        if self.tensors is None:
            raise Diagnostic(f"the private function '{self.caller}' cannot call the exported "
                             f"function '{name}': only an exported function can hand its "
                             f"errors on; call '{name}' from an exported function or make it "
                             f"private", call.span)
        args, positions = [], []
        for i, a in enumerate(call.args):
            if isinstance(a, Buffer):
                handle = self.tensors.get(id(a))
                if handle is None:
                    raise Diagnostic(f"buffer '{a.name}' cannot be passed to the exported "
                                     f"function '{name}': only a parameter buffer of "
                                     f"'{self.caller}' has a tensor to pass; make '{name}' "
                                     f"private to pass any buffer", call.span)
                a = handle
                positions.append(i)
            args.append(a)
        kwargs = ((CPACKED_TENSORS, tuple(positions)),) if positions else ()
        return Call(call.dtype, "call_cpacked", (StringImm(self.symbols[name]), *args),
                    call.span, kwargs)
