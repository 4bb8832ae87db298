"""tirc.runtime.load checks, from the build manifest, that the module's device images
fit the GPU (fake devices here; no GPU needed)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from conftest import ROOT
from tirc.build.stages import build
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


def checked_images(monkeypatch) -> list[tuple[str, tuple[int, int], str | None]]:
    """Record each (arch, compute capability, kind) the loader checks; the check itself
    still runs."""
    calls = []
    real = loader.check_device_image

    def spy(arch, dev, kind=None):
        calls.append((arch, tuple(dev.compute_capability), kind))
        return real(arch, dev, kind)
    monkeypatch.setattr(loader, "check_device_image", spy)
    return calls


def test_ptx_for_an_older_arch_loads_on_a_newer_gpu(built, monkeypatch):
    monkeypatch.setattr(loader, "_cuda_device", lambda: FakeGPU((10, 0)))
    calls = checked_images(monkeypatch)
    mod = loader.load(built / "vector_add.so")
    # the sm_90 PTX was checked against the 10.0 device, and accepted
    assert calls == [("sm_90", (10, 0), "ptx")]
    assert callable(mod["vector_add"])


def test_without_a_gpu_the_check_is_skipped(built, monkeypatch):
    monkeypatch.setattr(loader, "_cuda_device", lambda: None)
    calls = checked_images(monkeypatch)
    mod = loader.load(built / "vector_add.so")
    assert calls == []  # no image was checked (on the 8.0 GPU above this one is refused)
    assert callable(mod["vector_add"])
