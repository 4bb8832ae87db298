"""The PTX instructions of a module (``tirc.ir.ptx_ops``) run where they can: in CUDA
device code, for an arch that has them.

Run by VerifyMemory, after the split, when every function's target says where its code
runs: a PTX call in host code (a CPU target, or the host side of a CUDA function, outside
its thread launches) is a diagnostic at the call, as is one whose instruction the
target's arch (each arch of a multi-arch target) lacks (``tirc.target.kinds.PTX_FEATURES``).
The async copy queues of a CUDA function (``async_commit_queue_scope``,
``async_wait_queue_scope``) count as the ``cp.async`` group instructions they become.
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir import ptx_ops
from tirc.ir.attrs import CALLING_CONV, TARGET, CallingConv
from tirc.ir.expr import Call
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import AttrStmt
from tirc.ir.visitor import walk, walk_statements
from tirc.passes.analysis.context import DEVICE, body_context
from tirc.target.kinds import Target, cuda_archs, ptx_feature_arch_error


def check_ptx_calls(name: str, func: PrimFunc) -> None:
    target = func.attrs.get(TARGET)
    calls = [(n, f"T.{n.op}") for n in walk(func.body)
             if isinstance(n, Call) and ptx_ops.is_ptx(n.op)]
    if isinstance(target, Target) and target.is_cuda:
        # the async copy queues of a software pipeline become cp.async group instructions
        # in CUDA code (elsewhere they mean nothing: the copies are synchronous)
        calls += [(c, f"the software pipeline's asynchronous copy queue (\"{n.key}\")")
                  for n in walk_statements(func.body) if isinstance(n, AttrStmt)
                  for c in (ptx_ops.queue_call(n),) if c is not None]
    if not calls:
        return
    kernel = func.attrs.get(CALLING_CONV) == CallingConv.DEVICE_KERNEL_LAUNCH
    on_gpu = isinstance(target, Target) and target.is_cuda and (kernel or body_context(func) == DEVICE)
    for call, what in calls:
        if not on_gpu:
            where = (f"the host code of '{name}' (outside its thread launches)"
                     if isinstance(target, Target) and target.is_cuda
                     else f"'{name}', compiled for target {target.kind if isinstance(target, Target) else 'none'}")
            raise Diagnostic(f"{what} is a PTX instruction of CUDA device code and cannot run "
                             f"in {where}", call.span)
        feature = ptx_ops.feature(call)
        for arch in cuda_archs(target):
            why = ptx_feature_arch_error(feature, arch)
            if why is not None:
                raise Diagnostic(f"{what} ({feature}) {why}", call.span)
