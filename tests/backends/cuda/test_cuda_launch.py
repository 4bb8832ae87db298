"""The host side of GPU kernel launches (``tirc/backends/cuda/launch.py``).

Without a GPU: FileCheck patterns on the host LLVM IR; every CUDA sample builds with
``--shared`` and its library needs no CUDA library at load time; calls through tvm-ffi
in subprocesses (NumPy arrays: the device check of MakePackedAPI; tensors that claim a
CUDA device: the missing driver, or a fake ``libcuda.so.1`` built here with ``cc`` that
records the driver calls, so the launch logic — sizes, the once-per-device cache, the
48 KiB opt-in, error names — is checked end to end). With a GPU (marked ``gpu``):
vector_add runs on the device and matches NumPy."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from tirc.backends.cpu import backend as cpu
from tirc.backends.cuda import nvptx
from tirc.backends.cuda.launch import DeviceCode
from tirc.build.stages import build, host_target_of, split_module
from tirc.build.options import bind_target_from
from tirc.driver import cli
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from workspace_kernels import FIXED as WORKSPACE
from conftest import TESTS

ROOT = TESTS.parent
SAMPLES = ROOT / "samples"
CUDA_SAMPLES = ["device_call_add", "device_call_let", "multi_target", "shared_reduction",
                "two_kernels", "vector_add"]
HEAD = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n"
BIG_DYN_SHMEM = HEAD + textwrap.dedent("""
    @T.prim_func
    def big(A: T.Buffer((16384,), "float32"), B: T.Buffer((16384,), "float32")):
        for bx in T.thread_binding(1, thread="blockIdx.x"):
            for tx in T.thread_binding(256, thread="threadIdx.x"):
                tile = T.alloc_buffer((16384,), "float32", scope="shared.dyn")
                for i in range(64):
                    tile[i * 256 + tx] = A[i * 256 + tx]
                T.tvm_storage_sync("shared")
                for i in range(64):
                    B[i * 256 + tx] = tile[16383 - i * 256 - tx]
""")


def host_ir(text: str, target: str = "cuda -arch=sm_90") -> str:
    """The host module's LLVM IR before optimisation, with its device images embedded."""
    bind = bind_target_from(target, None)
    mod = run_pipeline(parse(text, "t.tir"), PassContext(bind))
    host, devices = split_module(mod)
    code = DeviceCode()
    for t, m in devices.items():
        img = nvptx.generate(m, t, "t")
        code.add(m, img.kernels, img.ptx.encode(), "ptx", img.arch)
    return cpu.lower_to_llvm(host, host_target_of(host, bind), "t", code)[0]


