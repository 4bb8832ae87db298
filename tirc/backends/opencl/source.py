"""A device module as OpenCL C source, as TVM's OpenCL code generator writes it: each
kernel a ``__kernel void`` with ``__global`` pointer parameters (``restrict`` under
``tir.noalias``) and its scalars, thread indices from ``get_group_id``/``get_local_id``,
``__local`` arrays for shared memory (declared at the kernel's outermost scope, as
OpenCL C requires), ``barrier(CLK_LOCAL_MEM_FENCE)`` for ``T.tvm_storage_sync``; device
subroutines as plain functions. Dynamic shared memory (``shared.dyn``) is a ``__local``
pointer parameter after the kernel's own, sized by the host at launch
(``clSetKernelArg(kernel, i, bytes, NULL)``).

:func:`generate` returns the source and, per kernel, its entry symbol, parameters and
local memory, for the manifest and the launch table.
"""
from __future__ import annotations

import re

from tirc.backends.opencl.expr import THREAD_AXES, ExprWriter, unsupported
from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import GLOBAL_SYMBOL, NOALIAS_KEYS, THREAD_EXTENT, is_kernel
from tirc.ir.expr import Call, IntImm, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, Break, BufferStore, Continue,
                          DeclBuffer, Evaluate, For, IfThenElse, IterVar, LetStmt, Return,
                          SeqStmt, Stmt, While)
from tirc.records import record

_SPACES = {"global": "__global", "shared": "__local", "shared.dyn": "__local", "local": "",
           "": "__global"}
# names a variable must not take: C and OpenCL C keywords, types and the built-ins the
# generated code calls
RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while bool true false half uchar ushort uint ulong size_t
kernel global local constant private read_only write_only __kernel __global __local
__constant __private barrier min max select exp exp2 exp10 log log2 log10 log1p sqrt rsqrt
sin cos tan sinh cosh tanh asin acos atan asinh acosh atanh erf floor ceil trunc rint fabs
fmod pow atan2 hypot copysign nextafter ldexp fma abs popcount clz isnan isinf isfinite
vload2 vload3 vload4 vload8 vload16 vstore2 vstore3 vstore4 vstore8 vstore16 get_group_id
get_local_id get_global_id get_num_groups get_local_size NAN INFINITY
""".split())


@record(frozen=True)
class KernelInfo:
    name: str  # the TIR function
    symbol: str  # the OpenCL kernel name
    params: tuple[str, ...]  # each parameter's declaration
    local_bytes: int  # static __local memory
    dynamic_local: bool  # takes a trailing __local pointer for shared.dyn


@record(frozen=True)
class Source:
    text: str
    kernels: tuple[KernelInfo, ...]


def kernel_symbols(mod: IRModule) -> tuple[str, ...]:
    """The kernels' entry names in module order, known before the source is written."""
    return tuple(identifier(str(f.attrs.get(GLOBAL_SYMBOL, n)))
                 for n, f in mod.functions.items() if is_kernel(f))


def identifier(name: str) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    return "v_" + text if text[0].isdigit() or text in RESERVED else text


def generate(mod: IRModule, target=None) -> Source:
    uses: set = set()
    names = {n: identifier(str(f.attrs.get(GLOBAL_SYMBOL, n)) if is_kernel(f) else n)
             for n, f in mod.functions.items()}
    protos, bodies, kernels = [], [], []
    for n, f in mod.functions.items():
        fw = _FunctionWriter(f, names, uses)
        proto, body, info = fw.write(n, names[n])
        protos.append(proto + ";")
        bodies.append(body)
        if info is not None:
            kernels.append(info)
    head = ["// OpenCL C written by tirc for target 'opencl'"]
    if "fp16" in uses:
        head.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    if "fp64" in uses:
        head.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    helpers = [_helper(op, t) for kind, op, t in sorted(u for u in uses if isinstance(u, tuple))]
    parts = ["\n".join(head), *helpers, "\n".join(protos), *bodies]
    return Source("\n\n".join(p for p in parts if p) + "\n", tuple(kernels))


_MIN = {"char": "CHAR_MIN", "short": "SHRT_MIN", "int": "INT_MIN", "long": "LONG_MIN"}


def _helper(op: str, t: str) -> str:
    """An integer division of ``t`` that never traps: by zero, ``/`` gives -1 and ``%``
    the dividend; the minimum divided by -1 wraps (and its remainder is 0)."""
    head = f"static inline {t} tirc_{op}_{t}({t} a, {t} b) {{\n"
    if t not in _MIN:  # unsigned
        body = {"div": "  return (b == 0) ? ({t})-1 : (a / b);",
                "mod": "  return (b == 0) ? a : (a % b);"}[op.replace("floor", "")]
        return head + body.format(t=t) + "\n}"
    lines = ["  if (b == 0) {", f"    return {'(' + t + ')-1' if 'div' in op else 'a'};", "  }",
             "  if (b == -1) {", f"    return {'(a == ' + _MIN[t] + ') ? a : -a' if 'div' in op else '0'};",
             "  }"]
    if op == "div":
        lines.append("  return a / b;")
    elif op == "mod":
        lines.append("  return a % b;")
    elif op == "floordiv":
        lines += [f"  {t} q = a / b;", "  return ((q * b != a) && ((a < 0) != (b < 0))) ? (q - 1) : q;"]
    else:
        lines += [f"  {t} r = a % b;", "  return ((r != 0) && ((r < 0) != (b < 0))) ? (r + b) : r;"]
    return head + "\n".join(lines) + "\n}"


