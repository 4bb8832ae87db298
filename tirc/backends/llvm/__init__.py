"""The LLVM lowering shared by the CPU and NVPTX backends: TIR -> LLVM IR through llvmlite."""
