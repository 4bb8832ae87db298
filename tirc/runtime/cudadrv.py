"""The CUDA half of the runtime, on cuda-python: ``cuda.core`` for devices, memory,
streams and events, ``cuda.bindings.driver`` for what cuda.core does not cover (driver
status codes, free/total memory).

Nothing here imports CUDA at module import time: every entry point imports lazily,
so ``import tirc.runtime`` works on machines without cuda-python, without a driver and
without a GPU. Failures come back as :class:`CudaError` naming the driver's error, or
:class:`NoCudaDevice` when there is no usable device at all.
"""
from __future__ import annotations

import re
from contextlib import contextmanager

from tirc.runtime.errors import CudaError, NoCudaDevice

# Driver statuses meaning "there is no device to use here".
_NO_DEVICE = ("CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_STUB_LIBRARY")
_ERROR_NAME = re.compile(r"CUDA_ERROR_[A-Z0-9_]+")

_count: int | None = None  # device count, cached after the first successful cuInit


def _load_driver():
    """``cuda.bindings.driver`` (a seam: tests replace it with a fake driver)."""
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise NoCudaDevice(f"no CUDA support: cuda-python is not installed ({e})") from e
    return driver


def _load_core():
    try:
        from cuda import core
    except ImportError as e:
        raise NoCudaDevice(f"no CUDA support: cuda.core is not installed ({e})") from e
    return core


def reset() -> None:
    """Forget the cached device count (tests use this after swapping the driver)."""
    global _count
    _count = None


def check(status, what: str, driver=None) -> None:
    """Raise for a failed ``CUresult`` from ``what``; the message names the error."""
    code = int(status)
    if code == 0:
        return
    driver = driver or _load_driver()
    try:
        name = driver.CUresult(code).name
    except (ValueError, AttributeError):
        name = f"CUresult {code}"
    try:
        err, text = driver.cuGetErrorString(status)
        desc = text.decode() if int(err) == 0 and text else ""
    except Exception:  # noqa: BLE001  (the driver may be too broken to describe itself)
        desc = ""
    message = f"{name}: {desc} (in {what})" if desc else f"{name} (in {what})"
    cls = NoCudaDevice if name in _NO_DEVICE else CudaError
    raise cls(message, name=name, code=code)


def device_count() -> int:
    """Number of CUDA devices; raises NoCudaDevice when there are none or no driver."""
    global _count
    if _count is not None:
        return _count
    driver = _load_driver()
    try:
        status, = driver.cuInit(0)
    except CudaError:
        raise
    except Exception as e:  # libcuda missing: cuda-python raises when it loads it
        raise NoCudaDevice(f"no CUDA driver: the NVIDIA driver library (libcuda) could "
                           f"not be loaded, so no CUDA device is present ({e})") from e
    check(status, "cuInit", driver)
    status, count = driver.cuDeviceGetCount()
    check(status, "cuDeviceGetCount", driver)
    if count == 0:
        raise NoCudaDevice("CUDA_ERROR_NO_DEVICE: the CUDA driver reports no device",
                           name="CUDA_ERROR_NO_DEVICE", code=100)
    _count = int(count)
    return _count


def exists(index: int) -> bool:
    try:
        return index < device_count()
    except CudaError:
        return False


@contextmanager
def calls(what: str):
    """Turn cuda-python's exceptions raised inside the block into CudaError."""
    try:
        yield
    except CudaError:
        raise
    except Exception as e:
        found = _ERROR_NAME.search(str(e))
        if found is None and type(e).__name__ not in ("CUDAError", "DynamicLibNotFoundError"):
            raise
        name = found.group(0) if found else None
        missing = type(e).__name__ == "DynamicLibNotFoundError"
        cls = NoCudaDevice if missing or name in _NO_DEVICE else CudaError
        raise cls(f"{what}: {e}", name=name, code=_code_of(name)) from e


def _code_of(name: str | None) -> int | None:
    try:
        return int(getattr(_load_driver().CUresult, name))
    except (CudaError, KeyError, TypeError, AttributeError):
        return None


def core_device(index: int):
    """The ``cuda.core.Device`` for ``index``, made current on this thread."""
    count = device_count()
    if index >= count:
        raise NoCudaDevice(f"CUDA_ERROR_INVALID_DEVICE: no CUDA device {index} "
                           f"({count} present)", name="CUDA_ERROR_INVALID_DEVICE", code=101)
    core = _load_core()
    with calls(f"selecting CUDA device {index}"):
        dev = core.Device(index)
        dev.set_current()
    return dev


def properties(index: int):
    with calls("querying device attributes"):
        return core_device(index).properties


def name(index: int) -> str:
    with calls("querying the device name"):
        return core_device(index).name


def compute_capability(index: int) -> tuple[int, int]:
    with calls("querying the compute capability"):
        cc = core_device(index).compute_capability
    return int(cc[0]), int(cc[1])


def memory_info(index: int) -> tuple[int, int]:
    """(free, total) bytes of device memory."""
    core_device(index)  # makes the primary context current
    driver = _load_driver()
    status, free, total = driver.cuMemGetInfo()
    check(status, "cuMemGetInfo", driver)
    return int(free), int(total)


def synchronize(index: int) -> None:
    with calls(f"synchronizing CUDA device {index}"):
        core_device(index).sync()


def default_stream(index: int):
    with calls("getting the default stream"):
        return core_device(index).default_stream


def create_stream(index: int):
    with calls("creating a stream"):
        return core_device(index).create_stream()


def create_event(index: int, timing: bool):
    core = _load_core()
    with calls("creating an event"):
        return core_device(index).create_event(core.EventOptions(timing_enabled=timing))


def allocate(index: int, nbytes: int, stream):
    """Device memory (a ``cuda.core.Buffer``), allocated in order on ``stream``."""
    with calls(f"allocating {nbytes} bytes on CUDA device {index}"):
        dev = core_device(index)
        return dev.allocate(max(nbytes, 1), stream=stream)


def wrap(ptr: int, nbytes: int, owner):
    """A non-owning ``cuda.core.Buffer`` over memory that ``owner`` keeps alive (host
    memory for copies, or device memory imported through DLPack)."""
    core = _load_core()
    with calls("wrapping memory"):
        return core.Buffer.from_handle(ptr, nbytes, owner=owner)


def copy(dst_buffer, src_buffer, stream) -> None:
    """Copy between two buffers of the same size on ``stream`` (any direction)."""
    with calls("copying memory"):
        dst_buffer.copy_from(src_buffer, stream=stream)
