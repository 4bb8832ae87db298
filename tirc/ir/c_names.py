"""C identifiers for what tirc exports: header names, C parameter names."""
from __future__ import annotations

import re

C_KEYWORDS = frozenset("""auto bool break case char const continue default do double else enum
extern float for goto if inline int long register restrict return short signed sizeof static
struct switch typedef union unsigned void volatile while class delete new operator private
protected public template this throw try namespace using virtual true false""".split())  # noqa: SIM905


def c_identifier(name: str) -> str:
    """``name`` as a C identifier: other characters become ``_``; never a leading digit."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return "_" + out if out[0].isdigit() else out


# The C ABI's (--abi c) thread-local message buffer: "Kind: message", truncated to fit.
LAST_ERROR_BYTES = 1024


def last_error_symbol(module_name: str, prefix: str = "") -> str:
    """The C ABI's accessor of the last error, ``const char* <prefix><NAME>_last_error(void)``."""
    return f"{prefix}{c_identifier(module_name)}_last_error"
