"""The ``c`` host target: the host module as C99 source, ``OUT/NAME.c``, for the user's
C compiler (as TVM's ``c`` target and Halide's C backend make it).

The file holds every function of the host module with the LLVM backend's meaning
(``cpu.py``): exported functions of the packed ABI (``int __tvm_ffi_f(void* self, void*
args, int32_t num_args, void* result)``, raising through tvm-ffi's
``TVMFFIErrorSetRaisedFromCStr``) or of the C ABI (``--abi c``: the declarations of
``NAME.h`` and ``const char* NAME_last_error(void)``), private functions ``static``
(their errors reach the caller through a thread-local kind and message, as
:mod:`tirc.backends.cpu.errors` keeps them), the same checks, integer semantics and error messages.
``T.parallel`` loops become OpenMP loops (``#pragma omp parallel for``: parallel with
``-fopenmp``, serial without) when their body cannot fail; a body that may fail (a
check, a heap allocation, a division that may trap, a call that may fail) runs serially,
since an OpenMP loop cannot be left early. Buffers of up to 1 KiB of constant size are
arrays on the stack, larger ones ``malloc``'d and freed on every way out. Vectors are
written lane by lane (:mod:`tirc.backends.c.expr`). Kernel launches need the LLVM host backend.

Compile it with ``cc -O2 -fPIC -fwrapv -fno-strict-aliasing -shared NAME.c -o NAME.so -lm``
(``-fopenmp`` for parallel loops); ``tirc build --shared`` does. Statements are written
in one loop (:mod:`tirc.ir.trampoline`), so long chains use no Python stack.
"""
from __future__ import annotations


from tirc.backends.c.expr import ExprWriter
from tirc.backends.c.text import (
    BASE,
    FFI,
    HALF,
    PACKED_CALLS,
    PRIVATE_ERRORS,
    c_api_errors,
    ctype,
    helper,
    helper_deps,
    helper_needs_errors,
    is_half,
    memory_ctype,
    string_literal,
)
from tirc.backends.host_faults import division_needs_guard, exported, may_fail
from tirc.ir.c_names import C_KEYWORDS, c_identifier, last_error_symbol
from tirc.diagnostics import Diagnostic
from tirc.ir.attrs import C_API, DEVICE_ID, DEVICE_TYPE, GLOBAL_SYMBOL, SYMBOL_PREFIX
from tirc.ir.expr import BinOp, Call, IntImm, PrimExpr
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (
    AllocBuffer,
    AssertStmt,
    Break,
    Continue,
    For,
    Return,
    Stmt,
)
from tirc.ir.trampoline import drive
from tirc.ir.visitor import walk
from tirc.ir.names import unique_name
from tirc.records import record
from tirc.target.kinds import Target, host_triple

MAX_STACK_BYTES = 1024  # as the LLVM backend: larger or dynamic buffers are malloc'd
# Names the file's C library calls and macros use: never a variable's or function's.
_RESERVED = frozenset("""NULL INFINITY NAN main malloc free memcpy snprintf printf size_t
intptr_t uintptr_t exp exp2 log log2 log10 log1p sqrt sin cos tan sinh cosh tanh asin acos
atan asinh acosh atanh erf floor ceil trunc nearbyint fabs pow atan2 hypot copysign
nextafter fmod fma isnan isinf isfinite""".split())


@record(frozen=True)
class HostSource:
    """What the ``c`` backend makes of a host module: the C source (``object``)."""

    object: bytes
    triple: str
    uses_openmp: bool
    llvm_ir: str = ""
    uses_cuda: bool = False
    suffix: str = ".c"


def generate(mod: IRModule, target: Target, name: str = "module") -> HostSource:
    writer = ModuleWriter(mod, target, name)
    return HostSource(writer.write().encode("utf-8"), host_triple(), writer.uses_openmp)


