"""Devices, streams and events: a small Device API for three device types, CPU, CUDA
and OpenCL (docs/codegen-runtime.md).

``device("cuda", 0)`` (or ``device("cuda:0")``) is a cheap value; nothing touches the
driver until an attribute, a stream, an event or memory is asked for. Attribute queries
return ``None`` where they do not apply (a CPU has no warp size) and raise
:class:`NoCudaDevice` when the device is not there.
"""
from __future__ import annotations

import os
import platform
import time

from tirc.records import record
from tirc.runtime import cudadrv as cuda
from tirc.runtime import opencldrv as opencl
from tirc.runtime.dlpack import kDLCPU, kDLCUDA, kDLOpenCL

KINDS = {"cpu": "cpu", "llvm": "cpu", "cuda": "cuda", "gpu": "cuda", "opencl": "opencl",
         "cl": "opencl"}
_DLPACK_TYPES = {"cpu": kDLCPU, "cuda": kDLCUDA, "opencl": kDLOpenCL}


@record(frozen=True, slots=True)
class Device:
    """A device: ``kind`` is ``"cpu"``, ``"cuda"`` or ``"opencl"``, ``index`` its ordinal."""

    kind: str
    index: int = 0

    def __str__(self) -> str:
        return f"{self.kind}:{self.index}"

    def __repr__(self) -> str:
        return f"device({self.kind!r}, {self.index})"

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    @property
    def is_opencl(self) -> bool:
        return self.kind == "opencl"

    @property
    def dlpack_device_type(self) -> int:
        return _DLPACK_TYPES[self.kind]

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack's (device_type, device_id); tvm-ffi takes such objects as devices."""
        return self.dlpack_device_type, self.index

    # -- attribute queries ---------------------------------------------------------
    @property
    def exists(self) -> bool:
        """Whether the device is present and usable; never raises."""
        if self.kind == "opencl":
            return opencl.exists(self.index)
        return True if self.kind == "cpu" else cuda.exists(self.index)

    @property
    def name(self) -> str:
        if self.kind == "opencl":
            return opencl.name(self.index)
        return _cpu_name() if self.kind == "cpu" else cuda.name(self.index)

    @property
    def compute_capability(self) -> tuple[int, int] | None:
        """(major, minor) of a CUDA device."""
        return cuda.compute_capability(self.index) if self.kind == "cuda" else None

    @property
    def arch(self) -> str | None:
        """``sm_XY`` of a CUDA device, as targets spell it."""
        cc = self.compute_capability
        return None if cc is None else f"sm_{cc[0]}{cc[1]}"

    def _prop(self, field: str):
        if self.kind == "opencl":
            return opencl.info(self.index).get(field)
        return None if self.kind == "cpu" else int(getattr(cuda.properties(self.index), field))

    @property
    def max_threads_per_block(self) -> int | None:
        return self._prop("max_threads_per_block")

    @property
    def max_shared_memory_per_block(self) -> int | None:
        """Bytes of shared memory a block gets without opting in."""
        return self._prop("max_shared_memory_per_block")

    @property
    def max_shared_memory_per_block_optin(self) -> int | None:
        """Bytes of shared memory a block may get after opting in (dynamic shared memory
        beyond the default limit)."""
        return self._prop("max_shared_memory_per_block_optin")

    @property
    def warp_size(self) -> int | None:
        return self._prop("warp_size")

    @property
    def multiprocessor_count(self) -> int | None:
        return self._prop("multiprocessor_count")

    @property
    def total_memory(self) -> int | None:
        """Bytes of memory (host RAM for the CPU)."""
        if self.kind == "cpu":
            return _sysconf_bytes("SC_PHYS_PAGES")
        if self.kind == "opencl":
            return opencl.info(self.index)["total_memory"]
        return cuda.memory_info(self.index)[1]

    @property
    def free_memory(self) -> int | None:
        if self.kind == "cpu":
            return _sysconf_bytes("SC_AVPHYS_PAGES")
        if self.kind == "opencl":
            return None
        return cuda.memory_info(self.index)[0]

    def attributes(self) -> dict:
        """Every attribute query at once (a summary for tools and reports)."""
        names = ("name", "compute_capability", "max_threads_per_block",
                 "max_shared_memory_per_block", "max_shared_memory_per_block_optin",
                 "warp_size", "multiprocessor_count", "free_memory", "total_memory")
        return {n: getattr(self, n) for n in names}

    # -- actions ---------------------------------------------------------------------
    def set_current(self) -> Device:
        """Make this device the one the calling thread's CUDA work goes to."""
        if self.kind == "cuda":
            cuda.core_device(self.index)
        return self

    def synchronize(self) -> None:
        """Wait for all work queued on the device."""
        if self.kind == "cuda":
            cuda.synchronize(self.index)
        elif self.kind == "opencl":
            opencl.synchronize(self.index)

    @property
    def default_stream(self) -> Stream:
        if self.kind == "cpu":
            return Stream(self)
        if self.kind == "opencl":
            return OpenCLStream(self, opencl.context(self.index)[1])
        return CudaStream(self, cuda.default_stream(self.index))

    def create_stream(self) -> Stream:
        """A new stream (CUDA: a non-blocking stream; CPU: work runs at once, so its
        stream only keeps the API uniform)."""
        if self.kind == "cpu":
            return Stream(self)
        if self.kind == "opencl":
            return OpenCLStream(self, opencl.create_queue(self.index))
        return CudaStream(self, cuda.create_stream(self.index))

    def create_event(self, timing: bool = True) -> Event:
        return Event(self, timing)


