"""Phase 5, the host ABI: public host functions become tvm-ffi packed functions
(MakePackedAPI) or plain C functions (MakeCAPI, ``--abi c``). The layout of tvm-ffi's
structures both read (and the host code generator too) is ``tirc.ir.ffi_abi``."""
