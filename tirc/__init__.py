"""tirc: a compiler driver for TIR, Apache TVM's tensor-level IR."""

__version__ = "0.1.0"
