"""``tirc run``: build a module, make inputs for one of its functions, run it, time it,
summarise its outputs and, with ``check_against="llvm"``, compare them with a CPU build.

    tirc run samples/cpu_matmul.tir --random --repeat 10
    tirc run samples/vector_add.tir --target cuda --random --dim n=1048576 --check-against llvm

Inputs come from the function's signature (the ``functions`` entry of ``NAME.json``):
``inputs`` (an ``.npz`` whose keys are buffer parameter names) and/or ``random``
(seeded; floats uniform in [-1, 1), signed integers in [-8, 8), unsigned in [0, 16),
bool half true). With both, the ``.npz`` gives some buffers and the rest are random;
with ``inputs`` alone every buffer must be in it. Every buffer, outputs included, gets
values. Symbolic dimensions come from ``dims`` (``--dim n=1024``) or, for a dimension
that is a plain name, from the shape of an array in the ``.npz``. Scalar parameters
come from ``args`` (``--arg alpha=0.5``); one that names a dimension defaults to it;
with ``random`` any other is drawn as a buffer's elements are.

The function runs once as a warm-up, whose results are the outputs reported (so
functions that update a buffer in place are compared after one call), then ``repeat``
more times, each timed: with CUDA events on a stream of the device for device
functions, ``time.perf_counter`` on the CPU. The outputs are the buffers the function
may store to (``written`` in the manifest), and any other buffer whose contents the
call changed.

CPU (``llvm``) functions run on the CPU; functions with a device target run on
``device("cuda", 0)`` (opencl functions on ``device("opencl", 0)``, timed with
``time.perf_counter``: each launch waits for its kernel). Without a CUDA device
:class:`tirc.runtime.NoCudaDevice` is raised (the driver prints "no CUDA device is present" and exits with status
:data:`EXIT_NO_CUDA`, 4).

``check_against="llvm"`` builds the same module for the CPU, before anything runs:
device functions become CPU functions whose thread-bound loops run serially
(``tirc.api.build_and_load(serial_threads=True)``), which refuses modules whose kernels
use shared memory, barriers, warp operations or ``T.launch_thread``; such a module
cannot be checked (a :class:`RunError`, exit 1).
The CPU build runs once on the same inputs and every output is compared with
``np.allclose`` (tolerances by dtype, :data:`TOLERANCES`; integers and bool exactly).
"""
from __future__ import annotations

import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tirc.diagnostics import Diagnostic
from tirc.records import record

if TYPE_CHECKING:
    from tirc.ir.function import IRModule

EXIT_NO_CUDA = 4

# (rtol, atol) by dtype name; integer and bool outputs compare exactly.
TOLERANCES = {
    "float64": (1e-9, 1e-12), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
}
FLOAT8_TOLERANCE = (1.25e-1, 1e-1)


