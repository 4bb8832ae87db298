"""Differential checking: a module built by tirc for ``llvm`` and run through tvm-ffi,
against the IR evaluator (:mod:`tirc.testing.evaluate`) and, when TVM is installed,
against TVM 0.27's build of the same text.

``check_module(text, workdir, seed)`` builds the module once and runs every public
function on random inputs drawn from its signature (symbolic lengths from 1 to 12).
For each function the evaluator's result is the reference:

* integers and bool must match exactly;
* floats match within ``rtol = atol = TOLERANCE[dtype]`` (NaN matches NaN, an infinity
  the same infinity). The evaluator calls the same C math library the compiled code
  does, so results are usually bit-exact; the tolerance covers the rest (a constant
  folded in double precision, an intrinsic TVM expands differently). float16:
  ``1e-2`` (about 10 ulp), float32: ``1e-4``, float64: ``1e-9``.

A function whose evaluation hits undefined behaviour (:class:`~tirc.testing.evaluate.Undefined`)
is skipped. TVM's opinion is recorded separately: a module TVM cannot parse or compile
(it has no ``llvm`` lowering for private functions that return a value, nor for calls
with buffer arguments) is noted and TVM is skipped for it; where TVM disagrees with the
evaluator but tirc agrees, it is a *TVM disagreement*, reported but not a failure.
"""
from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.testing.evaluate import NP, Evaluator, Undefined, Unsupported, int_bounds
from tirc.diagnostics import Diagnostic

TOLERANCE = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-9}


@dataclass
class FuncResult:
    name: str
    status: str  # "ok", "mismatch", "skipped" (undefined/unsupported), "error"
    detail: str = ""
    tvm: str = "none"  # "ok", "mismatch", "error", "none" (not run)
    tvm_detail: str = ""


@dataclass
class ModuleResult:
    seed: int
    status: str  # "ok", "fail" (some function mismatched or errored), "build_error"
    detail: str = ""
    funcs: list[FuncResult] = field(default_factory=list)
    tvm_status: str = "none"  # "ok", "build_error", "none"
    tvm_detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status != "ok"


# -- inputs ---------------------------------------------------------------------------
def random_value(d: DataType, rng: np.random.Generator, size=None):
    """Random values of dtype ``d``: small numbers mostly, the full range sometimes."""
    base = d.base
    if base == "bool":
        return rng.random(size) < 0.5
    t = NP[base]
    if d.is_integer:
        lo, hi = int_bounds(d)
        hi = min(hi, (1 << 63) - 1)
        small = rng.integers(max(lo, -20), min(hi, 20) + 1, size=size)
        if rng.random() < 0.5:
            return np.asarray(small).astype(t) if size is not None else t(small)
        wide = rng.integers(lo, hi, size=size, endpoint=True, dtype=np.int64 if lo < 0 else np.uint64)
        pick = rng.random(size) < 0.7
        out = np.where(pick, np.asarray(small).astype(t), np.asarray(wide).astype(t))
        return out.astype(t) if size is not None else t(out)
    scale = rng.choice([1.0, 4.0, 100.0])
    v = rng.standard_normal(size) * scale
    return np.asarray(v).astype(t) if size is not None else t(v)


MAX_INPUT_ELEMENTS = 1 << 22  # a buffer's elements; larger ones are not made up


