"""tirc.runtime's CUDA half. Without a GPU: clear, typed errors (a real missing driver
where there is none, and fake drivers reporting CUDA errors), and the device-image
arch check against fake devices. Tests marked ``gpu`` exercise real device memory,
copies, streams and events; conftest.py skips them where no GPU is present."""
from __future__ import annotations

import enum
from types import SimpleNamespace

import pytest

np = pytest.importorskip("numpy")

from tirc import runtime as rt
from tirc.runtime import cudadrv


def _real_gpu_count() -> int:
    cudadrv.reset()
    try:
        return cudadrv.device_count()
    except rt.CudaError:
        return 0
    finally:
        cudadrv.reset()


HAS_GPU = _real_gpu_count() > 0
no_gpu_only = pytest.mark.skipif(HAS_GPU, reason="checks behaviour where no GPU exists")


class CUresult(enum.IntEnum):  # the few driver statuses the fakes report
    CUDA_SUCCESS = 0
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_STUB_LIBRARY = 34
    CUDA_ERROR_NO_DEVICE = 100


def fake_driver(init=CUresult.CUDA_SUCCESS, count=0, describe=True):
    def error_string(status):
        text = {100: b"no CUDA-capable device is detected", 2: b"out of memory"}
        return (0, text.get(int(status), b"")) if describe else (999, None)

    return SimpleNamespace(CUresult=CUresult, cuInit=lambda flags: (init,),
                           cuDeviceGetCount=lambda: (CUresult.CUDA_SUCCESS, count),
                           cuGetErrorString=error_string)


@pytest.fixture
def driver(monkeypatch):
    """Install a fake driver: ``driver(init=..., count=...)``."""
    def install(**kwargs):
        fake = fake_driver(**kwargs)
        monkeypatch.setattr(cudadrv, "_load_driver", lambda: fake)
        cudadrv.reset()
        return fake
    yield install
    cudadrv.reset()


# -- no GPU ------------------------------------------------------------------------------

@no_gpu_only
def test_without_a_gpu_cuda_work_raises_no_cuda_device():
    dev = rt.device("cuda", 0)
    assert dev.exists is False
    for attempt in (lambda: dev.name, lambda: dev.compute_capability, lambda: dev.warp_size,
                    lambda: dev.free_memory, lambda: rt.empty((4,), "float32", dev),
                    lambda: rt.from_numpy(np.zeros(4, np.float32), "cuda"),
                    dev.create_stream, dev.create_event, dev.synchronize,
                    lambda: rt.synchronize("cuda:0")):
        with pytest.raises(rt.NoCudaDevice, match="no CUDA|CUDA_ERROR"):
            attempt()


def test_no_cuda_device_is_a_distinct_cuda_error():
    assert issubclass(rt.NoCudaDevice, rt.CudaError)
    assert issubclass(rt.CudaError, rt.RuntimeAPIError)
    assert not issubclass(rt.CudaError, (ValueError, TypeError))


def test_cuda_python_missing(monkeypatch):
    def missing():
        raise rt.NoCudaDevice("no CUDA support: cuda-python is not installed")
    monkeypatch.setattr(cudadrv, "_load_driver", missing)
    cudadrv.reset()
    try:
        assert rt.device("cuda").exists is False
        with pytest.raises(rt.NoCudaDevice, match="cuda-python is not installed"):
            rt.empty(1, "int8", "cuda")
    finally:
        cudadrv.reset()


def test_driver_library_missing(monkeypatch):
    class DynamicLibNotFoundError(RuntimeError):
        pass

    def cu_init(flags):
        raise DynamicLibNotFoundError('"cuda" is an NVIDIA driver library')

    fake = fake_driver()
    fake.cuInit = cu_init
    monkeypatch.setattr(cudadrv, "_load_driver", lambda: fake)
    cudadrv.reset()
    try:
        with pytest.raises(rt.NoCudaDevice, match="libcuda"):
            _ = rt.device("cuda").name
    finally:
        cudadrv.reset()