class RunError(Exception):
    """A user error of ``tirc run``: ``status`` 1 for a bad input or a mismatch, 2 for
    command-line misuse."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


@record
class RunOptions:
    target: object = None
    host: object = None
    func: str | None = None
    inputs: str | None = None          # path of an .npz
    random: bool = False
    seed: int = 0
    dims: dict[str, int] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)
    repeat: int = 1
    check_against: str | None = None   # "llvm"
    out_dir: str | None = None         # None: a temporary directory
    save_outputs: str | None = None    # path of an .npz
    instrument_bound_checkers: bool = False  # --instrument-bound-checkers
    default_gpu_schedule: bool = False  # --default-gpu-schedule


@record
class RunResult:
    function: str
    device: str
    outputs: dict[str, np.ndarray]
    times_ms: list[float]
    reference: dict[str, np.ndarray] | None = None


def parse_assignments(values, option: str) -> dict[str, str]:
    """``("n=1024", "m=8")`` -> ``{"n": "1024", "m": "8"}``; RunError (status 2) for a
    malformed one."""
    out: dict[str, str] = {}
    for v in values:
        name, eq, value = v.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name.isidentifier() or not value:
            raise RunError(f"bad {option} '{v}': expected NAME=VALUE, e.g. {option} n=1024", 2)
        out[name] = value
    return out


def parse_dims(values) -> dict[str, int]:
    dims = {}
    for name, value in parse_assignments(values, "--dim").items():
        try:
            dims[name] = int(value, 0)
        except ValueError:
            raise RunError(f"bad --dim {name}={value}: the value must be an integer", 2) from None
        if dims[name] < 0:
            raise RunError(f"bad --dim {name}={value}: a dimension cannot be negative", 2)
    return dims


# -- inputs ------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][\w.]*)|(//|[-+*/%(),]))")
_BINARY = {"+": (1, lambda a, b: a + b), "-": (1, lambda a, b: a - b),
           "*": (2, lambda a, b: a * b), "//": (2, lambda a, b: a // b),
           "/": (2, lambda a, b: a // b), "%": (2, lambda a, b: a % b)}
_MAX_NESTING = 64


def _eval_dim(text: str, dims: dict[str, int], param: str) -> int:
    """The value of a shape as the manifest writes it (``n``, ``(n + 255) // 256``,
    ``T.max(n, 1)``): integers, dimension names from ``dims``, ``+ - * // / %``, unary
    minus, parentheses and ``T.min``/``T.max``; RunError (status 2) for a missing
    dimension, RunError for anything else."""
    def fail() -> RunError:
        return RunError(f"cannot evaluate the shape '{text}' of '{param}'")

    tokens: list[tuple[str, str]] = []
    pos, src = 0, str(text).strip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None or m.end() == pos:
            raise fail()
        kind = "int" if m.group(1) else "name" if m.group(2) else "op"
        tokens.append((kind, m.group(m.lastindex)))
        pos = m.end()
    at = 0

    def peek() -> tuple[str, str] | None:
        return tokens[at] if at < len(tokens) else None

    def take(op: str | None = None) -> tuple[str, str]:
        nonlocal at
        tok = peek()
        if tok is None or (op is not None and tok != ("op", op)):
            raise fail()
        at += 1
        return tok

    def atom(depth: int) -> int:
        if depth > _MAX_NESTING:
            raise fail()
        kind, value = take()
        if (kind, value) == ("op", "-"):
            return -atom(depth + 1)
        if (kind, value) == ("op", "("):
            v = expr(0, depth + 1)
            take(")")
            return v
        if kind == "int":
            return int(value)
        if kind == "name" and value.removeprefix("T.") in ("min", "max") and peek() == ("op", "("):
            take("(")
            args = [expr(0, depth + 1)]
            while peek() == ("op", ","):
                take(",")
                args.append(expr(0, depth + 1))
            take(")")
            return (min if value.endswith("min") else max)(args)
        if kind == "name" and "." not in value:
            if value not in dims:
                raise RunError(f"the shape of '{param}' needs the dimension '{value}': "
                               f"give --dim {value}=VALUE", 2)
            return dims[value]
        raise fail()

    def expr(level: int, depth: int) -> int:
        value = atom(depth)
        while (tok := peek()) is not None and tok[0] == "op" and tok[1] in _BINARY \
                and _BINARY[tok[1]][0] > level:
            take()
            prec, op = _BINARY[tok[1]]
            right = expr(prec, depth + 1)
            try:
                value = op(value, right)
            except ZeroDivisionError:
                raise fail() from None
        return value

    value = expr(0, 0)
    if peek() is not None:
        raise fail()
    return value


def _random_array(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    from tirc.runtime import as_dtype
    dt = as_dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dt, np.signedinteger):
        return rng.integers(-8, 8, shape).astype(dt)
    if np.issubdtype(dt, np.unsignedinteger):
        return rng.integers(0, 16, shape).astype(dt)
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32).astype(dt)


def _scalar(value: str, dtype: str, name: str):
    try:
        if dtype == "bool":
            if value.lower() not in ("0", "1", "true", "false"):
                raise ValueError
            return value.lower() in ("1", "true")
        if dtype.startswith(("int", "uint")):
            return int(value, 0)
        return float(value)
    except ValueError:
        raise RunError(f"bad --arg {name}={value}: expected a {dtype} value", 2) from None


def available_memory() -> int:
    """Bytes of memory this process may still fill: Linux's MemAvailable, else the
    physical memory, else no limit known (a very large number)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return 1 << 62


