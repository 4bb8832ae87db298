"""Code generation: the registry of backends keyed by target kind
(:mod:`tirc.backends.registry`), one package per code generator — the TIR -> LLVM IR
lowering shared by every LLVM-based backend through a target context
(:mod:`tirc.backends.llvm`), the host CPU backend (:mod:`tirc.backends.cpu`), the C
source backend (:mod:`tirc.backends.c`) and the CUDA backend (:mod:`tirc.backends.cuda`)
— and what they share: the faults host code guards against
(:mod:`tirc.backends.host_faults`) and what a device backend returns
(:mod:`tirc.backends.outputs`)."""
