"""tirc.runtime.load checks, from the build manifest, that the module's device images
fit the GPU (fake devices here; no GPU needed)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from conftest import ROOT
from tirc.build import build
from tirc.runtime import loader
from tirc.runtime.errors import IncompatibleDeviceImage


@dataclass
class FakeGPU:
    compute_capability: tuple[int, int]
    name: str = "Fake GPU"
    exists: bool = True

    def __str__(self) -> str:
        return "cuda:0"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("vadd")
    build((ROOT / "samples" / "vector_add.tir").read_text(), "cuda -arch=sm_90", "llvm", out,
          name="vector_add", shared=True)
    return out


def test_image_that_does_not_fit_is_refused_at_load(built, monkeypatch):
    monkeypatch.setattr(loader, "_cuda_device", lambda: FakeGPU((8, 0)))
    with pytest.raises(IncompatibleDeviceImage, match="kernel 'vector_add_kernel' of vector_add has no image for this GPU"):
        loader.load(built / "vector_add.so")


def test_ptx_for_an_older_arch_loads_on_a_newer_gpu(built, monkeypatch):
    monkeypatch.setattr(loader, "_cuda_device", lambda: FakeGPU((10, 0)))
    mod = loader.load(built / "vector_add.so")
    assert mod is not None


def test_without_a_gpu_the_check_is_skipped(built, monkeypatch):
    monkeypatch.setattr(loader, "_cuda_device", lambda: None)
    assert loader.load(built / "vector_add.so") is not None
