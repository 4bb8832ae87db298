"""libdevice (``libdevice.10.bc``), the CUDA math library as LLVM bitcode: where it is,
which functions it defines, and linking what a device module calls into it.

Linking (:func:`link`) makes the library's functions internal, drops those the module
does not call (GlobalDCE) and inlines the rest into their callers (all but three of
libdevice's functions are ``alwaysinline``) before the optimiser runs. So -O3 sees only
what the kernels use, and each kernel gets the library's code as written. Were a
function optimised once for all its callers and then inlined, a kernel's code would
depend on the other kernels of its module that call the same function (same meaning,
other instructions and registers), and a module compiled in chunks
(:mod:`tirc.backends.cuda.ptx_chunks`) would not be the module compiled whole.

Two ways to read the library, the same module after either:

* **whole**: parse the bitcode (about 75 ms) and link all of its 350 functions. One
  device module per process pays the parse once.
* **by the piece** (``pieces=True``): the first time in a process, the library is
  parsed and printed once and its text cut (:func:`cut_once`) into the part every link
  needs (types, globals, declarations, attribute groups, metadata) and one piece per
  function definition; each link then parses only the pieces of the functions the
  module declares and of what they call, a few milliseconds. The chunks of a module
  compiled side by side (``tirc build -j N``) link it this way, cut before the
  processes fork: a chunk per kernel would otherwise parse the whole library again per
  kernel. The cut takes about 0.25 s; a build with ``-j N`` starts it in a forked
  process before it reads its input (:func:`start_cut`), so that it is done on the
  core the serial parse leaves idle.

The functions are linked in the library's order either way, with the same attributes
(tests/backends/cuda/test_libdevice.py).
"""
from __future__ import annotations

import re
from functools import partial

from llvmlite import binding as llvm

from tirc.backends.forked import Started
from tirc.backends.llvm.context import init_llvm
from tirc.diagnostics import Diagnostic
from tirc.records import record

_FUNCTIONS: dict[str, frozenset[str]] = {}
_PIECES: dict[str, Pieces] = {}
_CUTTING: dict[str, Started] = {}  # cuts started in a forked process, not yet collected
_DEFINE = re.compile(r"^define [^@]*@([\w.$]+)\(", re.M)
_REFERENCE = re.compile(r"@([\w.$]+)")


def locate() -> str | None:
    """The path of ``libdevice.10.bc`` as ``cuda.pathfinder`` finds it (the PyPI wheels
    ``nvidia-nvvm``/``nvidia-cuda-nvcc``), or None."""
    try:
        from cuda.pathfinder import locate_bitcode_lib
    except ImportError:
        return None
    try:
        return locate_bitcode_lib("device").abs_path
    except Exception:  # BitcodeLibNotFoundError and friends: simply not installed
        return None


def functions(path: str) -> frozenset[str]:
    """The names of the functions the library at ``path`` defines (read once)."""
    if path not in _FUNCTIONS:
        _FUNCTIONS[path] = frozenset(fn.name for fn in _parse(path).functions
                                     if not fn.is_declaration)
    return _FUNCTIONS[path]


def link(parsed: llvm.ModuleRef, path: str, machine: llvm.TargetMachine,
         pieces: bool = False) -> None:
    """Link the library at ``path`` into ``parsed``, make its functions internal and drop
    those ``parsed`` does not call; ``pieces``: parse only the functions it calls and
    theirs (see the module's docstring)."""
    if pieces:
        called = {fn.name for fn in parsed.functions if fn.is_declaration}
        lib = llvm.parse_assembly(cut_once(path).text(called))
    else:
        lib = _parse(path)
    lib.triple, lib.data_layout = parsed.triple, parsed.data_layout
    parsed.link_in(lib)
    for fn in parsed.functions:
        if not fn.is_declaration and fn.name.startswith("__nv_"):
            fn.linkage = "internal"
    inline = llvm.create_new_module_pass_manager()
    inline.add_global_dead_code_eliminate_pass()
    inline.add_always_inliner_pass()
    inline.add_global_dead_code_eliminate_pass()
    inline.run(parsed, llvm.create_pass_builder(
        machine, llvm.create_pipeline_tuning_options(speed_level=0)))