def filecheck(ir_text: str, checks: str, tmp_path) -> None:
    check_file = tmp_path / "checks.txt"
    check_file.write_text(textwrap.dedent(checks))
    proc = subprocess.run([sys.executable, "-m", "filecheck", str(check_file)], input=ir_text,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n--- IR ---\n" + ir_text


# -- the host IR ---------------------------------------------------------------------------
def test_vector_add_launch_ir(tmp_path):
    text = host_ir((SAMPLES / "vector_add.tir").read_text())
    assert '= private unnamed_addr constant [13 x i8] c"libcuda.so.1\\00"' in text
    filecheck(text, r"""
        CHECK: define {{.*}}i32 @"__tvm_ffi_vector_add"
        CHECK: %"stream" = call ptr @"TVMFFIEnvGetStream"(i32 2, i32 [[DEV:%[^)]+]])
        CHECK-NOT: cuFuncSetAttribute
        CHECK: call i32 @"__tirc_cuda_launch"(ptr @"__tirc_cuda_func.vector_add_kernel", ptr @"__tirc_cuda_ready0", ptr @"__tirc_cuda_load0", i32 [[DEV]], ptr %"stream", i32 {{%[^,]+}}, i32 1, i32 1, i32 256, i32 1, i32 1, i32 0, ptr %"vector_add_kernel.args", ptr null, i32 0, ptr null, ptr @"{{.str.[0-9]+}}", ptr @"{{.str.[0-9]+}}", ptr %"cuda_msg")
        CHECK: @"__tirc_cuda_image0" = private constant [{{[0-9]+}} x i8] c"{{.*}}.target sm_90{{.*}}.visible .entry vector_add_kernel({{.*}}\00", align 64
        CHECK: define internal i32 @"__tirc_cuda_driver"
        CHECK: call ptr @"dlopen"(ptr @"{{.str.[0-9]+}}", i32 2)
        CHECK: call ptr @"dlsym"
        CHECK: define internal i32 @"__tirc_cuda_load0"
        CHECK: call i32 @"pthread_mutex_lock"(ptr @"__tirc_cuda_mutex")
        CHECK: call i32 %"cuDevicePrimaryCtxRetain"
        CHECK: call i32 %"cuModuleLoadData"(ptr {{.*}}, ptr @"__tirc_cuda_image0")
        CHECK: call i32 %"cuModuleGetFunction"
        CHECK: store atomic i32 1, ptr {{.*}} release
        CHECK: call i32 @"pthread_mutex_unlock"(ptr @"__tirc_cuda_mutex")
        CHECK: define internal i32 @"__tirc_cuda_launch"(ptr %"funcs", ptr %"ready", ptr %"load", i32 %"dev", ptr %"stream", {{.*}}, ptr %"msg") noinline nounwind optnone{{$}}
        CHECK: load atomic i32, ptr {{.*}} acquire
        CHECK: call i32 %{{.*}}(i32 %"dev", ptr %"msg")
        CHECK: call i32 %"cuCtxPushCurrent_v2"
        CHECK: call i32 %"cuLaunchKernel"(ptr %"func", i32 %"gx", i32 %"gy", i32 %"gz", i32 %"bx", i32 %"by", i32 %"bz", i32 %"dyn", ptr %"stream", ptr %"params", ptr null)
        CHECK: call i32 %"cuCtxPopCurrent_v2{{[.0-9]*}}"
    """, tmp_path)


def test_constant_launch_sizes_and_static_shared_memory(tmp_path):
    # both kernels keep their static shared arrays: no dynamic shared memory at launch
    filecheck(host_ir((SAMPLES / "two_kernels.tir").read_text()), r"""
        CHECK-NOT: cuFuncSetAttribute"
        CHECK: call i32 @"__tirc_cuda_launch"(ptr @"__tirc_cuda_func.two_kernels_kernel", {{.*}}, i32 32, i32 1, i32 1, i32 128, i32 1, i32 1, i32 0,
        CHECK-NOT: call i32 %"cuFuncSetAttribute
        CHECK: call i32 @"__tirc_cuda_launch"(ptr @"__tirc_cuda_func.two_kernels_kernel_1", {{.*}}, i32 16, i32 1, i32 1, i32 256, i32 1, i32 1, i32 0,
    """, tmp_path)


SMALL_DYN_SHMEM = HEAD + textwrap.dedent("""
    @T.prim_func
    def small(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
        for bx in T.thread_binding(16, thread="blockIdx.x"):
            for tx in T.thread_binding(256, thread="threadIdx.x"):
                tile = T.alloc_buffer((256,), scope="shared.dyn")
                flags = T.alloc_buffer((256,), "int32", scope="shared.dyn")
                tile[tx] = A[bx * 256 + tx]
                flags[tx] = T.Cast("int32", tile[tx] > T.float32(0.0))
                T.tvm_storage_sync("shared")
                B[bx * 256 + tx] = tile[255 - tx] * T.Cast("float32", flags[255 - tx])
""")


def test_small_dynamic_shared_memory(tmp_path):
    filecheck(host_ir(SMALL_DYN_SHMEM), r"""
        CHECK-NOT: call i32 %"cuFuncSetAttribute
        CHECK: call i32 @"__tirc_cuda_launch"(ptr @"__tirc_cuda_func.small_kernel", {{.*}}, i32 16, i32 1, i32 1, i32 256, i32 1, i32 1, i32 2048,
    """, tmp_path)


def test_dynamic_shared_memory_above_48k_opts_in(tmp_path):
    filecheck(host_ir(BIG_DYN_SHMEM), r"""
        CHECK: call i32 @"__tirc_cuda_launch"(ptr @"__tirc_cuda_func.big_kernel", {{.*}}, i32 1, i32 1, i32 1, i32 256, i32 1, i32 1, i32 65536,
        CHECK: define internal i32 @"__tirc_cuda_launch"
        CHECK: icmp ugt i32 %"dyn", 49152
        CHECK: call i32 %"cuFuncSetAttribute"(ptr %"func", i32 8, i32 %"dyn")
        CHECK: call i32 %"cuLaunchKernel"(ptr %"func", {{.*}}, i32 %"dyn", ptr %"stream", ptr %"params", ptr null)
    """, tmp_path)


def test_two_images_each_loaded_by_their_kernels(tmp_path):
    filecheck(host_ir((SAMPLES / "multi_target.tir").read_text()), r"""
        CHECK: call i32 @"__tirc_cuda_launch"({{.*}}, ptr @"__tirc_cuda_ready0", ptr @"__tirc_cuda_load0",
        CHECK: call i32 @"__tirc_cuda_launch"({{.*}}, ptr @"__tirc_cuda_ready1", ptr @"__tirc_cuda_load1",
        CHECK-DAG: @"__tirc_cuda_image0" = private constant {{.*}}.target sm_80
        CHECK-DAG: @"__tirc_cuda_image1" = private constant {{.*}}.target sm_90
    """, tmp_path)


# -- builds ---------------------------------------------------------------------------------
def _needed(so: Path) -> list[str]:
    """The DT_NEEDED libraries of a shared object (readelf, when installed)."""
    if shutil.which("readelf") is None:
        pytest.skip("readelf is not installed")
    out = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].split("]")[0] for line in out.splitlines() if "(NEEDED)" in line]