def test_driver_reports_no_device(driver):
    driver(init=CUresult.CUDA_ERROR_NO_DEVICE)
    with pytest.raises(rt.NoCudaDevice) as info:
        _ = rt.device("cuda", 0).multiprocessor_count
    assert info.value.name == "CUDA_ERROR_NO_DEVICE" and info.value.code == 100
    assert str(info.value) == ("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected "
                               "(in cuInit)")
    assert rt.device("cuda", 0).exists is False


def test_stub_driver_means_no_device(driver):
    driver(init=CUresult.CUDA_ERROR_STUB_LIBRARY, describe=False)
    with pytest.raises(rt.NoCudaDevice, match=r"^CUDA_ERROR_STUB_LIBRARY \(in cuInit\)$"):
        rt.empty(2, "float32", "cuda")


def test_zero_devices(driver):
    driver(count=0)
    with pytest.raises(rt.NoCudaDevice, match="reports no device"):
        _ = rt.device("cuda").name


def test_other_driver_errors_are_cuda_errors_naming_the_error(driver):
    driver(init=CUresult.CUDA_ERROR_OUT_OF_MEMORY)
    with pytest.raises(rt.CudaError) as info:
        _ = rt.device("cuda").name
    assert not isinstance(info.value, rt.NoCudaDevice)
    assert str(info.value).startswith("CUDA_ERROR_OUT_OF_MEMORY: out of memory")
    with pytest.raises(rt.CudaError, match=r"CUresult 12345"):
        cudadrv.check(12345, "cuSomething", fake_driver())


def test_ordinal_out_of_range(driver, monkeypatch):
    driver(count=2)
    assert rt.device("cuda", 1).exists and not rt.device("cuda", 2).exists
    with pytest.raises(rt.NoCudaDevice, match=r"no CUDA device 2 \(2 present\)") as info:
        _ = rt.device("cuda", 2).name
    assert info.value.name == "CUDA_ERROR_INVALID_DEVICE"


def test_cuda_python_exceptions_are_translated():
    class CUDAError(Exception):  # what cuda.core raises
        pass

    with pytest.raises(rt.CudaError, match="copying memory: CUDA_ERROR_ILLEGAL_ADDRESS") as info, \
            cudadrv.calls("copying memory"):
        raise CUDAError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access")
    assert info.value.name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    if info.value.code is not None:  # cuda-python knows the number
        assert info.value.code == 700
    assert isinstance(info.value.__cause__, CUDAError)
    with pytest.raises(rt.NoCudaDevice), cudadrv.calls("selecting"):
        raise CUDAError("CUDA_ERROR_INVALID_DEVICE: invalid device ordinal")
    # anything else is not a CUDA error and passes through
    with pytest.raises(KeyError), cudadrv.calls("x"):
        raise KeyError("x")


# -- the arch check at load --------------------------------------------------------------

class FakeGpu:
    def __init__(self, major, minor, name="Fake GPU"):
        self.compute_capability = (major, minor)
        self.name = name

    def __str__(self):
        return "cuda:0"


gpu = FakeGpu


