"""The host side of AMD GPU kernel launches (``tirc/backends/rocm/launch.py``).

Without a GPU: FileCheck patterns on the host LLVM IR; calls through tvm-ffi in
subprocesses with tensors that claim a ROCm device, against the missing runtime and a
fake ``libamdhip64.so`` built here with ``cc`` that records the HIP calls (as the CUDA
launcher is tested with a fake ``libcuda``): the device switch, the once-per-device
load of a real code object, the launch sizes and arguments, error names."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workspace_kernels import FIXED as WORKSPACE
from conftest import TESTS
from test_cuda_launch import filecheck
from tirc.backends.cpu import backend as cpu
from tirc.backends.rocm import amdgpu
from tirc.backends.rocm.launch import HIPCode
from tirc.backends.rocm.link import link
from tirc.build.options import bind_target_from
from tirc.build.stages import build, host_target_of, split_module
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline

ROOT = TESTS.parent
SAMPLES = ROOT / "samples"


def host_ir(text: str, target: str = "rocm -mcpu=gfx90a") -> str:
    bind = bind_target_from(target, None)
    mod = run_pipeline(parse(text, "t.tir"), PassContext(bind))
    host, devices = split_module(mod)
    code = HIPCode()
    for t, m in devices.items():
        obj = amdgpu.generate(m, t, "t")
        code.add_variants(m, obj.kernels, [(link(obj.obj, "t"), "hsaco", obj.arch)])
    return cpu.lower_to_llvm(host, host_target_of(host, bind), "t", code)[0]


def test_vector_add_launch_ir(tmp_path):
    text = host_ir((SAMPLES / "vector_add.tir").read_text())
    filecheck(text, r"""
        CHECK: define {{.*}}i32 @"__tvm_ffi_vector_add"
        CHECK: %"stream" = call ptr @"TVMFFIEnvGetStream"(i32 10, i32 [[DEV:%[^)]+]])
        CHECK: call i32 @"__tirc_hip_launch"(ptr @"__tirc_hip_func.vector_add_kernel", ptr @"__tirc_hip_ready0", ptr @"__tirc_hip_load0", i32 [[DEV]], ptr %"stream", i32 {{%[^,]+}}, i32 1, i32 1, i32 256, i32 1, i32 1, i32 0, ptr %"vector_add_kernel.args", ptr @"{{.str.[0-9]+}}", ptr @"{{.str.[0-9]+}}", ptr %"hip_msg")
        CHECK: @"__tirc_hip_image0" = private constant [{{[0-9]+}} x i8] c"{{\\7[fF]ELF.*}}", align 64
        CHECK: define internal i32 @"__tirc_hip_runtime"
        CHECK: call ptr @"dlopen"
        CHECK: call i32 %"hipInit"(i32 0)
        CHECK: define internal i32 @"__tirc_hip_load0"
        CHECK: call i32 @"pthread_mutex_lock"(ptr @"__tirc_hip_mutex")
        CHECK: call i32 %"hipGetDevice"
        CHECK: call i32 %"hipSetDevice"
        CHECK: call i32 %"hipModuleLoadData"(ptr {{.*}}, ptr @"__tirc_hip_image0")
        CHECK: call i32 %"hipModuleGetFunction"
        CHECK: store atomic i32 1, ptr {{.*}} release
        CHECK: define internal i32 @"__tirc_hip_launch"
        CHECK: load atomic i32, ptr {{.*}} acquire
        CHECK: call i32 %"hipModuleLaunchKernel"(ptr %"func", i32 %"gx", i32 %"gy", i32 %"gz", i32 %"bx", i32 %"by", i32 %"bz", i32 %"dyn", ptr %"stream", ptr %"params", ptr null)
    """, tmp_path)
    for lib in ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6"):
        assert f'c"{lib}\\00"' in text


COOPERATIVE = textwrap.dedent("""
    # from tvm.script import tirx as T
    @T.prim_func
    def f(A: T.Buffer((256,), "float32")):
        T.func_attr({"tirx.kernel_launch_params": ["tirx.use_cooperative_launch"]})
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                A[bx * 128 + tx] = A[bx * 128 + tx] + T.float32(1)
""")


def test_a_cooperative_launch_is_a_located_error(tmp_path):
    from tirc.diagnostics import Diagnostic
    with pytest.raises(Diagnostic, match="use_cooperative_launch: not supported on target rocm"):
        build(COOPERATIVE, "rocm", out_dir=tmp_path, name="c")


# -- running through tvm-ffi (subprocesses: a crash must not take pytest down) -------------
CALLER = textwrap.dedent("""
    import sys
    import numpy as np
    import tvm_ffi
    from tirc.runtime import dlpack

    class FakeROCm:
        # host memory that claims to live on a ROCm device (kDLROCM, 10)
        def __init__(self, a, dev):
            self.a, self.dev = a, dev
        def __dlpack_device__(self):
            return (10, self.dev)
        def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
            versioned = bool(max_version) and tuple(max_version) >= (1, 0)
            return dlpack.export(self, self.a.ctypes.data, self.a.shape, self.a.dtype,
                                 (10, self.dev), versioned=versioned)

    f = tvm_ffi.load_module(sys.argv[1])[sys.argv[2]]
    n, dev, calls = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    args = [tvm_ffi.from_dlpack(FakeROCm(np.ones(n, np.float32), dev))
            for _ in range(int(sys.argv[6]))]
    for _ in range(calls):
        try:
            f(*args)
            print("OK", flush=True)
        except Exception as e:
            print(type(e).__name__ + ":", e, flush=True)