def device(kind="cpu", index: int | None = None) -> Device:
    """``device("cpu")``, ``device("cuda", 1)``, ``device("cuda:1")``, a DLPack pair
    ``device(2, 0)``, or a Device (returned as is)."""
    if isinstance(kind, Device):
        if index is not None and index != kind.index:
            raise ValueError(f"device {kind} given with a different index {index}")
        return kind
    if isinstance(kind, int) and not isinstance(kind, bool):
        by_code = {code: name for name, code in _DLPACK_TYPES.items()}
        if kind not in by_code:
            raise ValueError(f"DLPack device type {kind} is not supported (CPU is "
                             f"{kDLCPU}, CUDA is {kDLCUDA}, OpenCL is {kDLOpenCL})")
        kind = by_code[kind]
    if not isinstance(kind, str):
        raise TypeError(f"device kind must be a string like 'cuda' or 'cuda:0', "
                        f"not {type(kind).__name__}")
    text = kind.strip().lower()
    if ":" in text:
        text, _, number = text.partition(":")
        if index is not None:
            raise ValueError(f"device '{kind}' already names an index; do not pass "
                             f"index={index} as well")
        if not number.isdigit():
            raise ValueError(f"bad device index in '{kind}' (expected e.g. 'cuda:0')")
        index = int(number)
    if text not in KINDS:
        raise ValueError(f"unknown device kind '{kind}'; known: cpu, cuda, opencl")
    index = 0 if index is None else index
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"device index must be an int, not {type(index).__name__}")
    if index < 0:
        raise ValueError(f"device index must be >= 0, not {index}")
    kind = KINDS[text]
    if kind == "cpu" and index != 0:
        raise ValueError(f"there is one CPU device, cpu:0; cpu:{index} does not exist")
    return Device(kind, index)


def cpu() -> Device:
    return Device("cpu", 0)


def cuda_device(index: int = 0) -> Device:
    return device("cuda", index)


def synchronize(dev="cpu") -> None:
    device(dev).synchronize()