@pytest.mark.parametrize("name", CUDA_SAMPLES)
def test_every_cuda_sample_builds_shared(name, tmp_path):
    src = SAMPLES / f"{name}.tir"
    r = CliRunner().invoke(cli, ["build", str(src), "--target", "cuda -arch=sm_90", "-o",
                                 str(tmp_path), "--shared"])
    assert r.exit_code == 0, r.output
    names = {p.name for p in tmp_path.iterdir()}
    assert {f"{name}.o", f"{name}.so"} <= names
    assert any(n.startswith(name) and n.endswith(".ptx") for n in names)
    obj = (tmp_path / f"{name}.o").read_bytes()
    assert all(p.read_bytes() in obj for p in tmp_path.glob("*.ptx"))  # the images are embedded
    assert not any("cuda" in lib for lib in _needed(tmp_path / f"{name}.so"))


def test_cubin_is_embedded(tmp_path):
    from tirc.backends.cuda import cubin as nvptx_cubin
    if not nvptx_cubin.available():
        pytest.skip("nvJitLink is not installed")
    r = build((SAMPLES / "vector_add.tir").read_text(), "cuda -arch=sm_90", out_dir=tmp_path,
              name="vector_add", device_format="cubin")
    cubin = (tmp_path / "vector_add.cubin").read_bytes()
    assert cubin[:4] == b"\x7fELF" and cubin in (tmp_path / "vector_add.o").read_bytes()
    assert tmp_path / "vector_add.o" in r.files


# -- running through tvm-ffi (subprocesses: a crash must not take pytest down) -------------
CALLER = textwrap.dedent("""
    import sys
    import numpy as np
    import tvm_ffi
    from tirc.runtime import dlpack

    class FakeCuda:
        # host memory that claims to live on a CUDA device (never touched by the fake driver)
        def __init__(self, a, dev):
            self.a, self.dev = a, dev
        def __dlpack_device__(self):
            return (2, self.dev)
        def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
            versioned = bool(max_version) and tuple(max_version) >= (1, 0)
            return dlpack.export(self, self.a.ctypes.data, self.a.shape, self.a.dtype,
                                 (2, self.dev), versioned=versioned)

    f = tvm_ffi.load_module(sys.argv[1])[sys.argv[2]]
    n = int(sys.argv[3])
    dev = int(sys.argv[4])
    calls = int(sys.argv[5])
    a = np.ones(n, np.float32)
    args = [a, a.copy(), a.copy()][:int(sys.argv[6])]
    if dev >= 0:
        args = [tvm_ffi.from_dlpack(FakeCuda(x, dev)) for x in args]
    for _ in range(calls):
        try:
            f(*args)
            print("OK", flush=True)
        except Exception as e:
            print(type(e).__name__ + ":", e, flush=True)
""")