class _FunctionWriter:
    def __init__(self, func: PrimFunc, funcs: dict[str, str], uses: set):
        self.func = func
        self.lines: list[str] = []
        self.depth = 1
        self.taken: set[str] = set(funcs.values())
        self.names: dict = dict(funcs)  # function names by TIR name; variables by Var
        self.pointers: dict = {}
        self.expr = ExprWriter(self.names, self.pointers, self.hoist, uses)
        self.kernel = is_kernel(func)
        self.restrict = any(func.attrs.get(k) for k in NOALIAS_KEYS)

    # -- names and lines ----------------------------------------------------------------
    def fresh(self, name: str) -> str:
        base = identifier(name)
        text, n = base, 0
        while text in self.taken:
            n += 1
            text = f"{base}_{n}"
        self.taken.add(text)
        return text

    def bind(self, var: Var) -> str:
        self.names[var] = name = self.fresh(var.name)
        return name

    def line(self, text: str) -> None:
        if text:
            self.lines.append("  " * self.depth + text)

    def hoist(self, var, value: str, ctype_text: str | None = None) -> str:
        """A declaration ``T name = value;`` before the statement being written."""
        if var is None:
            name = self.fresh("v")
        else:
            name = self.bind(var)
            ctype_text = self.decl_type(var)
        self.line(f"{ctype_text} {name} = {value};")
        return name

    def decl_type(self, var: Var) -> str:
        if var.ptr is not None:
            space = _SPACES.get(var.ptr.scope, "__global")
            elem = self.expr.type(var.ptr.dtype, var.span, memory=True)
            self.pointers[var] = (elem, space)
            return f"{space} {elem}*".strip()
        if var.dtype.is_handle:
            raise unsupported(f"the untyped pointer '{var.name}'", var.span)
        return self.expr.type(var.dtype, var.span)

    # -- the function ---------------------------------------------------------------------
    def write(self, tir_name: str, name: str):
        f = self.func
        params = []
        elems = _buffer_elements(f.body)
        for p in f.params:
            if p.dtype.is_handle:
                elem_dtype = p.ptr.dtype if p.ptr is not None else elems.get(p)
                if elem_dtype is None:
                    raise unsupported(f"the untyped pointer parameter '{p.name}'", f.span)
                space = _SPACES.get(p.ptr.scope if p.ptr is not None else "global", "__global")
                elem = self.expr.type(elem_dtype, f.span, memory=True)
                self.pointers[p] = (elem, space)
                rq = " restrict" if self.restrict and space == "__global" else ""
                params.append(f"{space} {elem}*{rq} {self.bind(p)}")
            else:  # a kernel takes no bool: the host passes it as an int
                t = "int" if self.kernel and p.dtype.is_bool else self.expr.type(p.dtype, f.span)
                params.append(f"{t} {self.bind(p)}")
        local_bytes, dynamic = 0, False
        if self.kernel:
            for alloc in _shared_allocations(f.body):
                buf = alloc.buffer
                scope = buf.data.ptr.scope if buf.data.ptr is not None else ""
                elem = self.expr.type(buf.dtype, alloc.span, memory=True)
                if scope == "shared.dyn":
                    if dynamic:
                        raise unsupported("more than one dynamic shared allocation in a kernel",
                                          alloc.span)
                    dynamic = True
                    self.pointers[buf.data] = (elem, "__local")
                    params.append(f"__local {elem}* {self.bind(buf.data)}")
                    continue
                count = _constant_size(buf, alloc.span)
                self.pointers[buf.data] = (elem, "__local")
                self.line(f"__local {elem} {self.bind(buf.data)}[{count}];")
                local_bytes += count * max(buf.dtype.bits // 8, 1) * buf.dtype.lanes
        if self.kernel:
            ret = "__kernel void"
        elif f.ret_type is not None and not f.ret_type.is_void:
            ret = self.expr.type(f.ret_type, f.span)
        else:
            ret = "void"
        proto = f"{ret} {name}({', '.join(params)})"
        self.stmt(f.body)
        body = "\n".join([proto + " {", *self.lines, "}"])
        info = KernelInfo(tir_name, name, tuple(params), local_bytes, dynamic) if self.kernel else None
        return proto, body, info

    # -- statements -----------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        while True:  # chains of scoped statements, without recursion
            if isinstance(s, SeqStmt):
                for child in s.stmts:
                    self.stmt(child)
                return
            if isinstance(s, LetStmt):
                value = self.expr(s.value)
                self.line(f"{self.decl_type(s.var)} {self.bind(s.var)} = {value};")
                s = s.body
            elif isinstance(s, AttrStmt):
                if s.key == THREAD_EXTENT and isinstance(s.node, IterVar):
                    self.thread_index(s.node, s.span)
                s = s.body
            elif isinstance(s, (DeclBuffer, AssertStmt)):
                s = s.body
            elif isinstance(s, AllocBuffer):
                self.allocate(s)
                s = s.body
            else:
                return self.leaf(s)

    def thread_index(self, iv: IterVar, span) -> None:
        axis, _, dim = iv.thread_tag.partition(".")
        fn = THREAD_AXES.get(axis)
        if fn is None or dim not in ("x", "y", "z"):
            raise unsupported(f"the thread axis '{iv.thread_tag}'", span)
        conv = "convert_long" if iv.var.dtype.bits == 64 else "convert_int"
        self.names[iv.var] = f"({conv}({fn}({'xyz'.index(dim)})))"

    def allocate(self, s: AllocBuffer) -> None:
        buf = s.buffer
        scope = buf.data.ptr.scope if buf.data.ptr is not None else "global"
        if scope in ("shared", "shared.dyn"):
            if buf.data not in self.names:
                raise unsupported("shared memory in a device subroutine", s.span)
            return  # declared at the kernel's outermost scope
        if scope != "local":
            raise unsupported(f"an allocation in '{scope}' memory inside a kernel", s.span)
        elem = self.expr.type(buf.dtype, s.span, memory=True)
        self.pointers[buf.data] = (elem, "")
        self.line(f"{elem} {self.bind(buf.data)}[{_constant_size(buf, s.span)}];")

    def block(self, s: Stmt) -> None:
        self.depth += 1
        try:
            self.stmt(s)
        finally:
            self.depth -= 1

    def leaf(self, s: Stmt) -> None:
        e = self.expr
        if isinstance(s, BufferStore):
            value = e(s.value)
            self.line(e.store(s.buffer, s.indices, value, s.span))
        elif isinstance(s, Evaluate):
            if isinstance(s.value, Call):
                text = e(s.value)
                self.line(text + ";" if text else "")
        elif isinstance(s, IfThenElse):
            self.line(f"if ({e(s.condition)}) {{")
            self.block(s.then_case)
            if s.else_case is not None:
                self.line("} else {")
                self.block(s.else_case)
            self.line("}")
        elif isinstance(s, For):
            if s.kind == "parallel":
                raise unsupported("a T.parallel loop", s.span)
            lo, ext = e(s.min), e(s.extent)
            t = e.type(s.loop_var.dtype, s.span)
            v = self.bind(s.loop_var)
            step = e(s.step) if s.step is not None else None
            end = ext if isinstance(s.min, IntImm) and s.min.value == 0 else f"({lo} + {ext})"
            inc = f"{v} += {step}" if step is not None else f"++{v}"
            self.line(f"for ({t} {v} = {lo}; {v} < {end}; {inc}) {{")
            self.block(s.body)
            self.line("}")
        elif isinstance(s, While):
            self.line("while (1) {")
            self.depth += 1
            self.line(f"if (!{e(s.condition)}) {{ break; }}")
            self.depth -= 1
            self.block(s.body)
            self.line("}")
        elif isinstance(s, Return):
            if self.kernel:
                self.line("return;")
            else:
                self.line(f"return {e(s.value)};")
        elif isinstance(s, Break):
            self.line("break;")
        elif isinstance(s, Continue):
            self.line("continue;")
        else:
            raise unsupported(f"the statement {type(s).__name__}", getattr(s, "span", None))


def _constant_size(buf, span) -> int:
    count = 1
    for extent in buf.shape:
        if not isinstance(extent, IntImm):
            raise Diagnostic(f"allocation '{buf.name}' has a size not known at compile time; "
                             "OpenCL device code needs constant sizes", span)
        count *= extent.value
    return count


def _walk(s: Stmt):
    stack = [s]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, SeqStmt):
            stack.extend(reversed(n.stmts))
        elif isinstance(n, IfThenElse):
            if n.else_case is not None:
                stack.append(n.else_case)
            stack.append(n.then_case)
        elif isinstance(n, (LetStmt, AttrStmt, AssertStmt, DeclBuffer, AllocBuffer, For, While)):
            stack.append(n.body)


def _shared_allocations(body: Stmt) -> list[AllocBuffer]:
    out = []
    for n in _walk(body):
        if isinstance(n, AllocBuffer) and n.buffer.data.ptr is not None \
                and n.buffer.data.ptr.scope in ("shared", "shared.dyn"):
            out.append(n)
    return out


def _buffer_elements(body: Stmt) -> dict:
    """The element type of each pointer variable, from the first buffer declared on it."""
    out: dict = {}
    for n in _walk(body):
        if isinstance(n, DeclBuffer) and n.buffer.data not in out:
            out[n.buffer.data] = n.buffer.dtype
    return out
