"""DLPack capsules, made and taken apart with ctypes (the structs of ``dlpack.h`` 1.x).

NumPy can export and import only its own dtypes and only CPU memory; runtime arrays
also hold bfloat16/float8 elements and CUDA memory, so they build their capsules here.
A capsule holds a ``DLManagedTensor`` (name ``dltensor``) or, when the consumer asks for
``max_version >= (1, 0)``, a ``DLManagedTensorVersioned`` (``dltensor_versioned``). The
managed tensor keeps the producing object alive until the consumer calls its deleter;
a capsule nobody consumed calls the deleter when it is freed.
"""
from __future__ import annotations

import ctypes
from ctypes import (
    POINTER,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

import numpy as np

from tirc.records import record
from tirc.runtime import dtypes

kDLCPU, kDLCUDA, kDLCUDAHost, kDLOpenCL, kDLCUDAManaged = 1, 2, 3, 4, 13
READ_ONLY = 1 << 0
VERSION = (1, 0)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p), ("deleter", _Deleter),
                ("flags", c_uint64), ("dl_tensor", DLTensor)]


# Capsule names; the objects live as long as the module, as capsule names must.
_NAME = b"dltensor"
_NAME_V = b"dltensor_versioned"
_USED = b"used_dltensor"
_USED_V = b"used_dltensor_versioned"

# Our own prototypes of the capsule C API (ctypes.pythonapi's shared attributes are
# left alone). The raw ones take a PyObject* as an address: the capsule destructor
# runs while the capsule's reference count is zero and must not touch it.
_api = ctypes.pythonapi
_Destructor = ctypes.CFUNCTYPE(None, c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_char_p, _Destructor)(
    ("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(c_int, ctypes.py_object, c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(c_int, ctypes.py_object, c_char_p)(("PyCapsule_SetName", _api))
_set_destructor = ctypes.PYFUNCTYPE(c_int, ctypes.py_object, c_void_p)(
    ("PyCapsule_SetDestructor", _api))
_is_valid_raw = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(
    ("PyCapsule_GetPointer", _api))

# Managed tensors handed out and not yet deleted: address -> (struct, shape, owner).
_LIVE: dict[int, tuple] = {}


@_Deleter
def _delete_managed(address):
    live = _LIVE  # may already be gone when a consumer lets go at interpreter exit
    if live is not None:
        live.pop(address, None)


@_Destructor
def _capsule_destructor(capsule):
    for name, struct in ((_NAME, DLManagedTensor), (_NAME_V, DLManagedTensorVersioned)):
        if _is_valid_raw(capsule, name):
            address = _get_pointer_raw(capsule, name)
            struct.from_address(address).deleter(address)
            return


def _shape_strides(shape: tuple[int, ...]):
    ndim = len(shape)
    strides, step = [0] * ndim, 1
    for i in range(ndim - 1, -1, -1):
        strides[i] = step
        step *= shape[i]
    return (c_int64 * ndim)(*shape), (c_int64 * ndim)(*strides)


def export(owner, data: int, shape: tuple[int, ...], dtype: np.dtype, device: tuple[int, int],
           *, versioned: bool = False, read_only: bool = False):
    """A new capsule over ``data`` (compact, row-major); ``owner`` stays alive until the
    consumer is done with it."""
    shape_arr, strides_arr = _shape_strides(shape)
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = managed.dl_tensor
    t.data = data if int(np.prod(shape, dtype=np.int64)) else None
    t.device = DLDevice(*device)
    t.ndim = len(shape)
    t.dtype = DLDataType(*dtypes.to_dlpack(dtype))
    t.shape = ctypes.cast(shape_arr, POINTER(c_int64))
    t.strides = ctypes.cast(strides_arr, POINTER(c_int64))
    t.byte_offset = 0
    managed.deleter = _delete_managed
    if versioned:
        managed.version = DLPackVersion(*VERSION)
        managed.flags = READ_ONLY if read_only else 0
    address = ctypes.addressof(managed)
    _LIVE[address] = (managed, shape_arr, strides_arr, owner)
    try:
        return _capsule_new(address, _NAME_V if versioned else _NAME, _capsule_destructor)
    except BaseException:
        _LIVE.pop(address, None)
        raise


def live_exports() -> int:
    """How many exported tensors are still held by a consumer (for tests)."""
    return len(_LIVE)


@record
class Imported:
    """What a consumed capsule describes; ``owner`` releases it when freed."""

    data: int
    shape: tuple[int, ...]
    dtype: np.dtype
    device: tuple[int, int]
    read_only: bool
    owner: _Release

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


class _Release:
    """Calls a managed tensor's deleter once, when the last user lets go. Its
    ``__array_interface__`` lets NumPy view CPU memory while keeping it alive."""

    def __init__(self, address: int, struct):
        self._address = address
        self._struct = struct

    def release(self):
        address, self._address = self._address, None
        if address:
            deleter = self._struct.from_address(address).deleter
            if deleter:
                deleter(address)

    def __del__(self):
        self.release()


def consume(capsule) -> Imported:
    """Take ownership of the tensor in a ``dltensor``/``dltensor_versioned`` capsule.
    Raises BufferError/ValueError (after releasing it) for what runtime arrays cannot
    hold: vector lanes, unsupported dtypes, non-compact strides."""
    if _is_valid(capsule, _NAME_V):
        name, used, struct = _NAME_V, _USED_V, DLManagedTensorVersioned
    elif _is_valid(capsule, _NAME):
        name, used, struct = _NAME, _USED, DLManagedTensor
    else:
        raise BufferError("expected an unconsumed DLPack capsule ('dltensor' or "
                          "'dltensor_versioned'); a capsule can be consumed only once")
    address = _get_pointer(capsule, name)
    _set_name(capsule, used)
    _set_destructor(capsule, None)
    release = _Release(address, struct)
    managed = struct.from_address(address)
    read_only = False
    if struct is DLManagedTensorVersioned:
        if managed.version.major != VERSION[0]:
            release.release()
            raise BufferError(f"DLPack version {managed.version.major}."
                              f"{managed.version.minor} is not supported (need 1.x)")
        read_only = bool(managed.flags & READ_ONLY)
    t = managed.dl_tensor
    try:
        dt = dtypes.from_dlpack(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        shape = tuple(int(t.shape[i]) for i in range(t.ndim))
        compact = _shape_strides(shape)[1]
        if t.strides and 0 not in shape and any(
                shape[i] != 1 and int(t.strides[i]) != s for i, s in enumerate(compact)):
            strides = tuple(int(t.strides[i]) for i in range(t.ndim))
            raise ValueError(f"DLPack tensor with shape {shape} has strides {strides}; "
                             f"runtime arrays need compact row-major data "
                             f"(make the source contiguous first)")
    except (ValueError, TypeError):
        release.release()
        raise
    data = (t.data or 0) + t.byte_offset
    return Imported(data, shape, dt, (t.device.device_type, t.device.device_id),
                    read_only, release)


def host_view(imported: Imported) -> np.ndarray:
    """A NumPy array over CPU memory of an imported tensor, keeping it alive."""
    if imported.nbytes == 0 or not imported.data:
        imported.owner.release()
        return np.empty(imported.shape, imported.dtype)
    imported.owner.__array_interface__ = {
        "version": 3, "shape": (imported.nbytes,), "typestr": "|u1",
        "data": (imported.data, imported.read_only)}
    raw = np.asarray(imported.owner)
    return raw.view(imported.dtype).reshape(imported.shape)
