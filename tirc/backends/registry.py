"""Backends keyed by target kind: what turns the functions of one target into artefacts.

A backend is an object registered for a target kind. A host backend compiles the host
module into an object file (:meth:`Backend.host_object`); a device backend compiles the
device modules of its kind, all targets of that kind at once, into device images
(:meth:`Backend.device_images`, returning a :class:`~tirc.backends.outputs.DeviceOutputs`) and makes
the table of images the host object embeds and launches (:meth:`Backend.launch_table`).
``build()`` asks the registry for the backend of each kind and names none itself.

Backends import their code generators on first use, so nothing LLVM- or CUDA-related
loads when the registry does. Adding a target kind: write its backend module, subclass
:class:`Backend` here (or anywhere imported before the build) and :func:`register` it.
"""
from __future__ import annotations

from typing import Any

from tirc.backends.outputs import DeviceOutputs
from tirc.diagnostics import Diagnostic, Span


class Backend:
    kind: str = ""  # the target kind it compiles for
    name: str = ""
    doc: str = ""
    role: str = "host"  # "host" (an object file) or "device" (device images)
    substages: tuple[str, ...] = ()  # what a device backend times (DeviceOutputs.timed)
    device_formats: tuple[str, ...] = ()  # the formats a device backend writes, default first

    def host_object(self, mod, target, name: str, *, keep_ir: bool = False,
                    debug: bool = False, device_code=None, jobs: int = 1) -> Any:
        """The host object of ``mod`` (``.object`` bytes, ``.suffix`` of its file, ``.o``
        or ``.c``, ``.llvm_ir``, ``.triple``, ``.uses_openmp``, ``.uses_cuda``);
        ``device_code``: the images it embeds;
        ``jobs``: processes it may use."""
        raise NotImplementedError(f"'{self.kind}' is not a host target")

    def start_host_object(self, mod, target, name: str, *, device_code, jobs: int) -> Any:
        """The host object of ``mod`` started before the device code is compiled
        (``device_code``: its kernels planned, its images not yet made), to run beside
        it: something whose ``finish()`` gives what :meth:`host_object` gives and whose
        ``kill()`` abandons it; None (the default) when this backend does not."""
        return None

    def start_preparing(self, target, jobs: int, text: str | None) -> Any:
        """Work a device backend starts in a forked process before the module is read,
        to run beside the parse on a core it leaves idle (``jobs`` > 1), for
        ``target``, the build's bind target, and ``text``, the input (None when it is
        not text): something with ``finish()``, which waits for it (before processes
        that use it are forked), and ``kill()``, which ends it if it is not used; None
        (the default) when there is none."""
        return None

    def compile_part(self, mod, target, name: str) -> Any:
        """Device code of ``mod``, the part of ``target``'s device module one call-graph
        component holds, compiled in that component's process after its passes
        (``-j N``), for :meth:`device_images` (``made``) to use instead of compiling it
        again: something that pickles, or None (the default) when this backend does
        not."""
        return None

    def device_images(self, devices: dict, out, name: str, *, device_format: str,
                      emit: tuple[str, ...] = (), line_info: bool = False,
                      jobs: int = 1, made: list | None = None) -> DeviceOutputs:
        """The images of the device modules ``devices`` (by target), and what the host's
        launch table needs of them (:class:`~tirc.backends.outputs.DeviceOutputs`);
        ``jobs``: processes it may use; ``made``: what :meth:`compile_part` gave, a list
        of them (given only to a backend that made some)."""
        raise NotImplementedError(f"'{self.kind}' is not a device target")

    def launch_table(self, devices: dict) -> Any:
        """The table of the images a host object embeds to launch this kind's kernels:
        the kernels of the device modules ``devices`` (by target, in the order
        :meth:`device_images` compiles them), their images to come from
        :meth:`device_images`."""
        raise NotImplementedError(f"'{self.kind}' kernels cannot be launched by a host object")


class CPUBackend(Backend):
    kind, name, role = "llvm", "cpu", "host"
    doc = "host CPU code through LLVM (an object file)"

    def host_object(self, mod, target, name, *, keep_ir=False, debug=False, device_code=None,
                    jobs=1):
        from tirc.backends.cpu.backend import generate
        return generate(mod, target, name, device_code, keep_ir=keep_ir, debug=debug, jobs=jobs)

    def start_host_object(self, mod, target, name, *, device_code, jobs):
        from tirc.backends.cpu.backend import start_chunks
        return start_chunks(mod, target, name, device_code, jobs)


class CSourceBackend(Backend):
    kind, name, role = "c", "c-source", "host"
    doc = "host CPU code as C99 source (NAME.c) for the user's C compiler"

    def host_object(self, mod, target, name, *, keep_ir=False, debug=False, device_code=None,
                    jobs=1):
        from tirc.backends.c.source import generate
        return generate(mod, target, name)