def _check_fits(name: str, shape: tuple[int, ...], dtype: str, before: int) -> int:
    """The bytes of buffer ``name``; a RunError when it and the buffers before it do not
    fit in this machine's available memory (``--dim`` too large), before any is made."""
    from tirc.runtime import as_dtype

    size = 1
    for n in shape:
        size *= n
    nbytes = size * as_dtype(dtype).itemsize
    limit = available_memory()
    if before + nbytes > limit:
        raise RunError(f"'{name}' of shape {shape} {dtype} needs {nbytes} bytes"
                       f"{f' (with the buffers before it, {before + nbytes})' if before else ''}; "
                       f"this machine has {limit} bytes of memory available: "
                       "give smaller --dim values")
    return nbytes


def make_inputs(params: list[dict], opts: RunOptions) -> list:
    """Host values for ``params`` (manifest entries): NumPy arrays for buffers, Python
    numbers for scalars."""
    from tirc.runtime import as_dtype

    if opts.inputs is None and not opts.random:
        raise RunError("give the inputs: --inputs FILE.npz, --random, or both", 2)
    buffers = [p for p in params if p["kind"] == "buffer"]
    given: dict[str, np.ndarray] = {}
    if opts.inputs is not None:
        try:
            with np.load(opts.inputs, allow_pickle=False) as npz:
                given = {k: npz[k] for k in npz.files}
        except (OSError, ValueError) as e:
            raise RunError(f"cannot read the inputs '{opts.inputs}': {e}") from None
        names = {p["name"] for p in buffers}
        extra = sorted(set(given) - names)
        if extra:
            raise RunError(f"{opts.inputs}: no buffer parameter named "
                           f"{', '.join(repr(e) for e in extra)}; the parameters are "
                           f"{', '.join(p['name'] for p in buffers)}")
        missing = [p["name"] for p in buffers if p["name"] not in given]
        if missing and not opts.random:
            raise RunError(f"{opts.inputs}: no array for {', '.join(repr(m) for m in missing)} "
                           "(add them, or pass --random for the ones not given)")
    dims = dict(opts.dims)
    for p in buffers:  # dimensions that are plain names, from the given arrays
        a = given.get(p["name"])
        if a is not None and a.ndim == len(p["shape"]):
            for s, n in zip(p["shape"], a.shape):
                if isinstance(s, str) and s.isidentifier():
                    dims.setdefault(s, n)
    rng = np.random.default_rng(opts.seed)
    values = []
    needed = 0  # bytes of the buffers so far
    for p in params:
        name = p["name"]
        if p["kind"] != "buffer":
            if name in opts.args:
                values.append(_scalar(opts.args[name], p["dtype"], name))
            elif name in dims:
                values.append(dims[name])
            elif opts.random:  # drawn as a buffer's elements are
                values.append(_random_array(rng, (), p["dtype"]).item())
            else:
                raise RunError(f"the scalar parameter '{name}' ({p['dtype']}) needs a value: "
                               f"give --arg {name}=VALUE (or --random)", 2)
            continue
        shape = tuple(s if isinstance(s, int) else _eval_dim(s, dims, name) for s in p["shape"])
        needed += _check_fits(name, shape, p["dtype"], needed)
        if name in given:
            a = given[name]
            if a.shape != shape:
                raise RunError(f"{opts.inputs}: '{name}' has shape {a.shape}, the function "
                               f"takes {shape}")
            dt = as_dtype(p["dtype"])
            if a.dtype != dt:
                if not np.can_cast(a.dtype, dt, "same_kind"):
                    raise RunError(f"{opts.inputs}: '{name}' has dtype {a.dtype}, the function "
                                   f"takes {p['dtype']}")
                a = a.astype(dt)
            values.append(np.ascontiguousarray(a))
        else:
            values.append(_random_array(rng, shape, p["dtype"]))
    for name in opts.args:
        if name not in {p["name"] for p in params if p["kind"] != "buffer"}:
            raise RunError(f"--arg {name}: the function has no scalar parameter '{name}'", 2)
    return values


# -- building, loading, running ------------------------------------------------------------
def _pick_function(manifest: dict, func: str | None) -> dict:
    functions = manifest["functions"]
    names = [f["name"] for f in functions]
    if func is not None:
        for f in functions:
            if f["name"] == func:
                return f
        raise RunError(f"--func {func}: no public function of that name; the module has "
                       f"{', '.join(names) or 'none'}", 2)
    if len(functions) == 1:
        return functions[0]
    if not functions:
        raise RunError("the module has no public function to run")
    raise RunError(f"the module has several public functions ({', '.join(names)}): choose "
                   "one with --func NAME", 2)


