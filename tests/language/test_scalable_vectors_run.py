"""Scalable-vector code run, not only compiled: modules built with tirc's C ABI for
AArch64 SVE and RISC-V V, linked with a small C driver by the cross compiler, and run
under qemu-user at several vector lengths, compared with what NumPy (or plain
arithmetic) gives. Skipped where qemu or the cross toolchain is absent; on Debian:

    apt-get install qemu-user gcc-aarch64-linux-gnu gcc-riscv64-linux-gnu
"""
from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from tirc.build.stages import build

MODULE = ROOT / "tests" / "tir" / "scalable_vectors.tir"
SOFTMAX = [ROOT / "tests" / "corpus" / "tvm_tests" / f"test_cpu_reduction__{n}.tir" for n in (2, 4)]

# arch -> (tirc target, cross compiler, qemu, sysroot, qemu -cpu for a vscale)
ARCHES = {
    "aarch64": ("llvm -mtriple=aarch64-linux-gnu -mattr=+sve", "aarch64-linux-gnu-gcc",
                "qemu-aarch64", "/usr/aarch64-linux-gnu",
                # vscale = vector length / 128 bits; qemu-user's default length is 512 bits
                lambda vs: f"max,sve-max-vq={vs},sve-default-vector-length={16 * vs}"),
    "riscv64": ("llvm -mcpu=generic-rv64 -mtriple=riscv64-linux-gnu -mattr=+64bit,+m,+a,+f,+d,+c,+v",
                "riscv64-linux-gnu-gcc", "qemu-riscv64", "/usr/riscv64-linux-gnu",
                # vscale = VLEN / 64 bits, VLEN at least 128
                lambda vs: f"rv64,v=true,vext_spec=v1.0,vlen={64 * vs}"),
}
VSCALES = {"aarch64": (1, 2, 3, 4, 16), "riscv64": (2, 4, 8)}


def _tools(arch: str):
    target, gcc, qemu, sysroot, cpu = ARCHES[arch]
    if not (shutil.which(gcc) and shutil.which(qemu) and Path(sysroot).is_dir()):
        pytest.skip(f"needs {qemu} and {gcc} (apt-get install qemu-user gcc-{arch}-linux-gnu)")
    return target, gcc, qemu, sysroot, cpu


