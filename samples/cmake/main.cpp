// Calls the TIR functions that tirc_add_library built, through their headers.
// matmul runs on the CPU; vector_add launches its kernel on device 0 when a CUDA
// driver and device are present (device memory from the driver API, opened with
// dlopen as tirc's own launch code does), and is skipped otherwise.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cpu_matmul.h"
#include "vector_add.h"

static int run_matmul() {
  std::vector<float> a(128 * 256), b(256 * 64), c(128 * 64);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 5) * 0.5f;
  if (matmul(a.data(), b.data(), c.data()) != 0) {
    std::printf("matmul failed: %s\n", cpu_matmul_last_error());
    return 1;
  }
  double worst = 0;
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 64; ++j) {
      double want = 0;
      for (int k = 0; k < 256; ++k) want += double(a[i * 256 + k]) * b[k * 64 + j];
      worst = std::fmax(worst, std::fabs(want - c[i * 64 + j]));
    }
  std::printf("matmul: %s (largest error %g)\n", worst < 1e-3 ? "ok" : "WRONG", worst);
  return worst < 1e-3 ? 0 : 1;
}

using CUdeviceptr = unsigned long long;
template <class F> static F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

static int run_vector_add() {
  void* cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cu) {
    std::printf("vector_add: skipped (no CUDA driver)\n");
    return 0;
  }
  auto cuInit = sym<int (*)(unsigned)>(cu, "cuInit");
  auto cuDeviceGet = sym<int (*)(int*, int)>(cu, "cuDeviceGet");
  auto cuCtxRetain = sym<int (*)(void**, int)>(cu, "cuDevicePrimaryCtxRetain");
  auto cuCtxPush = sym<int (*)(void*)>(cu, "cuCtxPushCurrent_v2");
  auto cuMemAlloc = sym<int (*)(CUdeviceptr*, size_t)>(cu, "cuMemAlloc_v2");
  auto cuMemFree = sym<int (*)(CUdeviceptr)>(cu, "cuMemFree_v2");
  auto cuHtoD = sym<int (*)(CUdeviceptr, const void*, size_t)>(cu, "cuMemcpyHtoD_v2");
  auto cuDtoH = sym<int (*)(void*, CUdeviceptr, size_t)>(cu, "cuMemcpyDtoH_v2");
  int dev = 0;
  void* ctx = nullptr;
  if (!cuInit || !cuDeviceGet || !cuCtxRetain || !cuCtxPush || !cuMemAlloc || !cuMemFree ||
      !cuHtoD || !cuDtoH || cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0 ||
      cuCtxRetain(&ctx, dev) != 0 || cuCtxPush(ctx) != 0) {
    std::printf("vector_add: skipped (no usable CUDA device)\n");
    return 0;
  }
  const int64_t n = 1000;  // four blocks of 256 threads, the last one partly idle
  const size_t bytes = n * sizeof(float);
  std::vector<float> a(n), b(n), c(n);
  for (int64_t i = 0; i < n; ++i) a[i] = float(i), b[i] = 0.5f * float(i);
  CUdeviceptr da = 0, db = 0, dc = 0;
  if (cuMemAlloc(&da, bytes) || cuMemAlloc(&db, bytes) || cuMemAlloc(&dc, bytes) ||
      cuHtoD(da, a.data(), bytes) || cuHtoD(db, b.data(), bytes)) {
    std::printf("vector_add: device memory failed\n");
    return 1;
  }
  auto ptr = [](CUdeviceptr p) { return reinterpret_cast<float*>(static_cast<uintptr_t>(p)); };
  if (vector_add(ptr(da), ptr(db), ptr(dc), n) != 0) {  // default stream of device 0
    std::printf("vector_add failed: %s\n", vector_add_last_error());
    return 1;
  }
  cuDtoH(c.data(), dc, bytes);  // waits for the kernel (same stream)
  cuMemFree(da), cuMemFree(db), cuMemFree(dc);
  for (int64_t i = 0; i < n; ++i)
    if (c[i] != a[i] + b[i]) {
      std::printf("vector_add: WRONG at %lld\n", (long long)i);
      return 1;
    }
  std::printf("vector_add: ok on the GPU\n");
  return 0;
}

int main() { return run_matmul() | run_vector_add(); }