def _build_and_load(mod: IRModule, target, host, out_dir: str, name: str,
                    serial_threads: bool = False, opts: RunOptions | None = None):
    """The loaded library and manifest of ``mod`` built into ``out_dir`` (``tirc.compile``'s
    core, keeping the files)."""
    from tirc.api import build_and_load

    built = build_and_load(mod, target, host, name=name, out_dir=out_dir,
                           serial_threads=serial_threads,
                           instrument_bound_checkers=bool(opts and opts.instrument_bound_checkers),
                           default_gpu_schedule=bool(opts and opts.default_gpu_schedule))
    return built.module, built.manifest


def _device_args(params, values, dev):
    from tirc import runtime as rt
    return [rt.from_numpy(v, dev) if p["kind"] == "buffer" else v
            for p, v in zip(params, values)]


def _target_kind(entry: dict) -> str:
    try:
        return json.loads(entry["target"])["kind"]
    except (TypeError, ValueError, KeyError):
        return "llvm"


def run_module(mod: IRModule, filename: str, opts: RunOptions,
               echo: Callable[[str], None] = print) -> RunResult:
    """Build ``mod``, run the chosen function and report through ``echo``. Raises
    RunError, Diagnostic (build errors), tirc.runtime errors (NoCudaDevice, CudaError,
    LoadError) and whatever the called function raises (TypeError/ValueError from its
    argument checks)."""
    from tirc import runtime as rt

    if opts.repeat < 1:
        raise RunError("--repeat must be at least 1", 2)
    if opts.check_against not in (None, "llvm"):
        raise RunError(f"--check-against {opts.check_against}: only llvm is supported", 2)
    name = Path(filename).stem or "module"
    with tempfile.TemporaryDirectory(prefix="tirc-run-") as tmp:
        out = opts.out_dir or tmp
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise RunError(f"cannot create the output directory '{out}': "
                           f"{e.strerror or e}") from None
        lib, manifest = _build_and_load(mod, opts.target, opts.host, out, name, opts=opts)
        entry = _pick_function(manifest, opts.func)
        params = entry["params"] or []
        values = make_inputs(params, opts)
        if opts.check_against == "llvm":  # refuse early, before the device run
            cpu_out = os.path.join(out, "llvm")
            os.makedirs(cpu_out, exist_ok=True)
            try:
                cpu_lib, _ = _build_and_load(mod, "llvm", None, cpu_out, name,
                                             serial_threads=True)
            except Diagnostic as d:
                raise RunError(f"--check-against llvm is not possible for this module: "
                               f"{d.message}") from None
        kind = _target_kind(entry)
        if kind == "rocm":
            raise RunError(f"'{entry['name']}' is compiled for an AMD GPU "
                           f"({entry.get('target_summary')}): tirc run has no ROCm device; "
                           "build it with 'tirc build' and call it through tvm-ffi with "
                           "tensors of a ROCm device")
        on_cuda = kind not in ("llvm", "c", "opencl")
        dev = rt.device("cuda", 0) if on_cuda else rt.device(
            "opencl" if kind == "opencl" else "cpu")
        if on_cuda and not dev.exists:
            raise rt.NoCudaDevice("no CUDA device is present (the function's target is "
                                  f"{entry.get('target_summary')}); build it with 'tirc build' "
                                  "and run it on a machine with an NVIDIA GPU")
        if dev.is_opencl and not dev.exists:
            raise rt.NoOpenCLDevice("no OpenCL device is present (the function's target is "
                                    f"{entry.get('target_summary')}); install an OpenCL driver, "
                                    "or pyopencl with pocl: pip install 'tirc[opencl]'")
        fn = lib[entry["name"]]
        args = _device_args(params, values, dev)
        fn(*args)  # warm-up; its results are the outputs
        dev.synchronize()
        results = {p["name"]: a.to_numpy() for p, a in zip(params, args) if p["kind"] == "buffer"}
        written = {p["name"] for p in params if p.get("written")}
        outputs = {n: r for (n, r), v in zip(results.items(),
                                            [v for p, v in zip(params, values) if p["kind"] == "buffer"])
                   if n in written or not np.array_equal(r, v)}
        times = _time(fn, args, dev, opts.repeat)
        echo(f"ran {entry['name']} on {dev} ({'cuda' if on_cuda else dev.kind}), "
             f"{opts.repeat} timed run{'s' if opts.repeat != 1 else ''} after a warm-up")
        for n, a in outputs.items():
            echo(summarize(n, a))
        if not outputs:
            echo("no output: the call changed no buffer")
        echo(f"time: median {statistics.median(times):.4f} ms over {len(times)} run"
             f"{'s' if len(times) != 1 else ''} (min {min(times):.4f} ms, "
             f"max {max(times):.4f} ms, {'CUDA events' if on_cuda else 'perf_counter'})")
        if opts.save_outputs:
            try:
                np.savez(opts.save_outputs, **outputs)
            except OSError as e:
                raise RunError(f"cannot write '{opts.save_outputs}': {e.strerror or e}") from None
        reference = None
        if opts.check_against == "llvm":
            cpu_fn = cpu_lib[entry["name"]]
            cpu_args = _device_args(params, values, rt.device("cpu"))
            cpu_fn(*cpu_args)
            reference = {p["name"]: a.to_numpy() for p, a in zip(params, cpu_args)
                         if p["kind"] == "buffer" and p["name"] in outputs}
            compare(outputs, reference, echo)
        return RunResult(entry["name"], str(dev), outputs, times, reference)