""")

FAKE_HIP = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int env(const char* name) { const char* v = getenv(name); return v ? atoi(v) : 0; }
static int current;  /* the thread's device */
static void say(const char* line) { puts(line); fflush(stdout); }
const char* hipGetErrorName(int e) { return e == 1 ? "hipErrorInvalidValue" : "hipErrorUnknown"; }
int hipInit(unsigned flags) { say("hipInit"); return env("FAKE_INIT"); }
int hipGetDevice(int* d) { *d = current; return 0; }
int hipSetDevice(int d) { char l[32]; snprintf(l, sizeof l, "set %d", d); say(l); current = d; return 0; }
int hipModuleLoadData(void** m, const void* image) {
  const unsigned char* p = image;  /* a code object: ELF, e_machine EM_AMDGPU (224) */
  char l[64];
  snprintf(l, sizeof l, "load %c%c%c machine=%d on %d", p[1], p[2], p[3], p[18] | p[19] << 8, current);
  say(l);
  *m = (void*)0x2000; return env("FAKE_LOAD");
}
int hipModuleGetFunction(void** f, void* m, const char* name) { *f = strdup(name); return 0; }
int hipModuleLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned smem, void* stream, void** params,
                          void** extra) {
  int n_index = getenv("FAKE_N_INDEX") ? env("FAKE_N_INDEX") : 3;  /* vector_add's n */
  char l[256];
  snprintf(l, sizeof l, "launch %s %u %u %u %u %u %u %u n=%d on %d", (const char*)f, gx, gy, gz,
           bx, by, bz, smem, *(int*)params[n_index], current);
  say(l);
  return env("FAKE_LAUNCH");
}
static unsigned long next_mem = 0x5000;  /* FAKE_ALLOC: hipMallocAsync's status */
int hipMallocAsync(void** p, size_t n, void* stream) {
  char l[64];
  if (env("FAKE_ALLOC")) return env("FAKE_ALLOC");
  *p = (void*)next_mem; next_mem += 0x1000;
  snprintf(l, sizeof l, "alloc %zu at %p on %d", n, *p, current); say(l); return 0;
}
int hipFreeAsync(void* p, void* stream) {
  char l[64]; snprintf(l, sizeof l, "free %p on %d", p, current); say(l); return 0;
}
"""


@pytest.fixture(scope="module")
def vector_add_so(tmp_path_factory):
    pytest.importorskip("tvm_ffi")
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("vector_add")
    build((SAMPLES / "vector_add.tir").read_text(), "rocm -mcpu=gfx90a", out_dir=out,
          name="vector_add", shared=True)
    return out / "vector_add.so"


