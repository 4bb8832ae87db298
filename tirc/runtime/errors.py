"""The runtime's exceptions. CUDA failures carry the driver's error name
(``CUDA_ERROR_OUT_OF_MEMORY``) so a user can look it up; nothing here imports CUDA."""
from __future__ import annotations


class RuntimeAPIError(RuntimeError):
    """Base class of every error tirc.runtime raises on its own account."""


class CudaError(RuntimeAPIError):
    """A CUDA driver call failed. ``name`` is the ``CUresult`` name
    (``CUDA_ERROR_INVALID_VALUE``), ``code`` its number; both are None when the failure
    did not come with a driver status (a missing library, say)."""

    def __init__(self, message: str, name: str | None = None, code: int | None = None):
        super().__init__(message)
        self.name = name
        self.code = code


class NoCudaDevice(CudaError):
    """No CUDA device can be used: cuda-python is missing, the driver library
    (libcuda) cannot be loaded, the driver reports no device, or the ordinal asked
    for is out of range."""


class OpenCLError(RuntimeAPIError):
    """An OpenCL call failed; ``code`` is its ``cl_int`` status when there was one."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class NoOpenCLDevice(OpenCLError):
    """No OpenCL device can be used: pyopencl is missing, no platform (ICD) is
    installed, or the ordinal asked for is out of range."""


class IncompatibleDeviceImage(RuntimeAPIError):
    """A device image (cubin or PTX) was built for an architecture that the device
    cannot run."""


class LoadError(RuntimeAPIError):
    """A built library could not be loaded."""