def _time(fn, args, dev, repeat: int) -> list[float]:
    from tirc import runtime as rt
    times = []
    if dev.is_cuda:
        stream = dev.create_stream()
        with rt.use_stream(stream):
            for _ in range(repeat):
                start = stream.record()
                fn(*args)
                end = stream.record()
                times.append(start.elapsed_ms(end))
        return times
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def summarize(name: str, a: np.ndarray, count: int = 4) -> str:
    """``C: shape (128, 64) float32  min -1.2 max 3.4 mean 0.01  [0.1, 0.2, ...]``."""
    flat = a.reshape(-1)
    head = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v)
                     for v in flat[:count].tolist())
    more = ", ..." if flat.size > count else ""
    if flat.size == 0:
        return f"{name}: shape {a.shape} {a.dtype}  (empty)"
    wide = flat.astype(np.float64) if a.dtype != np.bool_ else flat.astype(np.int64)
    return (f"{name}: shape {a.shape} {a.dtype}  min {wide.min():.6g} max {wide.max():.6g} "
            f"mean {wide.mean():.6g}  [{head}{more}]")


def tolerance(dtype: np.dtype) -> tuple[float, float] | None:
    """(rtol, atol) for ``dtype``; None for exact comparison."""
    name = str(dtype)
    if name in TOLERANCES:
        return TOLERANCES[name]
    if name.startswith("float8"):
        return FLOAT8_TOLERANCE
    return None


def compare(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray],
            echo: Callable[[str], None] = print) -> None:
    """RunError (exit 1) naming the largest difference when an output differs from
    its reference beyond :func:`tolerance`."""
    worst = 0.0
    for n, got in outputs.items():
        want = reference[n]
        tol = tolerance(got.dtype)
        g, w = got.astype(np.float64), want.astype(np.float64)
        diff = np.abs(g - w)
        diff[np.isnan(g) & np.isnan(w)] = 0.0
        ok = (np.allclose(g, w, rtol=tol[0], atol=tol[1], equal_nan=True) if tol
              else np.array_equal(got, want))
        big = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0
        if not ok:
            i = np.unravel_index(int(np.argmax(np.where(np.isnan(diff), np.inf, diff))), got.shape)
            rule = f"rtol {tol[0]:g}, atol {tol[1]:g}" if tol else "exact"
            raise RunError(f"mismatch against llvm in '{n}': largest difference {big:.6g} at "
                           f"{tuple(int(x) for x in i)}: got {got[i]!r}, llvm gives {want[i]!r} "
                           f"({rule})")
        worst = max(worst, big)
    echo(f"check against llvm: ok ({len(outputs)} output{'s' if len(outputs) != 1 else ''}, "
         f"largest difference {worst:.6g})")