class ModuleWriter:
    """One C file: the fixed parts and helpers a function asks for, prototypes of every
    function (so calls may go forward), then the definitions, in the module's order."""

    def __init__(self, mod: IRModule, target: Target, name: str):
        self.mod, self.target, self.name = mod, target, name
        self.failing = may_fail(mod)
        self.parts: set[str] = set()
        self.helpers: dict[str, str] = {}
        self.externs: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.packed: dict[str, str] = {}
        self.uses_openmp = False
        self.reserved = set(C_KEYWORDS) | _RESERVED
        for func in mod.functions.values():  # the C symbols a call names
            for n in walk(func.body):
                if isinstance(n, Call) and n.op in ("call_extern", "call_pure_extern",
                                                    "call_cpacked", "tvm_call_cpacked"):
                    if n.args and hasattr(n.args[0], "value"):
                        self.reserved.add(str(n.args[0].value))
        self.symbols: dict[str, str] = {}
        for fname, func in mod.functions.items():
            if self.is_exported(func):
                self.symbols[fname] = str(func.attrs.get(GLOBAL_SYMBOL, fname))
        taken = set(self.symbols.values()) | self.reserved
        for fname, func in mod.functions.items():
            if fname not in self.symbols:
                base = c_identifier(fname)
                while base in taken or base.startswith("tirc_"):
                    base += "_"
                taken.add(base)
                self.symbols[fname] = base
        self.reserved |= taken
        if any(f.attrs.get(C_API) for f in mod.functions.values()):
            self.need("c_api")  # NAME_last_error() exists whenever NAME.h declares it

    is_exported = staticmethod(exported)

    def symbol(self, fname: str) -> str:
        return self.symbols[fname]

    def need(self, part: str) -> None:
        self.parts.add(part)
        if part == "packed":
            self.parts.add("ffi")

    def helper(self, name: str) -> str:
        if name not in self.helpers:
            for dep in helper_deps(name):
                self.helper(dep)
            if helper_needs_errors(name):
                self.need("errors")
            self.helpers[name] = helper(name)
        return name

    def extern(self, name: str, ret: str, types: tuple[str, ...], span) -> None:
        known = self.externs.get(name)
        if known is not None and known != (ret, types):
            raise Diagnostic(f"'{name}' is used with two different signatures", span)
        self.externs[name] = (ret, types)

    def packed_function(self, name: str) -> str:
        if name not in self.packed:
            self.packed[name] = f"tirc_packed_function_{len(self.packed)}"
        return self.packed[name]

    def write(self) -> str:
        prototypes, bodies = [], []
        for fname, func in self.mod.functions.items():
            fw = FunctionWriter(self, fname, func)
            prototypes.append(fw.signature() + ";")
            bodies.append(fw.run())
        out = [f"/* {self.name}.c: generated by tirc for target c (C99); do not edit.",
               " * Compile: cc -O2 -fPIC -fwrapv -fno-strict-aliasing -shared "
               f"{self.name}.c -o {self.name}.so -lm"
               + (" -fopenmp" if self.uses_openmp else "") + " */", BASE]
        if "ffi" in self.parts:
            out.append(FFI)
        if "packed" in self.parts:
            out.append(PACKED_CALLS)
            out += [f"static void* {v} = NULL;  /* {string_literal(k)[1:-1]} */"
                    for k, v in self.packed.items()]
            out.append("")
        if "errors" in self.parts:
            out.append(PRIVATE_ERRORS)
        if "half" in self.parts:
            out.append(HALF)
        if "c_api" in self.parts:
            prefix = next((str(f.attrs.get(SYMBOL_PREFIX, "")) for f in self.mod.functions.values()
                           if f.attrs.get(C_API)), "")
            out.append(c_api_errors(last_error_symbol(self.name, prefix)))
        for ext, (ret, types) in self.externs.items():
            if ext not in _RESERVED:  # the C library's own are declared by its headers
                out.append(f"extern {ret} {ext}({', '.join(types) or 'void'});")
        if self.externs:
            out.append("")
        if self.helpers:
            out += [*self.helpers.values(), ""]
        out += [*prototypes, "", *bodies]
        return "\n".join(out)


