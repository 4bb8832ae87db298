"""The OpenCL half of the runtime, on pyopencl (``pip install tirc[opencl]``): devices,
one context and in-order command queue per device, memory, copies, synchronisation.

Devices are numbered across platforms in platform order (``device("opencl", 1)`` is the
second device of all platforms). An array's data pointer, the one a DLPack capsule and so
a compiled function gets, is its ``cl_mem``; the launch code of a built library takes the
context from it, or the queue from tvm-ffi's stream when :func:`tirc.runtime.use_stream`
set one. The first use makes the OpenCL loader pyopencl uses visible to the whole process
(``RTLD_GLOBAL``), so a built library finds the same loader and the same ICDs (the
``pyopencl`` wheel ships its own loader; pocl comes as ``pocl-binary-distribution``).
Nothing is imported until a device is used; its absence is :class:`NoOpenCLDevice`.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading
from contextlib import contextmanager

from tirc.runtime.errors import NoOpenCLDevice, OpenCLError

_LOCK = threading.Lock()


def _cl():
    try:
        import pyopencl as cl
    except ImportError as e:
        raise NoOpenCLDevice("OpenCL needs pyopencl (pip install 'tirc[opencl]')") from e
    _make_loader_global(cl)
    return cl


@functools.lru_cache(maxsize=None)
def _make_loader_global(cl) -> None:
    """Re-open the OpenCL loader pyopencl is linked with as RTLD_GLOBAL, so that a built
    library's ``dlsym`` finds the loader this process already uses."""
    libs = os.path.join(os.path.dirname(cl.__file__), ".libs")
    found = sorted(glob.glob(os.path.join(libs, "libOpenCL*.so*")))
    for path in found or ["libOpenCL.so.1"]:
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            continue


@functools.lru_cache(maxsize=None)
def _devices() -> tuple:
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        raise NoOpenCLDevice(f"no OpenCL platform: {e}") from e
    return tuple(d for p in platforms for d in p.get_devices())


def _device(index: int):
    devices = _devices()
    if not devices:
        raise NoOpenCLDevice("the OpenCL platforms have no device")
    if index >= len(devices):
        raise NoOpenCLDevice(f"OpenCL device {index} does not exist; there are {len(devices)}")
    return devices[index]


_CONTEXTS: dict[int, tuple] = {}


def context(index: int):
    """The (context, queue) of device ``index``, made on first use."""
    with _LOCK:
        if index not in _CONTEXTS:
            cl = _cl()
            dev = _device(index)
            with calls("creating a context"):
                ctx = cl.Context([dev])
                _CONTEXTS[index] = (ctx, cl.CommandQueue(ctx, dev))
        return _CONTEXTS[index]


def exists(index: int) -> bool:
    try:
        _device(index)
        return True
    except NoOpenCLDevice:
        return False


def name(index: int) -> str:
    return str(_device(index).name).strip()


def info(index: int) -> dict:
    d = _device(index)
    return {"max_threads_per_block": int(d.max_work_group_size),
            "max_shared_memory_per_block": int(d.local_mem_size),
            "total_memory": int(d.global_mem_size),
            "multiprocessor_count": int(d.max_compute_units),
            "extensions": str(d.extensions).split()}


def has_fp16(index: int) -> bool:
    return "cl_khr_fp16" in info(index)["extensions"]


@contextmanager
def calls(what: str):
    """Turn a pyopencl error into OpenCLError naming what was being done."""
    cl = _cl()
    try:
        yield
    except cl.Error as e:
        code = getattr(e, "code", None)
        raise OpenCLError(f"{what}: {e}", code=code if isinstance(code, int) else None) from e


def allocate(index: int, nbytes: int):
    """A ``cl.Buffer`` of ``nbytes`` (at least one byte: OpenCL has no empty buffers)."""
    cl = _cl()
    ctx, _ = context(index)
    with calls(f"allocating {nbytes} bytes"):
        return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(int(nbytes), 1))


def create_queue(index: int):
    cl = _cl()
    ctx, _ = context(index)
    with calls("creating a command queue"):
        return cl.CommandQueue(ctx, _device(index))


def copy(queue, dst, src, nbytes: int) -> None:
    """Copy ``nbytes`` between a ``cl.Buffer`` and a host array (or two buffers) on
    ``queue``, waiting for it to finish."""
    if nbytes == 0:
        return
    cl = _cl()
    with calls("copying"):
        if isinstance(dst, cl.Buffer) and isinstance(src, cl.Buffer):
            cl.enqueue_copy(queue, dst, src, byte_count=nbytes)
            queue.finish()
        else:
            cl.enqueue_copy(queue, dst, src, is_blocking=True)


def synchronize(index: int) -> None:
    if index in _CONTEXTS:
        with calls("synchronizing"):
            _CONTEXTS[index][1].finish()


def wrap(cl_mem: int):
    """A ``cl.Buffer`` for a ``cl_mem`` handle another library made (DLPack), retained."""
    cl = _cl()
    with calls("taking a cl_mem from DLPack"):
        return cl.Buffer.from_int_ptr(int(cl_mem), retain=True)
