"""IR described for the build's facts (:mod:`tirc.ir.facts`): expression text, TIR
signatures, parameters, C parameter lists and launch sizes. The passes that decide a
fact call these when they record it; the outputs read only the record.

Element types in C: ``bool``, ``intN_t``/``uintN_t``, ``float``, ``double``; float16 and
bfloat16 buffers are ``uint16_t*`` and float8 buffers ``uint8_t*`` (their storage);
a vector element type points at its scalar element.
"""
from __future__ import annotations

from tirc.ir import facts
from tirc.ir.c_names import C_KEYWORDS, c_identifier
from tirc.ir.attrs import GLOBAL_SYMBOL, TARGET, USE_DYN_SHARED_MEMORY, sized_launch_params
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call, Cast, IntImm, PrimExpr, StringImm, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.print_expr import ExprPrinter, quote
from tirc.ir.stmt import Evaluate, IfThenElse, SeqStmt, Stmt
from tirc.target.kinds import Target

def c_type(dtype: DataType) -> str:
    """The C type of one element of ``dtype`` (handles: ``void*``)."""
    if dtype.is_handle:
        return "void*"
    if dtype.is_bool:
        return "bool"
    if dtype.is_subbyte:  # packed, DLPack's layout: the bytes that hold the elements
        return "uint8_t"
    if dtype.is_int:
        return f"int{dtype.bits}_t"
    if dtype.is_uint:
        return f"uint{dtype.bits}_t"
    if dtype.is_float and dtype.base == "float32":
        return "float"
    if dtype.is_float and dtype.base == "float64":
        return "double"
    if dtype.bits == 16:
        return "uint16_t"
    return "uint8_t"


class _Text(ExprPrinter):
    """Shape expressions as short text: names (or what ``names`` gives a variable by
    ``id``), plain integers, no casts."""

    module_name = None

    def __init__(self, names: dict[int, str] | None = None) -> None:
        self.scalars: set[int] = set()
        self.names = names or {}

    def var(self, v: Var) -> str:
        return self.names.get(id(v), v.name)

    def buffer_name(self, b) -> str:
        return b.name

    def define(self, obj, base: str) -> str:
        return base

    def _expr(self, e):
        if isinstance(e, IntImm) and not e.dtype.is_bool:
            return str(e.value), (12 if e.value >= 0 else 11)
        if isinstance(e, Cast) and e.dtype.is_integer and e.value.dtype.is_integer:
            return self._expr(e.value)
        return super()._expr(e)


def expr_text(e: PrimExpr, names: dict[int, str] | None = None) -> str:
    """``e`` as short text; ``names``: text for variables by ``id`` (TVM's packed-API
    messages show a variable as the argument field it came from, ``B.shape[0] + 1``)."""
    return _Text(names).expr(e)


class _Script(_Text):
    """Expressions in TVMScript's form (``n * T.int64(2) + T.int64(1)``)."""

    def _expr(self, e):
        return ExprPrinter._expr(self, e)


def script_text(e: PrimExpr) -> str:
    """``e`` as TVMScript writes it: how TVM's packed-API signatures show shapes."""
    return _Script().expr(e)


def value(e: PrimExpr) -> facts.Value:
    """A constant as an int, anything else as its text."""
    return e.value if isinstance(e, IntImm) else expr_text(e)


def target_of(f: PrimFunc) -> tuple[str | None, str | None]:
    """The canonical string and the summary of a function's target (None, None without)."""
    t = f.attrs.get(TARGET)
    if not isinstance(t, Target):
        return None, None
    return t.canonical, t.describe()


def params(f: PrimFunc, written: frozenset[int] | None = None) -> tuple[facts.Param, ...]:
    """The parameters of ``f``: buffers with their dtype and shape (and, given
    ``written``, whether their position is in it), scalars (pointers with what they
    point at)."""
    out = []
    for i, p in enumerate(f.params):
        buf = f.buffer_of(p)
        if buf is not None:
            out.append(facts.Param(p.name, "buffer", str(buf.dtype),
                                   tuple(value(s) for s in buf.shape),
                                   written=None if written is None else i in written))
        else:
            out.append(facts.Param(p.name, "scalar", str(p.dtype), (),
                                   str(p.ptr.dtype) if p.ptr is not None else None))
    return tuple(out)