FAKE_LIBCUDA = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int env(const char* name) { const char* v = getenv(name); return v ? atoi(v) : 0; }
int cuInit(unsigned flags) { printf("cuInit\n"); fflush(stdout); return env("FAKE_CUINIT"); }
int cuGetErrorName(int e, const char** s) {
  *s = e == 100 ? "CUDA_ERROR_NO_DEVICE" : e == 719 ? "CUDA_ERROR_LAUNCH_FAILED" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuDeviceGet(int* d, int ordinal) { *d = ordinal; return 0; }
int cuDeviceGetAttribute(int* v, int attr, int d) {  /* FAKE_CC: capability x10, e.g. 86 */
  int cc = getenv("FAKE_CC") ? env("FAKE_CC") : 90;
  if (attr == 75) *v = cc / 10; else if (attr == 76) *v = cc % 10; else return 1;
  return 0;
}
int cuDevicePrimaryCtxRetain(void** c, int d) {
  printf("retain %d\n", d); fflush(stdout); *c = (void*)(long)(0x1000 + d); return 0;
}
static int launched;  /* FAKE_POP: the pops after a launch fail */
int cuCtxPushCurrent_v2(void* c) { return env("FAKE_PUSH"); }
int cuCtxPopCurrent_v2(void** c) { if (c) *c = 0; return launched ? env("FAKE_POP") : 0; }
int cuModuleLoadData(void** m, const void* image) {
  const char* t = strstr((const char*)image, ".target ");  /* PTX: its arch */
  char arch[16] = "?";
  if (t) sscanf(t + 8, "%15[a-z_0-9]", arch);
  printf("load %s\n", arch); fflush(stdout);
  *m = (void*)0x2000; return 0;
}
int cuModuleGetFunction(void** f, void* m, const char* name) { *f = strdup(name); return 0; }
#ifndef NO_FUNC_SET_ATTRIBUTE
int cuFuncSetAttribute(void* f, int attr, int value) {
  printf("attr %s %d %d\n", (const char*)f, attr, value); fflush(stdout); return 0;
}
#endif
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void* stream, void** params, void** extra) {
  int n_index = getenv("FAKE_N_INDEX") ? env("FAKE_N_INDEX") : 3;  /* vector_add's n */
  char line[256];  /* one write per line: launches may come from several threads */
  int k = snprintf(line, sizeof line, "launch %s %u %u %u %u %u %u %u", (const char*)f, gx, gy,
                   gz, bx, by, bz, smem);
  if (n_index >= 0) snprintf(line + k, sizeof line - k, " n=%d", *(int*)params[n_index]);
  puts(line);
  fflush(stdout);
  launched = 1;
  return env("FAKE_LAUNCH");
}
#ifndef NO_MEM_ASYNC
static unsigned long long next_mem = 0x5000;  /* FAKE_ALLOC: cuMemAllocAsync's status */
int cuMemAllocAsync(unsigned long long* p, size_t n, void* stream) {
  if (env("FAKE_ALLOC")) return env("FAKE_ALLOC");
  *p = next_mem; next_mem += 0x1000;
  printf("alloc %zu at %#llx\n", n, *p); fflush(stdout); return 0;
}
int cuMemFreeAsync(unsigned long long p, void* stream) {
  printf("free %#llx\n", p); fflush(stdout); return 0;
}
#endif
#ifndef NO_LAUNCH_EX
typedef struct { int id; char pad[4]; long long value[8]; } Attr;
typedef struct { unsigned g[3], b[3], smem; void* stream; Attr* attrs; unsigned n; } Config;
int cuLaunchKernelEx(const Config* c, void* f, void** params, void** extra) {
  char line[256];
  int k = snprintf(line, sizeof line, "launchex %s %u %u %u %u %u %u %u", (const char*)f, c->g[0],
                   c->g[1], c->g[2], c->b[0], c->b[1], c->b[2], c->smem);
  for (unsigned i = 0; i < c->n; i++)
    k += snprintf(line + k, sizeof line - k, " attr%d=%d", c->attrs[i].id, (int)c->attrs[i].value[0]);
  puts(line);
  fflush(stdout);
  return env("FAKE_LAUNCH");
}
#endif
"""


def _driver_present() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def vector_add_so(tmp_path_factory):
    tvm_ffi = pytest.importorskip("tvm_ffi")  # noqa: F841
    out = tmp_path_factory.mktemp("vector_add")
    build((SAMPLES / "vector_add.tir").read_text(), "cuda -arch=sm_90", out_dir=out,
          name="vector_add", shared=True)
    return out / "vector_add.so"


def _call(so: Path, func: str, n: int, dev: int, calls: int = 1, nargs: int = 3,
          env: dict | None = None) -> list[str]:
    import os
    proc = subprocess.run([sys.executable, "-c", CALLER, str(so), func, str(n), str(dev), str(calls),
                           str(nargs)], capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})}, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no crash, no exit()
    return proc.stdout.splitlines()


def test_numpy_arrays_are_refused_by_the_device_check(vector_add_so):
    assert _call(vector_add_so, "vector_add", 16, -1) == [
        "ValueError: Mismatched A.device_type on argument #0 when calling:",
        "  `vector_add(A: Tensor([n], float32), B: Tensor([n], float32), C: Tensor([n], float32))`,",
        "  expected cuda"]


def test_missing_driver_is_a_runtime_error(vector_add_so):
    if _driver_present():
        pytest.skip("a CUDA driver is installed here")
    lines = _call(vector_add_so, "vector_add", 16, 0, calls=2)
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("RuntimeError: the CUDA driver (libcuda.so.1) could not be loaded")


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    return _build_fake_driver(tmp_path_factory)


def _build_fake_driver(tmp_path_factory, *defines: str) -> dict[str, str]:
    """The fake ``libcuda.so.1``, compiled with ``defines`` (``NO_LAUNCH_EX``: a driver
    without that entry point, ...); the environment that loads it."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("fakecuda")
    (d / "fake.c").write_text(FAKE_LIBCUDA)
    subprocess.run(["cc", "-shared", "-fPIC", *(f"-D{x}" for x in defines), "-o",
                    str(d / "libcuda.so.1"), str(d / "fake.c")], check=True)
    return {"LD_LIBRARY_PATH": str(d)}


