"""The Python API: ``tirc.compile`` and ``tirc.lower``.

    import numpy as np, tirc
    k = tirc.compile("samples/cpu_matmul.tir")       # or TVMScript text, or mod (.script())
    k["matmul"](A, B, C)                              # NumPy arrays, through DLPack
    k.manifest["kernels"], k.ptx, k.cubin             # what the build decided and made

``compile`` builds with :func:`tirc.build.stages.build` (the core ``tirc build`` runs),
keeps the outputs in memory as the build made them, and, to load the library with
tvm-ffi, links it in a private temporary directory that it removes: nothing is left
behind (the loaded library stays mapped); with ``load=False`` nothing is written. ``lower`` runs the pass pipeline as ``tirc lower`` does and returns the module
as text. A source is TVMScript text (a ``str`` holding a newline), a path (``os.PathLike``
or a ``str`` without a newline), or any object with a ``.script()`` method that returns
the text (a ``tvm.IRModule`` or ``PrimFunc``; TVM itself is never imported).

Every error in the input, the target strings included, raises :class:`CompileError`
with the diagnostics (``FILE:LINE:COL``); misuse of the API itself (an unknown ``abi``,
``device_format`` or pass name) raises ValueError or TypeError. Importing this module
imports nothing of the compiler: that happens on the first call.
"""
from __future__ import annotations

import os
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tirc.diagnostics import CompileError, Diagnostic, SourceFile, Span, load_source, render
from tirc.records import record

if TYPE_CHECKING:
    from tirc.ir.function import IRModule

__all__ = ["CompileError", "Compiled", "compile", "lower"]


@record(frozen=True, eq=False)
class Compiled:
    """What :func:`compile` gives: the loaded module and the facts of its build.

    ``module``: the ``tvm_ffi.Module`` (None with ``load=False``); ``compiled["f"]`` is
    its function ``f``. ``manifest``: ``NAME.json`` as a dict (public functions with
    their parameters, kernels with grid, block, dynamic shared memory and images).
    ``ptx`` (text) and ``cubin`` (bytes): the device images by arch (``"sm_80"``; a
    second target of the same arch is ``"sm_80.2"``, as the file names go); with
    ``device_format="cubin"`` the PTX each cubin came from is in ``ptx`` too.
    ``fatbin`` (bytes): with ``device_format="fatbin"``, each device target's fatbin by
    its archs (``"sm_80-sm_90"``; the PTX is in ``ptx`` too). ``opencl`` (text): the
    OpenCL C of each opencl target (``"opencl"``; ``"opencl.2"`` for a second target, as
    the files ``NAME.cl``, ``NAME.2.cl`` go). ``hsaco`` (bytes): the code object of each
    rocm target by its arch (``"gfx90a"``; ``"gfx90a.2"`` for a second target, whose file
    is ``NAME.2.hsaco``). ``warnings``: the build's
    warnings, rendered as the command line prints them. ``files``: every output by file name (``NAME.o``, ``NAME.h``, ``NAME.json``, the
    images, ``NAME.so``, what ``emit`` asked for), as bytes."""

    __module__ = "tirc"  # public as tirc.Compiled

    name: str
    module: Any
    manifest: dict
    files: dict[str, bytes] = field(repr=False)
    ptx: dict[str, str] = field(default_factory=dict, repr=False)
    cubin: dict[str, bytes] = field(default_factory=dict, repr=False)
    fatbin: dict[str, bytes] = field(default_factory=dict, repr=False)
    warnings: tuple[str, ...] = ()
    opencl: dict[str, str] = field(default_factory=dict, repr=False)
    hsaco: dict[str, bytes] = field(default_factory=dict, repr=False)

    def __getitem__(self, function: str):
        if self.module is None:
            raise TypeError(f"'{self.name}' was compiled with load=False: it has no module "
                            "to call")
        prefix = self.manifest.get("symbol_prefix", "")
        if prefix and self.manifest.get("abi") == "packed" and function in self.functions:
            function = prefix + function  # exported as __tvm_ffi_<prefix><function>
        return self.module[function]

    @property
    def functions(self) -> list[str]:
        """The public functions, in manifest order."""
        return [f["name"] for f in self.manifest.get("functions", [])]

    @property
    def kernels(self) -> list[dict]:
        """The manifest's kernels (name, grid, block, dynamic shared memory, images)."""
        return list(self.manifest.get("kernels", []))

    @property
    def header(self) -> str:
        """``NAME.h``: the declarations of the host object's functions."""
        return self.files[f"{self.name}.h"].decode()

    def __repr__(self) -> str:
        images = (sorted(self.ptx) + [f"{a} (cubin)" for a in sorted(self.cubin)]
                  + [f"{a} (fatbin)" for a in sorted(self.fatbin)]
                  + [f"{a} (OpenCL C)" for a in sorted(self.opencl)]
                  + [f"{a} (code object)" for a in sorted(self.hsaco)])
        return (f"Compiled({self.name!r}, functions={self.functions}"
                + (f", images={images}" if images else "") + ")")


