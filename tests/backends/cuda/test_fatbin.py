"""``--device-format fatbin`` (``tirc/backends/cuda/fatbin.py``, ``tirc/build/stages.py``): one
fatbin per cuda target through nvFatbin, with a cubin per arch and the PTX of the newest,
embedded in the host object as the module's one image. No GPU and no CUDA toolkit:
skipped where the nvFatbin or nvJitLink wheels are missing; the launch goes through the
fake driver of ``test_cuda_launch``."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from conftest import ROOT
from tirc.backends.cuda import fatbin as nvfatbin
from tirc.backends.cuda import cubin as nvptx_cubin
from tirc.build.stages import build
from tirc.backends.cuda.device_stage import fatbin_entries
from tirc.driver import cli

pytestmark = pytest.mark.skipif(not (nvfatbin.available() and nvptx_cubin.available()),
                                reason="nvFatbin or nvJitLink is not installed")
SAMPLES = ROOT / "samples"
VECTOR_ADD = SAMPLES / "vector_add.tir"


def _build(args, out):
    return CliRunner().invoke(cli, ["build", *map(str, args), "-o", str(out)])


def _fatbin(tmp_path, target="cuda -arch=sm_80,sm_90", sample=VECTOR_ADD, **kw):
    result = build(sample.read_text(), target, "llvm", tmp_path, filename=str(sample),
                   device_format="fatbin", **kw)
    return result, (tmp_path / f"{sample.stem}.fatbin")


def test_fatbin_magic_entries_and_embedding(tmp_path):
    result, path = _fatbin(tmp_path)
    data = path.read_bytes()
    assert data[:4] == bytes.fromhex("50ed55ba")  # 0xBA55ED50, little-endian
    found = [(e.kind, e.arch) for e in nvfatbin.entries(data)]
    assert found == [("cubin", "sm_80"), ("cubin", "sm_90"), ("ptx", "sm_90")]
    assert data in (tmp_path / "vector_add.o").read_bytes()  # one image, as written
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "vector_add.fatbin", "vector_add.h", "vector_add.json", "vector_add.o"]
    kernel = json.loads((tmp_path / "vector_add.json").read_text())["kernels"][0]
    assert kernel["image"] == "vector_add.fatbin"
    assert kernel["fatbin"] == [{"arch": "sm_80", "format": "cubin"},
                                {"arch": "sm_90", "format": "cubin"},
                                {"arch": "sm_90", "format": "ptx"}]
    assert sorted(kernel["resource_usage"]) == ["sm_80", "sm_90"]
    assert result.manifest["kernels"][0] == kernel and not result.warnings


def test_fatbin_is_byte_identical_across_builds(tmp_path):
    args = [VECTOR_ADD, "--target", "cuda -arch=sm_75,sm_80,sm_90", "--device-format", "fatbin"]
    for d in ("a", "b"):
        r = _build(args, tmp_path / d)
        assert r.exit_code == 0, r.output
    for name in ("vector_add.fatbin", "vector_add.o", "vector_add.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    entries = nvfatbin.entries((tmp_path / "a" / "vector_add.fatbin").read_bytes())
    assert [e.arch for e in entries if e.kind == "cubin"] == ["sm_75", "sm_80", "sm_90"]


def test_one_fatbin_per_target_and_ptx_with_emit(tmp_path):
    r = _build([SAMPLES / "multi_target.tir", "--device-format", "fatbin", "--emit", "ptx"],
               tmp_path)
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [n for n in names if n.endswith((".fatbin", ".ptx"))] == [
        "multi_target.sm_80.fatbin", "multi_target.sm_80.ptx",
        "multi_target.sm_90.fatbin", "multi_target.sm_90.ptx"]
    for arch in ("sm_80", "sm_90"):
        entries = nvfatbin.entries((tmp_path / f"multi_target.{arch}.fatbin").read_bytes())
        assert [(e.kind, e.arch) for e in entries] == [("cubin", arch), ("ptx", arch)]
    r = _build([VECTOR_ADD, "--target", "cuda -arch=sm_80,sm_90", "--device-format", "fatbin",
                "--device-only"], tmp_path / "d")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "vector_add.fatbin", "vector_add.json"]


def test_the_ptx_is_the_newest_portable_arch():
    cubins = {"sm_80": b"", "sm_90": b"", "sm_90a": b"", "sm_100f": b""}
    assert fatbin_entries(["sm_80", "sm_90"], cubins) == [
        ("sm_80", "cubin"), ("sm_90", "cubin"), ("sm_90", "ptx")]
    # sm_90a's PTX runs only on 9.0: newer GPUs JIT the newest arch without a suffix
    assert fatbin_entries(["sm_80", "sm_90a"], cubins) == [
        ("sm_80", "cubin"), ("sm_90a", "cubin"), ("sm_80", "ptx")]
    assert fatbin_entries(["sm_90a", "sm_100f"], cubins)[-1] == ("sm_100f", "ptx")
    # an arch without a cubin is PTX already: not twice
    assert fatbin_entries(["sm_70", "sm_80"], {"sm_80": b""}) == [
        ("sm_70", "ptx"), ("sm_80", "cubin"), ("sm_80", "ptx")]
    assert fatbin_entries(["sm_70"], {}) == [("sm_70", "ptx")]


def test_an_arch_without_a_cubin_goes_in_as_ptx_with_a_warning(tmp_path):
    r = _build([VECTOR_ADD, "--target", "cuda -arch=sm_70,sm_80", "--device-format", "fatbin"],
               tmp_path)
    assert r.exit_code == 0, r.output
    assert f"{VECTOR_ADD}:" in r.output and "warning: the installed nvJitLink" in r.output
    assert "cannot make a cubin for sm_70: the fatbin holds its PTX instead" in r.output
    entries = nvfatbin.entries((tmp_path / "vector_add.fatbin").read_bytes())
    assert [(e.kind, e.arch) for e in entries] == [
        ("ptx", "sm_70"), ("cubin", "sm_80"), ("ptx", "sm_80")]
    kernel = json.loads((tmp_path / "vector_add.json").read_text())["kernels"][0]
    assert sorted(kernel["resource_usage"]) == ["sm_80"]  # a cubin's facts only
    # --device-format cubin still refuses it, as before
    r = _build([VECTOR_ADD, "--target", "cuda -arch=sm_70", "--device-format", "cubin"],
               tmp_path / "c")
    assert r.exit_code == 1 and "--device-format ptx" in r.output


def test_usage_errors(tmp_path):
    r = _build([VECTOR_ADD, "--target", "cuda", "--device-format", "fatbin,ptx"], tmp_path)
    assert r.exit_code == 2 and "it goes alone" in r.output
    r = _build([VECTOR_ADD, "--target", "cuda", "--device-format", "elf"], tmp_path)
    assert r.exit_code == 2 and "valid: ptx, cubin, fatbin" in r.output


def test_ctypes_path_makes_the_same_bytes():
    ptx = (".version 7.0\n.target sm_80\n.address_size 64\n"
           ".visible .entry k()\n{\n  ret;\n}\n")
    cubin = nvptx_cubin.ptx_to_cubin(ptx, "sm_80")
    images = [("cubin", "sm_80", cubin), ("ptx", "sm_80", ptx.encode())]
    via_bindings = nvfatbin.make_fatbin(images, "k")
    via_ctypes = nvfatbin.make_fatbin(images, "k", api=nvfatbin.ctypes_api())
    assert via_bindings == via_ctypes
    assert nvfatbin.ctypes_api().version() >= (12, 4)


def test_entries_refuses_what_is_not_a_fatbin():
    with pytest.raises(ValueError, match="magic"):
        nvfatbin.entries(b"\x7fELF" + bytes(60))
    with pytest.raises(ValueError, match="shorter"):
        nvfatbin.entries(b"\x50\xed\x55\xba")
    with pytest.raises(ValueError, match="truncated"):
        nvfatbin.entries(bytes.fromhex("50ed55ba01001000") + (1000).to_bytes(8, "little"))


def test_python_api_gives_the_fatbin(tmp_path):
    import tirc
    k = tirc.compile(VECTOR_ADD, target="cuda -arch=sm_80,sm_90", device_format="fatbin",
                     load=False)
    assert list(k.fatbin) == ["sm_80-sm_90"] and k.fatbin["sm_80-sm_90"][:4] == b"\x50\xed\x55\xba"
    assert sorted(k.ptx) == ["sm_80", "sm_90"] and k.warnings == ()
    assert k.kernels[0]["resource_usage"]["sm_90"]["registers"] > 0


def test_loader_check_reads_thefatbin_entries(tmp_path):
    from tirc.runtime.errors import IncompatibleDeviceImage
    from tirc.runtime.loader import check_manifest_images

    class Dev:
        def __init__(self, cc):
            self.compute_capability, self.name = cc, "fake"

        def __str__(self):
            return "cuda:0"

    _fatbin(tmp_path, "cuda -arch=sm_80,sm_90a")  # cubins sm_80, sm_90a; PTX sm_80
    manifest = str(tmp_path / "vector_add.json")
    for cc in ((8, 0), (8, 9), (9, 0), (10, 0), (12, 0)):
        check_manifest_images(manifest, Dev(cc))  # a cubin, or the PTX (JIT)
    with pytest.raises(IncompatibleDeviceImage, match="vector_add_kernel"):
        check_manifest_images(manifest, Dev((7, 5)))


# -- the launch: the driver gets the fatbin ------------------------------------------------
@pytest.fixture(scope="module")
def fatbin_driver(tmp_path_factory):
    """The fake libcuda of test_cuda_launch, whose cuModuleLoadData says what it was given:
    ``load fatbin <bytes>`` for a fatbin."""
    from test_cuda_launch import FAKE_LIBCUDA
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("fakecuda_fatbin")
    load = FAKE_LIBCUDA.index("int cuModuleLoadData")
    fatbin_load = r"""int cuModuleLoadData(void** m, const void* image) {
  const unsigned* h = (const unsigned*)image;
  if (h[0] == 0xBA55ED50u) printf("load fatbin %llu\n", (unsigned long long)(16 + ((const unsigned long long*)image)[1]));
  else printf("load other\n");
  fflush(stdout); *m = (void*)0x2000; return 0;
}
"""
    end = FAKE_LIBCUDA.index("int cuModuleGetFunction")
    (d / "fake.c").write_text(FAKE_LIBCUDA[:load] + fatbin_load + FAKE_LIBCUDA[end:])
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "libcuda.so.1"), str(d / "fake.c")],
                   check=True)
    return {"LD_LIBRARY_PATH": str(d)}


@pytest.mark.parametrize("cc", [80, 90, 120])
def test_the_launcher_hands_the_driver_the_fatbin(tmp_path, fatbin_driver, cc):
    pytest.importorskip("tvm_ffi")
    from test_cuda_launch import _call
    _fatbin(tmp_path, shared=True)
    size = (tmp_path / "vector_add.fatbin").stat().st_size
    lines = _call(tmp_path / "vector_add.so", "vector_add", 300, 0, calls=2,
                  env={**fatbin_driver, "FAKE_CC": str(cc)})
    launch = "launch vector_add_kernel 2 1 1 256 1 1 0 n=300"
    # no capability query picks an image: the driver picks inside the fatbin
    assert lines == ["cuInit", "retain 0", f"load fatbin {size}", launch, "OK", launch, "OK"]


@pytest.mark.gpu
def test_fatbin_runs_on_the_gpu(tmp_path):
    np = pytest.importorskip("numpy")
    tvm_ffi = pytest.importorskip("tvm_ffi")
    from tirc import runtime as rt
    _fatbin(tmp_path, "cuda -arch=sm_75,sm_80,sm_90", shared=True)
    dev = rt.device("cuda", 0)
    a = np.arange(1000, dtype=np.float32)
    A, B, C = rt.from_numpy(a, dev), rt.from_numpy(a, dev), rt.empty((1000,), "float32", dev)
    f = tvm_ffi.load_module(str(tmp_path / "vector_add.so"))["vector_add"]
    f(tvm_ffi.from_dlpack(A), tvm_ffi.from_dlpack(B), tvm_ffi.from_dlpack(C))
    rt.synchronize(dev)
    np.testing.assert_allclose(C.to_numpy(), a + a)