def tir_signature(name: str, func: PrimFunc) -> str:
    """``f(A: T.Buffer((n,), "float32"), n: T.int32) -> T.int32``."""
    parts = []
    for p in func.params:
        buf = func.buffer_of(p)
        if buf is not None:
            shape = ", ".join(expr_text(s) for s in buf.shape)
            shape += "," if len(buf.shape) == 1 else ""
            parts.append(f"{p.name}: T.Buffer(({shape}), {quote(str(buf.dtype))})")
        else:
            parts.append(f"{p.name}: {'T.handle' if p.dtype.is_handle else 'T.' + str(p.dtype)}")
    ret = func.ret_type
    tail = f" -> T.{ret}" if ret is not None and not ret.is_void else ""
    return f"{name}({', '.join(parts)}){tail}"


def returns(func: PrimFunc) -> str | None:
    ret = func.ret_type
    return str(ret) if ret is not None and not ret.is_void else None


def c_params(func: PrimFunc, original: PrimFunc) -> tuple[facts.CParam, ...]:
    """The C parameters of the C-API function ``func`` made from ``original``: their C
    types and unique names, and what each is for."""
    out, taken = [], set()
    has_out = returns(original) is not None
    for i, p in enumerate(func.params):
        if p.dtype.is_handle:
            ctype = c_type(p.ptr.dtype.element()) + "*" if p.ptr is not None else "void*"
        else:
            ctype = c_type(p.dtype)
        name = c_identifier(p.name)
        while name in taken or name in C_KEYWORDS:
            name += "_"
        taken.add(name)
        doc: str | None
        if i < len(original.params):
            buf = original.buffer_of(original.params[i])
            doc = None
            if buf is not None:
                shape = ", ".join(expr_text(s) for s in buf.shape)
                doc = f"{buf.dtype}[{shape}], data pointer to the first element"
        elif has_out and i == len(func.params) - 1:
            doc = f"receives the {original.ret_type} return value"
        else:
            doc = "size variable of the buffer shapes (non-negative)"
        out.append(facts.CParam(ctype, name, doc))
    return tuple(out)


def c_declaration(name: str, func: PrimFunc, cparams: tuple[facts.CParam, ...]) -> str:
    """``int32_t f(float* A, int64_t n)`` for the C-API function ``name``."""
    text = ", ".join(f"{p.ctype} {p.name}" for p in cparams) or "void"
    return f"int32_t {func.attrs.get(GLOBAL_SYMBOL, name)}({text})"


def launch_sizes(tags, extents) -> facts.LaunchSizes:
    """Grid, block and dynamic shared memory of a launch with these launch parameters."""
    grid: list[facts.Value] = [1, 1, 1]
    block: list[facts.Value] = [1, 1, 1]
    shmem: facts.Value = 0
    for tag, e in zip(tags, extents):
        if tag == USE_DYN_SHARED_MEMORY:
            shmem = value(e)
        elif tag.startswith(("blockIdx.", "threadIdx.")):
            axis = "xyz".index(tag[-1])
            (grid if tag.startswith("blockIdx.") else block)[axis] = value(e)
    return facts.LaunchSizes(tuple(grid), tuple(block), shmem)


def launch_calls(body: Stmt):
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


def launch_of(call: Call) -> tuple[str, tuple[str, ...], facts.LaunchSizes]:
    """The kernel a ``T.call_ffi_kernel`` launches, its launch parameters and sizes."""
    tags = tuple(dict(call.kwargs).get("launch_params", ()))
    kname = call.args[0].value if isinstance(call.args[0], StringImm) else "?"
    sized = sized_launch_params(tags)
    sizes = list(call.args[len(call.args) - len(sized):]) if sized else []
    return kname, tags, launch_sizes(sized, sizes)


def exported_function(name: str, before: PrimFunc, after: PrimFunc, abi: str,
                      written: frozenset[int] = frozenset()) -> facts.Function:
    """The facts of the exported host function ``after``, which an ABI pass made of
    ``before`` (``abi``: ``"packed"`` or ``"c"``; ``written``: the positions of the
    parameters a call may write)."""
    target, summary = target_of(after)
    cparams = c_params(after, before) if abi == "c" else ()
    return facts.Function(
        name, str(after.attrs.get(GLOBAL_SYMBOL, name)), abi, target, summary,
        tir_signature(name, before), params(before, written), returns(before), cparams,
        c_declaration(name, after, cparams) if abi == "c" else None)


def with_exported(mod: IRModule, funcs: dict[str, PrimFunc], abi: str,
                  written: dict[str, frozenset[int]]) -> facts.BuildFacts:
    """``mod``'s facts with every function an ABI pass rewrote (``funcs``: the module's
    functions after it) recorded as exported, in module order; ``written``: by function,
    the positions of the parameters a call may write."""
    record = mod.facts
    for name, f in mod.functions.items():
        if funcs[name] is not f:
            record = record.with_function(
                exported_function(name, f, funcs[name], abi, written.get(name, frozenset())))
    return record
