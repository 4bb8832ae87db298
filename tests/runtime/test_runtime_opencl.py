"""The OpenCL half of the runtime and the launches a built library makes: arrays on an
OpenCL device, kernels run through tvm-ffi with the library's own queue (each launch
waits) or on a queue set with use_stream, symbolic shapes, several kernels, dynamic local
memory, `tirc run --target opencl`, and the messages of a failing launch. Marked
``opencl``: skips, saying why, without pyopencl or an OpenCL device."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ROOT

pytestmark = pytest.mark.opencl
HEAD = "# from tvm.script import tirx as T\n\n"


@pytest.fixture(scope="module")
def dev():
    pytest.importorskip("pyopencl", reason="pyopencl is not installed (pip install 'tirc[opencl]')")
    from tirc import runtime as rt
    d = rt.device("opencl", 0)
    if not d.exists:
        pytest.skip("no OpenCL device (pip install 'tirc[opencl]' brings pocl, a CPU device)")
    return d


def _call(compiled, name, *arrays):
    import tvm_ffi
    from tirc import runtime as rt
    compiled[name](*[tvm_ffi.from_dlpack(a) if isinstance(a, rt.Array) else a for a in arrays])


def test_arrays_round_trip(dev):
    from tirc import runtime as rt
    a = np.arange(10, dtype="int32")
    x = rt.from_numpy(a, dev)
    assert x.device == dev and x.__dlpack_device__() == (4, 0)
    assert np.array_equal(x.to_numpy(), a)
    y = rt.empty((10,), "int32", dev)
    rt.copyto(y, x)
    assert np.array_equal(y.to(rt.cpu()).to_numpy(), a)
    assert rt.empty((0,), "float32", dev).to_numpy().shape == (0,)
    assert dev.name and dev.max_threads_per_block >= 256


def test_symbolic_shape_and_two_kernels(dev):
    import tirc
    from tirc import runtime as rt
    add = tirc.compile((ROOT / "samples" / "vector_add.tir").read_text(), target="opencl")
    for n in (1, 255, 1000):
        a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
        arrays = [rt.from_numpy(v, dev) for v in (a, b, np.zeros(n, "float32"))]
        _call(add, "vector_add", *arrays)
        assert np.array_equal(arrays[2].to_numpy(), a + b)
    two = tirc.compile((ROOT / "samples" / "two_kernels.tir").read_text(), target="opencl")
    assert len(two.kernels) == 2
    ins = [np.random.rand(4096).astype("float32") for _ in range(2)]
    arrays = [rt.from_numpy(v, dev) for v in (*ins, np.zeros(4096, "float32"))]
    _call(two, "two_kernels", *arrays)
    assert arrays[2].to_numpy().any()


def test_launches_queue_on_the_stream_use_stream_sets(dev):
    import tirc
    from tirc import runtime as rt
    add = tirc.compile((ROOT / "samples" / "vector_add.tir").read_text(), target="opencl")
    stream = dev.create_stream()
    a = np.arange(4096, dtype="float32")
    arrays = [rt.from_numpy(v, dev) for v in (a, a, np.zeros(4096, "float32"))]
    with rt.use_stream(stream):
        _call(add, "vector_add", *arrays)
    stream.synchronize()
    assert np.array_equal(arrays[2].to_numpy(), 2 * a)


def test_dynamic_local_memory(dev):
    import tirc
    from tirc import runtime as rt
    text = HEAD + '''@T.prim_func
def reverse(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            buf = T.alloc_buffer((256,), scope="shared.dyn")
            buf[tx] = A[bx * 256 + tx]
            T.tvm_storage_sync("shared")
            B[bx * 256 + tx] = buf[255 - tx]
'''
    c = tirc.compile(text, target="opencl")
    assert c.kernels[0]["dynamic_shared_memory"] == 1024
    a = np.arange(1024, dtype="float32")
    arrays = [rt.from_numpy(a, dev), rt.empty((1024,), "float32", dev)]
    _call(c, "reverse", *arrays)
    assert np.array_equal(arrays[1].to_numpy(), a.reshape(4, 256)[:, ::-1].reshape(-1))


def test_a_scalar_bool_argument(dev):
    import tirc
    from tirc import runtime as rt
    text = HEAD + '''@T.prim_func
def pick(A: T.Buffer((64,), "float32"), flag: T.bool):
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        if flag:
            A[tx] = T.float32(1)
'''
    c = tirc.compile(text, target="opencl")
    x = rt.from_numpy(np.zeros(64, "float32"), dev)
    _call(c, "pick", x, False)
    assert not x.to_numpy().any()
    _call(c, "pick", x, True)
    assert (x.to_numpy() == 1).all()


def test_a_kernel_the_driver_cannot_build_is_a_runtime_error_with_its_log(dev):
    """A float16 kernel on a device without cl_khr_fp16 (pocl on a CPU): the launch raises
    RuntimeError naming clBuildProgram, the OpenCL status and the driver's build log."""
    import tirc
    from tirc import runtime as rt
    from tirc.runtime import opencldrv
    if opencldrv.has_fp16(0):
        pytest.skip("the device has cl_khr_fp16: this kernel builds")
    text = HEAD + '''@T.prim_func
def half(A: T.Buffer((64,), "float16")):
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        A[tx] = A[tx] + T.float16(1)
'''
    c = tirc.compile(text, target="opencl")
    x = rt.from_numpy(np.zeros(64, "float16"), dev)
    with pytest.raises(RuntimeError, match=r"clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE "
                                           r"\(cl_int -11\), building the OpenCL C of kernel "
                                           r"'half_kernel': .*half"):
        _call(c, "half", x)