def compile(source, target=None, host=None, abi: str = "packed", *,  # noqa: A001
            name: str | None = None, filename: str | None = None,
            device_format: str = "ptx", emit=(), load: bool = True,
            symbol_prefix: str = "", line_info: bool = False, debug: bool = False,
            pass_config=None, instrument_bound_checkers: bool = False,
            default_gpu_schedule: bool = False) -> Compiled:
    """Compile ``source`` and load it: a :class:`Compiled` with the ``tvm_ffi.Module``
    and the build's facts.

    ``target``/``host``: as ``tirc build --target/--host`` (strings or
    ``tirc.target.kinds.Target``); functions without a target get ``target``, default
    ``llvm``. ``abi``: ``"packed"`` (tvm-ffi functions, callable from Python) or
    ``"c"`` (plain C functions: nothing to call from Python, but the object, header
    and manifest are made). ``device_format``: ``"ptx"``, ``"cubin"`` (nvJitLink) or
    ``"fatbin"`` (nvFatbin: a cubin per arch and PTX for the newest, in one image).
    ``emit``: also keep intermediates in ``files`` (``"tir"``, ``"llvm"``, ``"ptx"``).
    ``load=False``: build the object and images only (no C compiler needed, any
    ``host`` triple), ``module`` is None. ``name``: the outputs' NAME (default: the
    file's stem, else the module's name, else its one function's); ``filename``: what diagnostics call a
    source given as text (default ``<string>``). ``symbol_prefix``: ``P`` put before
    every exported symbol, as ``tirc build --symbol-prefix`` (``compiled["f"]`` still
    finds ``f``, exported as ``Pf``); ValueError unless it starts a C identifier.
    ``line_info``: device code carries the ``.tir`` lines (``tirc build -lineinfo``);
    ``debug``: the host object has DWARF line tables (``tirc build -g``).
    ``pass_config``: TVM's pass options, a dict as ``tvm.transform.PassContext(config=)``
    takes it (``{"tirx.use_async_copy": True}``; ``tirc build --pass-config``).
    ``instrument_bound_checkers``: every buffer access of host code is checked when it
    runs, an out-of-bounds one raising ``RuntimeError`` naming the buffer (``tirc build
    --instrument-bound-checkers``, TVM's ``tir.instrument_bound_checkers``).
    ``default_gpu_schedule``: a GPU function without thread bindings gets TVM's default
    schedule (its loops bound to blocks and threads; ``--default-gpu-schedule``).

    Raises :class:`CompileError` for every error in the input or the targets."""
    src, name = _resolve(source, filename, name)
    try:
        return build_and_load(src, target, host, abi=abi, name=name,
                              device_format=device_format, emit=emit, load=load,
                              symbol_prefix=symbol_prefix, line_info=line_info, debug=debug,
                              pass_config=pass_config or (),
                              instrument_bound_checkers=instrument_bound_checkers,
                              default_gpu_schedule=default_gpu_schedule)
    except Diagnostic as d:
        raise CompileError.of(d, src if isinstance(src, SourceFile) else None) from None


