"""Phase 1, prepare: check the module as written (Verify) and give every function its target (BindTarget)."""
