"""Targets as values: a kind, typed options, and an optional host target.

A registry of target kinds declares each kind's device type, its options with their
types and defaults, and a hook that derives options from others (``cuda``: the PTX ISA
version and the shared-memory limit from ``arch``; ``llvm``: ``mtriple`` from this
machine). Targets parse from the command-line form (``cuda -arch=sm_90``), from JSON
text or a dict (``{"kind": "cuda", "arch": "sm_90", "host": "llvm"}``) and from
``T.target(...)`` in TVMScript. Every target has one canonical string, the JSON of all
its resolved options; equality and hashing go by it. Nothing here asks a GPU anything.

A cuda target may list several archs (``cuda -arch=sm_80,sm_90``, JSON ``"arch":
["sm_80", "sm_90"]``): the build compiles one image per arch and the host object picks
the one that fits the running device. The list is kept sorted, oldest first, each arch
once; a list of one is the plain string (``-arch=sm_90`` and ``["sm_90"]`` are the same
target). Its derived ``ptx_version`` is the oldest arch's and its
``max_shared_memory_per_block`` the smallest of the archs' limits.
"""
from __future__ import annotations

import functools
import json
import platform
import re
import sys
from dataclasses import field
from typing import Any, Callable, NamedTuple

from tirc.records import record

DEFAULT_CUDA_ARCH = "sm_80"


class TargetError(ValueError):
    """A malformed target description; the message lists the valid choices."""


@record(frozen=True)
class Option:
    type: str  # "str", "int", "bool" or "list" (of strings)
    default: Any
    doc: str
    choices: tuple[Any, ...] = ()
    derived: bool = False  # the default comes from the kind's derive hook


@record(frozen=True)
class TargetKind:
    name: str
    device_type: str  # "cpu", "cuda", "opencl" or "rocm"
    dl_device_type: int  # DLPack's kDLCPU = 1, kDLCUDA = 2, kDLOpenCL = 4, kDLROCM = 10
    options: dict[str, Option]
    derive: Callable[[dict[str, Any]], dict[str, Any]]
    doc: str
    aliases: dict[str, str] = field(default_factory=dict)

    @property
    def is_device(self) -> bool:
        return self.device_type != "cpu"


# -- cuda --------------------------------------------------------------------------------
# The one table of per-arch facts (ArchFacts): the PTX ISA version x10 the PTX is written
# for, the largest shared memory a block may opt in to (bytes), the 32-bit registers of
# one SM and the unit they are allocated in per warp (64K and 256 on every arch here: the
# CUDA programming guide's and occupancy calculator's figures). No arch gets less than
# PTX 6.2, the first with ``activemask`` (cross-thread reductions); LLVM aborts the
# process on an intrinsic newer than the PTX version. Every driver since CUDA 10.1 reads
# it. ``a``: arch-specific features, runs only on that exact arch; ``f``: family-specific,
# runs on that major version from that minor up (PTX 8.8). Which of these nvJitLink can
# make a cubin for is nvJitLink's answer (CUDA 13 makes none before sm_75), not this
# table's.


class ArchFacts(NamedTuple):
    ptx_version: int
    max_shared_memory: int
    registers_per_sm: int = 65536
    register_unit: int = 256  # registers per warp are a multiple of this


_A = ArchFacts
_SMEM_48K, _SMEM_96K = 49152, 98304
CUDA_ARCHS: dict[str, ArchFacts] = {
    "sm_50": _A(62, _SMEM_48K), "sm_52": _A(62, _SMEM_48K), "sm_53": _A(62, _SMEM_48K),
    "sm_60": _A(62, _SMEM_48K), "sm_61": _A(62, _SMEM_48K), "sm_62": _A(62, _SMEM_48K),
    "sm_70": _A(62, _SMEM_96K), "sm_72": _A(62, _SMEM_96K), "sm_75": _A(63, 65536),
    "sm_80": _A(70, 166912), "sm_86": _A(71, 101376), "sm_87": _A(74, 166912),
    "sm_89": _A(78, 101376), "sm_90": _A(78, 232448), "sm_90a": _A(80, 232448),
    "sm_100": _A(86, 232448), "sm_100a": _A(86, 232448), "sm_100f": _A(88, 232448),
    "sm_101": _A(86, 232448), "sm_101a": _A(86, 232448), "sm_101f": _A(88, 232448),
    "sm_103": _A(88, 232448), "sm_103a": _A(88, 232448), "sm_103f": _A(88, 232448),
    "sm_110": _A(90, 232448), "sm_110a": _A(90, 232448), "sm_110f": _A(90, 232448),
    "sm_120": _A(87, 101376), "sm_120a": _A(87, 101376), "sm_120f": _A(88, 101376),
    "sm_121": _A(88, 101376), "sm_121a": _A(88, 101376), "sm_121f": _A(88, 101376),
}


