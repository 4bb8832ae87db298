"""Code generation: one TIR -> LLVM IR lowering (``llvm_lower``, ``llvm_expr``,
``llvm_intrin``) shared by every LLVM-based backend through a target context
(``llvm_context``), the host CPU backend (``cpu``), and the registry of backends keyed
by target kind (``registry``)."""
