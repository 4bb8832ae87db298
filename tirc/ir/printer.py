"""IR to TVMScript, in the form TVM 0.27 prints and parses. Deterministic: names come
from the IR, made unique per function with ``_1``, ``_2`` suffixes in print order."""
from __future__ import annotations


from contextlib import contextmanager

from tirc.ir.attrs import GLOBAL_SYMBOL, THREAD_EXTENT
from tirc.ir.buffer import Buffer, dtype_view_of
from tirc.ir.equal import structural_equal
from tirc.ir.expr import (Call, IntImm, Let, PrimExpr, StringImm,
                          Var)
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.reducer import CommReducer
from tirc.ir.stmt import (AllocBuffer, AssertStmt, AttrStmt, Break, BufferStore, Continue,
                          DeclBuffer, Evaluate, For, IfThenElse, IterVar, LetStmt, Return,
                          SeqStmt, Stmt, While)
from tirc.ir.scalars import scalar_buffers, scalar_params
from tirc.ir.freevars import free_vars, uses_any
from tirc.target.kinds import Target
from tirc.ir.print_expr import ExprPrinter, plus, py_value, quote
from tirc.ir.print_block import BlockPrinter, implicit_root
from tirc.ir.block import SBlock, SBlockRealize
from tirc.ir.visitor import Visitor, walk
from tirc.ir.stmt import is_loop_pragma

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
BARE_HEADER = "# from tvm.script import tirx as T\n"

_LOOP_FN = {"parallel": "T.parallel", "vectorized": "T.vectorized", "unrolled": "T.unroll",
            "serial": "T.serial"}


def print_module(mod: IRModule) -> str:
    """The whole module as TVMScript text."""
    names = sorted(mod.functions)
    if mod.name is None and len(names) == 1:
        return print_func(mod.functions[names[0]], names[0])
    class_name = mod.name or "Module"  # a bare function that grew kernels is a module now
    printers = [FunctionPrinter(mod.functions[name], name, class_name) for name in names]
    body = [p.text(1) for p in printers]
    typevars = sorted({v for p in printers for v in p.typevar_names})
    return (_typevar_header(typevars) + HEADER + "\n" + _typevar_lines(typevars)
            + f"@I.ir_module\nclass {class_name}:\n" + "\n".join(body))


def print_func(func: PrimFunc, name: str = "main") -> str:
    printer = FunctionPrinter(func, name, None)
    text = printer.text(0)
    typevars = sorted(printer.typevar_names)
    return _typevar_header(typevars) + BARE_HEADER + "\n" + _typevar_lines(typevars) + text


def _typevar_header(names: list[str]) -> str:
    return "# from typing import TypeVar\n" if names else ""


def _typevar_lines(names: list[str]) -> str:
    """TVM's spelling of int64 size variables: ``n = TypeVar("n")`` before the decorator."""
    return "".join(f"{n} = TypeVar({quote(n)})\n" for n in names)


