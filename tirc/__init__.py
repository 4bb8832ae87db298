"""tirc: a compiler driver for TIR, Apache TVM's tensor-level IR.

The Python API, ``tirc.compile``, ``tirc.lower`` and ``tirc.CompileError``
(``tirc.api``), is imported on first use: ``import tirc`` itself stays cheap."""

__version__ = "0.1.0"
__all__ = ["CompileError", "Compiled", "__version__", "compile", "lower"]

_API = {"compile": "tirc.api", "lower": "tirc.api", "Compiled": "tirc.api",
        "CompileError": "tirc.diagnostics"}


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'tirc' has no attribute '{name}'")
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
