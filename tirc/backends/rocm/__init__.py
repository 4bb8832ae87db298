"""AMD GPUs: TIR -> AMDGPU code objects through llvmlite and ld.lld, launched through HIP."""