class FunctionPrinter(ExprPrinter, BlockPrinter):
    def __init__(self, func: PrimFunc, name: str, module_name: str | None):
        self.func = func
        self.name = name
        self.module_name = module_name
        self.names: dict[int, str] = {}
        self.used: dict[str, int] = {}
        self.frames: list[list[str]] = []
        self.data_owner: dict[int, Buffer] = {}
        self.data_latest: dict[int, Buffer] = {}
        self.scalars = scalar_buffers(func.body, func.s_tir) | scalar_params(func)
        self.lines: list[str] = []
        self.introduced: set[int] = set()
        self.free_ids: set[int] = set()
        self.pending_params: set[int] = set()
        self.typevars: set[int] = set()
        self.typevar_names: list[str] = []
        self.loops: dict[int, For] = {}
        # thread variables launched more than once (or used outside their launch): declared
        # with T.env_thread before the innermost statement holding all their uses
        self.env_sites = _env_thread_sites(func.body)
        self.env_defined: set[int] = set()

    # -- naming ------------------------------------------------------------------------
    def define(self, obj: object, base: str) -> str:
        key = id(obj)
        if key in self.names:
            return self.names[key]
        base = base if base.isidentifier() else "v"
        candidate, n = base, 0
        while candidate in self.used or candidate in ("T", "I", self.module_name, "range"):
            n += 1
            candidate = f"{base}_{n}"
        self.used[candidate] = 1
        if self.frames:
            self.frames[-1].append(candidate)
        self.names[key] = candidate
        return candidate

    @contextmanager
    def name_scope(self):
        """Names defined inside are free again after it."""
        self.frames.append([])
        try:
            yield
        finally:
            for name in self.frames.pop():
                self.used.pop(name, None)

    def block(self, s: Stmt, level: int, loop_var: Var | None = None) -> None:
        """Print a nested block in a scope of its own."""
        with self.name_scope():
            if loop_var is not None:
                self.define(loop_var, loop_var.name)
            self.stmt(s, level)

    def var(self, v: Var) -> str:
        if id(v) in self.names:
            return self.names[id(v)]
        owner = self.data_latest.get(id(v)) or self.data_owner.get(id(v))
        if owner is not None:
            return f"{self.buffer_name(owner)}.data"
        return self.define(v, v.name)

    def buffer_name(self, b: Buffer) -> str:
        return self.define(b, b.name)

    # -- function ---------------------------------------------------------------------
    def text(self, level: int) -> str:
        f = self.func
        ind = "    " * level
        flags = [k for k, on in (("private", f.private), ("s_tir", f.s_tir)) if on]
        out = [ind + (f"@T.prim_func({', '.join(k + '=True' for k in flags)})" if flags else "@T.prim_func")]
        for p in f.params:
            self.define(p, p.name)
        params = []
        body_decls: list[str] = []
        free = free_vars(f) + _pragma_nodes(f)
        self.free_ids = {id(v) for v in free}
        self.pending_params = {id(p) for p in f.params if f.buffer_of(p) is None}
        self.typevars = {id(v) for v in free if str(v.dtype) == "int64" and v.ptr is None
                         and any(_mentions(buf, v) for _, buf in f.buffer_map)}
        for v in free:
            if id(v) in self.typevars:
                self.typevar_names.append(self.define(v, v.name))
        for p in f.params:
            buf = f.buffer_of(p)
            if buf is None:
                self.pending_params.discard(id(p))
                params.append(f"{self.names[id(p)]}: {self.annotation(p)}")
            elif buf.name == p.name:
                self.names[id(buf)] = self.names[id(p)]
                self.data_owner[id(buf.data)] = buf
                params.append(f"{self.names[id(p)]}: {self.buffer_ctor('T.Buffer', buf, free)}")
            else:
                params.append(f"{self.names[id(p)]}: T.handle")
        ret = f" -> {self.dtype_ann(f.ret_type)}" if f.ret_type is not None and not f.ret_type.is_void else ""
        out.append(f"{ind}def {self.name}({', '.join(params)}){ret}:")
        inner = ind + "    "
        matched = _match_offsets(f.body)
        for v in free:
            if id(v) in self.typevars or id(v) in matched:
                continue
            if id(v) not in self.introduced and id(v) not in self.names:
                body_decls.append(f"{inner}{self.define(v, v.name)} = {self.annotation(v)}()"
                                  if v.ptr is None else
                                  f"{inner}{self.define(v, v.name)} = {self.annotation(v)}")
            elif id(v) in self.introduced:
                body_decls.append(f"{inner}{self.names[id(v)]} = {self.annotation(v)}()")
        for v in _let_vars(f.body):  # T.Let(body, where={v: value}) needs v declared first
            body_decls.append(f"{inner}{self.define(v, v.name)} = {self.annotation(v)}()")
        for p in f.params:
            buf = f.buffer_of(p)
            if buf is not None and buf.name != p.name:
                self.data_owner[id(buf.data)] = buf
                args = self.buffer_args(buf, free)
                body_decls.append(f"{inner}{self.buffer_name(buf)} = T.match_buffer({self.names[id(p)]}, {args})")
        attrs = {k: v for k, v in f.attrs.items() if not (k == GLOBAL_SYMBOL and v == self.name)}
        if attrs:
            body_decls.append(f"{inner}T.func_attr({py_value(attrs, self)})")
        self.lines = list(body_decls)
        root = implicit_root(f.body)
        if root is not None:
            self.print_root(root, level + 1)
        else:
            self.stmt(f.body, level + 1)
        if len(self.lines) == len(body_decls):
            self.lines.append(f"{inner}T.evaluate(0)")
        return "\n".join(out + self.lines) + "\n"

    def annotation(self, v: Var) -> str:
        if v.ptr is not None:
            dtype = "" if v.ptr.dtype is None else quote(str(v.ptr.dtype))
            scope = "" if v.ptr.scope == "global" else f", {quote(v.ptr.scope)}"
            return f"T.handle({dtype}{scope})"
        return self.dtype_ann(v.dtype)

    @staticmethod
    def dtype_ann(dtype) -> str:
        return f"T.{dtype}"

    def shape_item(self, e: PrimExpr, free: list[Var]) -> str:
        """A shape entry; a variable not yet defined at this point is written as its
        name in quotes, which defines it (TVM's form)."""
        if isinstance(e, Var):
            if id(e) in self.pending_params:
                self.pending_params.discard(id(e))  # the quoted name defines it
                return quote(self.names[id(e)])
            if id(e) in self.free_ids and id(e) not in self.names:
                self.introduced.add(id(e))
                self.define(e, e.name)
                return quote(self.names[id(e)])
            return self.expr(e)
        # An expression over such variables is written whole in quotes (``("n * 8",)``),
        # which defines them, as TVM prints it.
        undefined = [v for v in walk(e) if isinstance(v, Var) and (
            id(v) in self.pending_params or (id(v) in self.free_ids and id(v) not in self.names))]
        if not undefined:
            return self.expr(e)
        for v in undefined:
            if id(v) in self.pending_params:
                self.pending_params.discard(id(v))
            else:
                self.introduced.add(id(v))
                self.define(v, v.name)
        return quote(self.expr(e))

    def buffer_args(self, b: Buffer, free: list[Var], scope_kw: bool = True, data: bool = False,
                    omit_float32: bool = False, data_from: Buffer | None = None) -> str:
        """The arguments of a buffer declaration; allocations leave out the default
        dtype float32 as TVM does (``T.alloc_buffer((16,))``)."""
        shape = ", ".join(self.shape_item(s, free) for s in b.shape)
        if len(b.shape) == 1:
            shape += ","
        args = [f"({shape})"]
        if not (omit_float32 and str(b.dtype) == "float32"):
            args.append(quote(str(b.dtype)))
        if data:
            owner = self.data_owner.get(id(b.data))
            if data_from is not None and data_from.data is b.data and id(data_from) in self.names:
                owner = data_from  # the text named this buffer's pointer (TVM keeps which)
            args.append(f"data={self.buffer_name(owner)}.data" if owner is not None and owner is not b
                        else f"data={self.var(b.data)}")
        if b.strides:
            strides = ", ".join(self.shape_item(s, free) for s in b.strides)
            args.append(f"strides=({strides}{',' if len(b.strides) == 1 else ''})")
        offset_factor = b.offset_factor
        if self.implicit_offset(b):
            # the offset factor alone declares the offset a fresh variable: later uses
            # read it as X.elem_offset (TVM prints it so)
            self.names[id(b.elem_offset)] = f"{self.names[id(b)]}.elem_offset"
            offset_factor = max(offset_factor, 1)
        elif b.elem_offset is not None:
            args.append(f"elem_offset={self.shape_item(b.elem_offset, free)}")
        if scope_kw and b.scope != "global":
            args.append(f"scope={quote(b.scope)}")
        if b.align:
            args.append(f"align={b.align}")
        if offset_factor:
            args.append(f"offset_factor={offset_factor}")
        if b.layout_none:
            args.append("layout=None")
        return ", ".join(args)

    def implicit_offset(self, b: Buffer) -> bool:
        """Is ``b``'s offset a variable this declaration defines and nothing else of it
        mentions (its shape, strides), which the text leaves implicit?"""
        eo = b.elem_offset
        if not isinstance(eo, Var) or id(eo) in self.names or id(b) not in self.names:
            return False
        if id(eo) in self.pending_params or eo.ptr is not None:
            return False
        return not any(v is eo for e in (*b.shape, *b.strides) for v in walk(e))

    def annotations_kw(self, annotations: tuple) -> str:
        return f", annotations={py_value(dict(annotations), self)}" if annotations else ""

    def buffer_ctor(self, ctor: str, b: Buffer, free: list[Var]) -> str:
        return f"{ctor}({self.buffer_args(b, free)})"

    # -- statements ----------------------------------------------------------------------
    def emit(self, level: int, text: str) -> None:
        self.lines.append("    " * level + text)

    def stmt(self, s: Stmt, level: int, concise: bool = True) -> None:
        """Print ``s`` at ``level``. ``concise``: ``s`` is the whole body of its frame in
        TVM's terms, so an attribute over it prints as a bare ``T.attr(...)`` line followed
        by its body, as TVM's printer does (its ConciseScoping); elsewhere ``with``."""
        # Flat scoped statements continue at the same level: iterate, don't recurse.
        while True:
            self.env_threads(s, level)
            if isinstance(s, SeqStmt):
                if not s.stmts:
                    return
                for child in s.stmts[:-1]:
                    self.scoped_not_last(child, level)
                s, concise = s.stmts[-1], False
                continue
            if isinstance(s, AttrStmt) and concise and not (
                    s.key == THREAD_EXTENT and isinstance(s.node, IterVar)):
                self.emit(level, self.attr_call(s))
                s = s.body
                continue
            nxt = self.flat(s, level)
            if nxt is None:
                return
            # A thread launch opens a frame in TVM; lets and allocations do not.
            concise = isinstance(s, AttrStmt)
            s = nxt

    def scoped_not_last(self, s: Stmt, level: int) -> None:
        """A statement followed by siblings. Scoped statements take their ``with`` form
        here, so their scope does not swallow the siblings when the text is read back."""
        self.env_threads(s, level)
        if isinstance(s, SeqStmt):
            self.stmt(s, level, concise=False)
        elif isinstance(s, LetStmt):
            name = self.define(s.var, s.var.name)
            decl = self.annotation(s.var) if s.var.ptr is not None else f"{self.dtype_ann(s.var.dtype)}()"
            self.emit(level, f"{name} = {decl}")
            self.emit(level, f"with T.LetStmt({self.expr(s.value)}, var={name}):")
            self.block(s.body, level + 1)
        elif (isinstance(s, AttrStmt) and s.key == THREAD_EXTENT and isinstance(s.node, IterVar)
              and id(s.node.var) in self.env_defined):
            self.emit(level, f"with T.launch_thread({self.var(s.node.var)}, {self.expr(s.value)}):")
            self.block(s.body, level + 1)
        elif isinstance(s, AttrStmt) and s.key == THREAD_EXTENT and isinstance(s.node, IterVar):
            header = len(self.lines)
            self.emit(level, "")
            self.frames.append([])
            name = self.define(s.node.var, s.node.var.name)
            self.lines[header] = ("    " * level + f"with T.launch_thread({quote(s.node.thread_tag)}, "
                                  f"{self.expr(s.value)}) as {name}:")
            self.frames.pop()
            self.block(s.body, level + 1, s.node.var)
        elif isinstance(s, (AllocBuffer, DeclBuffer)) and id(s.buffer) not in self.scalars:
            b = s.buffer
            ctor = "T.alloc_buffer" if isinstance(s, AllocBuffer) else "T.decl_buffer"
            args = self.buffer_args(b, [], data=isinstance(s, DeclBuffer),
                                    data_from=getattr(s, "data_from", None))
            if isinstance(s, AllocBuffer):
                args += self.annotations_kw(s.annotations)
            self.frames.append([])
            name = self.buffer_name(b)
            self.frames.pop()
            self.emit(level, f"with {ctor}({args}) as {name}:")
            self.data_owner.setdefault(id(b.data), b)
            self.block(s.body, level + 1)
        elif isinstance(s, AssertStmt):
            parts = ", ".join(quote(p) for p in s.message)
            self.emit(level, f"with T.Assert({self.expr(s.condition)}, ({quote(s.kind)}, [{parts}])):")
            self.block(s.body, level + 1)
        else:
            self.stmt(s, level, concise=False)

    def flat(self, s: Stmt, level: int) -> Stmt | None:
        """Print ``s``; return the body still to print at the same level, if any."""
        if isinstance(s, LetStmt):
            name = self.define(s.var, s.var.name)
            ann = self.annotation(s.var) if s.var.ptr is not None else self.dtype_ann(s.var.dtype)
            ann = f"T.let[{ann}]" if s.form == "let" else ann
            self.emit(level, f"{name}: {ann} = {self.expr(s.value)}")
            return s.body
        if isinstance(s, AllocBuffer):
            b = s.buffer
            name = self.buffer_name(b)
            self.data_owner.setdefault(id(b.data), b)
            if id(b) in self.scalars:
                first = _first(s.body)
                if isinstance(first, BufferStore) and first.buffer is b:
                    self.emit(level, f"{name}: {self.dtype_ann(b.dtype)} = {self.expr(first.value)}")
                    return _rest(s.body)
                self.emit(level, f"{name}: {self.dtype_ann(b.dtype)}")
                return s.body
            self.emit(level, f"{name} = T.alloc_buffer({self.buffer_args(b, [], omit_float32=True)}"
                             f"{self.annotations_kw(s.annotations)})")
            return s.body
        if isinstance(s, DeclBuffer):
            b = s.buffer
            base = s.view_of
            args = self.view_args(b, base) if base is not None and id(base) in self.names else None
            if args is not None:
                self.emit(level, f"{self.buffer_name(b)} = {self.buffer_name(base)}.view({args})")
            else:
                self.emit(level, f"{self.buffer_name(b)} = T.decl_buffer({self.buffer_args(b, [], data=True, data_from=s.data_from)})")
                # Later uses of the pointer name the newest declaration, as TVM prints them.
                self.data_owner.setdefault(id(b.data), b)
                self.data_latest[id(b.data)] = b
            return s.body
        if isinstance(s, AttrStmt):
            if (s.key == THREAD_EXTENT and isinstance(s.node, IterVar)
                    and id(s.node.var) in self.env_defined):
                self.emit(level, f"T.launch_thread({self.var(s.node.var)}, {self.expr(s.value)})")
                return s.body
            if s.key == THREAD_EXTENT and isinstance(s.node, IterVar):
                name = self.define(s.node.var, s.node.var.name)
                self.emit(level, f"{name} = T.launch_thread({quote(s.node.thread_tag)}, {self.expr(s.value)})")
                return s.body
            self.emit(level, f"with {self.attr_call(s)}:")
            self.block(s.body, level + 1)
            return None
        if isinstance(s, AssertStmt):
            parts = ", ".join(quote(p) for p in s.message)
            self.emit(level, f"assert {self.expr(s.condition)}, ({quote(s.kind)}, [{parts}])")
            return s.body
        self.simple(s, level)
        return None

    def view_args(self, b: Buffer, base: Buffer) -> str | None:
        """The arguments of ``base.view(...)`` that declare ``b`` (its shape, or its dtype
        when that differs), or None when ``b`` is not such a view of ``base`` (it is then
        printed as a declaration)."""
        if base.data is not b.data or b.strides or base.strides:
            return None
        if b.dtype == base.dtype:
            if not structural_equal(b.elem_offset, base.elem_offset):
                return None
            return ", ".join(self.expr(d) for d in b.shape)
        found = dtype_view_of(base, b.dtype)
        if found is not None and structural_equal(found, (b.shape, b.elem_offset)):
            return quote(str(b.dtype))
        return None

    def env_threads(self, s: Stmt, level: int) -> None:
        """``bx = T.env_thread("blockIdx.x")`` for the thread variables whose uses all lie
        in ``s`` but not in one launch of theirs (TVM's printer does the same); their
        launches print as ``T.launch_thread(bx, n)``."""
        for iv in self.env_sites.pop(id(s), ()):
            self.emit(level, f"{self.define(iv.var, iv.var.name)} = T.env_thread({quote(iv.thread_tag)})")
            self.env_defined.add(id(iv.var))

    def attr_call(self, s: AttrStmt) -> str:
        if s.node is None:
            return f"T.attr({{{quote(s.key)}: {self.attr_value(s.value)}}})"
        return f"T.attr({self.attr_node(s.node)}, {quote(s.key)}, {self.expr(s.value)})"

    def attr_value(self, value: PrimExpr) -> str:
        """A value of the dict form of ``T.attr``: plain Python literals stay plain."""
        if isinstance(value, IntImm) and str(value.dtype) == "int32":
            return str(value.value)
        if isinstance(value, StringImm):
            return quote(value.value)
        return self.expr(value)

    def attr_node(self, node: object) -> str:
        if isinstance(node, Target):
            return py_value(node)
        if isinstance(node, Buffer):
            return self.buffer_name(node)
        if isinstance(node, IterVar):
            return self.var(node.var)
        if isinstance(node, PrimExpr):
            return self.expr(node)
        if isinstance(node, CommReducer):
            return self.reducer(node)
        return py_value(node, self)

    def reducer(self, r: CommReducer) -> str:
        """``T.comm_reducer(lambda x0, y0: x0 + y0, [T.float32(0.0)])``, as TVM prints it."""
        with self.name_scope():
            params = ", ".join(self.define(v, v.name) for v in (*r.lhs, *r.rhs))
            body = [self.expr(e) for e in r.result]
        result = body[0] if len(body) == 1 else f"({', '.join(body)})"
        ids = ", ".join(self.expr(e) for e in r.identity)
        return f"T.comm_reducer(lambda {params}: {result}, [{ids}])"

    def simple(self, s: Stmt, level: int) -> None:
        if isinstance(s, BufferStore):
            if id(s.buffer) in self.scalars:
                self.emit(level, f"{self.buffer_name(s.buffer)} = {self.expr(s.value)}")
            else:
                self.emit(level, f"{self.load_text(s.buffer, s.indices, True)} = {self.expr(s.value)}")
        elif isinstance(s, For):
            self.print_for(s, level)
        elif isinstance(s, SBlockRealize):
            self.print_realize(s, level)
        elif isinstance(s, While):
            self.emit(level, f"while {self.expr(s.condition)}:")
            self.block(s.body, level + 1)
        elif isinstance(s, IfThenElse):
            self.emit(level, f"if {self.expr(s.condition)}:")
            self.block(s.then_case, level + 1)
            if s.else_case is not None:
                self.emit(level, "else:")
                self.block(s.else_case, level + 1)
        elif isinstance(s, Evaluate):
            if isinstance(s.value, Call):
                self.emit(level, self.expr(s.value))
            else:
                self.emit(level, f"T.evaluate({self.expr(s.value)})")
        elif isinstance(s, Return):
            self.emit(level, f"return {self.expr(s.value)}")
        elif isinstance(s, Break):
            self.emit(level, "T.break_loop()")
        elif isinstance(s, Continue):
            self.emit(level, "T.continue_loop()")
        else:
            raise TypeError(f"cannot print statement {type(s).__name__}")

    def print_for(self, s: For, level: int) -> None:
        grid = _grid(s)
        header = len(self.lines)
        self.emit(level, "")
        with self.name_scope():
            if len(grid) > 1:
                names = [self.define(loop.loop_var, loop.loop_var.name) for loop in grid]
                extents = ", ".join(self.expr(loop.extent) for loop in grid)
                iter_text = f"T.grid({extents})"
                for loop in grid:
                    self.loops[id(loop.loop_var)] = loop
                self.stmt(grid[-1].body, level + 1)
            else:
                self.loops[id(s.loop_var)] = s
                iter_text = self.loop_iter(s)
                names = [self.define(s.loop_var, s.loop_var.name)]
                self.stmt(s.body, level + 1)
        self.lines[header] = "    " * level + f"for {', '.join(names)} in {iter_text}:"

    def loop_iter(self, s: For) -> str:
        zero = isinstance(s.min, IntImm) and s.min.value == 0
        if zero and s.step is None:
            bounds = self.expr(s.extent)
        else:
            bounds = f"{self.expr(s.min)}, {self.expr(plus(s.min, s.extent))}"
            if s.step is not None:
                bounds += f", {self.expr(s.step)}"
        extra = ""
        if s.annotations:
            extra = f", annotations={py_value(dict(s.annotations), self)}"
        if s.kind == "thread_binding":
            return f"T.thread_binding({bounds}, thread={quote(s.thread_tag or '')}{extra})"
        if s.kind == "serial" and not extra:
            return f"range({bounds})"
        return f"{_LOOP_FN[s.kind]}({bounds}{extra})"

    # -- expressions ---------------------------------------------------------------------