PDL = HEAD + textwrap.dedent("""
    @T.prim_func
    def f(A: T.Buffer((256,), "float32")):
        T.func_attr({"tirx.kernel_launch_params": ["tirx.use_programtic_dependent_launch",
                                                   "tirx.use_cooperative_launch"]})
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                A[bx * 128 + tx] = A[bx * 128 + tx] + T.float32(1)
""")


def test_launch_kinds_go_through_cu_launch_kernel_ex(tmp_path):
    """TVM's programmatic dependent and cooperative launches: the kernel
    asks for them in tirx.kernel_launch_params, the host launches it with
    cuLaunchKernelEx and one launch attribute set to 1 for each."""
    filecheck(host_ir(PDL), r"""
        CHECK: %"f_kernel.launch_attrs" = alloca [2 x {i32, [4 x i8], [8 x i64]}]
        CHECK: getelementptr {{.*}} %"f_kernel.launch_attrs", i64 0, i64 0, i32 0
        CHECK-NEXT: store i32 6
        CHECK: getelementptr {{.*}} %"f_kernel.launch_attrs", i64 0, i64 0, i32 2, i64 0
        CHECK-NEXT: store i64 1
        CHECK: getelementptr {{.*}} %"f_kernel.launch_attrs", i64 0, i64 1, i32 0
        CHECK-NEXT: store i32 2
        CHECK: call i32 @"__tirc_cuda_launch"({{.*}}, i32 2, i32 1, i32 1, i32 128, i32 1, i32 1, i32 {{[^,]+}}, ptr %"f_kernel.args", ptr %"f_kernel.launch_attrs", i32 2, ptr @"{{.str.[0-9]+}}",
        CHECK: define internal i32 @"__tirc_cuda_launch"
        CHECK: %"launch_config" = alloca {i32, i32, i32, i32, i32, i32, i32, ptr, ptr, i32}
        CHECK: %"launch_config", i64 0, i32 0
        CHECK-NEXT: store i32 %"gx",
        CHECK: %"launch_config", i64 0, i32 3
        CHECK-NEXT: store i32 %"bx",
        CHECK: %"launch_config", i64 0, i32 8
        CHECK-NEXT: store ptr %"attrs"
        CHECK: %"launch_config", i64 0, i32 9
        CHECK-NEXT: store i32 %"nattrs",
        CHECK: call i32 %"cuLaunchKernelEx"(ptr %"launch_config", ptr %"func", ptr %"params", ptr null)
    """, tmp_path)


