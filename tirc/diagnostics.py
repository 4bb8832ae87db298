"""Source spans and user-facing diagnostics.

Every user mistake becomes a :class:`Diagnostic` carrying a :class:`Span`; rendering
(``FILE:LINE:COL: error: message``, the source line and a caret) lives here only.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
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