def make_inputs(func: PrimFunc, rng: np.random.Generator) -> list:
    """Arguments for ``func``: arrays for buffers, Python numbers for scalars."""
    sizes: dict[int, int] = {}
    args: list = []
    for p in func.params:
        buf = func.buffer_of(p)
        if buf is None:
            continue
        for e in buf.shape:
            if isinstance(e, Var) and id(e) not in sizes:
                sizes[id(e)] = int(rng.integers(1, 13))
    scalar_vars = {id(p) for p in func.params if func.buffer_of(p) is None}
    for p in func.params:
        buf = func.buffer_of(p)
        if buf is not None:
            shape = []
            for e in buf.shape:
                if isinstance(e, Var):
                    shape.append(sizes[id(e)])
                elif hasattr(e, "value"):
                    shape.append(int(e.value))
                else:
                    raise Unsupported(f"buffer {buf.name}: shape {e}")
            elements = int(np.prod(shape, dtype=np.int64))
            if elements > MAX_INPUT_ELEMENTS:
                raise Unsupported(f"buffer {buf.name}: {elements} elements is more than a "
                                  f"test input may have ({MAX_INPUT_ELEMENTS})")
            args.append(np.ascontiguousarray(random_value(buf.dtype, rng, tuple(shape))))
        elif id(p) in sizes:
            args.append(sizes[id(p)])
        elif p.dtype.is_handle:
            raise Unsupported(f"handle parameter {p.name}")
        else:
            v = random_value(p.dtype, rng)
            args.append(bool(v) if p.dtype.is_bool else (float(v) if p.dtype.is_float else int(v)))
    del scalar_vars
    return args


def _copy(args: list) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


# -- comparison -----------------------------------------------------------------------
def compare(expected: np.ndarray, actual: np.ndarray) -> str:
    """'' when equal (exact for ints and bool, within TOLERANCE for floats), else why."""
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return f"shape/dtype {actual.shape}/{actual.dtype}, expected {expected.shape}/{expected.dtype}"
    if expected.dtype.kind in "biu":
        bad = np.flatnonzero(expected.reshape(-1) != actual.reshape(-1))
    else:
        tol = TOLERANCE[str(expected.dtype)]
        e, a = expected.reshape(-1).astype(np.float64), actual.reshape(-1).astype(np.float64)
        same = np.isclose(a, e, rtol=tol, atol=tol, equal_nan=True) | (a == e)
        bad = np.flatnonzero(~same)
    if bad.size == 0:
        return ""
    i = int(bad[0])
    return (f"{bad.size} element(s) differ, first at flat index {i}: got "
            f"{actual.reshape(-1)[i]!r}, expected {expected.reshape(-1)[i]!r}")


def compare_args(func: PrimFunc, expected: list, actual: list) -> str:
    out = []
    for p, e, a in zip(func.params, expected, actual):
        if isinstance(e, np.ndarray):
            why = compare(e, np.asarray(a))
            if why:
                buf = func.buffer_of(p)
                out.append(f"{buf.name if buf is not None else p.name}: {why}")
    return "; ".join(out)


def public_functions(mod: IRModule) -> list[str]:
    return [name for name, f in mod.functions.items() if not f.private]


# -- TVM ------------------------------------------------------------------------------
def tvm_available() -> bool:
    try:
        import tvm  # noqa: F401
    except Exception:
        return False
    return True


def build_tvm(text: str):
    """TVM 0.27's llvm build of ``text`` (a runtime module), or raises."""
    import tvm

    mod = tvm.script.from_source(text)
    return tvm.compile(mod, target="llvm")


def _tvm_error(e: Exception) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[-1] if lines else ''}"


def split_functions(text: str) -> tuple[str, dict[str, str], list[str]] | None:
    """A module as the generator writes it: (the text up to the first function, the
    public functions by name, the private ones), or None for other layouts."""
    marker = "\n    @T.prim_func"
    start = text.find(marker)
    if start < 0 or "class Module:" not in text[:start]:
        return None
    head, rest = text[:start + 1], text[start + 1:]
    public: dict[str, str] = {}
    private: list[str] = []
    for block in rest.rstrip("\n").split("\n\n"):
        first, _, sig = block.partition("\n")
        if not first.strip().startswith("@T.prim_func") or "def " not in sig:
            return None
        name = sig.split("def ", 1)[1].split("(", 1)[0]
        if "private=True" in first:
            private.append(block)
        else:
            public[name] = block
    return head, public, private