@pytest.fixture(scope="module")
def launch_kinds_so(tmp_path_factory):
    pytest.importorskip("tvm_ffi")
    out = tmp_path_factory.mktemp("pdl")
    build(PDL, "cuda -arch=sm_90", out_dir=out, name="pdl", shared=True)
    return out / "pdl.so"


def test_launch_kinds_through_a_fake_driver(launch_kinds_so, fake_driver):
    lines = _call(launch_kinds_so, "f", 256, 0, nargs=1, env={**fake_driver, "FAKE_N_INDEX": "-1"})
    assert lines == ["cuInit", "retain 0", "load sm_90", "launchex f_kernel 2 1 1 128 1 1 0 attr6=1 attr2=1", "OK"]


def test_a_driver_without_cu_launch_kernel_ex_is_a_runtime_error(launch_kinds_so, tmp_path_factory):
    old = _build_fake_driver(tmp_path_factory, "NO_LAUNCH_EX")
    lines = _call(launch_kinds_so, "f", 256, 0, nargs=1, env=old)
    assert lines[-1] == ("RuntimeError: launching kernel 'f_kernel': the CUDA driver has no "
                         "cuLaunchKernelEx (CUDA 12), which its programmatic dependent launch and "
                         "cooperative launch needs")


def test_a_driver_without_a_required_entry_point_is_a_runtime_error(vector_add_so,
                                                                    tmp_path_factory):
    """The driver's entry points are looked up in a loop over their names: a missing
    required one is named in the error, and nothing is launched."""
    old = _build_fake_driver(tmp_path_factory, "NO_FUNC_SET_ATTRIBUTE")
    lines = _call(vector_add_so, "vector_add", 1000, 0, env=old)
    assert lines == ["RuntimeError: the CUDA driver (libcuda.so.1) could not be loaded: it has "
                     "no 'cuFuncSetAttribute' (the driver is too old)"]


def test_launch_through_a_fake_driver(vector_add_so, fake_driver):
    lines = _call(vector_add_so, "vector_add", 1000, 0, calls=3, env=fake_driver)
    launch = "launch vector_add_kernel 4 1 1 256 1 1 0 n=1000"
    assert lines == ["cuInit", "retain 0", "load sm_90", launch, "OK", launch, "OK", launch, "OK"]


def test_each_device_loads_its_own_module(vector_add_so, fake_driver):
    lines = _call(vector_add_so, "vector_add", 300, 3, calls=2, env=fake_driver)
    assert lines[:3] == ["cuInit", "retain 3", "load sm_90"] and lines.count("load sm_90") == 1
    assert lines[3:] == ["launch vector_add_kernel 2 1 1 256 1 1 0 n=300", "OK"] * 2


