"""Phase 3, lowering: thread bindings, flat buffers, loop transformations, simplification,
memory planning, barriers and cross-thread reductions, on code still in one function per
entry (LowerThreadBindings ... MergeSharedMemoryAllocations)."""
