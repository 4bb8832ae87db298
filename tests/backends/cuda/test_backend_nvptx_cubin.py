"""Every CUDA sample's PTX goes through nvJitLink for sm_80 and sm_90 (no GPU, no nvcc):
the cubins are NVIDIA ELF images. Skipped where nvJitLink is not installed."""
from __future__ import annotations

import struct

import pytest

from conftest import SAMPLES
from tirc.backends.cuda import cubin as nvptx_cubin
from tirc.build.stages import build

pytestmark = pytest.mark.skipif(not nvptx_cubin.available(), reason="nvJitLink is not installed")
CUDA_SAMPLES = [p for p in SAMPLES if p.name != "cpu_matmul.tir"]
EM_CUDA = 190


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("path", CUDA_SAMPLES, ids=[p.name for p in CUDA_SAMPLES])
def test_sample_assembles_to_a_cubin(path, arch, tmp_path):
    result = build(path.read_text(), f"cuda -arch={arch}", "llvm", tmp_path, filename=str(path),
                   device_format="cubin", device_only=True)
    cubins = sorted(tmp_path.glob("*.cubin"))
    assert cubins and len(cubins) == len(result.images)
    for cubin in cubins:
        data = cubin.read_bytes()
        assert data[:4] == b"\x7fELF"
        assert struct.unpack_from("<H", data, 18)[0] == EM_CUDA
