"""``OUT/NAME.json``: what a build system or a reviewer wants to know without reading PTX
(DESIGN §5), computed from the module after the pipeline.

    {"abi": "c" | "packed", "module": NAME, "host_target": canonical,
     "functions": [{"name", "symbol", "target", "target_summary", "params", "returns",
                    "declaration"?}],
     "kernels":   [{"name", "symbol", "target", "target_summary", "image"?, "params",
                    "launch_params", "grid", "block", "dynamic_shared_memory", "launches",
                    "resource_usage"?, "fatbin"?}]}

``functions`` are the exported host functions (packed or C API), with their TIR
parameters (``{"name", "kind": "buffer", "dtype", "shape"}`` or ``{"name", "kind":
"scalar", "dtype"}``) and for the C ABI the C declaration. ``kernels`` are the device
kernels (``calling_conv`` 2): ``grid`` and ``block`` are ``[x, y, z]`` with integers
for constants and expression text (in terms of the kernel's parameters) otherwise;
``dynamic_shared_memory`` is bytes, likewise; ``launch_params`` the launch parameter
tags in order (TVM's ``tirx.kernel_launch_params``); ``launches`` each host launch
site (``caller`` and the sizes in terms of the caller's variables). ``target`` is the
target's canonical string; ``image`` the device file of the kernel's target, or a
list of them (one per arch) for a multi-arch target (``cuda -arch=sm_80,sm_90``).
Builds with cubins (``--device-format cubin`` or ``fatbin``) add ``resource_usage``,
per arch of the kernel's cubins: ``{"sm_80": {"registers", "spill_stores",
"spill_loads", "stack_frame", "shared_memory", "constant_memory"}}`` (integers; bytes
but for registers per thread), as the cubin stage read them from nvJitLink; fatbin
builds add ``fatbin``, the images of the kernel's fatbin in order (``[{"arch":
"sm_80", "format": "cubin"}, ..., {"arch": "sm_90", "format": "ptx"}]``). These are
the device stage's facts, passed in as plain data (``device_facts``), never derived
here. Lists are in module order; the JSON has sorted keys and a trailing newline, so the
same input gives the same bytes.
"""
from __future__ import annotations

import json

from tirc.header import c_declaration, expr_text
from tirc.ir.attrs import (CallingConv, CALLING_CONV, C_API, GLOBAL_SYMBOL, TARGET,
    USE_DYN_SHARED_MEMORY)
from tirc.ir.expr import Call, IntImm, PrimExpr, StringImm
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import Evaluate, IfThenElse, SeqStmt, Stmt
from tirc.target import Target



def _value(e: PrimExpr) -> int | str:
    return e.value if isinstance(e, IntImm) else expr_text(e)


def _target(f: PrimFunc) -> dict:
    t = f.attrs.get(TARGET)
    if not isinstance(t, Target):
        return {"target": None, "target_summary": None}
    return {"target": t.canonical, "target_summary": t.describe()}


def _params(f: PrimFunc) -> list[dict]:
    out = []
    for p in f.params:
        buf = f.buffer_of(p)
        if buf is not None:
            out.append({"name": p.name, "kind": "buffer", "dtype": str(buf.dtype),
                        "shape": [_value(s) for s in buf.shape]})
        else:
            entry = {"name": p.name, "kind": "scalar", "dtype": str(p.dtype)}
            if p.ptr is not None:  # a pointer parameter (kernels): what it points at
                entry["points_to"] = str(p.ptr.dtype)
            out.append(entry)
    return out


def _sizes(tags: list[str], extents: list[PrimExpr]) -> dict:
    grid: list[int | str] = [1, 1, 1]
    block: list[int | str] = [1, 1, 1]
    shmem: int | str = 0
    for tag, e in zip(tags, extents):
        if tag == USE_DYN_SHARED_MEMORY:
            shmem = _value(e)
        elif tag.startswith(("blockIdx.", "threadIdx.")):
            axis = "xyz".index(tag[-1])
            (grid if tag.startswith("blockIdx.") else block)[axis] = _value(e)
    return {"grid": grid, "block": block, "dynamic_shared_memory": shmem}


