"""Phase 4, host/device split: device regions become kernels with launches on the host
side (AnnotateDeviceRegions, SplitHostDevice, LowerDeviceKernelLaunch), then VerifyMemory."""
