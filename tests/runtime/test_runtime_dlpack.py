"""DLPack in and out of runtime arrays, with NumPy and with tvm-ffi, on the CPU; and
``tirc.runtime.load`` on a small library speaking tvm-ffi's calling convention."""
from __future__ import annotations

import gc
import shutil
import subprocess
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

from tirc import runtime as rt
from tirc.runtime import dlpack

DTYPES = ["bool", "int8", "int32", "int64", "uint16", "float16", "float32", "float64"]
ML_DTYPES = ["bfloat16", "float8_e4m3fn", "float8_e5m2"]


def values(dtype: str, shape=(2, 3)) -> np.ndarray:
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 5) \
        .astype(rt.as_dtype(dtype))


@pytest.fixture
def no_leaks():
    gc.collect()
    before = dlpack.live_exports()
    yield
    gc.collect()
    assert dlpack.live_exports() == before, "an exported DLPack tensor was never released"


# -- NumPy -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_reads_arrays_through_dlpack(dtype, no_leaks):
    arr = rt.from_numpy(values(dtype))
    assert arr.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(arr)
    assert view.dtype == np.dtype(dtype) and np.array_equal(view, values(dtype))
    assert view.ctypes.data == arr.data_ptr  # shared, not copied
    del view


def test_numpy_view_shares_memory(no_leaks):
    arr = rt.from_numpy(np.zeros((2, 2), np.float32))
    view = np.from_dlpack(arr)
    arr.copyfrom(np.ones((2, 2), np.float32))
    assert view.sum() == 4.0
    del view


@pytest.mark.parametrize("dtype", DTYPES + ML_DTYPES)
def test_from_dlpack_of_numpy_shares_memory(dtype):
    if dtype in ML_DTYPES:
        pytest.importorskip("ml_dtypes")
    src = values(dtype)
    arr = rt.from_dlpack(src)
    assert arr.shape == src.shape and arr.dtype == src.dtype
    assert arr.data_ptr == src.ctypes.data
    assert np.array_equal(arr.to_numpy(), src)


def test_from_dlpack_through_capsules(no_leaks):
    src = np.arange(6, dtype=np.int32).reshape(2, 3)
    for capsule in (src.__dlpack__(), src.__dlpack__(max_version=(1, 0))):
        arr = rt.from_dlpack(capsule)
        assert arr.data_ptr == src.ctypes.data
        assert np.array_equal(arr.to_numpy(), src)
    used = src.__dlpack__()
    rt.from_dlpack(used)
    with pytest.raises(BufferError, match="consumed only once"):
        rt.from_dlpack(used)


def test_from_dlpack_refuses_strided_and_foreign_things():
    with pytest.raises(ValueError, match="C-contiguous"):
        rt.from_dlpack(np.zeros((4, 4), np.float32)[:, ::2])

    class Strided:  # a producer that exports strides through DLPack
        def __dlpack__(self, **kwargs):
            return np.zeros((4, 4), np.float32)[:, ::2].__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return 1, 0

    with pytest.raises(ValueError, match="strides"):
        rt.from_dlpack(Strided())
    with pytest.raises(TypeError, match="not list"):
        rt.from_dlpack([1, 2])


def test_from_dlpack_of_an_array_is_the_array():
    arr = rt.empty(3, "int8")
    assert rt.from_dlpack(arr) is arr


def test_round_trip_through_versioned_and_legacy_capsules(no_leaks):
    arr = rt.from_numpy(values("float32"))
    for kwargs in ({}, {"max_version": (1, 0)}, {"max_version": (1, 3)}):
        back = rt.from_dlpack(arr.__dlpack__(**kwargs))
        assert back.data_ptr == arr.data_ptr
        assert np.array_equal(back.to_numpy(), arr.to_numpy())
        del back


def test_unconsumed_capsules_release_their_array(no_leaks):
    arr = rt.from_numpy(values("int64"))
    capsule = arr.__dlpack__()
    versioned = arr.__dlpack__(max_version=(1, 0))
    assert dlpack.live_exports() >= 2
    del capsule, versioned


def test_export_copy_and_device_requests(no_leaks):
    arr = rt.from_numpy(values("int16"))
    copied = rt.from_dlpack(arr.__dlpack__(copy=True))
    assert copied.data_ptr != arr.data_ptr
    assert np.array_equal(copied.to_numpy(), arr.to_numpy())
    same = rt.from_dlpack(arr.__dlpack__(dl_device=(1, 0), copy=False))
    assert same.data_ptr == arr.data_ptr
    with pytest.raises(BufferError, match="cannot export"):
        arr.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="without a copy"):
        arr.__dlpack__(dl_device=(2, 0), copy=False)
    del copied, same