@pytest.mark.parametrize("arch, cc, runs", [
    # a cubin runs on its own major version, minor at least its own
    ("sm_80", (8, 0), True), ("sm_80", (8, 6), True), ("sm_86", (8, 0), False),
    ("sm_80", (9, 0), False), ("sm_90", (8, 9), False), ("sm_75", (7, 5), True),
    ("sm_100", (10, 0), True), ("sm_100", (12, 0), False), ("sm_120", (12, 1), True),
    # PTX runs on its arch and every later one
    ("compute_80", (8, 0), True), ("compute_80", (9, 0), True), ("compute_80", (12, 0), True),
    ("compute_90", (8, 9), False), ("compute_86", (8, 0), False),
    # arch-specific images run on exactly their arch; family images on their family
    ("sm_90a", (9, 0), True), ("sm_90a", (10, 0), False), ("compute_90a", (10, 0), False),
    ("sm_100a", (10, 3), False), ("sm_100f", (10, 3), True), ("sm_100f", (12, 0), False),
    ("compute_100f", (10, 3), True), ("compute_100f", (11, 0), False),
])
def test_check_device_image(arch, cc, runs):
    dev = gpu(*cc)
    if runs:
        assert rt.check_device_image(arch, dev) is None
    else:
        with pytest.raises(rt.IncompatibleDeviceImage, match=f"built for {arch}"):
            rt.check_device_image(arch, dev)


def test_check_device_image_kind_override_and_message():
    dev = gpu(9, 0, "NVIDIA H100")
    rt.check_device_image("sm_80", dev, kind="ptx")  # PTX for sm_80 JIT-compiles on 9.0
    with pytest.raises(rt.IncompatibleDeviceImage) as info:
        rt.check_device_image("sm_80", dev, kind="cubin")
    text = str(info.value)
    assert "cuda:0 (NVIDIA H100, compute capability 9.0)" in text
    assert "needs compute capability 8.x with x >= 0" in text
    assert "--target 'cuda -arch=sm_90'" in text


@pytest.mark.parametrize("arch", ["sm80", "sm_8", "cuda_80", "", "sm_90b", None])
def test_check_device_image_bad_arch(arch):
    with pytest.raises(ValueError, match="bad architecture"):
        rt.check_device_image(arch, gpu(9, 0))


def test_check_device_image_bad_kind_and_cpu():
    with pytest.raises(ValueError, match="'cubin' or 'ptx'"):
        rt.check_device_image("sm_90", gpu(9, 0), kind="fatbin")
    with pytest.raises(rt.IncompatibleDeviceImage, match="not a CUDA device"):
        rt.check_device_image("sm_90", rt.cpu())


# -- on a GPU ----------------------------------------------------------------------------

DTYPES = ["bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64"]


@pytest.mark.gpu
def test_gpu_attributes():
    dev = rt.device("cuda", 0)
    assert dev.exists and not rt.device("cuda", 1000).exists
    assert isinstance(dev.name, str) and dev.name
    major, minor = dev.compute_capability
    assert major >= 3 and minor >= 0 and dev.arch == f"sm_{major}{minor}"
    assert dev.warp_size == 32
    assert dev.max_threads_per_block >= 512
    assert dev.max_shared_memory_per_block >= 48 * 1024
    assert dev.max_shared_memory_per_block_optin >= dev.max_shared_memory_per_block
    assert dev.multiprocessor_count > 0
    assert 0 < dev.free_memory <= dev.total_memory
    assert set(dev.attributes()) >= {"name", "warp_size", "total_memory"}
    with pytest.raises(rt.NoCudaDevice, match="no CUDA device 1000"):
        _ = rt.device("cuda", 1000).name
    rt.check_device_image(dev.arch, dev)
    rt.check_device_image(f"compute_{major}0", dev)
    with pytest.raises(rt.IncompatibleDeviceImage):
        rt.check_device_image(f"sm_{major + 1}0", dev)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16", "float8_e4m3fn"])
def test_gpu_round_trip(dtype):
    if dtype in ("bfloat16", "float8_e4m3fn"):
        pytest.importorskip("ml_dtypes")
    src = (np.arange(1000, dtype=np.float32) % 11).astype(rt.as_dtype(dtype)).reshape(10, 100)
    arr = rt.from_numpy(src, "cuda")
    assert arr.device == rt.device("cuda", 0) and arr.shape == (10, 100)
    assert arr.__dlpack_device__() == (2, 0)
    assert np.array_equal(arr.to_numpy(), src)