@record(frozen=True)
class Pieces:
    """The library's text cut for :func:`link`: ``common`` (all but the function
    definitions), each definition by name in the library's order, and the functions
    each one refers to."""

    common: str
    definitions: dict[str, str]
    calls: dict[str, frozenset[str]]

    def text(self, wanted: set[str]) -> str:
        """The library with the definitions of ``wanted`` and of what they call."""
        keep: set[str] = set()
        todo = [n for n in wanted if n in self.definitions]
        while todo:
            name = todo.pop()
            if name not in keep:
                keep.add(name)
                todo.extend(self.calls[name] - keep)
        return self.common + "".join(text for name, text in self.definitions.items()
                                     if name in keep)


def cut_once(path: str) -> Pieces:
    """The library at ``path`` cut into :class:`Pieces`, once per process (a process
    forked afterwards inherits them); the cut :func:`start_cut` started, if it did."""
    if path not in _PIECES:
        cutting = _CUTTING.pop(path, None)
        _PIECES[path] = (cutting.results(None)[1] if cutting is not None
                         else _cut_file(path))
    return _PIECES[path]


def is_cut(path: str) -> bool:
    """Whether this process holds the library at ``path`` cut (:func:`cut_once`)."""
    return path in _PIECES


def start_cut(path: str) -> _Cutting | None:
    """Start cutting the library at ``path`` in a forked process, for :func:`cut_once`
    to collect; what it returns ends it (``kill()``) if it is never collected. None when
    it is cut or being cut already."""
    if path in _PIECES or path in _CUTTING:
        return None
    started = Started([partial(_cut_file, path)], "libdevice cut")
    _CUTTING[path] = started
    return _Cutting(path, started)


class _Cutting:
    """A cut started in a forked process (:func:`start_cut`)."""

    def __init__(self, path: str, started: Started):
        self.path, self.started = path, started

    def finish(self) -> None:
        """Wait for the cut and keep it (before processes are forked that link by the
        piece). A library that cannot be read is reported where a link needs it, as
        without the cut ahead."""
        if _CUTTING.get(self.path) is self.started:
            try:
                cut_once(self.path)
            except Diagnostic:
                pass

    def kill(self) -> None:
        if _CUTTING.get(self.path) is self.started:
            del _CUTTING[self.path]
            self.started.kill()


def _cut_file(path: str) -> Pieces:
    return cut(str(_parse(path)))


def cut(text: str) -> Pieces:
    """``text`` (a printed LLVM module) as its function definitions, each from its
    ``define`` line (and the ``; Function Attrs`` comment before it) through its closing
    brace, and the rest."""
    common: list[str] = []
    definitions: dict[str, str] = {}
    at = 0
    for m in _DEFINE.finditer(text):
        start = m.start()
        comment = text.rfind("\n; Function Attrs:", at, start)
        if comment >= 0 and text.count("\n", comment + 1, start) == 1:
            start = comment + 1
        end = text.index("\n}\n", m.end()) + 3
        common.append(text[at:start])
        definitions[m.group(1)] = text[start:end]
        at = end
    common.append(text[at:])
    calls = {name: frozenset(_REFERENCE.findall(body)) & (definitions.keys() - {name})
             for name, body in definitions.items()}
    return Pieces("".join(common), definitions, calls)


def _parse(path: str) -> llvm.ModuleRef:
    init_llvm()
    try:
        with open(path, "rb") as f:
            return llvm.parse_bitcode(f.read())
    except (OSError, RuntimeError) as e:
        raise Diagnostic(f"cannot read libdevice at {path}: {e}") from None