class FunctionWriter(ExprWriter):
    """One function's definition. Every statement's expressions are written first (their
    prelude: lets, packed calls, stack values); :meth:`operand` checks the error a
    checked division or a private call may have recorded before the value is used."""

    def __init__(self, module: ModuleWriter, name: str, func: PrimFunc):
        self.module, self.name, self.func = module, name, func
        self.exported = module.is_exported(func)
        self.c_api = bool(func.attrs.get(C_API))
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[int, str] = {}
        self.inlined: dict[int, object] = {}
        self.let_exprs: list[int] = []  # vars of Let expressions bound by this statement
        self.taken: set[str] = set(module.reserved)
        self.offset_applied: set[int] = set()
        self.heap: list[str] = []
        self.loops: list[int] = []  # heap depth at each enclosing loop
        self.device_attrs: list[tuple[str, str]] = []
        self.pre: list[str] = []
        self.cond = 0
        self.faults = False
        self.params: list[str] = []
        for p in func.params:
            self.params.append(self.fresh(p.name))
            self.names[id(p)] = self.params[-1]
            buf = func.buffer_of(p)
            if buf is not None:  # a buffer argument: the caller passed data + elem_offset
                self.names[id(buf.data)] = self.params[-1]
                self.offset_applied.add(id(buf))

    # -- names and output ---------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = c_identifier(hint)
        if base.startswith(("tirc", "TVMFFI", "__")) or base.endswith("_t"):
            base = "v_" + base
        return unique_name(base, self.taken)

    def helper(self, name: str) -> str:
        return self.module.helper(name)

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def flush(self) -> None:
        for line in self.pre:
            self.emit(line)
        self.pre = []

    def operand(self, e: PrimExpr, c: str | None = None) -> str:
        """``e`` ready to use in the statement being written: its prelude emitted and,
        when it may have recorded an error, computed into a constant and checked."""
        self.faults = False
        text = self.ex(e)
        if self.faults:
            text = self.temp(c or ctype(e.dtype, getattr(e, "span", None)), text)
        self.flush()
        if self.faults:
            self.check_recorded()
        return text

    def check_recorded(self) -> None:
        """Fail if a checked division or a private call recorded an error."""
        self.module.need("errors")
        self.emit("if (tirc_error_kind != NULL) {")
        self.depth += 1
        if self.exported:
            kind = self.fresh("kind")
            self.emit(f"const char* const {kind} = tirc_error_kind;")
            self.emit("tirc_error_kind = NULL;")
            for line in self.fail_lines((kind, "tirc_error_message"), literal=False):
                self.emit(line)
        else:
            for line in self.fail_lines(None):
                self.emit(line)
        self.depth -= 1
        self.emit("}")
        self.faults = False

    def fail_lines(self, error, literal: bool = True) -> list[str]:
        """Lines that fail this function: ``error`` (kind, message) raised as it raises
        errors (None: already set by a callee), the heap freed, the failure returned."""
        out = []
        if error is not None:
            kind, message = error
            if literal:
                kind, message = string_literal(kind), string_literal(message)
            if not self.exported:
                self.module.need("errors")
                out.append(f"tirc_record_error({kind}, {message});")
            elif self.c_api:
                self.module.need("c_api")
                out.append(f"tirc_set_last_error({kind}, {message});")
            else:
                self.module.need("ffi")
                out.append(f"TVMFFIErrorSetRaisedFromCStr({kind}, {message});")
        out += [f"free({p});" for p in reversed(self.heap)]
        ret = self.func.ret_type
        if ret is None or ret.is_void:
            out.append("return;")
        elif ret.is_handle:
            out.append("return NULL;")
        elif ret.is_float:
            out.append(f"return ({ctype(ret)})0;")
        else:
            out.append(f"return ({ctype(ret)})-1;")
        return out

    # -- the function -------------------------------------------------------------------
    def signature(self) -> str:
        func = self.func
        ret = "void" if func.ret_type is None or func.ret_type.is_void else ctype(func.ret_type, func.span)
        params = []
        for p, name in zip(func.params, self.params):
            if p.dtype.is_handle and self.c_api and p.ptr is not None:
                from tirc.ir.describe import c_type  # NAME.h's pointer types
                params.append(f"{c_type(p.ptr.dtype.element())}* {name}")
            else:
                params.append(f"{ctype(p.dtype, p.span or func.span)} {name}")
        linkage = "TIRC_EXPORT " if self.exported else "static "
        return f"{linkage}{ret} {self.module.symbol(self.name)}({', '.join(params) or 'void'})"

    def run(self) -> str:
        self.stmt(self.func.body)
        ret = self.func.ret_type
        ends = self.lines and self.lines[-1].startswith("  return ")
        if ret is not None and not ret.is_void and not ends:
            self.emit("return NULL;" if ret.is_handle else f"return ({ctype(ret)})0;")
        return "\n".join([self.signature() + " {", *self.lines, "}", ""])

    # -- statements ---------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        inner, _ = self._begin(s)
        if inner is not None:
            drive(inner, self._begin, lambda s, v: v)

    def _begin(self, s: Stmt):
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise Diagnostic(f"the c target cannot compile a {type(s).__name__} statement",
                             getattr(s, "span", None))
        self.inlined = {}
        for key in self.let_exprs:  # defined in an earlier statement's prelude
            self.names.pop(key, None)
        self.let_exprs = []
        steps = method(s)
        return (steps, None) if steps is not None else (None, None)

    def block(self, body: Stmt):
        """Steps writing ``body`` one level in."""
        self.depth += 1
        yield body
        self.depth -= 1

    def stmt_SeqStmt(self, s):
        for item in s.stmts:
            yield item

    def stmt_BufferStore(self, s) -> None:
        if len(s.indices) != 1:
            raise Diagnostic(f"buffer '{s.buffer.name}' is not flattened", s.span)
        buf, index, value = s.buffer, s.indices[0], s.value
        lanes = value.dtype.lanes if value.dtype.lanes > 1 else index.dtype.lanes * buf.dtype.lanes
        mem = memory_ctype(buf.dtype, s.span)
        if lanes == 1:
            at, v = self.operand(index), self.operand(value)
            v = self.to_memory(v, value.dtype, mem)
            self.emit(f"{self.element(buf, at)} = {v};")
            return
        # every lane's value and address first: a lane's store must not change another's
        self.faults = False
        values = [self.ex(value, k if value.dtype.lanes > 1 else None) for k in range(lanes)]
        per = buf.dtype.lanes
        addrs = [self.ex(index, k // per if index.dtype.lanes > 1 else None) for k in range(lanes)]
        tmp = self.fresh("lanes")
        values = [self.to_memory(v, value.dtype, mem) for v in values]
        self.pre.append(f"{mem} const {tmp}[{lanes}] = {{{', '.join(values)}}};")
        if any(isinstance(n, Call) or type(n).__name__ == "BufferLoad" for n in walk(index)):
            at = self.fresh("at")
            self.pre.append(f"int64_t const {at}[{lanes}] = {{{', '.join(f'(int64_t){a}' for a in addrs)}}};")
            addrs = [f"{at}[{k}]" for k in range(lanes)]
        faults = self.faults
        self.flush()
        if faults:
            self.check_recorded()
        for k in range(lanes):
            self.emit(f"{self.element(buf, addrs[k], k % per)} = {tmp}[{k}];")

    def to_memory(self, v: str, d, mem: str) -> str:
        """Value ``v`` of ``d`` as a buffer element of C type ``mem``."""
        if is_half(d):
            self.module.need("half")
            return f"tirc_f16_bits({v})"
        return f"({mem}){v}" if d.is_bool or ctype(d) != mem else v

    def stmt_LetStmt(self, s):
        self.faults = False
        name = self.declare(s.var, s.value)
        faults = self.faults
        self.flush()
        if faults:
            self.check_recorded()
        self.names[id(s.var)] = name
        yield s.body

    def stmt_AttrStmt(self, s):
        if s.key in (DEVICE_ID, DEVICE_TYPE):
            self.device_attrs.append((s.key, self.operand(s.value)))
            yield s.body
            self.device_attrs.pop()
        else:
            yield s.body

    def stmt_AssertStmt(self, s):
        cond = self.operand(s.condition)
        self.emit(f"if (!{cond}) {{")
        for line in self.fail_lines((s.kind, "".join(s.message))):
            self.emit("  " + line)
        self.emit("}")
        yield s.body

    def stmt_Evaluate(self, s) -> None:
        v = s.value
        if isinstance(v, IntImm):
            return
        if isinstance(v, Call) and v.op == "ret":
            self.emit_return(self.operand(v.args[0]))
            return
        if isinstance(v, Call) and v.op == "tvm_throw_last_error":
            for line in self.fail_lines(None):
                self.emit(line)
            return
        self.faults = False
        text = self.ex(v)
        faults = self.faults
        self.flush()
        if text != "0":
            self.emit(f"(void){text};")
        if faults:
            self.check_recorded()

    def emit_return(self, value: str | None) -> None:
        for p in reversed(self.heap):
            self.emit(f"free({p});")
        ret = self.func.ret_type
        self.emit("return;" if value is None or ret is None or ret.is_void else f"return {value};")

    def stmt_Return(self, s) -> None:
        self.emit_return(self.operand(s.value))

    def stmt_IfThenElse(self, s):
        self.emit(f"if ({self.condition(s.condition)}) {{")
        yield from self.block(s.then_case)
        if s.else_case is not None:
            self.emit("} else {")
            yield from self.block(s.else_case)
        self.emit("}")

    def condition(self, e: PrimExpr) -> str:
        """An ``if``/``while`` condition; an integer one is true when nonzero."""
        text = self.operand(e)
        return text if e.dtype.is_bool else f"({text} != 0)"

    def stmt_While(self, s):
        self.emit("for (;;) {")
        self.depth += 1
        self.emit(f"if (!{self.condition(s.condition)}) break;")
        self.loops.append(len(self.heap))
        yield s.body
        self.loops.pop()
        self.depth -= 1
        self.emit("}")

    def stmt_Break(self, s) -> None:
        self.jump_out(s, "break")

    def stmt_Continue(self, s) -> None:
        self.jump_out(s, "continue")

    def jump_out(self, s: Stmt, what: str) -> None:
        if not self.loops:
            raise Diagnostic(f"'{what}' outside a loop", s.span)
        for p in reversed(self.heap[self.loops[-1]:]):
            self.emit(f"free({p});")
        self.emit(f"{what};")

    def stmt_For(self, s: For):
        if s.kind == "thread_binding":
            raise Diagnostic("a thread-bound loop reached host code generation", s.span)
        c = ctype(s.loop_var.dtype, s.span)
        start = self.operand(s.min, c)
        if isinstance(s.min, IntImm) and isinstance(s.extent, IntImm):
            end = str(s.min.value + s.extent.value)
        else:
            extent = self.operand(s.extent, c)
            end = extent if isinstance(s.min, IntImm) and s.min.value == 0 else \
                self.arith("add", s.loop_var.dtype, start, extent)
            end = self.temp(c, f"({c}){end}", "end")
        step = "1" if s.step is None else self.operand(s.step, c)
        self.flush()
        var = self.fresh(s.loop_var.name)
        self.names[id(s.loop_var)] = var
        if s.kind == "parallel":
            if self.parallel_safe(s.body):
                self.module.uses_openmp = True
                self.emit("#pragma omp parallel for")
            else:
                self.emit("/* T.parallel: run serially, its body may fail */")
        self.emit(f"for ({c} {var} = {start}; {var} < {end}; {var} += {step}) {{")
        self.loops.append(len(self.heap))
        yield from self.block(s.body)
        self.loops.pop()
        self.emit("}")

    def parallel_safe(self, body: Stmt) -> bool:
        """Whether ``body`` can run as an OpenMP loop's body: nothing in it can fail or
        leave the loop early."""
        failing = self.module.failing
        for n in walk(body):
            if isinstance(n, (AssertStmt, Return, Break, Continue)):
                return False
            if isinstance(n, AllocBuffer) and self.stack_bytes(n) is None:
                return False
            if isinstance(n, BinOp) and division_needs_guard(n):
                return False
            if isinstance(n, Call) and (n.op in ("tvm_throw_last_error", "ret", "call_ffi_kernel")
                                        or n.op in ("call_packed", "tvm_call_packed",
                                                    "call_cpacked", "tvm_call_cpacked")
                                        or (not isinstance(n.op, str) and n.op.name in failing)):
                return False
        return True

    @staticmethod
    def stack_bytes(s: AllocBuffer) -> int | None:
        """The bytes of a buffer that lives on the stack; None: on the heap."""
        count = 1
        for dim in s.buffer.shape:
            if not isinstance(dim, IntImm):
                return None
            count *= dim.value
        d = s.buffer.dtype
        nbytes = count * (1 if d.is_bool else max(1, d.bits // 8)) * d.lanes
        return nbytes if nbytes <= MAX_STACK_BYTES else None

    def stmt_DeclBuffer(self, s):
        self.ex(s.buffer.data)  # defined before the view (a clear error otherwise)
        yield s.body

    def stmt_AllocBuffer(self, s: AllocBuffer):
        buf = s.buffer
        mem = memory_ctype(buf.dtype, s.span)
        name = self.fresh(buf.data.name)
        self.names[id(buf.data)] = name
        if self.stack_bytes(s) is not None:
            count = buf.dtype.lanes
            for dim in buf.shape:
                count *= dim.value
            self.emit(f"{mem} {name}[{max(count, 1)}];")
            yield s.body
            return
        size = "(size_t)1"
        for dim in buf.shape:
            size += f" * (size_t){self.operand(dim)}"
        elem = f"sizeof({mem}) * {buf.dtype.lanes}"
        self.emit(f"void* {name} = malloc({size} * {elem});")
        self.emit(f"if ({name} == NULL) {{")
        for line in self.fail_lines(("RuntimeError", f"cannot allocate memory for a buffer "
                                                     f"in function '{self.name}'")):
            self.emit("  " + line)
        self.emit("}")
        self.heap.append(name)
        yield s.body
        self.heap.pop()
        self.emit(f"free({name});")
