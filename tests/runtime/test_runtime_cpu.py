"""tirc.runtime on the CPU: devices, attribute queries, arrays, dtypes, copies, streams,
events, and the errors for bad shapes, dtypes and devices. Needs no GPU."""
from __future__ import annotations

import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")

from tirc import runtime as rt

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
ML_DTYPES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]


def sample(dtype: str, shape=(3, 4)) -> np.ndarray:
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7
    return values.astype(rt.as_dtype(dtype))


# -- devices -----------------------------------------------------------------------------

def test_device_spellings():
    assert rt.device("cpu") == rt.device("cpu", 0) == rt.device("cpu:0") == rt.cpu()
    assert rt.device("llvm") == rt.cpu()
    assert rt.device("cuda", 1) == rt.device("cuda:1") == rt.device("gpu", 1) == rt.cuda(1)
    assert rt.device("cuda") == rt.device("cuda", 0)
    assert rt.device(2, 3) == rt.device("cuda", 3)
    assert rt.device(1) == rt.cpu()
    dev = rt.device("cuda", 2)
    assert rt.device(dev) is dev
    assert str(dev) == "cuda:2" and repr(dev) == "device('cuda', 2)"
    assert dev.__dlpack_device__() == (2, 2)
    assert rt.cpu().__dlpack_device__() == (1, 0)
    assert len({rt.device("cuda:0"), rt.device("cuda", 0), rt.cpu()}) == 2


@pytest.mark.parametrize("args, error, text", [
    (("tpu",), ValueError, "unknown device kind 'tpu'"),
    (("cuda:x",), ValueError, "bad device index"),
    (("cuda:1", 1), ValueError, "already names an index"),
    (("cuda", -1), ValueError, ">= 0"),
    (("cuda", "0"), TypeError, "index must be an int"),
    (("cuda", True), TypeError, "index must be an int"),
    (("cpu", 1), ValueError, "one CPU device"),
    ((3.0,), TypeError, "device kind must be a string"),
    ((7,), ValueError, "DLPack device type 7"),
])
def test_bad_devices(args, error, text):
    with pytest.raises(error, match=text):
        rt.device(*args)


def test_cpu_attributes():
    cpu = rt.cpu()
    assert cpu.exists
    assert isinstance(cpu.name, str) and cpu.name
    # Queries that do not apply to a CPU return None.
    for query in ("compute_capability", "arch", "max_threads_per_block", "warp_size",
                  "max_shared_memory_per_block", "max_shared_memory_per_block_optin",
                  "multiprocessor_count"):
        assert getattr(cpu, query) is None, query
    total, free = cpu.total_memory, cpu.free_memory
    assert total is None or total > 0
    assert free is None or (total is not None and 0 <= free <= total)
    attrs = cpu.attributes()
    assert attrs["warp_size"] is None and attrs["name"] == cpu.name


def test_cpu_streams_and_events():
    cpu = rt.cpu()
    stream = cpu.create_stream()
    assert stream.device == cpu and stream.handle == 0
    assert not hasattr(stream, "__cuda_stream__")
    start = stream.record()
    sum(range(20000))
    end = cpu.create_event()
    stream.wait(start)
    end.record(stream)
    stream.synchronize()
    cpu.synchronize()
    rt.synchronize("cpu")
    assert start.done and end.done
    ms = start.elapsed_ms(end)
    assert isinstance(ms, float) and ms >= 0.0
    assert cpu.default_stream.device == cpu


def test_event_misuse():
    cpu = rt.cpu()
    never = cpu.create_event()
    with pytest.raises(RuntimeError, match="never recorded"):
        never.synchronize()
    with pytest.raises(RuntimeError, match="never recorded"):
        never.elapsed_ms(cpu.create_stream().record())
    a = cpu.create_event(timing=False).record()
    b = cpu.create_event(timing=False).record()
    with pytest.raises(ValueError, match="timing=True"):
        a.elapsed_ms(b)
    with pytest.raises(TypeError, match="takes an Event"):
        a.elapsed_ms(1.0)


# -- arrays ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_round_trip(dtype):
    src = sample(dtype)
    arr = rt.from_numpy(src)
    assert arr.shape == (3, 4) and arr.ndim == 2 and arr.size == 12 and len(arr) == 3
    assert arr.dtype == np.dtype(dtype) and str(arr.dtype) == dtype
    assert arr.device == rt.cpu()
    assert arr.nbytes == src.nbytes
    out = arr.to_numpy()
    assert out.dtype == src.dtype and np.array_equal(out, src)
    # from_numpy copies, to_numpy copies: neither shares memory with the array.
    assert not np.shares_memory(out, src)
    out[0, 0] = out[0, 1]
    assert np.array_equal(arr.numpy(), src)


@pytest.mark.parametrize("dtype", ML_DTYPES)
def test_narrow_float_arrays(dtype):
    pytest.importorskip("ml_dtypes")
    src = sample(dtype, (5,))
    arr = rt.from_numpy(src)
    assert str(arr.dtype) == dtype and arr.nbytes == src.nbytes
    assert np.array_equal(arr.to_numpy().astype(np.float32), src.astype(np.float32))


def test_empty_shapes_and_alignment():
    for shape, expect in [((2, 3), (2, 3)), (5, (5,)), ([4], (4,)), ((), ()),
                          ((0, 3), (0, 3)), ((np.int64(2), 2), (2, 2))]:
        arr = rt.empty(shape, "float32")
        assert arr.shape == expect and arr.to_numpy().shape == expect
        assert arr.data_ptr % rt.arrays.ALIGNMENT == 0 if arr.nbytes else True
    scalar = rt.from_numpy(np.float64(2.5))
    assert scalar.shape == () and scalar.to_numpy() == 2.5
    with pytest.raises(TypeError, match="0-d"):
        len(scalar)
    assert rt.empty((2,), dtype=np.float16).dtype == np.float16
    assert rt.empty((2,), dtype=np.dtype("int8")).dtype == np.int8
    assert rt.empty((2,), dtype=bool).dtype == np.bool_