class CUDABackend(Backend):
    kind, name, role = "cuda", "nvptx", "device"
    # timed in DeviceOutputs.times: TIR -> LLVM IR, its parse and check, libdevice linked
    # in, LLVM's -O3, PTX emitted, all of these for chunks of kernels side by side (-j N)
    # and for kernels compiled with their passes (-j N: time within "passes", summed over
    # the processes), nvJitLink's cubin, nvFatbin's fatbin
    substages = ("lower", "parse-llvm", "libdevice", "optimize", "emit-ptx", "chunks",
                 "with-passes", "cubin", "fatbin")
    device_formats = ("ptx", "cubin", "fatbin")
    doc = "NVIDIA GPU code through LLVM's NVPTX target (PTX; cubins, fatbins)"

    def start_preparing(self, target, jobs, text):
        """libdevice cut into pieces (:func:`libdevice.start_cut`), which the kernels
        compiled apart under ``-j N`` link, when the text calls math functions."""
        if jobs <= 1 or text is None:
            return None
        from tirc.backends.cuda import libdevice
        from tirc.backends.cuda.nvptx import may_call_libdevice
        path = libdevice.locate() if may_call_libdevice(text) else None
        return libdevice.start_cut(path) if path else None

    def compile_part(self, mod, target, name):
        from tirc.backends.cuda.nvptx import compile_kernels
        return compile_kernels(mod, target, name)

    def device_images(self, devices, out, name, *, device_format, emit=(), line_info=False,
                      jobs=1, made=None):
        from tirc.backends.cuda.device_stage import device_images
        made_ptx = {}
        for part in made or ():
            made_ptx.update(part)
        return device_images(devices, out, name, device_format, emit, line_info, jobs, made_ptx)

    def launch_table(self, devices):
        from tirc.backends.cuda.launch import DeviceCode
        from tirc.backends.cuda.nvptx import kernel_symbols
        table = DeviceCode()
        for mod in devices.values():
            table.expect(mod, kernel_symbols(mod))
        return table


class LaunchTables:
    """The launch tables of several device kinds in one host module (a module with cuda
    and opencl kernels): a launch goes to the table of the kind that compiled its kernel."""

    def __init__(self, tables: dict):
        self.tables = tables  # by kind, each a backend's launch_table()

    @property
    def kernels(self) -> dict:
        return {name: k for t in self.tables.values() for name, k in t.kernels.items()}

    def launcher(self, module) -> "_Launchers":
        return _Launchers(module, self.tables)


class _Launchers:
    """Each kind's launcher for one host module, all made at once (in a host object made
    in chunks the owner chunk defines what every kind's launches use)."""

    def __init__(self, module, tables: dict):
        self.launchers = [(t, t.launcher(module)) for t in tables.values()]

    def launch(self, fl, call, device_type, device_id):
        name = call.args[0].value if call.args and hasattr(call.args[0], "value") else None
        for table, launcher in self.launchers:
            if name in table.kernels:
                return launcher.launch(fl, call, device_type, device_id)
        return self.launchers[0][1].launch(fl, call, device_type, device_id)  # its error


BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> None:
    if backend.kind in BACKENDS:
        raise ValueError(f"a backend for target kind '{backend.kind}' is already registered")
    BACKENDS[backend.kind] = backend


def get_backend(kind: str, span: Span | None = None, role: str | None = None) -> Backend:
    """The backend of target kind ``kind`` (of ``role``, when given); a Diagnostic at
    ``span`` listing the kinds that have one otherwise."""
    backend = BACKENDS.get(kind)
    if backend is None or (role is not None and backend.role != role):
        known = ", ".join(sorted(k for k, b in BACKENDS.items() if role in (None, b.role)))
        what = f"{role} " if role is not None else ""
        raise Diagnostic(f"no {what}code generator for target kind '{kind}' (available: "
                         f"{known or 'none'})", span)
    return backend


class OpenCLBackend(Backend):
    kind, name, role = "opencl", "opencl-c", "device"
    substages = ("opencl-c",)  # TIR -> OpenCL C source
    device_formats = ("cl",)
    doc = "OpenCL devices: OpenCL C source (NAME.cl), built by the driver at first launch"

    def device_images(self, devices, out, name, *, device_format, emit=(), line_info=False,
                      jobs=1):
        from tirc.backends.opencl.device_stage import device_images
        return device_images(devices, out, name, device_format, emit, line_info)

    def launch_table(self, devices):
        from tirc.backends.opencl.launch import OpenCLCode
        from tirc.backends.opencl.source import kernel_symbols
        table = OpenCLCode()
        for mod in devices.values():
            table.expect(mod, kernel_symbols(mod))
        return table


class ROCmBackend(Backend):
    kind, name, role = "rocm", "amdgpu", "device"
    # TIR -> LLVM IR, its parse and check, LLVM's -O3, the object emitted, ld.lld's link
    substages = ("lower", "parse-llvm", "optimize", "emit-object", "link")
    device_formats = ("hsaco",)
    doc = "AMD GPUs through LLVM's AMDGPU target (code objects, NAME.hsaco, linked by ld.lld)"

    def device_images(self, devices, out, name, *, device_format, emit=(), line_info=False,
                      jobs=1):
        from tirc.backends.rocm.device_stage import device_images
        return device_images(devices, out, name, device_format, emit, line_info)

    def launch_table(self, devices):
        from tirc.backends.rocm.amdgpu import kernel_symbols
        from tirc.backends.rocm.launch import HIPCode
        table = HIPCode()
        for mod in devices.values():
            table.expect(mod, kernel_symbols(mod))
        return table


class NVPTXBackend(CUDABackend):
    """TVM's ``nvptx`` kind: the cuda backend under its other name."""

    kind = "nvptx"


register(CPUBackend())
register(CSourceBackend())
register(CUDABackend())
register(NVPTXBackend())
register(OpenCLBackend())
register(ROCmBackend())
