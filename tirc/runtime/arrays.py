"""Arrays on a device: compact, row-major blocks of one element type.

CPU arrays hold a NumPy array (64-byte aligned); CUDA arrays hold a ``cuda.core``
Buffer; OpenCL arrays a ``pyopencl.Buffer``, whose ``cl_mem`` is their DLPack data
pointer. All speak DLPack in both directions, so they pass straight into tvm-ffi
functions and NumPy/PyTorch/CuPy arrays come in through :func:`from_dlpack`.
Copies go in every direction on a stream (:func:`copyto`; OpenCL copies wait for the
transfer, and go between an OpenCL device and the CPU, or within one device).
"""
from __future__ import annotations

import operator

import numpy as np

from tirc.runtime import cudadrv as cuda
from tirc.runtime import opencldrv as opencl
from tirc.runtime import dlpack
from tirc.runtime.devices import Device, Stream
from tirc.runtime.devices import device as as_device
from tirc.runtime.dtypes import as_dtype

ALIGNMENT = 64  # bytes; what TVM-built code may assume of its buffers


def _as_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, not "
                        f"{type(shape).__name__}") from None
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)):
            raise TypeError(f"shape {dims!r} holds a bool")
        try:
            d = operator.index(d)
        except TypeError:
            raise TypeError(f"shape {dims!r} holds {d!r}, which is not an integer") from None
        if d < 0:
            raise ValueError(f"shape {dims!r} has a negative dimension")
        out.append(d)
    return tuple(out)


def _aligned_empty(shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes].view(dt).reshape(shape)


def _stream_of(dev: Device, stream: Stream | None):
    """The cuda.core stream for work on ``dev`` (None for CPU-only work); for OpenCL, the
    pyopencl command queue."""
    if dev.is_opencl:
        if stream is None:
            return opencl.context(dev.index)[1]
        if not stream.device.is_opencl:
            raise ValueError(f"work on {dev} needs an OpenCL queue, not a stream of "
                             f"{stream.device}")
        return stream._core
    if stream is None:
        return cuda.default_stream(dev.index) if dev.is_cuda else None
    if not isinstance(stream, Stream):
        raise TypeError(f"stream must be a tirc.runtime Stream, not {type(stream).__name__}")
    if dev.is_cuda:
        if not stream.device.is_cuda:
            raise ValueError(f"work on {dev} needs a CUDA stream, not a stream of "
                             f"{stream.device}")
        cuda.core_device(dev.index)  # the calling thread's current device
    return stream._core