# -- rocm ----------------------------------------------------------------------------------
# Per-arch facts of AMD GPUs (LLVM's AMDGPU processor names), beside the CUDA archs: the
# wavefront size the code is compiled for (GCN and CDNA, gfx9: 64; RDNA, gfx10 and later:
# 32, their native mode and what HIP compiles for), the LDS (shared memory) one workgroup
# may use, bytes (64 KiB; 160 KiB on gfx950), and whether it also runs the other
# wavefront size — from AMD's ISA manuals and LLVM's AMDGPUUsage processor table (LLVM 22
# has dropped gfx940 and gfx941). The registers a kernel may use are LLVM's to fit to its
# workgroup size (``amdgpu-flat-work-group-size``).
# ``thread_warp_size`` other than the arch's wavefront size compiles with
# ``+wavefrontsize32``/``+wavefrontsize64``, which RDNA allows and GCN does not (an error).


class AMDGPUFacts(NamedTuple):
    wavefront_size: int
    max_lds: int  # bytes per workgroup
    wave64_only: bool = True  # False: RDNA, which runs wave32 and wave64


_G = AMDGPUFacts
_LDS_64K = 65536
ROCM_ARCHS: dict[str, AMDGPUFacts] = {
    **{a: _G(64, _LDS_64K) for a in ("gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909",
                                     "gfx90a", "gfx90c", "gfx942")},
    "gfx950": _G(64, 163840),
    **{a: _G(32, _LDS_64K, False) for a in (
        "gfx1010", "gfx1011", "gfx1012", "gfx1030", "gfx1031", "gfx1032", "gfx1034", "gfx1035",
        "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1200",
        "gfx1201")},
}
DEFAULT_ROCM_ARCH = "gfx900"  # TVM 0.27's when no ROCm device answers
ROCM_TRIPLES = ("amdgcn-amd-amdhsa", "amdgcn-amd-amdhsa-hcc")  # TVM writes the second


def _derive_rocm(opts: dict[str, Any]) -> dict[str, Any]:
    """The wavefront size and LDS limit of ``mcpu``."""
    facts = ROCM_ARCHS[opts["mcpu"]]
    return {"thread_warp_size": facts.wavefront_size,
            "max_shared_memory_per_block": facts.max_lds}


def _check_rocm(values: dict[str, Any]) -> None:
    """``mattr`` flags are +name/-name of a feature LLVM knows for AMDGPU; a wavefront
    size other than the arch's only where the arch has both (RDNA)."""
    for flag in values.get("mattr") or ():
        if flag[:1] not in ("+", "-") or len(flag) < 2:
            raise TargetError(f"invalid value {flag!r} in option 'mattr' of 'rocm': a feature "
                              "is '+name' to enable it or '-name' to disable it")
    if values.get("mattr"):
        known = llvm_cpus_and_features("amdgcn-amd-amdhsa")
        if known is not None:
            for flag in values["mattr"]:
                if flag[1:] not in known[1]:
                    raise TargetError(f"invalid value {flag!r} in option 'mattr' of 'rocm': not "
                                      "a feature LLVM knows for AMDGPU (e.g. +xnack, "
                                      "+wavefrontsize64, +cumode)")
    facts = ROCM_ARCHS[values["mcpu"]]
    warp = values["thread_warp_size"]
    if warp not in (32, 64) or (warp != facts.wavefront_size and facts.wave64_only):
        allowed = "64" if facts.wave64_only else "32 or 64"
        raise TargetError(f"invalid value {warp!r} for option 'thread_warp_size' of 'rocm': "
                          f"{values['mcpu']} runs wavefronts of {allowed} work-items")


def rocm_features(target: "Target") -> str:
    """The LLVM feature string of a rocm target: its ``mattr``, and the wavefront size
    when it is not the arch's."""
    flags = list(target.get("mattr") or ())
    warp = int(target.get("thread_warp_size"))
    if warp != ROCM_ARCHS[str(target.get("mcpu"))].wavefront_size:
        flags.append(f"+wavefrontsize{warp}")
    return ",".join(flags)