def lower(source, target=None, host=None, abi: str = "packed", *,
          stop_after: str | None = None, passes=None, verify_each: bool = False,
          instruments=(), filename: str | None = None, symbol_prefix: str = "",
          pass_config=None, instrument_bound_checkers: bool = False,
          default_gpu_schedule: bool = False) -> str:
    """Run the pass pipeline on ``source`` and return the module as TVMScript text, as
    ``tirc lower`` prints it. ``stop_after``: the last pass to run; ``passes``: run
    exactly these passes (names, in order) on the module as written, nothing before
    them; ``verify_each``: verify the module after every pass; ``instruments``: more
    ``tirc.passes.pipeline.Instrument`` hooks (``PrintAfter``, ``TimePasses``);
    ``symbol_prefix``, ``pass_config``, ``instrument_bound_checkers``,
    ``default_gpu_schedule``: as :func:`compile`'s.

    Raises :class:`CompileError` for an error in the input or the targets, ValueError
    for an unknown pass name or ``abi``."""
    src, _ = _resolve(source, filename, None)
    return lower_source(src, target, host, abi, stop_after=stop_after, passes=passes,
                        verify_each=verify_each, instruments=instruments,
                        symbol_prefix=symbol_prefix, pass_config=pass_config or (),
                        instrument_bound_checkers=instrument_bound_checkers,
                        default_gpu_schedule=default_gpu_schedule)


# -- shared with the command line (tirc.driver, tirc.run) ----------------------------------
def lower_source(src: SourceFile | IRModule, target=None, host=None, abi: str = "packed", *,
                 stop_after: str | None = None, passes=None, verify_each: bool = False,
                 instruments=(), symbol_prefix: str = "", pass_config=(),
                 instrument_bound_checkers: bool = False,
                 default_gpu_schedule: bool = False) -> str:
    """:func:`lower` of a read source (the command line's ``tirc lower``)."""
    from tirc.build.options import check_symbol_prefix, parse_pass_config
    from tirc.passes.pipeline import PassContext, VerifyEach, pass_names, run_passes, run_pipeline

    names = pass_names(abi)  # ValueError for an unknown ABI
    check_symbol_prefix(symbol_prefix)
    if passes is not None and stop_after is not None:
        raise ValueError("passes= runs exactly the passes named; it does not take stop_after=")
    if stop_after is not None and stop_after not in names:
        raise ValueError(f"pass '{stop_after}' does not run with abi='{abi}'; valid: "
                         f"{', '.join(names)}")
    instruments = tuple(instruments) + ((VerifyEach(),) if verify_each else ())
    try:
        ctx = PassContext(_bind_target(target, host), abi, symbol_prefix,
                          instrument_bound_checkers=instrument_bound_checkers,
                          default_gpu_schedule=default_gpu_schedule,
                          config=parse_pass_config(pass_config))
        mod = _parse(src)
        if passes is not None:
            mod = run_passes(mod, ctx, [passes] if isinstance(passes, str) else list(passes),
                             instruments)
        else:
            mod = run_pipeline(mod, ctx, stop_after, instruments)
        from tirc.ir.printer import print_module
        return print_module(mod)
    except Diagnostic as d:
        raise CompileError.of(d, src if isinstance(src, SourceFile) else None) from None
    except RecursionError:
        raise CompileError.of(_too_deep(src), src if isinstance(src, SourceFile) else None) from None