THREADS = textwrap.dedent("""
    import sys, threading
    import numpy as np
    import tvm_ffi
    exec(open(sys.argv[2]).read().split("f = tvm_ffi.load_module")[0])  # FakeCuda
    f = tvm_ffi.load_module(sys.argv[1])["vector_add"]
    args = [tvm_ffi.from_dlpack(FakeCuda(np.ones(64, np.float32), 0)) for _ in range(3)]
    errors = []
    def run():
        try:
            for _ in range(20):
                f(*args)
        except Exception as e:
            errors.append(e)
    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("errors", len(errors), flush=True)
""")


def test_concurrent_first_calls_load_once(vector_add_so, fake_driver, tmp_path):
    import os
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER)
    proc = subprocess.run([sys.executable, "-c", THREADS, str(vector_add_so), str(caller)],
                          capture_output=True, text=True, check=False, cwd=ROOT,
                          env={**os.environ, **fake_driver})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines.count("cuInit") == 1 and lines.count("load sm_90") == 1
    assert lines.count("launch vector_add_kernel 1 1 1 256 1 1 0 n=64") == 160
    assert lines[-1] == "errors 0"


def test_empty_grid_launches_nothing(vector_add_so, fake_driver):
    assert _call(vector_add_so, "vector_add", 0, 0, env=fake_driver) == ["OK"]


def test_driver_errors_carry_the_cuda_error_name(vector_add_so, fake_driver):
    lines = _call(vector_add_so, "vector_add", 16, 0, calls=2, env={**fake_driver, "FAKE_CUINIT": "100"})
    assert lines == ["cuInit", "RuntimeError: cuInit failed: CUDA_ERROR_NO_DEVICE (CUresult 100)"] * 2
    lines = _call(vector_add_so, "vector_add", 16, 0, env={**fake_driver, "FAKE_LAUNCH": "719"})
    assert lines[-1] == ("RuntimeError: cuLaunchKernel(vector_add_kernel) failed: "
                         "CUDA_ERROR_LAUNCH_FAILED (CUresult 719)")


def test_context_errors_and_device_ids_out_of_range(vector_add_so, fake_driver):
    push = _call(vector_add_so, "vector_add", 16, 1, env={**fake_driver, "FAKE_PUSH": "100"})
    assert push[-1] == "RuntimeError: cuCtxPushCurrent failed: CUDA_ERROR_NO_DEVICE (CUresult 100)"
    pop = _call(vector_add_so, "vector_add", 16, 0, env={**fake_driver, "FAKE_POP": "719"})
    assert pop[-2] == "launch vector_add_kernel 1 1 1 256 1 1 0 n=16"  # launched, then:
    assert pop[-1] == ("RuntimeError: cuCtxPopCurrent failed: CUDA_ERROR_LAUNCH_FAILED "
                       "(CUresult 719)")
    assert _call(vector_add_so, "vector_add", 16, 64, env=fake_driver) == [
        "RuntimeError: launching kernel 'vector_add_kernel': the device id is outside 0..63"]


def test_large_dynamic_shared_memory_through_a_fake_driver(tmp_path, fake_driver):
    pytest.importorskip("tvm_ffi")
    build(BIG_DYN_SHMEM, "cuda -arch=sm_90", out_dir=tmp_path, name="big", shared=True)
    lines = _call(tmp_path / "big.so", "big", 16384, 0, nargs=2, env={**fake_driver, "FAKE_N_INDEX": "-1"})
    assert "attr big_kernel 8 65536" in lines and lines[-1] == "OK"


# -- on a GPU -------------------------------------------------------------------------------
@pytest.mark.gpu
def test_vector_add_runs_on_the_gpu(vector_add_so):
    np = pytest.importorskip("numpy")
    tvm_ffi = pytest.importorskip("tvm_ffi")
    from tirc import runtime as rt
    dev = rt.device("cuda", 0)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    A, B, C = rt.from_numpy(a, dev), rt.from_numpy(b, dev), rt.empty((1000,), "float32", dev)
    f = tvm_ffi.load_module(str(vector_add_so))["vector_add"]
    f(tvm_ffi.from_dlpack(A), tvm_ffi.from_dlpack(B), tvm_ffi.from_dlpack(C))
    rt.synchronize(dev)
    np.testing.assert_allclose(C.to_numpy(), a + b, rtol=1e-6)


