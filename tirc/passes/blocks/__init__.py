"""Phase 2, block lowering: schedulable (block-level) TIR becomes loops, allocations and
ifs, in TVM 0.27's S-TIR order (CanonicalizeLoop ... LowerOpaqueBlock). A module with no
blocks passes through (the block-only passes are not even imported)."""