def _grid(loop: For) -> list[For]:
    """Directly nested serial loops from 0 that TVM prints as one ``T.grid``."""
    out: list[For] = []
    node: Stmt = loop
    while isinstance(node, For):
        if (node.kind != "serial" or not (isinstance(node.min, IntImm) and node.min.value == 0)
                or node.annotations or node.step is not None
                or (out and uses_any(node.extent, {id(x.loop_var) for x in out}))):
            break
        out.append(node)
        node = node.body
    return out


def _env_thread_sites(body: Stmt) -> dict[int, list[IterVar]]:
    """For each thread variable not used within a single launch of its own (launched
    twice, or used outside), the innermost statement holding its launches and uses:
    ``id(statement) -> [IterVar, ...]``."""

    class Uses(Visitor):
        def __init__(self) -> None:
            self.path: list[Stmt] = []
            self.launches: dict[int, list[tuple]] = {}
            self.axes: dict[int, IterVar] = {}
            self.uses: dict[int, list[tuple]] = {}

        def enter(self, node) -> None:
            if isinstance(node, Stmt):
                self.path.append(node)
            if (isinstance(node, AttrStmt) and node.key == THREAD_EXTENT
                    and isinstance(node.node, IterVar)):
                key = id(node.node.var)
                self.launches.setdefault(key, []).append(tuple(self.path))
                self.axes.setdefault(key, node.node)
            elif isinstance(node, Var):
                self.uses.setdefault(id(node), []).append(tuple(self.path))

        def leave(self, node) -> None:
            if isinstance(node, Stmt):
                self.path.pop()

    u = Uses()
    u.visit(body)
    sites: dict[int, list[IterVar]] = {}
    for key, launches in u.launches.items():
        paths = launches + u.uses.get(key, [])
        if len(launches) == 1 and all(_under(p, launches[0]) for p in paths):
            continue
        common = paths[0]
        for p in paths[1:]:
            n = 0
            while n < min(len(common), len(p)) and common[n] is p[n]:
                n += 1
            common = common[:n]
        if common:
            sites.setdefault(id(common[-1]), []).append(u.axes[key])
    return sites


