"""Phase 7, device code: what TVM runs on each kernel once the host/device split is done
(its finalize-device passes), so that the device code generator gets only what it
lowers directly (warp memory becomes registers and shuffles)."""