def test_from_numpy_accepts_lists_and_strided_arrays():
    assert rt.from_numpy([[1, 2], [3, 4]]).to_numpy().tolist() == [[1, 2], [3, 4]]
    strided = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    assert np.array_equal(rt.from_numpy(strided).to_numpy(), strided)
    fortran = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert np.array_equal(rt.from_numpy(fortran).to_numpy(), fortran)


@pytest.mark.parametrize("shape, error, text", [
    ((2, -1), ValueError, "negative dimension"),
    ((2.0, 3), TypeError, "not an integer"),
    (("2",), TypeError, "not an integer"),
    ((True, 2), TypeError, "holds a bool"),
    (None, TypeError, "shape must be an int or a sequence"),
    (2.5, TypeError, "shape must be an int or a sequence"),
])
def test_bad_shapes(shape, error, text):
    with pytest.raises(error, match=text):
        rt.empty(shape, "float32")


@pytest.mark.parametrize("dtype, error, text", [
    ("float33", ValueError, "unknown dtype 'float33'"),
    ("float32x4", ValueError, "vector lanes"),
    ("float4_e2m1fn", ValueError, "sub-byte"),
    ("handle", ValueError, "unknown dtype"),
    (np.complex64, ValueError, "not supported"),
    (np.dtype("datetime64[s]"), ValueError, "not supported"),
    (3, TypeError, "dtype must be"),
])
def test_bad_dtypes(dtype, error, text):
    with pytest.raises(error, match=text):
        rt.empty((2,), dtype)


def test_dtype_names_and_aliases():
    assert rt.as_dtype("float32") == np.float32
    assert rt.as_dtype(" int8 ") == np.int8
    pytest.importorskip("ml_dtypes")
    assert str(rt.as_dtype("e4m3_float8")) == "float8_e4m3fn"
    assert str(rt.as_dtype("e5m2_float8")) == "float8_e5m2"
    from tirc.ir.dtype import parse_dtype
    assert rt.as_dtype(parse_dtype("bfloat16")) == rt.as_dtype("bfloat16")


def test_unsupported_numpy_input():
    with pytest.raises(ValueError, match="not supported"):
        rt.from_numpy(np.zeros(3, np.complex128))
    with pytest.raises(ValueError, match="unknown dtype|not supported"):
        rt.from_numpy(np.array(["a", "b"]))


# -- copies ------------------------------------------------------------------------------

def test_host_copies_every_way():
    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = rt.empty((2, 3), "float32")
    b = rt.empty((2, 3), "float32")
    stream = rt.cpu().create_stream()
    rt.copyto(a, src, stream=stream)          # NumPy -> Array
    rt.copyto(b, a)                           # Array -> Array
    out = np.zeros((2, 3), np.float32)
    rt.copyto(out, b)                         # Array -> NumPy
    assert np.array_equal(out, src)
    c = b.to("cpu")
    assert c.device == rt.cpu() and np.array_equal(c.to_numpy(), src)
    assert c.data_ptr != b.data_ptr
    d = rt.empty((2, 3), "float32").copyfrom(c)
    assert np.array_equal(d.to_numpy(stream=stream), src)
    rt.copyto(d, np.zeros((2, 3), np.float32))
    assert not d.to_numpy().any()
    rt.copyto(np.zeros((3, 2), np.float32).T, a)  # a host-to-host copy may be strided
    rt.copyto(rt.empty((0, 4), "int8"), np.zeros((0, 4), np.int8))


@pytest.mark.parametrize("dst, src, error, text", [
    (lambda: rt.empty((2, 3), "float32"), lambda: rt.empty((3, 2), "float32"),
     ValueError, "different shape or dtype"),
    (lambda: rt.empty((2, 3), "float32"), lambda: rt.empty((2, 3), "float64"),
     ValueError, "different shape or dtype"),
    (lambda: rt.empty((2, 3), "float32"), lambda: [[0.0] * 3] * 2, TypeError,
     "copyto takes Arrays or NumPy arrays, not list"),
    (lambda: "x", lambda: rt.empty((2, 3), "float32"), TypeError, "not str"),
])
def test_bad_copies(dst, src, error, text):
    with pytest.raises(error, match=text):
        rt.copyto(dst(), src())


def test_copy_into_read_only():
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        rt.copyto(frozen, rt.empty(3, "float32"))
    shared = rt.from_dlpack(frozen)
    assert shared.read_only
    with pytest.raises(ValueError, match="read-only"):
        shared.copyfrom(np.ones(3, np.float32))


def test_stream_must_be_a_runtime_stream():
    with pytest.raises(TypeError, match="tirc.runtime Stream"):
        rt.empty((2,), "float32").to_numpy(stream=object())
    with pytest.raises(ValueError, match="recorded on a stream of"):
        rt.cpu().create_event().record(rt.Stream(rt.device("cuda", 0)))


# -- import hygiene ----------------------------------------------------------------------

def test_import_loads_no_cuda_and_no_tvm_ffi():
    code = ("import sys, tirc.runtime as rt; rt.from_numpy([1.0]).to_numpy(); "
            "rt.device('cuda', 0); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('cuda', 'tvm_ffi')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