def _pragma_nodes(f: PrimFunc) -> list[Var]:
    """Variables named as the node of a loop pragma (``T.attr(i, "pragma_*", v)``) and not
    defined where it stands: declared first (``i = T.int32()``), as TVM prints them. The
    loop a pragma wraps defines its variable only inside, so a node that is that loop's
    variable is declared too (TVM reads it back as a variable of its own, as it does
    its own text)."""
    params = {id(p) for p in f.params}
    bound: set[int] = set()
    for node in walk(f.body):
        if isinstance(node, For):
            bound.add(id(node.loop_var))
        elif isinstance(node, (LetStmt, Let)):
            bound.add(id(node.var))
        elif isinstance(node, AttrStmt) and isinstance(node.node, IterVar):
            bound.add(id(node.node.var))
    out: dict[int, Var] = {}
    for node in walk(f.body):
        if isinstance(node, AttrStmt) and is_loop_pragma(node) and id(node.node) not in params:
            inner = node.body
            while isinstance(inner, AttrStmt) and is_loop_pragma(inner):
                inner = inner.body
            wraps_own = isinstance(inner, For) and inner.loop_var is node.node
            if id(node.node) not in bound or wraps_own:
                out.setdefault(id(node.node), node.node)
    return list(out.values())


def _match_offsets(body: Stmt) -> set[int]:
    """Offset variables that a block's T.match_buffer declares by its offset factor alone
    (printed implicit there, read as ``sub.elem_offset``), not named by another buffer."""
    offsets: dict[int, int] = {}
    other: set[int] = set()
    for node in walk(body):
        if not isinstance(node, SBlock):
            continue
        for m in node.match_buffers:
            b = m.buffer
            if isinstance(b.elem_offset, Var):
                offsets[id(b.elem_offset)] = offsets.get(id(b.elem_offset), 0) + 1
            other.update(id(v) for e in (*b.shape, *b.strides) for v in walk(e))
        for b in node.alloc_buffers:
            other.update(id(v) for e in (*b.shape, *b.strides, *([b.elem_offset] if b.elem_offset is not None else []))
                         for v in walk(e))
    return {k for k, n in offsets.items() if n == 1 and k not in other}


def _under(path: tuple, prefix: tuple) -> bool:
    return len(path) >= len(prefix) and all(a is b for a, b in zip(path, prefix))


def _let_vars(body: Stmt) -> list[Var]:
    """The variables expression-level ``Let`` nodes bind, in order of appearance."""
    out: dict[int, Var] = {}
    for node in walk(body):
        if isinstance(node, Let):
            out.setdefault(id(node.var), node.var)
    return list(out.values())


def _mentions(buf: Buffer, v: Var) -> bool:
    return any(e is v for e in (*buf.shape, *buf.strides, buf.elem_offset))


def _first(s: Stmt) -> Stmt:
    return s.stmts[0] if isinstance(s, SeqStmt) and s.stmts else s


def _rest(s: Stmt) -> Stmt | None:
    if isinstance(s, SeqStmt):
        return SeqStmt(s.stmts[1:]) if len(s.stmts) > 1 else None
    return None
