"""VerifyMemory: host code never touches device memory, and device code allocates only
memory it can have.

After the split, a host function whose target is a device target with a host receives
its buffers in device memory (MakePackedAPI checks their device type). Loads and stores
of those buffers belong in kernels; one left in host code would read GPU addresses on
the CPU. Each is a diagnostic at the access, suggesting a thread binding or a CPU target
(TVM's VerifyMemory asks "did you forget to bind?" in the same place).

A kernel allocates ``local`` memory (one copy per thread) and ``shared`` memory (one per
block), and a CUDA kernel WMMA fragments (``wmma.*``, registers of a warp); ``warp`` memory (TVM's LowerWarpMemory) is not supported; a ``global`` allocation inside a kernel has no meaning on the GPU: each
thread would get a private copy of what the program means to share, so results written
by one thread never reach the others. It is a diagnostic at the allocation (TVM's CUDA
code generator refuses it: "Cannot allocate global memory when targeting CUDA").

PTX instructions (``T.ptx_legacy.mma``, ...) must be in device code, for an arch that
has them (``verify_ptx_calls.py``).

Precondition: LowerDeviceKernelLaunch (device regions are kernels of their own).
"""
from __future__ import annotations

from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import CallingConv, CALLING_CONV, TARGET
from tirc.ir.buffer import WMMA_SCOPES
from tirc.ir.expr import BufferLoad
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import AllocBuffer, BufferStore
from tirc.ir.visitor import walk, walk_statements
from tirc.passes.analysis.context import HOST, body_context
from tirc.passes.split.verify_ptx_calls import check_ptx_calls
from tirc.target.kinds import Target


def _check(name: str, func: PrimFunc, target: Target) -> None:
    device_data = {id(buf.data) for _, buf in func.buffer_map}
    for node in walk(func.body):
        if isinstance(node, (BufferLoad, BufferStore)) and id(node.buffer.data) in device_data:
            verb = "reads" if isinstance(node, BufferLoad) else "writes"
            raise Diagnostic(
                f"host code of '{name}' {verb} buffer '{node.buffer.name}', which lives on the "
                f"{target.kind} device. Did you forget to bind? Bind the loops to threads "
                "(T.thread_binding; in Python, dlight or s_tir.Schedule's bind), build with "
                "--default-gpu-schedule (TVM's default binding of block-level functions), or "
                "give the function a CPU target", node.span)


_KERNEL_SCOPES = ("shared", "shared.dyn")


def _check_kernel(func: PrimFunc, target: Target) -> None:
    for node in walk_statements(func.body):
        if isinstance(node, AllocBuffer):
            scope = node.buffer.scope
            if scope in _KERNEL_SCOPES or scope.startswith("local"):
                continue
            if scope in WMMA_SCOPES:
                if target.is_cuda:
                    continue
                raise Diagnostic(
                    f"buffer '{node.buffer.name}' is a WMMA fragment ('{scope}'), which only "
                    f"CUDA targets have, and this kernel's target is {target.kind}",
                    node.buffer.span or node.span)
            if scope == "warp":
                if target.get("thread_warp_size", 1) > 1:
                    continue  # LowerWarpMemory makes it registers and shuffles
                raise Diagnostic(
                    f"buffer '{node.buffer.name}' is allocated in 'warp' memory, which target "
                    f"'{target.kind}' does not have (its warp is one thread: "
                    "thread_warp_size 1); use scope 'shared' or 'local'",
                    node.buffer.span or node.span)
            raise Diagnostic(
                f"buffer '{node.buffer.name}' is allocated in '{scope}' memory inside device "
                "code, where each thread would get its own copy; allocate it in the host "
                "function and pass it in, or use scope 'shared' (one per block) or 'local' "
                "(one per thread)", node.buffer.span or node.span)


def verify_memory(mod: IRModule, ctx) -> IRModule:
    for name, func in mod.functions.items():
        check_ptx_calls(name, func)
        target = func.attrs.get(TARGET)
        kernel = func.attrs.get(CALLING_CONV) == CallingConv.DEVICE_KERNEL_LAUNCH
        if isinstance(target, Target) and target.is_device and kernel:
            _check_kernel(func, target)
        if (isinstance(target, Target) and target.is_device and target.host is not None
                and not kernel and body_context(func) == HOST):
            _check(name, func, target)
    return mod
