"""Source spans and user-facing diagnostics.

Every user mistake becomes a :class:`Diagnostic` carrying a :class:`Span`; rendering
(``FILE:LINE:COL: error: message``, the source line and a caret) lives here only. The
Python API (``tirc.compile``, ``tirc.lower``) raises the public :class:`CompileError`,
which carries the diagnostics and renders them the same way.
"""
from __future__ import annotations

from contextlib import contextmanager

from tirc.records import record


@record(frozen=True, slots=True)
class Span:
    """A location in a source file; lines and columns count from 1."""

    file: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class Diagnostic(Exception):
    """A user error with a location. Raised by every stage, rendered by the driver."""

    def __init__(self, message: str, span: Span | None = None, *, severity: str = "error"):
        super().__init__(message)
        self.message = message
        self.span = span
        self.severity = severity

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        return f"{where}{self.severity}: {self.message}"


class InternalError(Exception):
    """A bug in tirc (not in the input), caught where it happened: ``where`` names the
    pass or stage (``"pass LoopPartition"``, ``"stage host-codegen"``); the driver
    reports it with exit status 3 and asks for a bug report."""

    def __init__(self, where: str, cause: BaseException):
        super().__init__(f"internal error in {where}: {type(cause).__name__}: {cause}")
        self.where, self.cause = where, cause


@contextmanager
def internal_errors(where: str):
    """Any exception but a Diagnostic (or a deep-nesting RecursionError, reported as such,
    or an InternalError already located) raised in the body becomes an InternalError at
    ``where``."""
    try:
        yield
    except (Diagnostic, InternalError, RecursionError, MemoryError):
        raise
    except Exception as e:
        raise InternalError(where, e) from e


class SourceFile:
    """The text of one input file, for rendering the line a diagnostic points at."""

    def __init__(self, name: str, text: str):
        self.name = name
        self.text = text
        self._lines: list[str] | None = None

    def line(self, number: int) -> str | None:
        if self._lines is None:
            self._lines = self.text.splitlines()
        if 1 <= number <= len(self._lines):
            return self._lines[number - 1]
        return None


# The largest input tirc reads (bytes): a TVM-printed module of thousands of kernels is a
# few MiB; past this, a file (or /dev/zero) is refused before it fills memory.
MAX_SOURCE_BYTES = 64 << 20


def too_large(name: str) -> Diagnostic:
    return Diagnostic(f"the input is larger than {MAX_SOURCE_BYTES >> 20} MiB, the largest "
                      "tirc reads", Span(name, 1, 1))


def read_source(path) -> SourceFile:
    """The text of the file ``path``: OSError as ``open`` raises it for a file that
    cannot be read, a Diagnostic at the first bad byte for text that is not UTF-8 and
    for a file larger than :data:`MAX_SOURCE_BYTES`."""
    name = str(path)
    with open(path, "rb") as f:
        data = f.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise too_large(name)
    try:
        return SourceFile(name, data.decode("utf-8"))
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise Diagnostic("the file is not valid UTF-8 text", Span(name, line, col)) from None


def load_source(path) -> SourceFile:
    """:func:`read_source`, with a file that cannot be read as a Diagnostic too."""
    try:
        return read_source(path)
    except OSError as e:
        raise Diagnostic(f"cannot read the file: {e.strerror}", Span(str(path), 1, 1)) from None


class CompileError(Exception):
    """The public error of ``tirc.compile`` and ``tirc.lower``: the input does not
    compile. ``diagnostics`` lists what is wrong, each a :class:`Diagnostic` with its
    ``message`` and ``span`` (``file``, ``line``, ``col``; None where no place in the
    source is to blame); ``str(e)`` renders them as the command line does
    (``FILE:LINE:COL: error: message``, the source line and a caret)."""

    __module__ = "tirc"  # public as tirc.CompileError

    def __init__(self, diagnostics: list[Diagnostic], text: str | None = None):
        self.diagnostics = list(diagnostics)
        super().__init__(text if text is not None else "\n".join(map(str, self.diagnostics)))

    @classmethod
    def of(cls, diag: Diagnostic, source: SourceFile | None = None) -> CompileError:
        """The error for ``diag``, rendered against ``source``; the diagnostic keeps no
        traceback of tirc's internals."""
        diag.__traceback__ = diag.__context__ = diag.__cause__ = None
        return cls([diag], render(diag, source))

    def __reduce__(self):
        return (CompileError, (self.diagnostics, str(self)))


def render(diag: Diagnostic, source: SourceFile | None = None) -> str:
    """``FILE:LINE:COL: error: message`` followed by the source line and a caret."""
    out = [str(diag)]
    span = diag.span
    if span is not None and source is not None and span.file == source.name:
        text = source.line(span.line)
        if text is not None:
            text = text.expandtabs(1)
            out.append(f"  {text}")
            width = 1
            if span.end_line == span.line and span.end_col and span.end_col > span.col:
                width = span.end_col - span.col
            out.append("  " + " " * (span.col - 1) + "^" + "~" * (width - 1))
    return "\n".join(out)