# What each PTX instruction tirc writes as inline assembly needs (``tirc.ir.ptx_ops.feature``
# names a call's row): the oldest arch by number (sm_80: 80) and the PTX ISA version x10
# that brought it, from the PTX ISA's target notes of ``mma``, ``wmma``, ``ldmatrix``, ``cp.async``
# and ``max``/``min``. An image for an older arch is a located error; a target whose PTX
# version is older gets the row's version for that module (its ``.version`` line).
PTX_FEATURES: dict[str, tuple[int, int]] = {
    "base": (50, 0),  # add/sub/mul/max/min .f32/.f64
    "minmax.NaN": (80, 70), "minmax.xorsign": (86, 72),
    "ldmatrix": (75, 65), "cp.async": (80, 70),
    "wmma.f16": (70, 61), "wmma.s8": (72, 63),
    "mma.m8n8k4.f16": (70, 64), "mma.m16n8k8.f16": (75, 65), "mma.m16n8k16.f16": (80, 70),
    "mma.m8n8k4.f64": (80, 70),
    "mma.m16n8k8.bf16": (80, 70), "mma.m16n8k16.bf16": (80, 70),
    "mma.m16n8k4.tf32": (80, 70), "mma.m16n8k8.tf32": (80, 70),
    "mma.m8n8k16.s8": (75, 65), "mma.m16n8k16.s8": (80, 70), "mma.m16n8k32.s8": (80, 70),
    "mma.m8n8k32.s4": (75, 65), "mma.m16n8k32.s4": (80, 70), "mma.m16n8k64.s4": (80, 70),
    "mma.m8n8k128.b1": (75, 65), "mma.m16n8k128.b1": (80, 70), "mma.m16n8k256.b1": (80, 70),
    "mma.m8n8k128.b1.and": (80, 71), "mma.m16n8k128.b1.and": (80, 71),
    "mma.m16n8k256.b1.and": (80, 71), "mma.m16n8k32.e4m3": (89, 84),
}


def arch_number(arch: str) -> int:
    """``sm_90a`` -> 90."""
    return _arch_key(arch)[0]


def ptx_feature_arch_error(feature: str, arch: str) -> str | None:
    """Why an image for ``arch`` cannot hold an instruction needing ``feature``, or None."""
    oldest, _ = PTX_FEATURES[feature]
    if arch_number(arch) >= oldest:
        return None
    return f"needs sm_{oldest} or newer, and the target's arch is {arch}"


# The largest extent of each thread axis of one launch, on every arch here (the CUDA
# programming guide's "Technical Specifications per Compute Capability": grid x 2^31-1,
# y and z 65535; block x and y 1024, z 64; the block's product is max_num_threads).
CUDA_AXIS_LIMITS: dict[str, int] = {
    "blockIdx.x": 2**31 - 1, "blockIdx.y": 65535, "blockIdx.z": 65535,
    "threadIdx.x": 1024, "threadIdx.y": 1024, "threadIdx.z": 64,
}


# HIP's limits on AMD GPUs (hipDeviceProp_t's maxGridSize and maxThreadsDim): grid x
# 2^31-1, y and z 65536; a workgroup at most 1024 work-items on each axis.
ROCM_AXIS_LIMITS: dict[str, int] = {
    "blockIdx.x": 2**31 - 1, "blockIdx.y": 65536, "blockIdx.z": 65536,
    "threadIdx.x": 1024, "threadIdx.y": 1024, "threadIdx.z": 1024,
}


def thread_axis_limits(target: "Target") -> dict[str, int]:
    """The largest extent each thread axis may have on ``target`` (none for a CPU)."""
    if target.kind == "rocm":
        return dict(ROCM_AXIS_LIMITS)
    return dict(CUDA_AXIS_LIMITS) if target.is_cuda else {}


def cuda_archs(target: "Target") -> tuple[str, ...]:
    """The archs of a cuda target, oldest first: ``("sm_90",)`` or ``("sm_80", "sm_90")``."""
    arch = target.get("arch")
    return tuple(arch) if isinstance(arch, (list, tuple)) else (str(arch),)


def _arch_key(arch: str) -> tuple[int, str]:
    m = re.fullmatch(r"sm_(\d+)([a-z]*)", arch)
    return (int(m.group(1)), m.group(2)) if m else (0, arch)


def _derive_cuda(opts: dict[str, Any]) -> dict[str, Any]:
    """One arch: its PTX ISA version and shared-memory limit. Several archs (``-arch=
    sm_80,sm_90``): the PTX version of the oldest (each arch's image is still compiled
    with its own, see :func:`for_arch`) and the smallest shared-memory limit, which holds
    on every arch of the list."""
    archs = opts["arch"] if isinstance(opts["arch"], tuple) else (opts["arch"],)
    return {"ptx_version": CUDA_ARCHS[archs[0]].ptx_version,
            "max_shared_memory_per_block": min(CUDA_ARCHS[a].max_shared_memory for a in archs)}


def _derive_nvptx(opts: dict[str, Any]) -> dict[str, Any]:
    """TVM's ``nvptx`` kind names the arch ``-mcpu``: everything follows from it as for a
    ``cuda`` target of that arch."""
    return {"arch": opts["mcpu"], **_derive_cuda({"arch": opts["mcpu"]})}


def for_arch(target: "Target", arch: str) -> "Target":
    """The single-arch target that compiles ``arch``'s image of a multi-arch cuda target:
    the options the target gave, with ``arch`` (derived options derived again)."""
    given = {k: v for k, v in target.options if k in target.explicit and k != "arch"}
    return make_target(target.kind, {**given, "arch": arch}, target.host)


