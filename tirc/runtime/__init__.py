"""tirc's runtime: a small Device API for CPU, CUDA and OpenCL, built on cuda-python,
pyopencl, NumPy and DLPack, and the loader for what ``tirc build`` writes.

    from tirc import runtime as rt
    dev = rt.device("cuda", 0)
    a = rt.from_numpy(np.arange(1024, dtype="float32"), dev)
    mod = rt.load("out/add.so")
    mod["add"](a, b, c)            # arrays pass to tvm-ffi functions through DLPack
    c.to_numpy()

Importing this package imports no CUDA code; CUDA is loaded when first used, and its
absence is reported as :class:`NoCudaDevice`.
"""
from tirc.runtime.arrays import Array, copyto, empty, from_dlpack, from_numpy
from tirc.runtime.devices import (
    Device,
    Event,
    Stream,
    cpu,
    device,
    synchronize,
    use_stream,
)
from tirc.runtime.devices import cuda_device as cuda
from tirc.runtime.dtypes import as_dtype
from tirc.runtime.errors import (
    CudaError,
    IncompatibleDeviceImage,
    LoadError,
    NoCudaDevice,
    NoOpenCLDevice,
    OpenCLError,
    RuntimeAPIError,
)
from tirc.runtime.loader import check_device_image, load

__all__ = [
    "Array", "CudaError", "Device", "Event", "IncompatibleDeviceImage", "LoadError",
    "NoCudaDevice", "NoOpenCLDevice", "OpenCLError", "RuntimeAPIError", "Stream", "as_dtype", "check_device_image", "copyto",
    "cpu", "cuda", "device", "empty", "from_dlpack", "from_numpy", "load", "synchronize",
    "use_stream",
]