class Stream:
    """A queue of work on a device. On the CPU work runs when it is issued, so the
    CPU stream is a placeholder with handle 0."""

    def __init__(self, dev: Device, core=None):
        self.device = dev
        self._core = core

    @property
    def handle(self) -> int:
        """The native handle (``CUstream`` address; 0 on the CPU)."""
        return 0

    def synchronize(self) -> None:
        """Wait until everything queued so far has finished."""

    def wait(self, other: Event | Stream) -> None:
        """Make later work on this stream wait for ``other`` (an event or a stream)."""

    def record(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new timing event if None) here and return it."""
        event = event or Event(self.device, timing=True)
        event.record(self)
        return event

    def __repr__(self) -> str:
        return f"Stream({self.device}, handle={self.handle:#x})"


class CudaStream(Stream):
    """A CUDA stream (``cuda.core.Stream``); speaks the ``__cuda_stream__`` protocol,
    so tvm-ffi and cuda-python take it as a stream."""

    @property
    def handle(self) -> int:
        return int(self._core.handle)

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self.handle

    def synchronize(self) -> None:
        with cuda.calls("synchronizing a stream"):
            self._core.sync()

    def wait(self, other) -> None:
        if isinstance(other, Event):
            other._check_recorded()
            target = other._core
        elif isinstance(other, CudaStream):
            target = other._core
        else:
            raise TypeError(f"a CUDA stream can wait for a CUDA event or stream, not "
                            f"{other!r}")
        with cuda.calls("making a stream wait"):
            self._core.wait(target)


class OpenCLStream(Stream):
    """An OpenCL in-order command queue (``pyopencl.CommandQueue``); its handle, the
    ``cl_command_queue``, is what :func:`use_stream` gives tvm-ffi, and what launches of
    a built library are queued on."""

    @property
    def handle(self) -> int:
        return int(self._core.int_ptr)

    def synchronize(self) -> None:
        with opencl.calls("synchronizing a command queue"):
            self._core.finish()

    def wait(self, other) -> None:
        other.synchronize()


class Event:
    """A point in a stream: record it, wait for it, time the work between two events
    (``start.elapsed_ms(end)``). CPU events read a monotonic clock when recorded."""

    def __init__(self, dev: Device, timing: bool = True):
        self.device = device(dev)
        self.timing = timing
        self._core = cuda.create_event(self.device.index, timing) if self.device.is_cuda \
            else None
        self._time_ns: int | None = None
        self._recorded = False

    def record(self, stream: Stream | None = None) -> Event:
        stream = stream if stream is not None else self.device.default_stream
        if stream.device != self.device:
            raise ValueError(f"event on {self.device} recorded on a stream of {stream.device}")
        if self._core is None:
            if self.device.is_opencl:  # a host clock after the queue has drained
                stream.synchronize()
            self._time_ns = time.perf_counter_ns()
        else:
            with cuda.calls("recording an event"):
                stream._core.record(self._core)
        self._recorded = True
        return self

    def _check_recorded(self) -> None:
        if not self._recorded:
            raise RuntimeError("the event was never recorded (call event.record(stream))")

    def synchronize(self) -> None:
        self._check_recorded()
        if self._core is not None:
            with cuda.calls("synchronizing an event"):
                self._core.sync()

    @property
    def done(self) -> bool:
        """Whether the work before the event has finished."""
        self._check_recorded()
        if self._core is None:
            return True
        with cuda.calls("querying an event"):
            return bool(self._core.is_done)

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to ``end``; waits for ``end`` to complete."""
        if not isinstance(end, Event):
            raise TypeError(f"elapsed_ms takes an Event, not {type(end).__name__}")
        if end.device != self.device:
            raise ValueError(f"events on different devices: {self.device} and {end.device}")
        if not (self.timing and end.timing):
            raise ValueError("both events need timing=True to measure elapsed time")
        self._check_recorded()
        end.synchronize()
        if self._core is None:
            return (end._time_ns - self._time_ns) / 1e6
        with cuda.calls("measuring elapsed time"):
            return float(end._core - self._core)

    def __repr__(self) -> str:
        return f"Event({self.device}, recorded={self._recorded})"


def use_stream(stream: Stream):
    """A context manager making ``stream`` the current stream of its device for tvm-ffi
    functions called inside it (the stream built kernels launch on; a Device
    API's SetStream)."""
    if not isinstance(stream, Stream):
        raise TypeError(f"use_stream takes a tirc.runtime Stream, not {type(stream).__name__}")
    try:
        import tvm_ffi
    except ImportError as e:
        raise RuntimeError("use_stream needs tvm-ffi (pip install apache-tvm-ffi)") from e
    return tvm_ffi.use_raw_stream(tvm_ffi.device(str(stream.device)), stream.handle)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _sysconf_bytes(pages: str) -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf(pages))
    except (ValueError, OSError, AttributeError):
        return None