def image_archs(t: "Target") -> tuple[str | None, ...]:
    """The archs of the images of device target ``t``, one image each (None: a target
    whose one image has no arch)."""
    return cuda_archs(t) if t.is_cuda else (None,)


def arch_target(t: "Target", arch: str | None, count: int) -> "Target":
    """The target one of ``count`` images of ``t`` is compiled for: ``t`` itself when it
    has one image, else its single-arch target for ``arch``."""
    return t if count == 1 or arch is None else for_arch(t, arch)


def host_triple() -> str:
    """This machine's target triple, from the platform (no toolchain is asked)."""
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64",
            "aarch64": "aarch64"}.get(machine, machine or "x86_64")
    system = platform.system().lower()
    if system == "darwin":
        return f"{arch}-apple-darwin"
    if system == "windows":
        return f"{arch}-pc-windows-msvc"
    return f"{arch}-unknown-linux-gnu"


def _derive_llvm(opts: dict[str, Any]) -> dict[str, Any]:
    return {"mtriple": host_triple()}


_LLVM_HELP = """
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
llvm.Target.from_triple(sys.argv[1]).create_target_machine(cpu="help")
"""


@functools.lru_cache(maxsize=None)
def llvm_cpus_and_features(triple: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The CPU names and feature names LLVM knows for ``triple`` (what ``llc -mcpu=help``
    lists), or None when they cannot be had. LLVM prints the list to the process's
    stderr, once per process, when asked for the CPU ``help``: a child process asks."""
    import subprocess  # only when a CPU or feature is named: not on every build's path
    try:
        out = subprocess.run([sys.executable, "-c", _LLVM_HELP, triple], capture_output=True,
                             text=True, timeout=60).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    cpus: set[str] = set()
    features: set[str] = set()
    section = None
    for line in out.splitlines():
        if line.startswith("Available CPUs"):
            section = cpus
        elif line.startswith("Available features"):
            section = features
        elif line.startswith("Use +feature"):
            section = None
        elif section is not None:
            m = re.match(r"\s+(\S+)\s+- ", line)
            if m:
                section.add(m.group(1))
    return (frozenset(cpus), frozenset(features)) if cpus else None


def _check_llvm(values: dict[str, Any]) -> None:
    """The triple, ``mcpu`` and ``mattr`` of an llvm target, checked against what LLVM
    knows before LLVM sees them (an unknown CPU can abort the process in LLVM), as TVM's
    LLVM target parser checks them."""
    triple = values["mtriple"]
    try:
        import llvmlite.binding as llvm
    except ImportError:  # pragma: no cover - llvmlite is a dependency
        return
    llvm.initialize_all_targets()  # idempotent; the asm printers are not needed here
    try:
        llvm.Target.from_triple(triple)
    except RuntimeError as e:
        raise TargetError(f"invalid value {triple!r} for option 'mtriple' of 'llvm': "
                          f"{str(e).strip()}; a triple is arch-vendor-os[-env] with an arch "
                          "LLVM has, e.g. x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu, "
                          "riscv64-unknown-linux-gnu, x86_64-pc-windows-msvc") from None
    mcpu, mattr = values.get("mcpu") or "", values.get("mattr") or ()
    for flag in mattr:
        if flag[:1] not in ("+", "-") or len(flag) < 2:
            raise TargetError(f"invalid value {flag!r} in option 'mattr' of 'llvm': a feature "
                              "is '+name' to enable it or '-name' to disable it")
    if not mcpu and not mattr:
        return
    known = llvm_cpus_and_features(triple)
    if known is None:
        return
    cpus, features = known
    if mcpu and mcpu not in cpus and not (mcpu == "native" and triple == host_triple()):
        raise TargetError(f"invalid value {mcpu!r} for option 'mcpu' of 'llvm': not a CPU LLVM "
                          f"knows for '{triple}'; valid values: {', '.join(sorted(cpus))}"
                          f"{', native (this machine)' if triple == host_triple() else ''}")
    for flag in mattr:
        if flag[1:] not in features:
            raise TargetError(f"invalid value {flag!r} in option 'mattr' of 'llvm': not a "
                              f"feature LLVM knows for '{triple}'; valid features: "
                              f"{', '.join(sorted(features))}")


_COMMON = {
    "tag": Option("str", "", "a name for the target, for humans"),
    "device": Option("str", "", "a device name, informational"),
    "model": Option("str", "", "a device model, informational"),
    "libs": Option("list", (), "external libraries, informational"),
    # TVM's bookkeeping for targets made from a device; unset unless given
    "from_device": Option("int", None, "the device a target was made from, informational"),
    "target_device_type": Option("int", None, "a DLPack device type, informational"),
}

# A key ``feature.<name>`` (TVM's derived target features, as some printers write them)
# is accepted on every kind, informational: tirc derives what it needs from mcpu/mattr.
FEATURE_PREFIX = "feature."

FAST_MATH_FLAGS = ("arcp", "contract", "ninf", "nnan", "nsz", "reassoc")

KINDS: dict[str, TargetKind] = {
    "llvm": TargetKind(
        "llvm", "cpu", 1,
        {
            "mtriple": Option("str", None, "target triple (default: this machine's)", derived=True),
            "mcpu": Option("str", "", "CPU name, e.g. skylake-avx512 (default: generic)"),
            "mattr": Option("list", (), "CPU features, e.g. +avx2,+fma"),
            "mabi": Option("str", "", "ABI name"),
            "mfloat-abi": Option("str", "", "float ABI: soft or hard", ("", "soft", "hard")),
            "opt-level": Option("int", 3, "LLVM optimisation level", (0, 1, 2, 3)),
            "num-cores": Option("int", 0, "threads for T.parallel loops (0: all)"),
            "fast-math": Option("bool", False, "allow fast-math floating-point rewrites"),
            **{f"fast-math-{flag}": Option("bool", None, f"LLVM's '{flag}' fast-math flag on "
                                           "floating-point arithmetic")
               for flag in FAST_MATH_FLAGS},
            "vector-width": Option("int", None, "TVM's preferred vector width in bits; "
                                   "accepted, the width stays LLVM's choice for the CPU"),
            "cl-opt": Option("list", None, "LLVM command-line options; accepted, not passed "
                             "on: they are process-wide in llvmlite"),
            "jit": Option("str", None, "TVM's JIT engine, informational: tirc writes objects"),
            "supports_calls": Option("bool", True, "the code generator emits calls between "
                                     "functions; false inlines private functions"),
            "keys": Option("list", ("cpu",), "keys TVM uses to select schedules"),
            **_COMMON,
        },
        _derive_llvm, "host CPU code through LLVM",
        aliases={"opt_level": "opt-level", "num_cores": "num-cores", "fast_math": "fast-math",
                 "mfloat_abi": "mfloat-abi"}),
    "c": TargetKind(
        "c", "cpu", 1,
        {
            "mcpu": Option("str", "", "CPU name, informational: the C compiler's flags choose it"),
            "march": Option("str", "", "architecture name, informational (as mcpu)"),
            "workspace-byte-alignment": Option("int", None, "TVM's workspace alignment; "
                                               "accepted, informational"),
            "constants-byte-alignment": Option("int", None, "TVM's constant alignment; "
                                               "accepted, informational"),
            "supports_calls": Option("bool", True, "the code generator emits calls between "
                                     "functions; false inlines private functions"),
            "keys": Option("list", ("cpu",), "keys TVM uses to select schedules"),
            **_COMMON,
        },
        lambda opts: {}, "host CPU code as C99 source (NAME.c), compiled by your C compiler"),
    "cuda": TargetKind(
        "cuda", "cuda", 2,
        {
            "arch": Option("archs", DEFAULT_CUDA_ARCH, "GPU architecture, or several "
                           "(sm_80,sm_90: one image each, chosen at load time)", tuple(CUDA_ARCHS)),
            "max_num_threads": Option("int", 1024, "most threads in one block"),
            "max_threads_per_block": Option("int", 1024, "most threads in one block (TVM's second name)"),
            "thread_warp_size": Option("int", 32, "threads in a warp"),
            "max_shared_memory_per_block": Option("int", None, "shared memory one block may use, bytes (from arch)", derived=True),
            "registers_per_block": Option("int", 65536, "32-bit registers per block"),
            "l2_cache_size_bytes": Option("int", None, "the L2 cache size, informational "
                                          "(TVM's schedules read it)"),
            "ptx_version": Option("int", None, "PTX ISA version x10, e.g. 78 (from arch)", derived=True),
            "mcpu": Option("str", "", "unused; accepted for TVM compatibility"),
            "supports_calls": Option("bool", True, "the code generator emits calls between "
                                     "functions; false inlines private functions"),
            "keys": Option("list", ("cuda", "gpu"), "keys TVM uses to select schedules"),
            **_COMMON,
        },
        _derive_cuda, "NVIDIA GPUs through LLVM's NVPTX backend"),
    "nvptx": TargetKind(
        "nvptx", "cuda", 2,
        {
            "mcpu": Option("str", DEFAULT_CUDA_ARCH, "GPU architecture (as cuda's -arch)",
                           tuple(CUDA_ARCHS)),
            "mtriple": Option("str", "nvptx64-nvidia-cuda", "target triple",
                              ("nvptx64-nvidia-cuda",)),
            "arch": Option("str", None, "GPU architecture (from mcpu)", derived=True),
            "max_num_threads": Option("int", 1024, "most threads in one block"),
            "thread_warp_size": Option("int", 32, "threads in a warp"),
            "max_shared_memory_per_block": Option("int", None, "shared memory one block may use, bytes (from mcpu)", derived=True),
            "ptx_version": Option("int", None, "PTX ISA version x10 (from mcpu)", derived=True),
            "supports_calls": Option("bool", True, "the code generator emits calls between "
                                     "functions; false inlines private functions"),
            "keys": Option("list", ("cuda", "gpu"), "keys TVM uses to select schedules"),
            **_COMMON,
        },
        _derive_nvptx, "NVIDIA GPUs through LLVM's NVPTX backend, as TVM's LLVM-based CUDA "
        "kind spells it (-mcpu=sm_80): the same code generator as cuda"),
    "opencl": TargetKind(
        "opencl", "opencl", 4,
        {
            "max_num_threads": Option("int", 256, "most work-items in one work-group"),
            "max_threads_per_block": Option("int", 256, "most work-items in one work-group "
                                            "(TVM's second name)"),
            "thread_warp_size": Option("int", 1, "work-items that run in lockstep (1: "
                                       "cross-thread reductions use local memory)"),
            "max_shared_memory_per_block": Option("int", 16384, "local memory one work-group "
                                                  "may use, bytes"),
            "texture_spatial_limit": Option("int", 16384, "largest 2-d image side, "
                                            "informational (TVM's texture schedules)"),
            "texture_depth_limit": Option("int", 2048, "largest image array depth, informational"),
            "max_function_args": Option("int", 128, "most kernel arguments"),
            "image_base_address_alignment": Option("int", 64, "image base alignment, bytes, "
                                                   "informational"),
            "supports_calls": Option("bool", True, "the code generator emits calls between "
                                     "functions; false inlines private functions"),
            "keys": Option("list", ("opencl", "gpu"), "keys TVM uses to select schedules"),
            **_COMMON,
        },
        lambda opts: {}, "OpenCL devices: OpenCL C source (NAME.cl), built by the OpenCL "
        "driver when first launched"),
    "rocm": TargetKind(
        "rocm", "rocm", 10,
        {
            "mcpu": Option("str", DEFAULT_ROCM_ARCH, "AMD GPU architecture, e.g. gfx90a",
                           tuple(ROCM_ARCHS)),
            "mtriple": Option("str", ROCM_TRIPLES[0], "target triple", ROCM_TRIPLES),
            "mattr": Option("list", (), "AMDGPU features, e.g. +xnack,-sramecc"),
            "max_num_threads": Option("int", 256, "most work-items in one workgroup"),
            "max_threads_per_block": Option("int", 256, "most work-items in one workgroup "
                                            "(TVM's second name)"),
            "max_shared_memory_per_block": Option("int", None, "LDS one workgroup may use, "
                                                  "bytes (from mcpu)", derived=True),
            "thread_warp_size": Option("int", None, "work-items in a wavefront (from mcpu: "
                                       "64 on gfx9, 32 on gfx10 and later)", derived=True),
            "supports_calls": Option("bool", True, "the code generator emits calls between "
                                     "functions; false inlines private functions"),
            "keys": Option("list", ("rocm", "gpu"), "keys TVM uses to select schedules"),
            **_COMMON,
        },
        _derive_rocm, "AMD GPUs through LLVM's AMDGPU backend (a code object, NAME.hsaco, "
        "linked by ld.lld)"),
}

# Target kinds TVM 0.27 registers that tirc has no code generator for: a located error
# that says so, rather than "unknown kind".
UNSUPPORTED_KINDS = {
    "ext_dev": "TVM's external-device placeholder",
    "metal": "Apple GPUs",
    "vulkan": "Vulkan devices", "webgpu": "WebGPU", "hexagon": "Qualcomm Hexagon DSPs",
    "composite": "TVM's multi-device composite target", "trn": "AWS Trainium",
    "test": "TVM's test target",
}


@record(frozen=True, eq=False)  # compared and hashed by canonical form
class Target:
    """A resolved target. Build one with :func:`parse_target` or :func:`make_target`."""

    kind: str
    options: tuple[tuple[str, Any], ...]
    host: "Target | None" = None
    explicit: frozenset[str] = field(default=frozenset(), compare=False)
    _canonical: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(sorted(self.options)))
        object.__setattr__(self, "_canonical", json.dumps(self.to_dict(), sort_keys=True))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and other._canonical == self._canonical

    def __hash__(self) -> int:
        return hash(self._canonical)

    def __str__(self) -> str:
        return self._canonical

    @property
    def canonical(self) -> str:
        return self._canonical

    @property
    def kind_info(self) -> TargetKind:
        return KINDS[self.kind]

    @property
    def is_device(self) -> bool:
        return KINDS[self.kind].is_device

    @property
    def is_cuda(self) -> bool:
        """An NVIDIA GPU target (kinds ``cuda`` and ``nvptx``): one or more ``arch``."""
        return KINDS[self.kind].device_type == "cuda"

    @property
    def supports_calls(self) -> bool:
        """Whether code for this target may call other functions (InlinePrivateFunctions
        inlines private callees where it may not)."""
        return bool(self.get("supports_calls", True))

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self.options:
            if key == name:
                return value
        return default

    def to_dict(self, explicit_only: bool = False) -> dict[str, Any]:
        """The JSON form; ``explicit_only`` keeps just the options the text gave, which
        is what the printer writes (TVM fills in the rest with its own defaults)."""
        out: dict[str, Any] = {"kind": self.kind}
        for key, value in self.options:
            if (explicit_only and key not in self.explicit) or value is None:
                continue  # None: an informational option left unset
            out[key] = list(value) if isinstance(value, tuple) else value
        if self.host is not None:
            out["host"] = self.host.to_dict(explicit_only)
        return out

    def with_host(self, host: "Target | None") -> "Target":
        return Target(self.kind, self.options, host, self.explicit)

    def without_host(self) -> "Target":
        return Target(self.kind, self.options, None, self.explicit)

    def describe(self) -> str:
        """Short human form: ``cuda -arch=sm_90 (host llvm)``."""
        extra = " ".join(f"-{k}={_cli_value(v)}" for k, v in self.options if k in self.explicit)
        text = f"{self.kind} {extra}".strip()
        return f"{text} (host {self.host.describe()})" if self.host else text


def _cli_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def _check_value(kind: TargetKind, name: str, value: Any) -> Any:
    spec = kind.options[name]
    if spec.type == "int":
        if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise TargetError(f"option '{name}' of '{kind.name}' takes an integer, got {value!r}")
    elif spec.type == "bool":
        if isinstance(value, str) and value in ("true", "false"):
            value = value == "true"
        if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            value = bool(value)
        if not isinstance(value, bool):
            raise TargetError(f"option '{name}' of '{kind.name}' takes true or false, got {value!r}")
    elif spec.type == "list":
        if isinstance(value, str):
            value = tuple(v for v in value.split(",") if v)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise TargetError(f"option '{name}' of '{kind.name}' takes a list of strings, got {value!r}")
        value = tuple(value)
    elif spec.type == "archs":  # one name, or several: "sm_80,sm_90" or a list
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not items or not all(isinstance(v, str) and v for v in items):
            raise TargetError(f"option '{name}' of '{kind.name}' takes an architecture or a "
                              f"comma-separated list of them, got {value!r}")
        for v in items:
            if v not in spec.choices:
                raise TargetError(f"invalid value {v!r} for option '{name}' of '{kind.name}'; "
                                  f"valid values: {', '.join(str(c) for c in spec.choices)}")
        archs = tuple(sorted(set(items), key=_arch_key))  # oldest first, each once
        return archs[0] if len(archs) == 1 else archs
    else:
        if not isinstance(value, str):
            raise TargetError(f"option '{name}' of '{kind.name}' takes a string, got {value!r}")
    if spec.choices and value not in spec.choices:
        raise TargetError(f"invalid value {value!r} for option '{name}' of '{kind.name}'; "
                          f"valid values: {', '.join(str(c) for c in spec.choices)}")
    return value


def fast_math_flags(target: "Target") -> tuple[str, ...]:
    """LLVM's fast-math flags for the floating-point arithmetic of a CPU target: all of
    them (``fast``) with -fast-math, else those its -fast-math-<flag> options name."""
    if target.get("fast-math"):
        return ("fast",)
    return tuple(f for f in FAST_MATH_FLAGS if target.get(f"fast-math-{f}"))


# Scalable vector extensions by architecture (the triple's first part): the -mattr
# features that give one, and the range of ``vscale`` (the vector length over the
# extension's minimum block: 128 bits for SVE, up to 2048; 64 bits for RISC-V V, whose
# vectors are at least 128 and at most 65536 bits long, as LLVM counts them).
_SCALABLE = {"aarch64": (("+sve", "+sve2", "+sme"), (1, 16)),
             "riscv64": (("+v",), (2, 1024)), "riscv32": (("+v",), (2, 1024))}


def vscale_range(target: "Target") -> tuple[int, int] | None:
    """The (min, max) of ``T.vscale()`` on a CPU target with scalable vectors (AArch64
    with +sve/+sve2/+sme, RISC-V with +v in -mattr); None on one without them."""
    if target.kind != "llvm":
        return None
    arch = (target.get("mtriple") or host_triple()).split("-", 1)[0]
    if arch not in _SCALABLE:
        return None
    features, bounds = _SCALABLE[arch]
    on = {f: False for f in features}
    for flag in target.get("mattr") or ():  # a later -sve undoes an earlier +sve
        if "+" + flag[1:] in on:
            on["+" + flag[1:]] = flag[0] == "+"
    return bounds if any(on.values()) else None


def make_target(kind_name: str, given: dict[str, Any], host: "Target | None" = None) -> Target:
    """Validate ``given`` options against the kind, fill defaults and derived options."""
    if kind_name in UNSUPPORTED_KINDS:
        raise TargetError(f"target kind '{kind_name}' ({UNSUPPORTED_KINDS[kind_name]}) is not "
                          f"supported by tirc; supported kinds: {', '.join(sorted(KINDS))}")
    if kind_name not in KINDS:
        raise TargetError(f"unknown target kind '{kind_name}'; valid kinds: {', '.join(sorted(KINDS))}")
    kind = KINDS[kind_name]
    values: dict[str, Any] = {}
    for raw_name, value in given.items():
        name = kind.aliases.get(raw_name, raw_name)
        if name.startswith(FEATURE_PREFIX) and len(name) > len(FEATURE_PREFIX):
            if not isinstance(value, (bool, int, str)):
                raise TargetError(f"option '{name}' of '{kind_name}' takes a bool, integer or "
                                  f"string, got {value!r}")
            values[name] = value
            continue
        if name not in kind.options:
            raise TargetError(f"unknown option '{raw_name}' for target kind '{kind_name}'; valid "
                              f"options: {', '.join(sorted(kind.options))}")
        values[name] = _check_value(kind, name, value)
    resolved = {n: o.default for n, o in kind.options.items() if not o.derived}
    resolved.update({n: v for n, v in values.items()
                     if n not in kind.options or not kind.options[n].derived})
    for name, value in kind.derive(resolved).items():
        resolved[name] = values.get(name, value)
    resolved.update(values)
    if kind_name == "llvm":
        _check_llvm(resolved)
    elif kind_name == "rocm":
        _check_rocm(resolved)
    return Target(kind_name, tuple(resolved.items()), host, frozenset(values))


def target_from_dict(config: dict[str, Any]) -> Target:
    config = dict(config)
    kind = config.pop("kind", None)
    if not isinstance(kind, str):
        raise TargetError("a target needs a 'kind' string; valid kinds: " + ", ".join(sorted(KINDS)))
    host = config.pop("host", None)
    host_target = parse_target(host) if host is not None else None
    if host_target is not None and host_target.host is not None:
        raise TargetError("a host target cannot have a host of its own")
    return make_target(kind, config, host_target)


def parse_target(spec: "str | dict[str, Any] | Target",
                 host: "str | dict[str, Any] | Target | None" = None) -> Target:
    """A target from its command-line text, JSON text, or a dict; ``host`` attaches one."""
    if isinstance(spec, Target):
        target = spec
    elif isinstance(spec, dict):
        target = target_from_dict(spec)
    elif isinstance(spec, str):
        text = spec.strip()
        if text.startswith("{"):
            try:
                config = json.loads(text)
            except json.JSONDecodeError as e:
                raise TargetError(f"invalid JSON target: {e.msg} at character {e.pos + 1}") from None
            if not isinstance(config, dict):
                raise TargetError("a JSON target must be an object")
            target = target_from_dict(config)
        else:
            words = text.split()
            if not words:
                raise TargetError("empty target; valid kinds: " + ", ".join(sorted(KINDS)))
            options: dict[str, Any] = {}
            for word in words[1:]:
                if not word.startswith("-") or "=" not in word:
                    raise TargetError(f"expected '-option=value', got '{word}'")
                key, _, value = word.lstrip("-").partition("=")
                options[key] = value
            target = make_target(words[0], options)
    else:
        raise TargetError(f"cannot make a target from {type(spec).__name__}")
    if host is not None:
        host_target = parse_target(host)
        if host_target.host is not None:
            raise TargetError("a host target cannot have a host of its own")
        target = target.with_host(host_target)
    return target


def describe_kinds() -> str:
    """The text of ``tirc targets``: every kind with its options, types and defaults."""
    lines = []
    for kind in KINDS.values():
        lines.append(f"{kind.name}  ({kind.device_type}; {kind.doc})")
        resolved = make_target(kind.name, {})
        for name, opt in sorted(kind.options.items()):
            default = resolved.get(name)
            shown = _cli_value(default) if default not in ("", (), None) else "(unset)" if default is None else "(empty)"
            note = " [derived]" if opt.derived else ""
            typ = "str" if opt.type == "archs" else opt.type  # a name, or names with commas
            lines.append(f"  -{name}=<{typ}>  default {shown}{note}  {opt.doc}")
            if opt.choices and name in ("arch", "mcpu") and len(opt.choices) > 2:
                lines.append(f"      one of: {', '.join(str(c) for c in opt.choices)}")
        lines.append("")
    lines.append(f"The default CUDA architecture is {DEFAULT_CUDA_ARCH}: its PTX is JIT-compiled "
                 "by the driver on every newer GPU.")
    return "\n".join(lines)