class Array:
    """An n-dimensional array on a device. Create with :func:`empty`,
    :func:`from_numpy` or :func:`from_dlpack`."""

    __slots__ = (
        "__weakref__",
        "_buffer",
        "_device",
        "_dtype",
        "_host",
        "_read_only",
        "_shape",
    )

    def __init__(self, shape, dtype, dev: Device, *, host=None, buffer=None,
                 read_only: bool = False):
        self._shape = shape
        self._dtype = dtype
        self._device = dev
        self._host = host      # np.ndarray (CPU)
        self._buffer = buffer  # cuda.core Buffer (CUDA)
        self._read_only = read_only

    # -- what it is ------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The element type; ``str(a.dtype)`` is TVM's name (``float32``, ``bfloat16``)."""
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def data_ptr(self) -> int:
        """Address of the first element (a device address for CUDA arrays)."""
        if self._host is not None:
            return int(self._host.ctypes.data)
        if self._device.is_opencl:
            return int(self._buffer.int_ptr)  # the cl_mem
        return int(self._buffer.handle)

    def __repr__(self) -> str:
        return f"Array(shape={self._shape}, dtype={self._dtype}, device={self._device})"

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    # -- data in and out ---------------------------------------------------------------
    def to_numpy(self, stream: Stream | None = None) -> np.ndarray:
        """A NumPy copy of the contents (waits for the copy to finish)."""
        out = np.empty(self._shape, self._dtype)
        copyto(out, self, stream=stream)
        if self._device.is_cuda:
            _sync(self._device, stream)
        return out

    numpy = to_numpy  # TVM's spelling

    def copyfrom(self, src, stream: Stream | None = None) -> Array:
        """Copy ``src`` (an Array or NumPy array of the same shape and dtype) into this
        array; returns self."""
        copyto(self, src, stream=stream)
        return self

    def to(self, dev, stream: Stream | None = None) -> Array:
        """A copy of this array on ``dev``; a copy from a CUDA device to the CPU waits
        for the copy to finish."""
        out = empty(self._shape, self._dtype, dev, stream=stream)
        copyto(out, self, stream=stream)
        if self._device.is_cuda and not out.device.is_cuda:
            _sync(self._device, stream)
        return out

    # -- DLPack ------------------------------------------------------------------------
    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device.__dlpack_device__()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export as a DLPack capsule (versioned when ``max_version >= (1, 0)``). The
        consumer shares the memory; ``copy=True`` or a CPU ``dl_device`` for a CUDA
        array exports a copy. Work queued on the array is the caller's to order
        (synchronize the stream that wrote it before a consumer uses another one)."""
        source = self
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            if copy is False:
                raise BufferError(f"array on {self._device} cannot be exported to DLPack "
                                  f"device {tuple(dl_device)} without a copy")
            if dl_device[0] != dlpack.kDLCPU:
                raise BufferError(f"cannot export an array on {self._device} to DLPack "
                                  f"device {tuple(dl_device)}")
            source = from_numpy(self.to_numpy())
        elif copy:
            source = self.to(self._device)
            if self._device.is_cuda:
                _sync(self._device, None)
        versioned = max_version is not None and max_version[0] >= 1
        if source._read_only and not versioned:
            raise BufferError("a read-only array cannot be exported through legacy DLPack "
                              "(it has no read-only flag); ask for max_version=(1, 0)")
        return dlpack.export(source, source.data_ptr, source._shape, source._dtype,
                             source.__dlpack_device__(), versioned=versioned,
                             read_only=source._read_only)


def _sync(dev: Device, stream: Stream | None) -> None:
    if stream is not None:
        stream.synchronize()
    else:
        dev.default_stream.synchronize()


def empty(shape, dtype="float32", device="cpu", stream: Stream | None = None) -> Array:
    """An uninitialised array. CUDA memory is allocated in order on ``stream`` (the
    device's default stream if None)."""
    shape = _as_shape(shape)
    dt = as_dtype(dtype)
    dev = as_device(device)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if dev.is_opencl:
        return Array(shape, dt, dev, buffer=opencl.allocate(dev.index, nbytes))
    if not dev.is_cuda:
        return Array(shape, dt, dev, host=_aligned_empty(shape, dt))
    buffer = cuda.allocate(dev.index, nbytes, _stream_of(dev, stream))
    return Array(shape, dt, dev, buffer=buffer)


def from_numpy(a, device="cpu", stream: Stream | None = None) -> Array:
    """A copy of a NumPy array (or anything ``np.asarray`` takes) on ``device``."""
    a = np.asarray(a)
    if not a.flags.c_contiguous:  # a CUDA copy needs one contiguous host block
        a = np.ascontiguousarray(a)
    out = empty(a.shape, a.dtype, device, stream=stream)
    copyto(out, a, stream=stream)
    return out


def from_dlpack(obj) -> Array:
    """An Array sharing the memory of ``obj``: a NumPy array, anything with
    ``__dlpack__`` (tvm-ffi tensors, PyTorch, CuPy), or an unconsumed DLPack capsule.
    The data must be compact and row-major."""
    if isinstance(obj, Array):
        return obj
    if isinstance(obj, np.ndarray):
        return _wrap_numpy(obj)
    if hasattr(obj, "__dlpack__"):
        try:
            capsule = obj.__dlpack__(max_version=dlpack.VERSION)
        except TypeError:  # a producer from before DLPack 1.0
            capsule = obj.__dlpack__()
    elif type(obj).__name__ == "PyCapsule":
        capsule = obj
    else:
        raise TypeError(f"from_dlpack takes an object with __dlpack__ or a DLPack capsule, "
                        f"not {type(obj).__name__}")
    imported = dlpack.consume(capsule)
    kind, index = imported.device
    if kind in (dlpack.kDLCPU, dlpack.kDLCUDAHost):
        return _wrap_numpy(dlpack.host_view(imported), read_only=imported.read_only)
    if kind in (dlpack.kDLCUDA, dlpack.kDLCUDAManaged):
        dev = as_device("cuda", index)
        buffer = cuda.wrap(imported.data, imported.nbytes, imported.owner)
        return Array(imported.shape, imported.dtype, dev, buffer=buffer,
                     read_only=imported.read_only)
    if kind == dlpack.kDLOpenCL:
        buffer = opencl.wrap(imported.data)  # retained: valid after the producer lets go
        imported.owner.release()
        return Array(imported.shape, imported.dtype, as_device("opencl", index), buffer=buffer,
                     read_only=imported.read_only)
    imported.owner.release()
    raise ValueError(f"DLPack device type {kind} is not supported (CPU, CUDA and OpenCL are)")


def _wrap_numpy(a: np.ndarray, read_only: bool | None = None) -> Array:
    dt = as_dtype(a.dtype)
    if not a.flags.c_contiguous:
        raise ValueError(f"from_dlpack needs a C-contiguous array; this one has strides "
                         f"{a.strides} (use from_numpy to copy it, or np.ascontiguousarray)")
    if read_only is None:
        read_only = not a.flags.writeable
    return Array(a.shape, dt, as_device("cpu"), host=a, read_only=read_only)


def _contiguous(a: np.ndarray, role: str) -> np.ndarray:
    if not a.flags.c_contiguous:
        raise ValueError(f"the {role} NumPy array of a copy to or from a CUDA device must "
                         f"be C-contiguous (use np.ascontiguousarray)")
    return a


def copyto(dst, src, stream: Stream | None = None) -> None:
    """Copy ``src`` into ``dst``: Arrays on any device or C-contiguous NumPy arrays, of
    the same shape and dtype. Copies touching a CUDA device are queued on ``stream``
    (the CUDA device's default stream if None); synchronize before reading host memory
    that a device-to-host copy writes, or use :meth:`Array.to_numpy`."""
    if not isinstance(dst, (Array, np.ndarray)) or not isinstance(src, (Array, np.ndarray)):
        bad = dst if not isinstance(dst, (Array, np.ndarray)) else src
        raise TypeError(f"copyto takes Arrays or NumPy arrays, not {type(bad).__name__}")
    if dst.shape != src.shape or dst.dtype != src.dtype:
        raise ValueError(f"copy between arrays of different shape or dtype: "
                         f"{tuple(src.shape)} {src.dtype} -> {tuple(dst.shape)} {dst.dtype}")
    if stream is not None and not isinstance(stream, Stream):
        raise TypeError(f"stream must be a tirc.runtime Stream, not {type(stream).__name__}")
    if isinstance(dst, Array) and dst._read_only:
        raise ValueError("the destination array is read-only")
    if isinstance(dst, np.ndarray) and not dst.flags.writeable:
        raise ValueError("the destination NumPy array is read-only")
    d_host = dst if isinstance(dst, np.ndarray) else dst._host
    s_host = src if isinstance(src, np.ndarray) else src._host
    if d_host is not None and s_host is not None:
        np.copyto(d_host, s_host, casting="no")
        return
    nbytes = int(np.prod(dst.shape, dtype=np.int64)) * dst.dtype.itemsize
    if d_host is not None:
        d_host = _contiguous(d_host, "destination")
    if s_host is not None:
        s_host = _contiguous(s_host, "source")
    cuda_dev = dst.device if d_host is None else src.device
    core_stream = _stream_of(cuda_dev, stream)
    if nbytes == 0:
        return
    if cuda_dev.is_opencl:
        if (d_host is None and not dst.device.is_opencl) or (s_host is None and not src.device.is_opencl):
            raise ValueError(f"copy between {src.device} and {dst.device}: go through the CPU")
        opencl.copy(core_stream, dst._buffer if d_host is None else d_host,
                    src._buffer if s_host is None else s_host, nbytes)
        return
    dst_buf = dst._buffer if d_host is None else cuda.wrap(d_host.ctypes.data, nbytes, d_host)
    src_buf = src._buffer if s_host is None else cuda.wrap(s_host.ctypes.data, nbytes, s_host)
    cuda.copy(dst_buf, src_buf, core_stream)
