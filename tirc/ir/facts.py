"""The build's facts: what the passes decided, in one record that travels with the module.

Passes that decide something the outputs report write it here, once:

- LowerDeviceKernelLaunch: each kernel (:class:`Kernel`): its symbol, device target,
  parameters, launch parameters and sizes (grid, block, dynamic shared memory) and every
  host launch site; BF16/FP8StorageLegalize update the parameters of kernels whose
  storage type they change.
- Verify: warnings about the text as written (a constant index outside its dimension but
  inside its buffer, which TVM builds and so does tirc).
- MakePackedAPI / MakeCAPI: each exported host function (:class:`Function`): its symbol,
  ABI, TIR signature and parameters (which buffers a call may write: the analysis
  ``tirc.passes.analysis.written_params``), return type and, for the C ABI, its C
  parameters and declaration.

The record is plain data (strings, integers, tuples): ``tirc.build.manifest`` and
``tirc.build.header`` are functions of it and read no IR. The device stage's facts (images,
resource usage, fatbin entries) are added by the build. Expression-valued facts (shapes,
launch sizes) are integers when constant and expression text otherwise, as the manifest
has always written them.
"""
from __future__ import annotations

from dataclasses import field, replace

from tirc.diagnostics import Span
from tirc.records import record

Value = int | str  # a constant, or an expression's text


@record(frozen=True)
class Param:
    name: str
    kind: str  # "buffer" or "scalar"
    dtype: str
    shape: tuple[Value, ...] = ()  # buffers
    points_to: str | None = None  # a pointer parameter (kernels): what it points at
    # buffers of exported functions: whether a call may store to it (None: not decided)
    written: bool | None = None

    def as_json(self) -> dict:
        if self.kind == "buffer":
            out = {"name": self.name, "kind": "buffer", "dtype": self.dtype,
                   "shape": list(self.shape)}
            if self.written is not None:
                out["written"] = self.written
            return out
        out = {"name": self.name, "kind": "scalar", "dtype": self.dtype}
        if self.points_to is not None:
            out["points_to"] = self.points_to
        return out


@record(frozen=True)
class LaunchSizes:
    grid: tuple[Value, Value, Value] = (1, 1, 1)
    block: tuple[Value, Value, Value] = (1, 1, 1)
    dynamic_shared_memory: Value = 0

    def as_json(self) -> dict:
        return {"grid": list(self.grid), "block": list(self.block),
                "dynamic_shared_memory": self.dynamic_shared_memory}


@record(frozen=True)
class Launch:
    caller: str
    sizes: LaunchSizes

    def as_json(self) -> dict:
        return {"caller": self.caller, **self.sizes.as_json()}


@record(frozen=True)
class Kernel:
    name: str
    symbol: str
    target: str | None  # canonical
    target_summary: str | None
    params: tuple[Param, ...]
    launch_params: tuple[str, ...]  # thread tags (and the dynamic shared memory tag), in order
    sizes: LaunchSizes
    launches: tuple[Launch, ...] = ()
    span: Span | None = field(default=None, compare=False)


@record(frozen=True)
class CParam:
    """One parameter of a C-API function: its C type and name, and what it is for the
    header's comment (None: nothing to say)."""

    ctype: str
    name: str
    doc: str | None


@record(frozen=True)
class Function:
    """An exported host function."""

    name: str
    symbol: str
    abi: str  # "packed" or "c"
    target: str | None
    target_summary: str | None
    signature: str  # its TIR signature, f(A: T.Buffer((n,), "float32"), ...) -> T.int32
    params: tuple[Param, ...]
    returns: str | None
    c_params: tuple[CParam, ...] = ()  # the C ABI's
    declaration: str | None = None  # the C ABI's: int32_t f(float* A, int64_t n)


@record(frozen=True)
class BuildWarning:
    """Something the build reports and goes on: a message at a place in the source."""

    message: str
    span: Span | None = field(default=None, compare=False)


@record(frozen=True)
class BuildFacts:
    functions: tuple[Function, ...] = ()
    kernels: tuple[Kernel, ...] = ()
    warnings: tuple[BuildWarning, ...] = ()  # Verify's, on the text as written

    def with_warnings(self, warnings) -> "BuildFacts":
        return replace(self, warnings=self.warnings + tuple(warnings))

    def with_function(self, f: Function) -> "BuildFacts":
        return replace(self, functions=self.functions + (f,))

    def with_kernel(self, k: Kernel) -> "BuildFacts":
        return replace(self, kernels=self.kernels + (k,))

    def with_kernel_params(self, name: str, params: tuple[Param, ...]) -> "BuildFacts":
        return replace(self, kernels=tuple(replace(k, params=params) if k.name == name else k
                                           for k in self.kernels))

    def kernel(self, name: str) -> Kernel | None:
        return next((k for k in self.kernels if k.name == name), None)