def _launch_calls(body: Stmt):
    """The ``T.call_ffi_kernel`` calls of a function body. A kernel returns nothing, so
    its launch is a statement of its own: only statements are visited, not the
    (many more) expressions of argument checks."""
    stack = [body]
    while stack:
        s = stack.pop()
        if isinstance(s, Evaluate):
            if isinstance(s.value, Call) and s.value.op == "call_ffi_kernel":
                yield s.value
        elif isinstance(s, SeqStmt):
            stack.extend(reversed(s.stmts))
        elif isinstance(s, IfThenElse):
            stack.extend(c for c in (s.else_case, s.then_case) if c is not None)
        elif isinstance(getattr(s, "body", None), Stmt):
            stack.append(s.body)


def manifest(mod: IRModule, name: str, abi: str, original: IRModule | None = None,
             host_target: Target | None = None, images: dict[str, str | list[str]] | None = None,
             device_facts: dict[str, dict] | None = None) -> dict:
    """The manifest of ``mod`` (after the pipeline). ``original`` (the module before it)
    gives exported functions their TIR parameters; ``images`` maps a device target's
    canonical string to its image file name (a list of names for a multi-arch target);
    ``device_facts`` a device target's canonical string to what its device stage
    recorded: ``"resource_usage"`` (``{kernel symbol: {arch: figures}}``) and
    ``"fatbin"`` (the fatbin's entries)."""
    from tirc.ir.attrs import is_kernel
    from tirc.passes.split.lower_device_kernel_launch import launch_params

    orig = original.functions if original is not None else {}
    images = images or {}
    device_facts = device_facts or {}
    functions, kernels = [], []
    launches: dict[str, list[dict]] = {}
    for caller, f in mod.functions.items():
        for node in _launch_calls(f.body):
            if isinstance(node, Call) and node.op == "call_ffi_kernel":
                tags = list(dict(node.kwargs).get("launch_params", ()))
                kname = node.args[0].value if isinstance(node.args[0], StringImm) else "?"
                sizes = list(node.args[len(node.args) - len(tags):]) if tags else []
                launches.setdefault(kname, []).append({"caller": caller, **_sizes(tags, sizes)})
    for n, f in mod.functions.items():
        if is_kernel(f):
            tags, extents = launch_params(n, f)
            t = f.attrs.get(TARGET)
            symbol = str(f.attrs.get(GLOBAL_SYMBOL, n))
            kernels.append({
                "name": n, "symbol": symbol, **_target(f),
                "image": images.get(t.canonical) if isinstance(t, Target) else None,
                "params": _params(f), "launch_params": list(tags), **_sizes(tags, extents),
                "launches": launches.get(n, []),
            })
            facts = device_facts.get(t.canonical, {}) if isinstance(t, Target) else {}
            usage = facts.get("resource_usage", {}).get(symbol)
            if usage:
                kernels[-1]["resource_usage"] = usage
            if "fatbin" in facts:
                kernels[-1]["fatbin"] = facts["fatbin"]
        elif f.attrs.get(C_API) or f.attrs.get(CALLING_CONV) == CallingConv.CPACKED_FUNC:
            src = orig.get(n)
            ret = (src or f).ret_type
            entry = {"name": n, "symbol": str(f.attrs.get(GLOBAL_SYMBOL, n)), **_target(f),
                     "params": _params(src) if src is not None else None,
                     "returns": str(ret) if src is not None and ret is not None and not ret.is_void
                     else None}
            if f.attrs.get(C_API):
                entry["declaration"] = c_declaration(n, f)
            functions.append(entry)
    return {"abi": abi, "module": name,
            "host_target": host_target.canonical if host_target is not None else None,
            "functions": functions, "kernels": kernels}


def manifest_json(data: dict) -> str:
    return json.dumps(data, sort_keys=True, indent=2) + "\n"
