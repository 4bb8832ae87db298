"""The ``tirc`` command line. Thin: it parses flags, calls library functions, and turns
diagnostics into ``FILE:LINE:COL: error: ...`` on stderr with exit status 1 (2 for
command-line misuse)."""
from __future__ import annotations

import sys

import click

from tirc import __version__
from tirc.diagnostics import Diagnostic, SourceFile, render

EXIT_ERROR = 1


def _read(path: str) -> SourceFile:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise click.UsageError(f"cannot read '{path}': {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        from tirc.diagnostics import Span
        _fail(Diagnostic("the file is not valid UTF-8 text", Span(path, line, col)), None)
    return SourceFile(path, text)


def _fail(diag: Diagnostic, source: SourceFile | None) -> None:
    click.echo(render(diag, source), err=True)
    sys.exit(EXIT_ERROR)


def load_checked(path: str):
    """Parse and verify a file, or exit 1 with a diagnostic."""
    from tirc.parser import parse
    from tirc.passes.verify import verify

    source = _read(path)
    try:
        mod = parse(source.text, source.name)
        verify(mod)
    except Diagnostic as d:
        _fail(d, source)
    except RecursionError:
        from tirc.diagnostics import Span
        _fail(Diagnostic("input nested too deeply", Span(path, 1, 1)), source)
    return mod


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tirc")
def cli() -> None:
    """tirc: a compiler driver for TIR (TVMScript) modules."""


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def check(files: tuple[str, ...]) -> None:
    """Parse and verify FILES; silent on success."""
    for path in files:
        load_checked(path)


@cli.command("print")
@click.argument("file", type=click.Path(dir_okay=False))
def print_cmd(file: str) -> None:
    """Print FILE as canonical TVMScript."""
    from tirc.ir.printer import print_module

    mod = load_checked(file)
    click.echo(print_module(mod), nl=False)


EXIT_INTERNAL = 3


def main() -> None:
    try:
        cli.main(prog_name="tirc", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("tirc: interrupted", err=True)
        sys.exit(130)
    except Exception as e:  # a bug in tirc, not in the input: say so, without a traceback
        click.echo(f"tirc: internal compiler error: {type(e).__name__}: {e}\n"
                   "please report this with the input file", err=True)
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":
    main()