@pytest.fixture(scope="module")
def fake_hip(tmp_path_factory):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("fakehip")
    (d / "fake.c").write_text(FAKE_HIP)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "libamdhip64.so"), str(d / "fake.c")],
                   check=True)
    return {"LD_LIBRARY_PATH": str(d)}


def _call(so: Path, n: int, dev: int, calls: int = 1, env: dict | None = None,
          func: str = "vector_add", nargs: int = 3) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", CALLER, str(so), func, str(n), str(dev),
                           str(calls), str(nargs)], capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})}, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no crash, no exit()
    return proc.stdout.splitlines()


def _runtime_present() -> bool:
    try:
        ctypes.CDLL("libamdhip64.so")
        return True
    except OSError:
        return False


def test_missing_runtime_is_a_runtime_error(vector_add_so):
    if _runtime_present():
        pytest.skip("a HIP runtime is installed here")
    lines = _call(vector_add_so, 16, 0, calls=2)
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("RuntimeError: the HIP runtime (libamdhip64.so) could not be "
                               "loaded")


def test_launch_through_a_fake_runtime(vector_add_so, fake_hip):
    lines = _call(vector_add_so, 1000, 0, calls=3, env=fake_hip)
    launch = "launch vector_add_kernel 4 1 1 256 1 1 0 n=1000 on 0"
    assert lines == ["hipInit", "load ELF machine=224 on 0", launch, "OK", launch, "OK",
                     launch, "OK"]


def test_another_device_is_made_current_and_set_back(vector_add_so, fake_hip):
    lines = _call(vector_add_so, 300, 3, calls=2, env=fake_hip)
    assert lines == ["hipInit", "set 3", "load ELF machine=224 on 3", "set 0",
                     "set 3", "launch vector_add_kernel 2 1 1 256 1 1 0 n=300 on 3", "set 0", "OK",
                     "set 3", "launch vector_add_kernel 2 1 1 256 1 1 0 n=300 on 3", "set 0", "OK"]


def test_a_failed_launch_names_the_call_and_the_hip_error(vector_add_so, fake_hip):
    lines = _call(vector_add_so, 64, 0, env={**fake_hip, "FAKE_LAUNCH": "1"})
    assert lines[-1] == ("RuntimeError: hipModuleLaunchKernel(vector_add_kernel) failed: "
                         "hipErrorInvalidValue (hipError_t 1)")


def test_a_failed_load_is_retried_at_the_next_launch(vector_add_so, fake_hip):
    lines = _call(vector_add_so, 64, 0, calls=2, env={**fake_hip, "FAKE_LOAD": "1"})
    assert lines == ["hipInit", "load ELF machine=224 on 0",
                     "RuntimeError: hipModuleLoadData (the gfx90a code object) failed: "
                     "hipErrorInvalidValue (hipError_t 1)",
                     "load ELF machine=224 on 0",
                     "RuntimeError: hipModuleLoadData (the gfx90a code object) failed: "
                     "hipErrorInvalidValue (hipError_t 1)"]


def test_a_buffer_host_code_allocates_for_its_kernels_is_device_memory(tmp_path, fake_hip):
    pytest.importorskip("tvm_ffi")
    build(WORKSPACE, "rocm -mcpu=gfx90a", out_dir=tmp_path, name="ws", shared=True)
    so = tmp_path / "ws.so"
    lines = _call(so, 1024, 2, env={**fake_hip, "FAKE_N_INDEX": "1"}, func="f", nargs=2)
    assert lines == ["hipInit", "set 2", "alloc 4096 at 0x5000 on 2", "set 0",
                     "set 2", "load ELF machine=224 on 2", "set 0",
                     "set 2", f"launch f_kernel 8 1 1 128 1 1 0 n={0x5000} on 2", "set 0",
                     "set 2", f"launch f_kernel_1 8 1 1 128 1 1 0 n={0x5000} on 2", "set 0",
                     "set 2", "free 0x5000 on 2", "set 0", "OK"]
    lines = _call(so, 1024, 0, env={**fake_hip, "FAKE_ALLOC": "1"}, func="f", nargs=2)
    assert lines == ["hipInit", "RuntimeError: hipMallocAsync (buffer 'tmp', 4096 bytes) failed: "
                     "hipErrorInvalidValue (hipError_t 1)"]
