"""GPU code quality (issue 7, deliverable 3): the same lowered TIR built by tirc and by
TVM 0.27 for CUDA, run on the same device arrays, checked against NumPy and timed with
CUDA events.

    python bench/gpu_kernels.py                  # on a machine with an NVIDIA GPU
    python bench/gpu_kernels.py --quick          # small sizes, few repeats
    python bench/gpu_kernels.py --build-only     # no GPU needed: build and check only

Kernels (TIR text in the form TVM 0.27 prints, thread-bound loops; see KERNELS):

* ``add``       C = A + B, one float32 per thread (2^26 elements);
* ``add_vec4``  the same with ``T.vectorized(4)``: four consecutive floats per thread;
* ``reduce_sum`` a two-kernel sum of 2^26 float32: 1024 blocks x 256 threads each sum a
  strided slice, a shared-memory tree (``T.tvm_storage_sync("shared")``) gives one
  partial per block, a second one-block kernel sums the partials the same way;
* ``matmul``    C = A @ B, 2048^3 float32, 64x64 block tiles through shared memory
  (16-deep K tiles), 16x16 threads each accumulating a 4x4 register block;
* ``dl_matmul``, ``dl_softmax``, ``dl_layernorm``, ``dl_gemv`` (issue 19): block-level TIR
  of te / topi operators scheduled by ``tvm.s_tir.dlight``'s default GPU rules (Matmul,
  GEMV, Reduction, GeneralReduction, Fallback) for sm_90, printed by TVM 0.27 and checked
  in as text (bench/scheduled/cuda/, made by bench/scheduled/gen_scheduled.py): matmul
  2048^3, softmax and layernorm over 4096 x 4096, GEMV y = W x with W 4096 x 4096, all
  float32, fixed sizes (``--quick`` runs them as they are). The same text goes to both
  tools. Where tirc refuses one with a located error (a pass not ported yet) it is
  reported as "refused", not as a failure; tests/corpora/test_bench_dlight_cuda.py holds the
  exact list. Their CPU check runs the block-level module with its thread loops made
  serial (the dlight stages are separate thread loops, so this computes the same thing);
  with ``--quick`` the matmul's is skipped (2048^3 serially).

Each kernel is built with ``tirc.build.stages.build(text, "cuda -arch=ARCH", "llvm", ...,
shared=True)`` (device code as a cubin through nvJitLink when it is installed, PTX
otherwise) and with ``tvm.compile(mod, target=Target({"kind": "cuda", "arch": ARCH},
host="llvm"))`` + ``export_library``; TVM's library holds CUDA C that is compiled when it
is loaded (``tvm_callback_cuda_compile``), with NVRTC when it is installed, else nvcc.
Without either, TVM is reported unavailable and tirc runs alone. Both libraries are
loaded through tvm-ffi and called on the same ``tirc.runtime`` device arrays; every
output is compared with NumPy. Timing: warm-up launches, then ``--repeat`` samples of
``--batch`` back-to-back launches between two CUDA events on one stream (the time per
launch is the sample / batch); the table shows medians. The elementwise kernels and the
reduction are also measured against a device-to-device memcpy of the same bytes
(``cuMemcpyDtoDAsync``) in the same run: bandwidth counts every byte read and written
(memcpy: 2 x size; add: 3 x size; reduce_sum: the input once).

Without a CUDA device (no driver, no GPU) the script prints one line and exits with
status 4, unless ``--build-only``: then it builds every kernel for ``--arch`` (default
sm_90) with tirc (and TVM, compiling TVM's CUDA C to a cubin when a CUDA compiler is
present), checks the outputs exist and are what they claim to be (ELF cubins, PTX with
the kernel entry), and runs the elementwise kernels' logic on the CPU (tirc's
``serialize_threads``, thread loops as serial loops: refused for kernels with shared
memory and barriers, which is reported). Exit status: 0 all well, 1 a build failure or
a wrong result, 2 bad usage, 4 no GPU.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 4
HEADER = "# from tvm.script import tirx as T\n\n"


# -- the kernels ------------------------------------------------------------------------
def add_text(n: int) -> str:
    return HEADER + f"""@T.prim_func
