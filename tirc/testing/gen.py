"""Random *valid* TIR modules, as the text TVM 0.27 prints, for differential fuzzing
(:mod:`tirc.testing.differential`, ``bench/fuzz_diff.py``).

``generate(seed)`` is deterministic (``random.Random(seed)``) and returns a module whose
public functions ``f0, f1, ...`` each take a few buffers (1-D, 2-D, or of a symbolic
length ``n``) and scalars, and whose private helpers ``h0, h1, ...`` are called with
scalars (returning a value) and with buffers (``Module.h(A, ...)`` or
``Module.h(A.data, ...)``). Bodies nest loops of every kind (``range`` with nonzero
mins and steps, ``T.serial``, ``T.grid``, ``T.parallel``, ``T.vectorized``,
``T.unroll``), ``T.let`` binds and mutable scalars, ``if``/``else``, and stores of
expressions over bool, int8..int64, uint8..uint64 and float16/32/64: arithmetic, the
four divisions, min/max, comparisons, ``and``/``or``/``not``, bitwise operators and
shifts, ``T.Cast``, ``T.Select``, ``T.if_then_else``, math intrinsics and private calls.

The programs avoid undefined behaviour by construction, so the result is defined by
the IR alone (:mod:`tirc.testing.evaluate` checks this at run time and reports what
slips through):

* integers wrap (two's complement) at their width; divisors are nonzero constants
  other than -1, or ``T.max(e, 1)``; shift amounts are constants below the width or
  ``e & (bits - 1)``;
* every index is in bounds: a linear form of loop variables within the buffer's size,
  ``e % N`` (floor modulo by the constant size) or ``T.min(T.max(e, 0), N - 1)``;
* float -> int casts clamp first with ``T.Select(f < hi, T.Select(lo < f, f, lo), hi)``
  (NaN goes to ``hi``); ``log``/``sqrt`` take ``T.fabs(x) + 1``, ``pow`` a positive base
  and a bounded exponent;
* parallel and vectorized loops write only buffers chosen on entry (indexed
  injectively by the loop variable), read none of them, assign no outer scalar and
  call no buffer-writing helper, so their iterations are independent.
"""
from __future__ import annotations

import random
from dataclasses import field

from tirc.records import record

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
DTYPES = INTS + FLOATS + ("bool",)
_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16,
         "uint32": 32, "uint64": 64, "bool": 1, "float16": 16, "float32": 32, "float64": 64}
# Float -> int clamp bounds, exactly representable in every float type they meet.
_CLAMP = {"int8": (-128.0, 127.0), "int16": (-32768.0, 32767.0), "int32": (-2e9, 2e9),
          "int64": (-9e18, 9e18), "uint8": (0.0, 255.0), "uint16": (0.0, 65504.0),
          "uint32": (0.0, 4e9), "uint64": (0.0, 1.8e19), "bool": (0.0, 1.0)}
_F16_MAX = 65504.0
_UNARY_MATH = ("exp", "log", "sqrt", "fabs", "floor", "ceil", "trunc", "round", "tanh",
               "sigmoid", "sin", "cos", "atan", "exp2", "log2", "rsqrt")
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"


def _clamp_bounds(src: str, dst: str) -> tuple[float, float]:
    """Bounds in float type ``src`` whose truncation fits int type ``dst``."""
    import numpy as np

    t = {"float16": np.float16, "float32": np.float32, "float64": np.float64}[src]
    lo, hi = _CLAMP[dst]
    if src == "float16":
        lo, hi = max(lo, -_F16_MAX), min(hi, _F16_MAX)
    lo_t, hi_t = t(lo), t(hi)
    while float(hi_t) > hi:
        hi_t = np.nextafter(hi_t, t(0))
    while float(lo_t) < lo:
        lo_t = np.nextafter(lo_t, t(0))
    return float(lo_t), float(hi_t)