def test_read_only_export_is_flagged(no_leaks):
    frozen = values("float32")
    frozen.flags.writeable = False
    arr = rt.from_dlpack(frozen)
    with pytest.raises(BufferError, match="read-only"):
        arr.__dlpack__()
    view = np.from_dlpack(arr)  # NumPy asks for a versioned capsule
    assert not view.flags.writeable and np.array_equal(view, frozen)
    del view


def test_zero_size_and_scalar_arrays(no_leaks):
    for shape in [(0,), (3, 0), ()]:
        arr = rt.empty(shape, "float32")
        if arr.nbytes:
            arr.copyfrom(np.full(shape, 7.0, np.float32))
        view = np.from_dlpack(arr)
        assert view.shape == shape
        back = rt.from_dlpack(view)
        assert back.shape == shape
        del view, back


# -- tvm-ffi -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + ML_DTYPES)
def test_tvm_ffi_round_trip(dtype, no_leaks):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    if dtype in ML_DTYPES:
        pytest.importorskip("ml_dtypes")
    arr = rt.from_numpy(values(dtype))
    tensor = tvm_ffi.from_dlpack(arr)
    assert tuple(tensor.shape) == arr.shape and str(tensor.dtype) == dtype
    assert tensor.data_ptr() == arr.data_ptr
    back = rt.from_dlpack(tensor)
    assert back.data_ptr == arr.data_ptr and back.dtype == arr.dtype
    assert np.array_equal(back.to_numpy().astype(np.float32),
                          values(dtype).astype(np.float32))
    del tensor, back


def test_arrays_and_devices_pass_straight_into_tvm_ffi_functions(no_leaks):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    describe = tvm_ffi.convert(lambda t: (tuple(t.shape), str(t.dtype), t.data_ptr()))
    arr = rt.from_numpy(np.ones((2, 5), np.int16))
    assert describe(arr) == ((2, 5), "int16", arr.data_ptr)
    echo = tvm_ffi.get_global_func("testing.echo")
    dev = echo(rt.device("cuda", 1))  # a Device travels as a DLDevice
    assert str(dev) == "cuda:1"
    returned = echo(arr)
    assert rt.from_dlpack(returned).data_ptr == arr.data_ptr
    del returned


def test_use_stream_sets_tvm_ffis_current_stream():
    tvm_ffi = pytest.importorskip("tvm_ffi")
    stream = rt.cpu().create_stream()
    with rt.use_stream(stream):
        assert tvm_ffi.get_raw_stream(tvm_ffi.device("cpu:0")) == stream.handle
    with pytest.raises(TypeError, match="Stream"):
        rt.use_stream(0)


# -- load --------------------------------------------------------------------------------

ADD_ONE_C = r"""
#include <tvm/ffi/c_api.h>
static DLTensor* tensor(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFIDLTensorPtr) return (DLTensor*)a->v_ptr;
  if (a->type_index == kTVMFFITensor) return (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  return 0;
}
int __tvm_ffi_add_one(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  DLTensor* x = n == 2 ? tensor(&args[0]) : 0;
  DLTensor* y = n == 2 ? tensor(&args[1]) : 0;
  if (!x || !y) return -1;
  int64_t size = 1;
  for (int i = 0; i < x->ndim; ++i) size *= x->shape[i];
  for (int64_t i = 0; i < size; ++i) ((float*)y->data)[i] = ((float*)x->data)[i] + 1.0f;
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  return 0;
}
"""


@pytest.fixture(scope="module")
def add_one_library(tmp_path_factory):
    tvm_ffi = pytest.importorskip("tvm_ffi")
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler")
    include = Path(tvm_ffi.__file__).parent / "include"
    if not (include / "tvm" / "ffi" / "c_api.h").exists():
        pytest.skip("tvm-ffi's C headers are not installed")
    folder = tmp_path_factory.mktemp("lib")
    (folder / "add_one.c").write_text(ADD_ONE_C)
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", f"-I{include}", "add_one.c",
                    "-o", "add_one.so"], cwd=folder, check=True)
    return folder / "add_one.so"


def test_load_runs_a_function_on_arrays(add_one_library, no_leaks):
    mod = rt.load(add_one_library)
    x = rt.from_numpy(np.arange(5, dtype=np.float32))
    y = rt.empty(5, "float32")
    mod["add_one"](x, y)
    assert y.to_numpy().tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    z = np.zeros(5, np.float32)  # NumPy arrays pass too
    mod["add_one"](y.to_numpy(), z)
    assert z.tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert callable(rt.load(str(add_one_library))["add_one"])


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        rt.load(tmp_path / "missing.so")
    with pytest.raises(rt.LoadError, match="directory"):
        rt.load(tmp_path)
    pytest.importorskip("tvm_ffi")
    junk = tmp_path / "junk.so"
    junk.write_text("not a library")
    with pytest.raises(rt.LoadError, match="cannot load"):
        rt.load(junk)