@pytest.fixture(scope="module")
def workspace_so(tmp_path_factory):
    pytest.importorskip("tvm_ffi")
    out = tmp_path_factory.mktemp("workspace")
    build(WORKSPACE, "cuda -arch=sm_90", out_dir=out, name="ws", shared=True)
    return out / "ws.so"


def test_a_buffer_host_code_allocates_for_its_kernels_is_device_memory(workspace_so, fake_driver):
    # allocated on the launches' stream before them, given to both kernels, freed after
    # them on the stream; never host memory (a kernel cannot read a malloc'd pointer)
    lines = _call(workspace_so, "f", 1024, 0, calls=2, nargs=2,
                  env={**fake_driver, "FAKE_N_INDEX": "1"})  # tmp
    assert lines == ["cuInit", "retain 0", "alloc 4096 at 0x5000", "load sm_90",
                     f"launch f_kernel 8 1 1 128 1 1 0 n={0x5000}",
                     f"launch f_kernel_1 8 1 1 128 1 1 0 n={0x5000}", "free 0x5000", "OK",
                     "alloc 4096 at 0x6000",
                     f"launch f_kernel 8 1 1 128 1 1 0 n={0x6000}",
                     f"launch f_kernel_1 8 1 1 128 1 1 0 n={0x6000}", "free 0x6000", "OK"]


def test_a_failed_device_allocation_is_a_runtime_error(workspace_so, fake_driver, tmp_path_factory):
    lines = _call(workspace_so, "f", 1024, 0, calls=1, nargs=2,
                  env={**fake_driver, "FAKE_ALLOC": "2"})
    assert lines == ["cuInit", "retain 0", "RuntimeError: cuMemAllocAsync (buffer 'tmp', 4096 "
                     "bytes) failed: CUDA_ERROR_UNKNOWN (CUresult 2)"]
    old = _build_fake_driver(tmp_path_factory, "NO_MEM_ASYNC")
    lines = _call(workspace_so, "f", 1024, 0, nargs=2, env=old)
    assert lines[-1] == ("RuntimeError: allocating buffer 'tmp' on the device: the CUDA driver "
                         "has no cuMemAllocAsync (CUDA 11.2)")


def test_device_allocations_of_a_module_built_in_chunks(tmp_path, fake_driver):
    # with -j 2 the host object is made in chunks; the allocating function is not in the
    # first one, which defines the memory helpers for all of them
    pytest.importorskip("tvm_ffi")
    if shutil.which("nm") is None:
        pytest.skip("no nm")
    scale = """
    @T.prim_func
    def g{i}(A: T.Buffer((1024,), "float32")):
        for i0 in T.thread_binding(8, thread="blockIdx.x"):
            for i1 in T.thread_binding(128, thread="threadIdx.x"):
                A[i0 * 128 + i1] = A[i0 * 128 + i1] * T.float32({i})
"""
    text = (HEAD + "@I.ir_module\nclass Module:"
            + "".join(scale.format(i=i) for i in range(7))
            + textwrap.indent(WORKSPACE[len(HEAD):], "    "))
    build(text, "cuda -arch=sm_90", out_dir=tmp_path, name="ws", shared=True, jobs=2)
    defined = subprocess.run(["nm", "--defined-only", str(tmp_path / "ws.so")], capture_output=True,
                             text=True, check=True).stdout
    assert defined.count("__tirc_cuda_alloc") == 1 and defined.count("__tirc_cuda_free") == 1
    lines = _call(tmp_path / "ws.so", "f", 1024, 0, nargs=2,
                  env={**fake_driver, "FAKE_N_INDEX": "1"})
    assert lines[2] == "alloc 4096 at 0x5000" and lines[-2:] == ["free 0x5000", "OK"]