# -- the check ------------------------------------------------------------------------
def check_module(text: str, workdir: str | os.PathLike, seed: int = 0, use_tvm: bool = False,
                 name: str | None = None, target: str = "llvm") -> ModuleResult:
    """Build ``text`` with tirc for the CPU ``target`` (``llvm``, or ``c``: C source the
    system's C compiler builds), run each public function against the evaluator (and
    TVM when ``use_tvm``); inputs come from ``np.random.default_rng(seed)``."""
    import tvm_ffi

    from tirc.build.stages import build
    from tirc.frontend.parse import parse

    result = ModuleResult(seed, "ok")
    name = name or f"fuzz{seed}"
    try:
        mod = parse(text, f"{name}.tir")
    except Diagnostic as d:
        return ModuleResult(seed, "build_error", f"tirc rejects the text: {d}")
    try:
        build(mod, target, None, workdir, name, shared=True, filename=f"{name}.tir")
        lib = tvm_ffi.load_module(str(Path(workdir) / f"{name}.so"))
    except Diagnostic as d:
        return ModuleResult(seed, "build_error", f"tirc build: {d}")
    except Exception:
        return ModuleResult(seed, "build_error", "tirc build crashed:\n" + traceback.format_exc())
    tlibs: dict[str, object] = {}
    if use_tvm:
        try:
            tlib = build_tvm(text)
            tlibs = {f: tlib for f in public_functions(mod)}
            result.tvm_status = "ok"
        except Exception as e:  # TVM cannot parse/compile this construct: skip TVM
            result.tvm_status = "build_error"
            result.tvm_detail = _tvm_error(e)
            # one function per module, so that one TVM cannot build does not hide the rest
            parts = split_functions(text)
            for f in public_functions(mod) if parts and len(parts[1]) > 1 else ():
                try:
                    tlibs[f] = build_tvm(parts[0] + "\n\n".join(parts[2] + [parts[1][f]]) + "\n")
                except Exception:
                    pass
    rng = np.random.default_rng(seed)
    for fname in public_functions(mod):
        func = mod[fname]
        try:
            args = make_inputs(func, rng)
        except Unsupported as e:
            result.funcs.append(FuncResult(fname, "skipped", f"inputs: {e}"))
            continue
        expected = _copy(args)
        try:
            Evaluator(mod).call(fname, expected)
        except (Undefined, Unsupported) as e:
            result.funcs.append(FuncResult(fname, "skipped", f"{type(e).__name__}: {e}"))
            continue
        actual = _copy(args)
        fr = FuncResult(fname, "ok")
        try:
            lib[fname](*actual)
            why = compare_args(func, expected, actual)
            if why:
                fr.status, fr.detail = "mismatch", why
        except Exception as e:
            fr.status, fr.detail = "error", f"calling the tirc build: {type(e).__name__}: {e}"
        if fname in tlibs:
            theirs = _copy(args)
            try:
                tlibs[fname][fname](*theirs)
                why = compare_args(func, expected, theirs)
                fr.tvm, fr.tvm_detail = ("mismatch", why) if why else ("ok", "")
            except Exception as e:
                fr.tvm, fr.tvm_detail = "error", f"{type(e).__name__}: {e}"
        result.funcs.append(fr)
        if fr.status != "ok":
            result.status = "fail"
    return result


def summarize(results: list[ModuleResult]) -> dict[str, int]:
    """Counts over modules and functions, for reports."""
    c = {"modules": len(results), "module_build_errors": 0, "functions": 0, "ok": 0,
         "mismatch": 0, "error": 0, "skipped": 0, "tvm_modules": 0, "tvm_build_errors": 0,
         "tvm_ok": 0, "tvm_disagree": 0}
    for r in results:
        if r.status == "build_error":
            c["module_build_errors"] += 1
        if r.tvm_status == "ok":
            c["tvm_modules"] += 1
        elif r.tvm_status == "build_error":
            c["tvm_build_errors"] += 1
        for f in r.funcs:
            c["functions"] += 1
            c[f.status] += 1
            if f.tvm == "ok":
                c["tvm_ok"] += 1
            elif f.tvm in ("mismatch", "error"):
                c["tvm_disagree"] += 1
    return c