def build_and_load(src: SourceFile | IRModule, target=None, host=None, *, abi: str = "packed",
                   name: str | None = None, device_format: str = "ptx", emit=(),
                   load: bool = True, out_dir: str | os.PathLike | None = None,
                   symbol_prefix: str = "", line_info: bool = False,
                   debug: bool = False, serial_threads: bool = False,
                   pass_config=(), instrument_bound_checkers: bool = False,
                   default_gpu_schedule: bool = False) -> Compiled:
    """Build ``src`` and load the library; raises Diagnostic for errors in the input.
    The outputs stay in memory as the build made them; they are written only where a
    file is needed: ``out_dir`` (``tirc run -o``) gets them all, and ``load`` links and
    loads ``NAME.so`` from a private temporary directory (None: removed before
    returning) when no ``out_dir`` is given. ``serial_threads``: device functions
    first become CPU functions whose thread-bound loops run serially
    (:func:`tirc.passes.lower.serialize_threads.serialize_threads`, a Diagnostic for
    kernels that need threads to run together), to check a device build on the CPU."""
    import contextlib
    import tempfile

    from tirc.build.options import build_options
    from tirc.build.stages import build

    opts = build_options(None, None, abi=abi, device_format=device_format, emit=emit,
                         symbol_prefix=symbol_prefix, line_info=line_info, debug=debug,
                         shared=load, pass_config=pass_config,
                         instrument_bound_checkers=instrument_bound_checkers,
                         default_gpu_schedule=default_gpu_schedule)  # ValueError for a bad option
    try:
        bind = _bind_target(target, host)
        mod = _parse(src)
        if serial_threads:
            from tirc.passes.lower.serialize_threads import serialize_threads
            mod = serialize_threads(mod)
        name = name or mod.name or (next(iter(mod.functions)) if len(mod.functions) == 1
                                    else "module")
        write = load or out_dir is not None
        with (contextlib.nullcontext(out_dir) if out_dir is not None or not write
              else tempfile.TemporaryDirectory(prefix="tirc-")) as where:
            opts = replace(opts, target=bind, out_dir=os.fspath(where or "."),
                           also_ptx=device_format in ("cubin", "fatbin"))
            result = build(mod, options=opts, name=name, filename=_filename(src, mod),
                           write=write)
            files = {p.name: data for p, data in result.outputs.items()}
            module = None
            if load:
                from tirc.runtime import load as load_library
                so = Path(where) / f"{name}.so"
                module = load_library(so)
                files[so.name] = so.read_bytes()  # linked by the C compiler, not the build
    except RecursionError:
        raise _too_deep(src) from None
    source = src if isinstance(src, SourceFile) else None
    labelled = result.labelled
    return Compiled(name, module, result.manifest, files,
                    {k: v.decode() for k, v in labelled.get("ptx", {}).items()},
                    dict(labelled.get("cubin", {})), dict(labelled.get("fatbin", {})),
                    warnings=tuple(render(w, source) for w in result.warnings),
                    opencl={k: v.decode() for k, v in labelled.get("cl", {}).items()},
                    hsaco=dict(labelled.get("hsaco", {})))


# -- helpers -------------------------------------------------------------------------------
def _resolve(source, filename: str | None, name: str | None) -> tuple[SourceFile | IRModule, str | None]:
    """The source as text (SourceFile) or a tirc IRModule, and the outputs' NAME."""
    from tirc.ir.function import IRModule

    if isinstance(source, (SourceFile, IRModule)):
        return source, name
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source):
        path = os.fspath(source)
        try:
            src = load_source(path)
        except Diagnostic as d:
            if not isinstance(source, os.PathLike) and not path.endswith(".tir") \
                    and not os.path.exists(path):
                d = Diagnostic(f"{d.message} (a string without a newline is read as a path; "
                               "TVMScript text has several lines)", d.span)
            raise CompileError.of(d) from None
        return src, name or Path(path).stem
    if isinstance(source, str):
        return SourceFile(filename or "<string>", source), name
    script = getattr(source, "script", None)
    if callable(script):
        text = script()
        if not isinstance(text, str):
            raise TypeError(f"{type(source).__name__}.script() returned "
                            f"{type(text).__name__}, not TVMScript text")
        return SourceFile(filename or f"<{type(source).__name__}>", text), name
    raise TypeError("source must be TVMScript text, a path, or an object with a .script() "
                    f"method (a tvm.IRModule), not {type(source).__name__}")


def _parse(src: SourceFile | IRModule) -> IRModule:
    if not isinstance(src, SourceFile):
        return src
    from tirc.frontend.parse import parse
    return parse(src.text, src.name)


def _filename(src: SourceFile | IRModule, mod: IRModule) -> str:
    if isinstance(src, SourceFile):
        return src.name
    return mod.span.file if mod.span is not None else "<input>"


def _bind_target(target, host):
    """The bind target; a bad target string is a Diagnostic (no place in the source)."""
    from tirc.build.options import bind_target_from
    from tirc.target.kinds import TargetError
    try:
        return bind_target_from(target, host)
    except TargetError as e:
        raise Diagnostic(str(e)) from None


def _too_deep(src: SourceFile | IRModule) -> Diagnostic:
    where = src.name if isinstance(src, SourceFile) else "<input>"
    return Diagnostic("input nested too deeply", Span(where, 1, 1))
