"""The CUDA backend: NVPTX device code, cubins (nvJitLink), fatbins (nvFatbin), the device stage, and the launches in host code."""