@pytest.mark.gpu
def test_gpu_copies_every_direction_on_a_stream():
    dev = rt.device("cuda", 0)
    stream = dev.create_stream()
    assert stream.handle != 0 and stream.__cuda_stream__() == (0, stream.handle)
    src = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    a = rt.empty(src.shape, "float32", dev, stream=stream)
    b = rt.empty(src.shape, "float32", dev, stream=stream)
    rt.copyto(a, src, stream=stream)        # host -> device
    rt.copyto(b, a, stream=stream)          # device -> device
    out = np.zeros_like(src)
    rt.copyto(out, b, stream=stream)        # device -> host
    stream.synchronize()
    assert np.array_equal(out, src)
    host = b.to("cpu", stream=stream)       # device -> host Array
    stream.synchronize()
    assert host.device == rt.cpu() and np.array_equal(host.to_numpy(), src)
    back = host.to(dev)                     # host Array -> device, default stream
    assert np.array_equal(back.to_numpy(), src)
    strided = rt.from_numpy(src[:, ::2], dev)  # from_numpy copies strided input
    assert np.array_equal(strided.to_numpy(), src[:, ::2])
    empty = rt.empty((0, 5), "float32", dev)
    assert empty.to_numpy().shape == (0, 5)
    with pytest.raises(ValueError, match="C-contiguous"):
        rt.copyto(np.zeros((256, 512), np.float32)[:, ::2], a)
    with pytest.raises(ValueError, match="needs a CUDA stream"):
        rt.copyto(a, src, stream=rt.cpu().create_stream())


@pytest.mark.gpu
def test_gpu_events_time_work_and_order_streams():
    dev = rt.device("cuda", 0)
    first, second = dev.create_stream(), dev.create_stream()
    big = rt.empty((64, 1024, 1024), "float32", dev, stream=first)
    other = rt.empty(big.shape, "float32", dev, stream=first)
    start = first.record()
    for _ in range(5):
        rt.copyto(other, big, stream=first)
    end = dev.create_event().record(first)
    second.wait(end)
    second.wait(first)
    second.synchronize()
    assert end.done
    ms = start.elapsed_ms(end)
    assert isinstance(ms, float) and ms > 0.0
    dev.synchronize()
    rt.synchronize(dev)
    untimed = dev.create_event(timing=False).record(first)
    with pytest.raises(ValueError, match="timing=True"):
        start.elapsed_ms(untimed)


@pytest.mark.gpu
def test_gpu_dlpack_with_tvm_ffi():
    tvm_ffi = pytest.importorskip("tvm_ffi")
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    arr = rt.from_numpy(src, "cuda")
    rt.device("cuda").synchronize()
    tensor = tvm_ffi.from_dlpack(arr)
    assert str(tensor.device) == "cuda:0" and tensor.data_ptr() == arr.data_ptr
    back = rt.from_dlpack(tensor)
    assert back.device == rt.device("cuda", 0) and back.data_ptr == arr.data_ptr
    assert np.array_equal(back.to_numpy(), src)
    describe = tvm_ffi.convert(lambda t: str(t.device))
    assert describe(arr) == "cuda:0"
    stream = rt.device("cuda").create_stream()
    with rt.use_stream(stream):
        assert tvm_ffi.get_raw_stream(tvm_ffi.device("cuda:0")) == stream.handle
    del tensor, back
    with pytest.raises(BufferError, match="without a copy"):
        arr.__dlpack__(dl_device=(1, 0), copy=False)
    copied = rt.from_dlpack(arr.__dlpack__(dl_device=(1, 0), copy=True))
    assert copied.device == rt.cpu() and np.array_equal(copied.to_numpy(), src)


@pytest.mark.gpu
def test_gpu_errors_name_the_cuda_error():
    with pytest.raises(rt.CudaError, match="CUDA_ERROR_OUT_OF_MEMORY|out of memory"):
        rt.empty((1 << 50,), "uint8", "cuda")
