"""The TIR intermediate representation: dtypes, expressions, statements, functions."""
from tirc.ir.buffer import SCOPES, Buffer
from tirc.ir.dtype import BOOL, FLOAT32, HANDLE, INT32, INT64, DataType, parse_dtype
from tirc.ir.expr import (BINARY_OPS, BinOp, Broadcast, BufferLoad, Call, Cast, FloatImm,
                          GlobalVar, IntImm, Let, Not, PointerType, PrimExpr, Ramp, Select,
                          Shuffle, StringImm, Var, const)
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (FOR_KINDS, AllocBuffer, AssertStmt, AttrStmt, Break, BufferStore,
                          Continue, DeclBuffer, Evaluate, For, IfThenElse, IterVar, LetStmt,
                          Return, SeqStmt, Stmt, While, seq)

__all__ = [
    "SCOPES", "Buffer", "BOOL", "FLOAT32", "HANDLE", "INT32", "INT64", "DataType",
    "parse_dtype", "BINARY_OPS", "BinOp", "Broadcast", "BufferLoad", "Call", "Cast",
    "FloatImm", "GlobalVar", "IntImm", "Let", "Not", "PointerType", "PrimExpr", "Ramp",
    "Select", "Shuffle", "StringImm", "Var", "const", "IRModule", "PrimFunc", "FOR_KINDS",
    "AllocBuffer", "AssertStmt", "AttrStmt", "Break", "BufferStore", "Continue",
    "DeclBuffer", "Evaluate", "For", "IfThenElse", "IterVar", "LetStmt", "Return",
    "SeqStmt", "Stmt", "While", "seq",
]