def int_range(dtype: str) -> tuple[int, int]:
    bits = _BITS[dtype]
    if dtype.startswith("u"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def is_int(d: str) -> bool:
    return d in INTS


def is_float(d: str) -> bool:
    return d in FLOATS


@record
class Buf:
    name: str
    dtype: str
    shape: tuple  # ints, or the name of a symbolic var ("n")
    sym: str | None = None  # the symbolic length, if any

    @property
    def size(self) -> int | str:
        if self.sym:
            return self.sym
        s = 1
        for x in self.shape:
            s *= x
        return s


@record
class Loop:
    var: str
    lo: int
    extent: int | str  # an int, or a symbolic name
    kind: str
    step: int = 1


@record
class Ctx:
    """What a statement may use: loops, scalars, buffers, and the parallel restrictions."""

    bufs: list[Buf]
    scalars: list[tuple[str, str]]  # (name, dtype) readable values (params, lets, vars)
    mutables: list[tuple[str, str]]  # assignable scalars
    loops: list[Loop] = field(default_factory=list)
    writable: list[Buf] | None = None  # None: all; inside parallel/vectorized: these only
    par_depth: int | None = None  # index in loops of the parallel/vectorized loop
    # inside it, buffer name -> (offset, slot): iteration p writes only
    # [offset + p * slot, offset + (p + 1) * slot)
    slots: dict[str, tuple[int, int]] = field(default_factory=dict)
    in_vec: bool = False
    helper: bool = False  # generating a private helper's body

    def child(self) -> "Ctx":
        return Ctx(list(self.bufs), list(self.scalars), list(self.mutables), list(self.loops),
                   self.writable, self.par_depth, self.slots, self.in_vec, self.helper)

    def readable(self) -> list[Buf]:
        if self.writable is None:
            return self.bufs
        return [b for b in self.bufs if all(b is not w for w in self.writable)]


@record
class Helper:
    name: str
    text: str


class Generator:
    def __init__(self, seed: int, n_funcs: int = 4, tvm_only: bool | None = None):
        self.rng = random.Random(seed)
        self.n_funcs = n_funcs
        self.helpers: list[Helper] = []
        self.counter = 0
        # About half the modules use only what TVM 0.27 compiles for llvm (no private
        # function returning a value, no buffer-parameter helper), so TVM can vote.
        self.tvm_safe = self.rng.random() < 0.5 if tvm_only is None else tvm_only

    # -- names ----------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- literals -------------------------------------------------------------------
    def lit(self, d: str, value=None) -> str:
        r = self.rng
        if d == "bool":
            v = r.random() < 0.5 if value is None else bool(value)
            return f"T.bool({v})"
        if is_int(d):
            if value is None:
                lo, hi = int_range(d)
                pick = r.random()
                if pick < 0.6:
                    value = r.randint(max(lo, -9), min(hi, 9))
                elif pick < 0.85:
                    value = r.randint(max(lo, -300), min(hi, 300))
                else:
                    value = r.randint(lo, min(hi, (1 << 63) - 1))
            if d == "int32" and abs(value) <= 9 and r.random() < 0.5:
                return str(value)  # a bare literal (two of them fold in the parser)
            return f"T.{d}({value})"
        if value is None:
            pick = r.random()
            if pick < 0.5:
                value = float(r.randint(-8, 8)) / r.choice([1, 2, 4])
            else:
                value = round(r.uniform(-4.0, 4.0), r.choice([1, 2, 3]))
        return f"T.{d}({float(value)!r})"

    # -- expressions ----------------------------------------------------------------
    def expr(self, d: str, ctx: Ctx, depth: int) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(d, ctx, depth)
        if d == "bool":
            return self.bool_expr(ctx, depth)
        pick = r.random()
        if pick < 0.08:
            return self.select(d, ctx, depth)
        if pick < 0.16:
            return self.cast_from_other(d, ctx, depth)
        if pick < 0.2 and not self.tvm_safe and not ctx.helper:
            return self.scalar_call(d, ctx, depth)
        if is_int(d):
            return self.int_expr(d, ctx, depth)
        return self.float_expr(d, ctx, depth)

    def leaf(self, d: str, ctx: Ctx, depth: int) -> str:
        r = self.rng
        options = []
        scal = [n for n, t in ctx.scalars if t == d]
        if scal:
            options += ["scalar"] * 3
        bufs = [b for b in ctx.readable() if b.dtype == d]
        if bufs:
            options += ["load"] * 4
        if d == "int32" and ctx.loops:
            options += ["loop"] * 3
        if is_int(d) and ctx.loops:
            options.append("loopcast")
        options += ["lit"] if options else ["lit"] * 2
        if depth > 0:
            options += ["otherload"]
        kind = r.choice(options)
        if kind == "scalar":
            return r.choice(scal)
        if kind == "load":
            return self.load(r.choice(bufs), ctx, depth)
        if kind == "loop":
            return r.choice(ctx.loops).var
        if kind == "loopcast":
            return f'T.Cast("{d}", {r.choice(ctx.loops).var})'
        if kind == "otherload":
            others = ctx.readable()
            if others:
                b = r.choice(others)
                return self.convert(self.load(b, ctx, depth - 1), b.dtype, d)
        return self.lit(d)

    def convert(self, text: str, src: str, dst: str) -> str:
        """``text`` (of dtype src) as dst, without undefined behaviour."""
        if src == dst:
            return text
        if is_float(src) and (is_int(dst)):
            lo, hi = _clamp_bounds(src, dst)
            tl, th = f"T.{src}({lo!r})", f"T.{src}({hi!r})"
            text = f"T.Select({text} < {th}, T.Select({tl} < {text}, {text}, {tl}), {th})"
        return f'T.Cast("{dst}", {text})'

    def cast_from_other(self, d: str, ctx: Ctx, depth: int) -> str:
        src = self.rng.choice(DTYPES)
        return self.convert(self.expr(src, ctx, min(depth - 1, 1)), src, d)

    def select(self, d: str, ctx: Ctx, depth: int) -> str:
        c = self.bool_expr(ctx, depth - 1)
        a, b = self.expr(d, ctx, depth - 1), self.expr(d, ctx, depth - 1)
        fn = self.rng.choice(("T.Select", "T.if_then_else"))
        return f"{fn}({c}, {a}, {b})"

    def bool_expr(self, ctx: Ctx, depth: int) -> str:
        r = self.rng
        if depth <= 0:
            return self.leaf("bool", ctx, 0)
        pick = r.random()
        if pick < 0.5:
            d = r.choice(DTYPES[:-1])
            op = r.choice(("<", "<=", ">", ">=", "==", "!="))
            return f"{self.expr(d, ctx, depth - 1)} {op} {self.expr(d, ctx, depth - 1)}"
        if pick < 0.7:
            op = r.choice(("and", "or"))
            return f"({self.bool_expr(ctx, depth - 1)}) {op} ({self.bool_expr(ctx, depth - 1)})"
        if pick < 0.8:
            return f"not ({self.bool_expr(ctx, depth - 1)})"
        if pick < 0.9:
            return self.select("bool", ctx, depth)
        if pick < 0.95:
            d = r.choice(INTS)
            return f'T.Cast("bool", {self.expr(d, ctx, depth - 1)})'
        return self.leaf("bool", ctx, depth)

    def int_expr(self, d: str, ctx: Ctx, depth: int) -> str:
        r = self.rng
        a = lambda: self.expr(d, ctx, depth - 1)  # noqa: E731
        bits = _BITS[d]
        op = r.choice(("+", "-", "*", "+", "-", "*", "//", "%", "floordiv", "floormod",
                       "truncdiv", "truncmod", "min", "max", "&", "|", "^", "~", "<<", ">>",
                       "abs"))
        if op in ("+", "-", "*", "&", "|", "^"):
            return f"({a()}) {op} ({a()})"
        if op in ("min", "max"):
            return f"T.{op}({a()}, {a()})"
        if op == "~":
            return f"~({a()})"
        if op == "abs":
            return f"T.abs({a()})" if d.startswith("int") else f"({a()})"
        if op in ("<<", ">>"):
            if r.random() < 0.5:
                amount = self.lit(d, r.randint(0, bits - 1))
            else:
                amount = f"({a()}) & {self.lit(d, bits - 1)}"
            return f"({a()}) {op} ({amount})"
        # divisions: a nonzero constant other than -1, or max(e, 1)
        if r.random() < 0.5:
            lo, hi = int_range(d)
            v = 0
            while v in (0, -1):
                v = r.randint(max(lo, -13), min(hi, 13))
            div = self.lit(d, v)
        else:
            div = f"T.max({a()}, {self.lit(d, 1)})"
        if op in ("//", "%"):
            return f"({a()}) {op} ({div})"
        return f"T.{op}({a()}, {div})"

    def float_expr(self, d: str, ctx: Ctx, depth: int) -> str:
        r = self.rng
        a = lambda: self.expr(d, ctx, depth - 1)  # noqa: E731
        op = r.choice(("+", "-", "*", "+", "-", "*", "/", "min", "max", "math", "math",
                       "math", "pow", "abs"))
        if op in ("+", "-", "*"):
            return f"({a()}) {op} ({a()})"
        if op == "/":
            return f"({a()}) / (T.fabs({a()}) + {self.lit(d, 1.0)})"
        if op in ("min", "max"):
            return f"T.{op}({a()}, {a()})"
        if op == "abs":
            return f"T.abs({a()})"
        if op == "pow":
            return (f"T.pow(T.fabs({a()}) + {self.lit(d, 0.5)}, "
                    f"T.Select(T.fabs({a()}) < {self.lit(d, 3.0)}, {a()}, {self.lit(d, 2.0)}))")
        fn = r.choice(_UNARY_MATH)
        x = a()
        if fn in ("log", "sqrt", "log2", "rsqrt"):
            x = f"T.fabs({x}) + {self.lit(d, 1.0)}"
        return f"T.{fn}({x})"

    def scalar_call(self, d: str, ctx: Ctx, depth: int) -> str:
        h, params = self.scalar_helper(d)
        args = ", ".join(self.expr(t, ctx, depth - 1) for t in params)
        return f"Module.{h}({args})"

    # -- indices --------------------------------------------------------------------
    def linear(self, loops: list[Loop], size: int) -> str | None:
        """An index injective in ``loops`` (constant extents), within [0, size)."""
        total = 1
        for lp in loops:
            if not isinstance(lp.extent, int):
                return None
            total *= -(-lp.extent // lp.step)
        if total > size:
            return None
        parts, stride = [], 1
        for lp in reversed(loops):
            v = lp.var if lp.lo == 0 else f"({lp.var} - {lp.lo})"
            if lp.step != 1:
                v = f"{v} // {lp.step}"
            parts.append(v if stride == 1 else f"{v} * {stride}")
            stride *= -(-lp.extent // lp.step)
        off = self.rng.randint(0, size - total)
        if off:
            parts.append(str(off))
        return " + ".join(reversed(parts)) if parts else str(off)

    def flat_index(self, b: Buf, ctx: Ctx, depth: int) -> str:
        r = self.rng
        if b.sym:
            n = b.sym
            loops = [lp for lp in ctx.loops if lp.extent == n and lp.lo == 0 and lp.step == 1]
            if loops and r.random() < 0.6:
                return r.choice(loops).var
            e = self.expr("int32", ctx, min(depth, 2))
            if r.random() < 0.5:
                return f"({e}) % {n}"
            return f"T.min(T.max({e}, 0), {n} - 1)"
        size = b.size
        pick = r.random()
        if pick < 0.45 and ctx.loops:
            k = r.randint(1, min(3, len(ctx.loops)))
            idx = self.linear(sorted(r.sample(ctx.loops, k), key=ctx.loops.index), size)
            if idx is not None:
                return idx
        if pick < 0.55:
            return str(r.randrange(size))
        e = self.expr("int32", ctx, min(depth, 2))
        if r.random() < 0.5:
            return f"({e}) % {size}"
        return f"T.min(T.max({e}, 0), {size - 1})"

    def index(self, b: Buf, ctx: Ctx, depth: int) -> str:
        flat = self.flat_index(b, ctx, depth)
        if len(b.shape) == 1:
            return flat
        rows, cols = b.shape
        if self.rng.random() < 0.5:
            # independent in-range indices per dimension
            return f"{self.dim_index(rows, ctx, depth)}, {self.dim_index(cols, ctx, depth)}"
        return f"({flat}) // {cols}, ({flat}) % {cols}"

    def dim_index(self, n: int, ctx: Ctx, depth: int) -> str:
        r = self.rng
        fits = [lp for lp in ctx.loops if isinstance(lp.extent, int) and lp.lo + lp.extent <= n]
        if fits and r.random() < 0.6:
            return r.choice(fits).var
        if r.random() < 0.3:
            return str(r.randrange(n))
        return f"({self.expr('int32', ctx, min(depth, 1))}) % {n}"

    def slot_index(self, b: Buf, ctx: Ctx) -> str | None:
        """An index inside the slot of iteration p of the parallel loop (see Ctx.slots)."""
        r = self.rng
        par = ctx.loops[ctx.par_depth]
        off, slot = ctx.slots[b.name]
        p = par.var if par.lo == 0 else f"({par.var} - {par.lo})"
        inner = [lp for lp in ctx.loops[ctx.par_depth + 1:] if r.random() < 0.7]
        rest = self.linear(inner, slot) if inner else None
        if rest is None:
            rest = str(r.randrange(slot))
        flat = f"{p}" if slot == 1 else f"{p} * {slot}"
        if off:
            flat = f"{off} + {flat}"
        flat = f"{flat} + {rest}" if rest != "0" else flat
        if len(b.shape) == 1:
            return flat
        cols = b.shape[1]
        return f"({flat}) // {cols}, ({flat}) % {cols}"

    def load(self, b: Buf, ctx: Ctx, depth: int) -> str:
        return f"{b.name}[{self.index(b, ctx, depth - 1)}]"

    # -- statements -----------------------------------------------------------------
    def block(self, ctx: Ctx, depth: int, n: int, ind: str) -> list[str]:
        """``n`` statements at indentation ``ind``; lets and scalars scope to the block."""
        ctx = ctx.child()
        out: list[str] = []
        for _ in range(n):
            out += self.stmt(ctx, depth, ind)
        if not out:
            out = self.store(ctx, depth, ind) or [f"{ind}T.evaluate(0)"]
        return out

    def stmt(self, ctx: Ctx, depth: int, ind: str) -> list[str]:
        r = self.rng
        choices = ["store"] * 4 + ["let"] + ["var"]
        if depth > 0:
            choices += ["for"] * 3 + ["if"]
        if ctx.mutables:  # inside a parallel loop: only its own scalars
            choices += ["assign"] * 2
        if ctx.writable is None and not ctx.helper and depth > 0:
            choices.append("call")
        kind = r.choice(choices)
        if kind == "store":
            return self.store(ctx, depth, ind)
        if kind == "let":
            d = r.choice(DTYPES)
            name = self.fresh("x")
            line = f"{ind}{name}: T.let[T.{d}] = {self.expr(d, ctx, 2)}"
            ctx.scalars.append((name, d))
            return [line]
        if kind == "var":
            d = r.choice(DTYPES)
            name = self.fresh("v")
            line = f"{ind}{name}: T.{d} = {self.expr(d, ctx, 2)}"
            ctx.scalars.append((name, d))
            ctx.mutables.append((name, d))
            return [line]
        if kind == "assign":
            name, d = r.choice(ctx.mutables)
            return [f"{ind}{name} = {self.expr(d, ctx, 2)}"]
        if kind == "if":
            out = [f"{ind}if {self.bool_expr(ctx, 2)}:"]
            out += self.block(ctx, depth - 1, r.randint(1, 2), ind + "    ")
            if r.random() < 0.5:
                out.append(f"{ind}else:")
                out += self.block(ctx, depth - 1, r.randint(1, 2), ind + "    ")
            return out
        if kind == "call":
            return self.call_stmt(ctx, ind)
        return self.loop(ctx, depth, ind)

    def store(self, ctx: Ctx, depth: int, ind: str) -> list[str]:
        r = self.rng
        targets = ctx.bufs if ctx.writable is None else ctx.writable
        if not targets:
            return []
        b = r.choice(targets)
        if ctx.par_depth is not None:
            idx = self.slot_index(b, ctx)
        else:
            idx = self.index(b, ctx, 2)
        if idx is None:
            return []
        return [f"{ind}{b.name}[{idx}] = {self.expr(b.dtype, ctx, r.randint(1, 4))}"]

    def loop(self, ctx: Ctx, depth: int, ind: str) -> list[str]:
        r = self.rng
        kinds = ["range", "range", "serial", "unroll", "grid"]
        if ctx.par_depth is None and not ctx.helper:
            kinds += ["parallel", "vectorized"] * 2
        if ctx.in_vec:
            kinds = ["range", "unroll"]
        kind = r.choice(kinds)
        syms = sorted({b.sym for b in ctx.bufs if b.sym})
        c = ctx.child()
        if kind == "grid":
            e1, e2 = r.randint(1, 6), r.randint(1, 6)
            v1, v2 = self.fresh("i"), self.fresh("j")
            c.loops += [Loop(v1, 0, e1, "serial"), Loop(v2, 0, e2, "serial")]
            c.scalars += [(v1, "int32"), (v2, "int32")]
            head = f"{ind}for {v1}, {v2} in T.grid({e1}, {e2}):"
        else:
            var = self.fresh("i")
            lo = r.choice((0, 0, 0, 1, 2, 3))
            ext: int | str = r.choice((1, 2, 3, 4, 4, 5, 8, 8, 16))
            step = 1
            if kind in ("range", "serial") and syms and ctx.par_depth is None and r.random() < 0.4:
                ext, lo = r.choice(syms), 0
            if kind == "vectorized":
                ext = r.choice((2, 4, 8, 16))
            if kind == "range" and isinstance(ext, int) and r.random() < 0.15:
                step = r.choice((2, 3))
            stop = ext if lo == 0 else (f"{lo} + {ext}" if isinstance(ext, str) else lo + ext)
            if kind == "range":
                if step != 1:
                    head = f"range({lo}, {stop}, {step})"
                else:
                    head = f"range({stop})" if lo == 0 else f"range({lo}, {stop})"
            else:
                fn = {"serial": "T.serial", "parallel": "T.parallel",
                      "vectorized": "T.vectorized", "unroll": "T.unroll"}[kind]
                head = f"{fn}({stop})" if lo == 0 else f"{fn}({lo}, {stop})"
            head = f"{ind}for {var} in {head}:"
            lkind = {"range": "serial", "unroll": "unrolled"}.get(kind, kind)
            c.loops.append(Loop(var, lo, ext, lkind, step))
            c.scalars.append((var, "int32"))
            if kind in ("parallel", "vectorized"):
                c.par_depth = len(c.loops) - 1
                c.in_vec = kind == "vectorized"
                cand = [b for b in ctx.bufs if (b.sym and ext == b.sym)
                        or (not b.sym and isinstance(ext, int) and b.size >= ext)]
                if not cand:
                    return []
                c.writable = r.sample(cand, r.randint(1, min(2, len(cand))))
                c.slots = {}
                for b in c.writable:
                    if b.sym:
                        c.slots[b.name] = (0, 1)
                    else:
                        slot = b.size // ext
                        c.slots[b.name] = (r.randint(0, b.size - slot * ext), slot)
                c.mutables = []
        n = r.randint(1, 3)
        body = self.block(c, depth - 1, n, ind + "    ")
        return [head] + body

    # -- private helpers ------------------------------------------------------------
    def scalar_helper(self, d: str) -> tuple[str, list[str]]:
        r = self.rng
        name = f"h{len(self.helpers)}"
        self.helpers.append(Helper(name, ""))  # reserve the name (helpers may nest)
        params = [r.choice(DTYPES) for _ in range(r.randint(1, 3))]
        pnames = [f"a{i}" for i in range(len(params))]
        ctx = Ctx([], list(zip(pnames, params)), [], helper=True)
        sig = ", ".join(f"{n}: T.{t}" for n, t in zip(pnames, params))
        lines = [f"    @T.prim_func(private=True)", f"    def {name}({sig}) -> T.{d}:"]
        if r.random() < 0.5:
            lines.append(f"        if {self.bool_expr(ctx, 1)}:")
            lines.append(f"            return {self.expr(d, ctx, 2)}")
        lines.append(f"        return {self.expr(d, ctx, 2)}")
        self.helpers[int(name[1:])] = Helper(name, "\n".join(lines))
        return name, params

    def call_stmt(self, ctx: Ctx, ind: str) -> list[str]:
        r = self.rng
        fixed = [b for b in ctx.bufs if not b.sym]
        if not fixed:
            return []
        b = r.choice(fixed)
        name = f"h{len(self.helpers)}"
        self.helpers.append(Helper(name, ""))
        by_handle = self.tvm_safe or r.random() < 0.5
        sd = r.choice(DTYPES)
        shape = ", ".join(str(x) for x in b.shape) + ("," if len(b.shape) == 1 else "")
        if by_handle:
            sig = f'p: T.handle("{b.dtype}", "global"), s: T.{sd}'
            dt = "" if b.dtype == "float32" else f', "{b.dtype}"'
            body = [f"        X = T.decl_buffer(({shape}){dt}, data=p)"]
            arg = f"{b.name}.data"
        else:
            sig = f'X: T.Buffer(({shape}), "{b.dtype}"), s: T.{sd}'
            body = []
            arg = b.name
        x = Buf("X", b.dtype, b.shape)
        hctx = Ctx([x], [("s", sd)], [], helper=True)
        for _ in range(r.randint(1, 2)):
            body += self.loop(hctx, 2, "        ") if r.random() < 0.7 else self.store(hctx, 1, "        ")
        if len(body) == (1 if by_handle else 0):
            body += self.store(hctx, 1, "        ") or ["        T.evaluate(0)"]
        lines = [f"    @T.prim_func(private=True)", f"    def {name}({sig}):"] + body
        self.helpers[int(name[1:])] = Helper(name, "\n".join(lines))
        return [f"{ind}Module.{name}({arg}, {self.expr(sd, ctx, 1)})"]

    # -- functions and modules ------------------------------------------------------
    def function(self, k: int) -> str:
        r = self.rng
        bufs: list[Buf] = []
        sym = "n" if r.random() < 0.3 else None
        for i in range(r.randint(1, 4)):
            d = r.choice(DTYPES)
            if sym and r.random() < 0.4:
                bufs.append(Buf(f"A{i}", d, (sym,), sym))
            elif r.random() < 0.3:
                bufs.append(Buf(f"A{i}", d, (r.choice((2, 3, 4, 8)), r.choice((2, 4, 5, 8, 16)))))
            else:
                bufs.append(Buf(f"A{i}", d, (r.choice((1, 4, 8, 16, 32, 64, 100, 256)),)))
        scalars = [(f"s{i}", r.choice(DTYPES)) for i in range(r.randint(0, 3))]
        ctx = Ctx(bufs, list(scalars), [])
        body = self.block(ctx, 3, r.randint(2, 5), "        ")
        params, seen = [], False
        for b in bufs:
            if b.sym:
                shape = f'("{b.sym}",)' if not seen else f"({b.sym},)"
                seen = True
            else:
                shape = "(" + ", ".join(map(str, b.shape)) + ("," if len(b.shape) == 1 else "") + ")"
            params.append(f'{b.name}: T.Buffer({shape}, "{b.dtype}")')
        params += [f"{n}: T.{d}" for n, d in scalars]
        lines = [f"    @T.prim_func", f"    def f{k}({', '.join(params)}):"]
        if seen:
            lines.append(f"        {sym} = T.int32()")
        return "\n".join(lines + body)

    def module(self) -> str:
        funcs = [self.function(k) for k in range(self.n_funcs)]
        helpers = [h.text for h in self.helpers]
        return HEADER + "\n@I.ir_module\nclass Module:\n" + "\n\n".join(helpers + funcs) + "\n"


def generate(seed: int, n_funcs: int = 4, tvm_safe: bool | None = None) -> str:
    """A random valid module as text; the same seed gives the same text."""
    return Generator(seed, n_funcs, tvm_safe).module()