def test_tirc_run_target_opencl_checks_against_llvm(dev):
    from tirc.driver import cli
    r = CliRunner().invoke(cli, ["run", str(ROOT / "samples" / "vector_add.tir"), "--target",
                                  "opencl", "--random", "--dim", "n=3000", "--check-against", "llvm"])
    assert r.exit_code == 0, r.output
    assert "ran vector_add on opencl:0 (opencl)" in r.output
    assert "check against llvm: ok" in r.output


def test_integer_division_never_traps(dev):
    """x / 0 is -1, x % 0 is x, the minimum / -1 wraps: what the shared LLVM lowering
    gives on a GPU; pocl runs kernels on the CPU, where a bare division by zero would
    raise SIGFPE."""
    import tirc
    from tirc import runtime as rt
    text = HEAD + '''@T.prim_func
def f(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32"), C: T.Buffer((8,), "int32"),
      D: T.Buffer((8,), "int32"), E: T.Buffer((8,), "int32"), F: T.Buffer((8,), "int32")):
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        C[tx] = T.truncdiv(A[tx], B[tx])
        D[tx] = T.truncmod(A[tx], B[tx])
        E[tx] = T.floordiv(A[tx], B[tx])
        F[tx] = T.floormod(A[tx], B[tx])
'''
    c = tirc.compile(text, target="opencl")
    a = np.array([7, -7, 7, -7, -2**31, 5, 0, -2**31], "int32")
    b = np.array([2, 2, -2, 0, -1, 0, 3, 1], "int32")
    arrays = [rt.from_numpy(x, dev) for x in (a, b)] + [rt.empty((8,), "int32", dev) for _ in range(4)]
    _call(c, "f", *arrays)
    got = [x.to_numpy().tolist() for x in arrays[2:]]
    assert got == [[3, -3, -3, -1, -2**31, -1, 0, -2**31], [1, -1, 1, -7, 0, 5, 0, 0],
                   [3, -4, -4, -1, -2**31, -1, 0, -2**31], [1, 1, -1, -7, 0, 5, 0, 0]]


def test_a_c_abi_function_takes_cl_mem_handles(dev, tmp_path):
    import ctypes
    from tirc import runtime as rt
    from tirc.driver import cli
    r = CliRunner().invoke(cli, ["build", str(ROOT / "samples" / "vector_add.tir"), "--target",
                                 "opencl", "--abi", "c", "--shared", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    lib = ctypes.CDLL(str(tmp_path / "vector_add.so"))
    lib.vector_add.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64]
    lib.vector_add_last_error.restype = ctypes.c_char_p
    a = np.arange(1000, dtype="float32")
    x, y, z = rt.from_numpy(a, dev), rt.from_numpy(a, dev), rt.empty((1000,), "float32", dev)
    assert lib.vector_add(x.data_ptr, y.data_ptr, z.data_ptr, 1000) == 0
    assert np.array_equal(z.to_numpy(), 2 * a)


def test_dlpack_round_trip_through_tvm_ffi(dev):
    import tvm_ffi
    from tirc import runtime as rt
    a = rt.from_numpy(np.arange(5, dtype="float32"), dev)
    t = tvm_ffi.from_dlpack(a)
    b = rt.from_dlpack(t)
    del t
    assert b.device == dev and b.data_ptr == a.data_ptr
    assert np.array_equal(b.to_numpy(), np.arange(5, dtype="float32"))


def test_a_buffer_host_code_allocates_for_its_kernels_lives_on_the_device(dev):
    # the kernels read and write it: a cl_mem in the arguments' context (with or without
    # a queue set), not host memory
    import tirc
    from tirc import runtime as rt
    from workspace_kernels import SYMBOLIC
    m = tirc.compile(SYMBOLIC, target="opencl")
    for n in (1, 1000, 4097):
        a = np.random.rand(n).astype("float32")
        arrays = [rt.from_numpy(a, dev), rt.from_numpy(np.zeros(n, "float32"), dev)]
        _call(m, "f", *arrays, n)
        np.testing.assert_allclose(arrays[1].to_numpy(), 2 * a + 2 * a[::-1], rtol=1e-6)
    stream = dev.create_stream()
    with rt.use_stream(stream):
        _call(m, "f", *arrays, n)
    stream.synchronize()
    np.testing.assert_allclose(arrays[1].to_numpy(), 2 * a + 2 * a[::-1], rtol=1e-6)
    empty = [rt.empty((0,), "float32", dev) for _ in range(2)]
    _call(m, "f", *empty, 0)  # nothing to allocate, nothing launched
