"""Intrinsic calls in OpenCL C: the math built-ins, barriers, reinterpretation, extern
calls; anything else is a located error naming the target."""
from __future__ import annotations

from tirc.backends.opencl.expr import BINARY_MATH, UNARY_MATH, unsupported
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Call, StringImm

# the address space a barrier fences, by the storage scope TIR names
_FENCES = {"shared": "CLK_LOCAL_MEM_FENCE", "shared.dyn": "CLK_LOCAL_MEM_FENCE",
           "global": "CLK_GLOBAL_MEM_FENCE"}


def extern_name(name: str) -> str:
    """The OpenCL C built-in for a C or CUDA math function a module names in an extern call
    (TVM's CUDA intrinsic rules write ``expf``, ``__expf`` and, for half, ``hexp``); any
    other name as it is."""
    if name in _OPENCL_MATH:
        return name
    if name.startswith("__") and name.endswith("f") and name[2:-1] in _OPENCL_MATH:
        return "native_" + name[2:-1] if "native_" + name[2:-1] in _NATIVE else name[2:-1]
    if name.endswith("f") and name[:-1] in _OPENCL_MATH:
        return name[:-1]
    if name.startswith("h") and name[1:] in _OPENCL_MATH:
        return name[1:]
    return name


_OPENCL_MATH = frozenset({*UNARY_MATH.values(), *BINARY_MATH.values(), "exp", "log", "fabs",
                          "fmin", "fmax", "erfc", "lgamma", "tgamma", "cbrt", "expm1"})
_NATIVE = frozenset(f"native_{n}" for n in ("cos", "exp", "exp10", "exp2", "log", "log10", "log2",
                                             "powr", "recip", "rsqrt", "sin", "sqrt", "tan"))


def call(w, e: Call) -> str:
    op, args = e.op, e.args
    if op in UNARY_MATH and args[0].dtype.is_float:
        return f"{UNARY_MATH[op]}({w(args[0])})"
    if op in BINARY_MATH:
        return f"{BINARY_MATH[op]}({w(args[0])}, {w(args[1])})"
    if op == "fabs" or (op == "abs"):
        return f"fabs({w(args[0])})" if args[0].dtype.is_float else \
            f"(({w.type(e.dtype, e.span)})abs({w(args[0])}))"
    if op == "sigmoid":
        x = w(args[0])
        one = "1.0f" if e.dtype.base == "float32" else f"(({w.type(e.dtype, e.span)})1)"
        return f"({one} / ({one} + exp((-{x}))))"
    if op == "fma":
        return f"fma({w(args[0])}, {w(args[1])}, {w(args[2])})" if e.dtype.is_float else \
            f"(({w(args[0])} * {w(args[1])}) + {w(args[2])})"
    if op in ("popcount", "clz"):
        return f"{op}({w(args[0])})"
    if op in ("isnan", "isinf", "isfinite"):
        return f"({op}({w(args[0])}) != 0)"
    if op in ("likely", "ignore_loop_partition"):
        return w(args[0])
    if op == "bitwise_not":
        return f"(~{w(args[0])})"
    if op == "if_then_else":
        return f"({w(args[0])} ? {w(args[1])} : {w(args[2])})"
    if op == "reinterpret":
        return f"as_{w.type(e.dtype, e.span)}({w(args[-1])})"
    if op == "tvm_storage_sync":
        scope = args[0].value if isinstance(args[0], StringImm) else "shared"
        if scope == "warp":  # a warp is one work-item (thread_warp_size 1)
            return ""
        if scope not in _FENCES:
            raise unsupported(f"T.tvm_storage_sync({scope!r})", e.span)
        return f"barrier({_FENCES[scope]})"
    if op in ("call_extern", "call_pure_extern"):
        name = args[0].value if isinstance(args[0], StringImm) else None
        if name is None:
            raise unsupported("an extern call without a function name", e.span)
        return f"{extern_name(name)}({', '.join(w(a) for a in args[1:])})"
    if op == "address_of" and isinstance(args[0], BufferLoad):
        load = args[0]
        return f"(&({w.pointer(load.buffer, e.span)}[{w(load.indices[0])}]))"
    if op == "isnullptr":
        return f"({w(args[0])} == 0)"
    if op in ("assume", "tvm_thread_invariant"):
        return w(args[0]) if op == "tvm_thread_invariant" else ""
    if op == "tvm_access_ptr" and len(args) >= 3 and isinstance(args[1], (Buffer,)):
        return f"(&({w(args[1].data)}[{w(args[2])}]))"
    raise unsupported(f"T.{op}", e.span)
