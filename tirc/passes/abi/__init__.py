"""Phase 5, the host ABI: public host functions become tvm-ffi packed functions
(MakePackedAPI) or plain C functions (MakeCAPI, ``--abi c``); ``packed_abi`` holds the
layout of tvm-ffi's structures both read."""