def _run(arch: str, sources: list[Path], driver: str, tmp_path: Path) -> dict[int, str]:
    """Build ``sources`` (C ABI, symbols prefixed ``m<i>_``) and ``driver``; its output at
    each vscale of ``VSCALES[arch]``."""
    target, gcc, qemu, sysroot, cpu = _tools(arch)
    objects = []
    for i, src in enumerate(sources):
        out = tmp_path / f"m{i}"
        build(src.read_text(), target, None, out, "m", filename=str(src), abi="c",
              symbol_prefix=f"m{i}_")
        objects += [str(out / "m.o"), "-I", str(out)]
    (tmp_path / "drv.c").write_text(driver)
    exe = tmp_path / "drv"
    subprocess.run([gcc, "-O1", str(tmp_path / "drv.c"), *objects, "-lm", "-lgomp", "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    outputs = {}
    for vs in VSCALES[arch]:
        p = subprocess.run([qemu, "-cpu", cpu(vs), "-L", sysroot, str(exe)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, (vs, p.stdout, p.stderr)
        outputs[vs] = p.stdout
    return outputs


_DRIVER = r"""
#include <stdio.h>
#include "m.h"
static void show(const char* n, const float* a, int k) {
  printf("%s", n); for (int i = 0; i < k; ++i) printf(" %g", a[i]); printf("\n");
}
int main(void) {
  int32_t V[16] = {0}, S[1] = {0};
  float A[128], B[128];
  if (m0_vs(V, S)) return 1;
  printf("vscale %d\n", S[0]);
  printf("vs"); for (int i = 0; i < 16; ++i) printf(" %d", V[i]); printf("\n");
  for (int i = 0; i < 128; ++i) { A[i] = i; B[i] = -1; }
  if (m0_pred(A, B)) return 1; show("pred", B, 128);
  for (int i = 0; i < 128; ++i) B[i] = -1;
  if (m0_copy(A, B)) return 1; show("copy", B, 128);
  for (int i = 0; i < 128; ++i) B[i] = -1;
  if (m0_fill(B)) return 1; show("fill", B, 128);
  for (int i = 0; i < 128; ++i) B[i] = -1;
  if (m0_iota(B)) return 1; show("iota", B, 128);
  return 0;
}
"""


def _expected(vs: int) -> dict[str, list[float]]:
    n = 4 * vs  # lanes of float32xvscalex4
    a = np.arange(128, dtype=np.float32)
    untouched = np.full(128, -1, dtype=np.float32)
    pred = untouched.copy()
    pred[:14] = a[:14] + 1  # 14 of 16 elements, whatever the vector length
    copy, fill = untouched.copy(), untouched.copy()
    copy[:n], fill[:n] = a[:n], 1  # one vector's worth
    iota = untouched.copy()
    iota[:64] = np.maximum(a[:64] * 2, 20)  # masked at 64, not past it
    vs_loop = [i // n * 100 + i % n for i in range(16)]
    return {"vscale": [vs], "vs": vs_loop, "pred": pred, "copy": copy, "fill": fill, "iota": iota}


@pytest.mark.parametrize("arch", sorted(ARCHES))
def test_scalable_vectors_compute_at_every_vector_length(arch, tmp_path):
    outputs = _run(arch, [MODULE], _DRIVER, tmp_path)
    for vs, out in outputs.items():
        got = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in out.splitlines()}
        for name, want in _expected(vs).items():
            assert got[name] == [float(x) for x in want], (arch, vs, name)


_SOFTMAX_DRIVER = r"""
#include <stdio.h>
#include "m.h"
#define N (14 * 185)
int main(void) {
  static float A[N], B[N], C[N];
  for (int i = 0; i < N; ++i) A[i] = (float)((i * 7919) % 2000) / 100.0f - 10.0f;
  if (m0_main(A, B) || m1_main(A, C)) return 1;
  for (int i = 0; i < N; ++i) printf("%.9g %.9g\n", B[i], C[i]);
  return 0;
}
"""


def test_tvms_rvv_softmax_modules_compute_softmax(tmp_path):
    """TVM's dlight CPU softmax and fast softmax for RISC-V V (tests/corpus/tvm_tests/
    test_cpu_reduction__2, __4: T.vscale() loops, fixed-length masked loads and stores)
    give NumPy's softmax at every VLEN."""
    outputs = _run("riscv64", SOFTMAX, _SOFTMAX_DRIVER, tmp_path)
    a = ((np.arange(14 * 185) * 7919) % 2000).astype(np.float32) / np.float32(100) - np.float32(10)
    a = a.reshape(14, 185).astype(np.float64)
    want = np.exp(a - a.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    for vs, out in outputs.items():
        got = np.array([[float(x) for x in line.split()] for line in out.splitlines()])
        np.testing.assert_allclose(got[:, 0].reshape(14, 185), want, rtol=1e-5, err_msg=f"vscale {vs}")
        np.testing.assert_allclose(got[:, 1].reshape(14, 185), want, rtol=1e-4, err_msg=f"vscale {vs}")
    assert math.isclose(want.sum(), 14)


def test_fixed_length_masked_access_runs_on_this_machine():
    """T.masked_load/T.masked_store of fixed vectors (TVM's tail of a vectorised loop) on
    the host: lanes the mask has off are neither read nor written."""
    tvm_ffi = pytest.importorskip("tvm_ffi")
    from tirc.api import build_and_load
    from tirc.diagnostics import SourceFile
    text = """# from tvm.script import tirx as T
@T.prim_func
def f(A: T.Buffer((185,), "float32"), B: T.Buffer((185,), "float32")):
    for i in range(47):
        T.masked_store(B, T.masked_load("float32x4", A, T.Ramp(i * 4, 1, 4), T.get_active_lane_mask("uint1x4", i * 4, 185)) * T.Broadcast(T.float32(2.0), 4), T.Ramp(i * 4, 1, 4), T.get_active_lane_mask("uint1x4", i * 4, 185))
"""
    lib = build_and_load(SourceFile("m.tir", text), "llvm").module
    a = np.arange(185, dtype="float32")
    b = np.full(185, -1, dtype="float32")
    lib["f"](tvm_ffi.from_dlpack(a), tvm_ffi.from_dlpack(b))
    np.testing.assert_array_equal(b, a * 2)