def add(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "float32"), C: T.Buffer(({n},), "float32")):
    T.func_attr({{"tir.noalias": True}})
    for bx in T.thread_binding({n // 256}, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            C[bx * 256 + tx] = A[bx * 256 + tx] + B[bx * 256 + tx]"""


def add_vec4_text(n: int) -> str:
    return HEADER + f"""@T.prim_func
def add_vec4(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "float32"), C: T.Buffer(({n},), "float32")):
    T.func_attr({{"tir.noalias": True}})
    for bx in T.thread_binding({n // 1024}, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            for v in T.vectorized(4):
                C[bx * 1024 + tx * 4 + v] = A[bx * 1024 + tx * 4 + v] + B[bx * 1024 + tx * 4 + v]"""


REDUCE_BLOCKS = 1024


def reduce_text(n: int) -> str:
    blocks = REDUCE_BLOCKS
    per_thread = n // (blocks * 256)
    return HEADER + f"""@T.prim_func
def reduce_sum(A: T.Buffer(({n},), "float32"), P: T.Buffer(({blocks},), "float32"), Out: T.Buffer((1,), "float32")):
    T.func_attr({{"tir.noalias": True}})
    for bx in T.thread_binding({blocks}, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            red = T.alloc_shared((256,))
            acc: T.float32 = T.float32(0.0)
            for i in range({per_thread}):
                acc = acc + A[i * {blocks * 256} + bx * 256 + tx]
            red[tx] = acc
            T.tvm_storage_sync("shared")
            for s in T.unroll(8):
                if tx < T.shift_right(128, s):
                    red[tx] = red[tx] + red[tx + T.shift_right(128, s)]
                T.tvm_storage_sync("shared")
            if tx == 0:
                P[bx] = red[0]
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(256, thread="threadIdx.x"):
            red2 = T.alloc_shared((256,))
            acc2: T.float32 = T.float32(0.0)
            for i in range({blocks // 256}):
                acc2 = acc2 + P[i * 256 + tx]
            red2[tx] = acc2
            T.tvm_storage_sync("shared")
            for s in T.unroll(8):
                if tx < T.shift_right(128, s):
                    red2[tx] = red2[tx] + red2[tx + T.shift_right(128, s)]
                T.tvm_storage_sync("shared")
            if tx == 0:
                Out[0] = red2[0]"""


def matmul_text(n: int) -> str:
    """C = A @ B for n x n float32 (n a multiple of 64): a 64x64 tile of C per block of
    16x16 threads, A and B tiles of depth 16 through shared memory, a 4x4 register block
    per thread (rows ty + 16 i, columns tx + 16 j: conflict-free shared reads)."""
    g = n // 64
    return HEADER + f"""@T.prim_func
def matmul(A: T.Buffer(({n}, {n}), "float32"), B: T.Buffer(({n}, {n}), "float32"), C: T.Buffer(({n}, {n}), "float32")):
    T.func_attr({{"tir.noalias": True}})
    for by in T.thread_binding({g}, thread="blockIdx.y"):
        for bx in T.thread_binding({g}, thread="blockIdx.x"):
            for ty in T.thread_binding(16, thread="threadIdx.y"):
                for tx in T.thread_binding(16, thread="threadIdx.x"):
                    As = T.alloc_shared((16, 64))
                    Bs = T.alloc_shared((16, 64))
                    acc = T.alloc_local((16,))
                    for i in T.unroll(16):
                        acc[i] = T.float32(0.0)
                    for ko in range({n // 16}):
                        for l in T.unroll(4):
                            As[tx, l * 16 + ty] = A[by * 64 + l * 16 + ty, ko * 16 + tx]
                            Bs[l * 4 + ty // 4, ty % 4 * 16 + tx] = B[ko * 16 + l * 4 + ty // 4, bx * 64 + ty % 4 * 16 + tx]
                        T.tvm_storage_sync("shared")
                        for ki in T.unroll(16):
                            for i in T.unroll(4):
                                for j in T.unroll(4):
                                    acc[i * 4 + j] = acc[i * 4 + j] + As[ki, i * 16 + ty] * Bs[ki, j * 16 + tx]
                        T.tvm_storage_sync("shared")
                    for i in T.unroll(4):
                        for j in T.unroll(4):
                            C[by * 64 + i * 16 + ty, bx * 64 + j * 16 + tx] = acc[i * 4 + j]"""


@dataclass
class Kernel:
    name: str          # the prim_func's name, the library's function
    text: object       # size -> TIR text
    size: int          # full run
    quick: int         # --quick
    metric: str        # "GB/s" or "GFLOP/s"
    cpu_check: bool    # its logic must run on the CPU through serialize_threads

    def inputs(self, n: int, rng: np.random.Generator) -> list[np.ndarray]:
        if self.name in ("add", "add_vec4"):
            return [rng.uniform(-1, 1, n).astype(np.float32),
                    rng.uniform(-1, 1, n).astype(np.float32), np.zeros(n, np.float32)]
        if self.name == "reduce_sum":
            return [rng.uniform(0, 1, n).astype(np.float32),
                    np.zeros(REDUCE_BLOCKS, np.float32), np.zeros(1, np.float32)]
        return [rng.uniform(-1, 1, (n, n)).astype(np.float32),
                rng.uniform(-1, 1, (n, n)).astype(np.float32), np.zeros((n, n), np.float32)]

    def outputs(self) -> list[int]:
        """Indices of the arguments the kernel writes."""
        return [1, 2] if self.name == "reduce_sum" else [2]

    def check(self, n: int, args: list[np.ndarray], got: dict[int, np.ndarray]) -> str | None:
        """None when ``got`` (output index -> array) is right, else what is wrong."""
        if self.name in ("add", "add_vec4"):
            want = {2: args[0] + args[1]}
            tol = (1e-6, 0.0)
        elif self.name == "reduce_sum":
            a = args[0].astype(np.float64)
            partial = a.reshape(-1, REDUCE_BLOCKS, 256).sum(axis=(0, 2))
            want = {1: partial, 2: np.array([a.sum()])}
            tol = (1e-4, 1e-3)
        else:
            want = {2: args[0].astype(np.float64) @ args[1].astype(np.float64)}
            tol = (1e-3, 1e-3)
        for i, w in want.items():
            g = got[i].astype(np.float64)
            if not np.allclose(g, w, rtol=tol[0], atol=tol[1]):
                d = np.abs(g - w)
                j = np.unravel_index(int(np.argmax(d)), d.shape)
                return (f"argument {i}: largest difference {float(d[j]):.3g} at "
                        f"{tuple(int(x) for x in j)} (got {float(g[j]):.6g}, NumPy "
                        f"{float(w[j]):.6g})")
        return None

    def work(self, n: int) -> float:
        """Bytes moved (GB/s kernels) or floating-point operations (GFLOP/s)."""
        if self.name in ("add", "add_vec4"):
            return 3.0 * n * 4
        if self.name == "reduce_sum":
            return 1.0 * n * 4
        return 2.0 * n ** 3


    def memcpy_source(self) -> int:
        """The argument a device-to-device copy of the same bytes is timed from."""
        return 0

    def refusal_ok(self) -> bool:
        """A located error from tirc is reported, not counted as a failure (modules
        tirc does not build yet; tests/corpora/test_bench_dlight_cuda.py holds the exact list)."""
        return False


# -- dlight-scheduled workloads ---------------------------------------------------------
# Block-level TIR printed by TVM 0.27 with tvm.s_tir.dlight's default GPU rules (Matmul,
# GEMV, Reduction, GeneralReduction, Fallback) for {"kind": "cuda", "arch": "sm_90"},
# checked in as text: bench/scheduled/cuda/*.tir, made by bench/scheduled/gen_scheduled.py
# (its index.json lists the parameters). Fixed sizes: --quick runs them as they are.
SCHEDULED = ROOT / "bench" / "scheduled"


@dataclass
class ScheduledKernel(Kernel):
    shapes: tuple = ()   # parameter shapes (the last one is the output)
    label: str = ""

    def inputs(self, n: int, rng: np.random.Generator) -> list[np.ndarray]:
        *ins, out = self.shapes
        return [rng.uniform(-1, 1, s).astype(np.float32) for s in ins] + [np.zeros(out, np.float32)]

    def outputs(self) -> list[int]:
        return [len(self.shapes) - 1]

    def reference(self, args: list[np.ndarray]) -> np.ndarray:
        a = [x.astype(np.float64) for x in args[:-1]]
        if self.name == "dl_matmul":
            return a[0] @ a[1]
        if self.name == "dl_gemv":
            return a[0] @ a[1].T
        if self.name == "dl_softmax":
            e = np.exp(a[0] - a[0].max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        if self.name == "dl_layernorm":
            x, g, b = a
            mean = x.mean(axis=1, keepdims=True)
            return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5) * g + b
        raise ValueError(f"no reference for {self.name}")

    def check(self, n: int, args: list[np.ndarray], got: dict[int, np.ndarray]) -> str | None:
        o = self.outputs()[0]
        w = self.reference(args)
        g = got[o].astype(np.float64)
        tol = (1e-3, 1e-6) if self.name == "dl_softmax" else (1e-3, 1e-3)
        if np.allclose(g, w, rtol=tol[0], atol=tol[1]):
            return None
        d = np.abs(g - w)
        j = np.unravel_index(int(np.argmax(d)), d.shape)
        return (f"argument {o}: largest difference {float(d[j]):.3g} at {tuple(int(x) for x in j)} "
                f"(got {float(g[j]):.6g}, NumPy {float(w[j]):.6g})")

    def work(self, n: int) -> float:
        if self.metric == "GFLOP/s":  # matmul
            (m, k), (_, nn) = self.shapes[0], self.shapes[1]
            return 2.0 * m * nn * k
        return 4.0 * sum(int(np.prod(s)) for s in self.shapes)  # every array once

    def memcpy_source(self) -> int:
        sizes = [int(np.prod(s)) for s in self.shapes[:-1]]
        return sizes.index(max(sizes))

    def refusal_ok(self) -> bool:
        return True


def scheduled_kernels() -> list[ScheduledKernel]:
    import json
    index = json.loads((SCHEDULED / "index.json").read_text())
    out = []
    for m in index["modules"]:
        if m["target"]["kind"] != "cuda":
            continue
        text = (SCHEDULED / m["file"]).read_text()
        shapes = tuple(tuple(p["shape"]) for p in m["params"])
        biggest = max(int(np.prod(s)) for s in shapes[:-1])
        metric = "GFLOP/s" if m["name"] == "dl_matmul" else "GB/s"
        label = ", ".join(f"{p['name']} " + "x".join(str(d) for d in p["shape"])
                          for p in m["params"][:-1])
        out.append(ScheduledKernel(m["name"], (lambda n, t=text: t), biggest, biggest, metric,
                                   False, shapes=shapes, label=label))
    return out


KERNELS = [
    Kernel("add", add_text, 1 << 26, 1 << 22, "GB/s", True),
    Kernel("add_vec4", add_vec4_text, 1 << 26, 1 << 22, "GB/s", True),
    Kernel("reduce_sum", reduce_text, 1 << 26, 1 << 20, "GB/s", False),
    Kernel("matmul", matmul_text, 2048, 512, "GFLOP/s", False),
] + scheduled_kernels()


def size_label(k: Kernel, n: int) -> str:
    if isinstance(k, ScheduledKernel):
        return k.label
    if k.name == "matmul":
        return f"{n}^3"
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


# -- tirc -------------------------------------------------------------------------------
def device_format() -> str:
    from tirc.backends.cuda import cubin as nvptx_cubin
    return "cubin" if nvptx_cubin.available() else "ptx"


def build_tirc(k: Kernel, n: int, arch: str, out: Path, fmt: str) -> Path:
    from tirc.build.stages import build
    out.mkdir(parents=True, exist_ok=True)
    build(k.text(n), f"cuda -arch={arch}", "llvm", out, k.name, shared=True,
          filename=f"{k.name}.tir", device_format=fmt)
    return out / f"{k.name}.so"


def check_tirc_outputs(k: Kernel, out: Path, fmt: str) -> list[str]:
    """What is missing or wrong among tirc's outputs for ``k`` (empty: all there)."""
    problems = []
    for suffix in (".o", ".so", ".h", ".json", f".{fmt}"):
        p = out / f"{k.name}{suffix}"
        if not p.is_file() or p.stat().st_size == 0:
            problems.append(f"{p.name} missing or empty")
    image = out / f"{k.name}.{fmt}"
    if image.is_file():
        data = image.read_bytes()
        if fmt == "cubin" and data[:4] != b"\x7fELF":
            problems.append(f"{image.name} is not an ELF cubin")
        if fmt == "ptx" and f".entry {k.name}_kernel".encode() not in data:
            problems.append(f"{image.name} has no entry {k.name}_kernel")
    return problems


def cpu_check(k: Kernel, work: Path) -> str:
    """Run the kernel's logic on the CPU (thread loops as serial loops): 'ok', or why
    not / what is wrong."""
    from tirc import runtime as rt
    from tirc.build.stages import build
    from tirc.diagnostics import Diagnostic
    from tirc.frontend.parse import parse
    from tirc.passes.lower.serialize_threads import serialize_threads

    n = 4096 if k.name != "matmul" else 64
    if k.name == "reduce_sum":
        n = REDUCE_BLOCKS * 256 * 2
    try:
        mod = serialize_threads(parse(k.text(n), f"{k.name}.tir"))
    except Diagnostic as e:
        return f"not possible ({e.message.split(';')[0]})"
    out = work / "cpu" / k.name
    out.mkdir(parents=True, exist_ok=True)
    build(mod, "llvm", None, out, k.name, shared=True, filename=f"{k.name}.tir")
    fn = rt.load(out / f"{k.name}.so")[k.name]
    args = k.inputs(n, np.random.default_rng(1))
    fn(*args)
    wrong = k.check(n, args, {i: args[i] for i in k.outputs()})
    return "ok" if wrong is None else f"WRONG: {wrong}"


def refused(k: Kernel, e: Exception) -> bool:
    """tirc refused ``k`` with a located error, and ``k`` is one it may refuse for now."""
    from tirc.diagnostics import Diagnostic
    return isinstance(e, Diagnostic) and k.refusal_ok()


def first_line(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0]


# -- TVM --------------------------------------------------------------------------------
@dataclass
class TVMState:
    available: bool = False
    why: str = ""               # when not available, or the compiler's limitation
    compiler: str | None = None  # "nvrtc" or "nvcc"
    target: object = None
    binaries: dict[str, bytes] = field(default_factory=dict)  # CUDA source hash -> binary
    compile: object = None      # CUDA source -> binary (the registered callback)


def _nvrtc_works() -> str | None:
    """None when NVRTC can be used, else why not."""
    try:
        from cuda.bindings import nvrtc
        err, _, _ = nvrtc.nvrtcVersion()
        return None if int(err) == 0 else f"nvrtcVersion failed ({err})"
    except Exception as e:  # noqa: BLE001  (cuda-python raises its own loader errors)
        return str(e).splitlines()[0][:120]


def _nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
            return os.path.join(home, "bin", "nvcc")
    return None


def setup_tvm(arch: str, choice: str) -> TVMState:
    """Import TVM, choose the CUDA compiler for its device code and register the
    compile callback TVM calls when a library with CUDA source is loaded."""
    st = TVMState()
    if choice == "none":
        st.why = "skipped (--tvm-compiler none)"
        return st
    try:
        import tvm
        import tvm.support.nvcc as tvm_nvcc
        import tvm_ffi
    except Exception as e:  # noqa: BLE001
        st.why = f"TVM is not importable ({type(e).__name__}: {str(e).splitlines()[0][:100]})"
        return st
    nvrtc_why = _nvrtc_works() if choice in ("auto", "nvrtc") else "not chosen"
    nvcc = _nvcc_path() if choice in ("auto", "nvcc") else None
    if nvrtc_why is None:
        st.compiler = "nvrtc"
    elif nvcc is not None:
        st.compiler = "nvcc"
        if nvcc != shutil.which("nvcc"):  # TVM runs "nvcc" from PATH
            os.environ["PATH"] = os.path.dirname(nvcc) + os.pathsep + os.environ.get("PATH", "")
    else:
        st.why = (f"no CUDA compiler for TVM's CUDA C: NVRTC unavailable ({nvrtc_why}), "
                  "no nvcc on PATH")
        return st
    st.target = tvm.target.Target({"kind": "cuda", "arch": arch}, host="llvm")
    st.available = True

    def compile_cuda(code, *_rest):
        key = hashlib.sha256(str(code).encode()).hexdigest()
        if key not in st.binaries:
            fmt = "cubin" if st.compiler == "nvrtc" else "fatbin"
            with st.target:
                st.binaries[key] = bytes(tvm_nvcc.compile_cuda(
                    str(code), target_format=fmt, compiler=st.compiler))
        return bytearray(st.binaries[key])

    tvm_ffi.register_global_func("tvm_callback_cuda_compile", compile_cuda, override=True)
    st.compile = compile_cuda
    return st


def build_tvm(k: Kernel, n: int, st: TVMState, out: Path) -> tuple[Path, int]:
    """TVM's library for ``k`` and the size of its compiled device code (the CUDA C is
    compiled here, as a check, and again from the cache when the library is loaded)."""
    import tvm
    out.mkdir(parents=True, exist_ok=True)
    mod = tvm.script.from_source(k.text(n))
    lib = tvm.compile(mod, target=st.target)
    path = out / f"{k.name}.so"
    lib.export_library(str(path))
    sources = [m.inspect_source() for m in lib.mod.imports_ if m.kind == "cuda"]
    if not sources:
        raise RuntimeError("TVM's library has no CUDA module")
    nbytes = sum(len(st.compile(src)) for src in sources)
    return path, nbytes


def load_tvm(path: Path):
    import tvm_ffi
    if tvm_ffi.get_global_func("ffi.Module.load_from_bytes.cuda", allow_missing=True) is None:
        raise RuntimeError("TVM's CUDA runtime (libtvm_runtime_cuda) is not loaded")
    return tvm_ffi.load_module(str(path))


# -- timing -----------------------------------------------------------------------------
def time_launches(launch, stream, repeat: int, batch: int, warmup: int) -> list[float]:
    """Milliseconds per launch: ``repeat`` samples of ``batch`` launches between two
    events on ``stream`` (the current stream of tvm-ffi calls inside)."""
    from tirc import runtime as rt
    times = []
    with rt.use_stream(stream):
        for _ in range(warmup):
            launch()
        stream.synchronize()
        for _ in range(repeat):
            start = stream.record()
            for _ in range(batch):
                launch()
            end = stream.record()
            times.append(start.elapsed_ms(end) / batch)
    return times


def memcpy_launcher(dst, src, nbytes: int, stream):
    """A device-to-device copy of ``nbytes`` on ``stream``: cuMemcpyDtoDAsync, or
    tirc.runtime's copy when the driver call is not usable."""
    from tirc import runtime as rt
    try:
        from cuda.bindings import driver
        handle = stream.handle

        def copy():
            err, = driver.cuMemcpyDtoDAsync(dst.data_ptr, src.data_ptr, nbytes, handle)
            if int(err) != 0:
                raise RuntimeError(f"cuMemcpyDtoDAsync: {err}")
        copy()
        stream.synchronize()
        return copy, "cuMemcpyDtoDAsync"
    except Exception:  # noqa: BLE001
        return (lambda: rt.copyto(dst, src, stream=stream)), "tirc.runtime.copyto"


# -- the run ----------------------------------------------------------------------------
@dataclass
class Row:
    kernel: str
    size: str
    metric: str
    tirc_ms: float | None = None
    tvm_ms: float | None = None
    tirc_rate: float | None = None
    tvm_rate: float | None = None
    tirc_check: str = "-"
    tvm_check: str = "-"
    notes: list[str] = field(default_factory=list)


def fmt_num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def no_gpu_reason() -> str | None:
    """None when CUDA device 0 exists, else a one-line reason."""
    try:
        from tirc.runtime import cudadrv
        cudadrv.device_count()
        return None
    except Exception as e:  # noqa: BLE001
        text = " ".join(str(e).split()).split(' ("')[0]  # drop the loader's details
        return text[:160] if text else type(e).__name__


def run_gpu(args, kernels: list[Kernel], work: Path) -> int:
    from tirc import runtime as rt

    dev = rt.device("cuda", 0)
    arch = args.arch or dev.arch
    fmt = device_format()
    st = setup_tvm(arch, args.tvm_compiler)
    print(f"device: {dev.name} ({dev.arch}), {dev.multiprocessor_count} SMs; tirc target "
          f"cuda -arch={arch} ({fmt}); TVM: "
          + (f"CUDA C compiled with {st.compiler}" if st.available else st.why))
    stream = dev.create_stream()
    rng = np.random.default_rng(0)
    rows: list[Row] = []
    failed = False
    memcpy_rate: dict[int, float] = {}
    import tvm_ffi
    for k in kernels:
        n = k.quick if args.quick else k.size
        row = Row(k.name, size_label(k, n), k.metric)
        rows.append(row)
        host = k.inputs(n, rng)
        arrays = [rt.from_numpy(a, dev) for a in host]
        try:
            call_args = [tvm_ffi.from_dlpack(a) for a in arrays]
        except Exception:  # noqa: BLE001  (tvm-ffi takes the arrays through DLPack anyway)
            call_args = arrays
        fns, mods = {}, []  # mods: keep the libraries loaded while their functions run
        try:
            mods.append(rt.load(build_tirc(k, n, arch, work / "tirc" / k.name, fmt)))
            fns["tirc"] = mods[-1][k.name]
        except Exception as e:  # noqa: BLE001
            if refused(k, e):
                row.tirc_check = f"refused: {first_line(e)[:100]}"
            else:
                row.tirc_check = f"build/load failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
                failed = True
        if st.available:
            try:
                path, _ = build_tvm(k, n, st, work / "tvm" / k.name)
                mods.append(load_tvm(path))
                fns["TVM"] = mods[-1][k.name]
            except Exception as e:  # noqa: BLE001
                row.tvm_check = f"build/load failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
        else:
            row.tvm_check = "unavailable"
        for who, fn in fns.items():
            for i in k.outputs():  # start from zeros for each compiler
                arrays[i].copyfrom(host[i])
            dev.synchronize()
            try:
                with rt.use_stream(stream):
                    fn(*call_args)
                stream.synchronize()
                wrong = k.check(n, host, {i: arrays[i].to_numpy() for i in k.outputs()})
            except Exception as e:  # noqa: BLE001
                wrong = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
            check = "ok" if wrong is None else f"WRONG: {wrong}"
            if who == "tirc":
                row.tirc_check = check
                failed |= wrong is not None
            else:
                row.tvm_check = check
            if wrong is not None:
                continue
            times = time_launches(lambda fn=fn, a=call_args: fn(*a), stream, args.repeat,
                                  args.batch, args.warmup)
            ms = statistics.median(times)
            rate = k.work(n) / (ms * 1e-3) / 1e9
            if who == "tirc":
                row.tirc_ms, row.tirc_rate = ms, rate
            else:
                row.tvm_ms, row.tvm_rate = ms, rate
        if k.metric == "GB/s":
            src = k.memcpy_source()
            nbytes = host[src].size * 4
            if nbytes not in memcpy_rate:
                dst = rt.empty((host[src].size,), "float32", dev)
                copy, how = memcpy_launcher(dst, arrays[src], nbytes, stream)
                times = time_launches(copy, stream, args.repeat, args.batch, args.warmup)
                memcpy_rate[nbytes] = 2.0 * nbytes / (statistics.median(times) * 1e-3) / 1e9
                rows.insert(rows.index(row), Row(
                    f"memcpy D2D ({how})", f"{nbytes / (1 << 20):g} MiB", "GB/s",
                    tirc_ms=statistics.median(times), tirc_rate=memcpy_rate[nbytes],
                    tirc_check="reference"))
                del dst
            ref = memcpy_rate[nbytes]
            for who, rate in (("tirc", row.tirc_rate), ("TVM", row.tvm_rate)):
                if rate is not None:
                    row.notes.append(f"{who} {100.0 * rate / ref:.1f}% of memcpy")
        del arrays, call_args
    print_table(rows, args)
    return EXIT_FAIL if failed else EXIT_OK


def print_table(rows: list[Row], args) -> None:
    print()
    print(f"repeat {args.repeat} x batch {args.batch} launches after {args.warmup} warm-up "
          f"launches; medians; ratio = tirc rate / TVM rate (> 1: tirc faster)")
    print()
    print("| kernel | size | tirc ms | TVM ms | unit | tirc | TVM | tirc / TVM | "
          "vs memcpy | tirc check | TVM check |")
    print("|---|---|---:|---:|---|---:|---:|---:|---|---|---|")
    for r in rows:
        ratio = (f"{r.tirc_rate / r.tvm_rate:.2f}x" if r.tirc_rate and r.tvm_rate else "-")
        print(f"| {r.kernel} | {r.size} | {fmt_num(r.tirc_ms, 4)} | {fmt_num(r.tvm_ms, 4)} | "
              f"{r.metric} | {fmt_num(r.tirc_rate, 1)} | {fmt_num(r.tvm_rate, 1)} | {ratio} | "
              f"{'; '.join(r.notes) or '-'} | {r.tirc_check} | {r.tvm_check} |")


def run_build_only(args, kernels: list[Kernel], work: Path) -> int:
    arch = args.arch or "sm_90"
    fmt = device_format()
    st = setup_tvm(arch, args.tvm_compiler)
    print(f"build only: tirc target cuda -arch={arch} (device code as {fmt}"
          + ("" if fmt == "cubin" else "; nvJitLink is not installed") + "); TVM: "
          + (f"CUDA C compiled with {st.compiler}" if st.available else st.why))
    print()
    print("| kernel | size | tirc build (s) | tirc outputs | TVM build (s) | TVM device code | "
          "CPU check (serial threads) |")
    print("|---|---|---:|---|---:|---|---|")
    failed = False
    for k in kernels:
        n = k.quick if args.quick else k.size
        out = work / "tirc" / k.name
        t0 = time.perf_counter()
        try:
            build_tirc(k, n, arch, out, fmt)
            problems = check_tirc_outputs(k, out, fmt)
            tirc = "ok: " + ", ".join(sorted(p.suffix for p in out.iterdir())) if not problems \
                else "BAD: " + "; ".join(problems)
            failed |= bool(problems)
        except Exception as e:  # noqa: BLE001
            if refused(k, e):
                tirc = f"refused: {first_line(e)[:140]}"
            else:
                tirc = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
                failed = True
        t_tirc = time.perf_counter() - t0
        t_tvm, tvm = None, st.why or "unavailable"
        if st.available:
            t0 = time.perf_counter()
            try:
                _, nbytes = build_tvm(k, n, st, work / "tvm" / k.name)
                tvm = f"ok: {'cubin' if st.compiler == 'nvrtc' else 'fatbin'} {nbytes} B ({st.compiler})"
            except Exception as e:  # noqa: BLE001
                tvm = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
            t_tvm = time.perf_counter() - t0
        try:
            if args.quick and isinstance(k, ScheduledKernel) and k.metric == "GFLOP/s":
                cpu = "skipped with --quick (2048^3 serially on the CPU takes ~40 s)"
            else:
                cpu = cpu_check(k, work)
        except Exception as e:  # noqa: BLE001
            cpu = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
        failed |= not cpu.startswith(("ok", "not possible", "skipped")) or (k.cpu_check and cpu != "ok")
        print(f"| {k.name} | {size_label(k, n)} | {t_tirc:.2f} | {tirc} | "
              f"{fmt_num(t_tvm, 2)} | {tvm} | {cpu} |")
    return EXIT_FAIL if failed else EXIT_OK


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small sizes (2^22 floats, 512^3 matmul), repeat 5")
    p.add_argument("--repeat", type=int, default=None,
                   help="timed samples per kernel (default 20; 5 with --quick)")
    p.add_argument("--batch", type=int, default=None,
                   help="launches per timed sample (default 10; 3 with --quick)")
    p.add_argument("--warmup", type=int, default=3, help="untimed launches first (default 3)")
    p.add_argument("--arch", default=None,
                   help="sm_XY to build for (default: the device's; sm_90 with --build-only)")
    p.add_argument("--kernels", default="all",
                   help="comma-separated subset of: " + ", ".join(k.name for k in KERNELS))
    p.add_argument("--tvm-compiler", choices=("auto", "nvrtc", "nvcc", "none"), default="auto",
                   help="what compiles TVM's CUDA C (auto: NVRTC, else nvcc; none: tirc alone)")
    p.add_argument("--build-only", action="store_true",
                   help="no GPU needed: build every kernel, check the outputs and the "
                        "elementwise kernels' logic on the CPU")
    p.add_argument("-o", "--out", default=None, help="keep the builds here (default: a temporary directory)")
    args = p.parse_args(argv)
    args.repeat = args.repeat if args.repeat is not None else (5 if args.quick else 20)
    args.batch = args.batch if args.batch is not None else (3 if args.quick else 10)
    if args.repeat < 1 or args.batch < 1 or args.warmup < 0:
        p.error("--repeat and --batch must be at least 1, --warmup at least 0")
    if args.arch is not None:
        from tirc.runtime.loader import parse_arch
        try:
            parse_arch(args.arch)
        except ValueError as e:
            p.error(str(e))
        if not args.arch.startswith("sm_"):
            p.error("--arch takes sm_XY")
    names = [k.name for k in KERNELS]
    wanted = names if args.kernels == "all" else [s.strip() for s in args.kernels.split(",") if s.strip()]
    unknown = [w for w in wanted if w not in names]
    if unknown or not wanted:
        p.error(f"--kernels: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(names)}")
    kernels = [k for k in KERNELS if k.name in wanted]

    if not args.build_only:
        why = no_gpu_reason()
        if why is not None:
            print(f"gpu_kernels.py: no CUDA device is present ({why}); run it on a "
                  "machine with an NVIDIA GPU, or use --build-only", file=sys.stderr)
            return EXIT_NO_GPU
    try:
        with tempfile.TemporaryDirectory(prefix="gpu-kernels-") as tmp:
            work = Path(args.out) if args.out else Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            return (run_build_only if args.build_only else run_gpu)(args, kernels, work)
    except KeyboardInterrupt:
        return 130
    except Exception:  # noqa: BLE001  (a bug here: say so, with the trace)
        traceback.print_exc()
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
