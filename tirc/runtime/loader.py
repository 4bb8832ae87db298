"""Loading what ``tirc build`` wrote, and checking that a device image fits a GPU."""
from __future__ import annotations

import os
import re

from tirc.runtime.errors import IncompatibleDeviceImage, LoadError

from tirc.target.cuda_arch import image_rule, parse_arch, rule_holds, rule_text


def load(path, check_images: bool = True):
    """The tvm-ffi module of a built library (``out/NAME.so``):
    ``tirc.runtime.load("out/add.so")["add"](a, b, c)``.

    When the build's manifest (``NAME.json``) lies beside the library and a CUDA device
    is present, every kernel must have an image that runs on device 0; otherwise
    :class:`IncompatibleDeviceImage` says which archs the module has and what the device
    is. Without a GPU the check is skipped (CPU functions still run)."""
    path = os.fspath(path)
    if check_images and os.path.isfile(path):
        check_manifest_images(os.path.splitext(path)[0] + ".json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"cannot load '{path}': no such file (build it with "
                                f"'tirc build ... --shared -o OUTDIR')")
    if os.path.isdir(path):
        raise LoadError(f"cannot load '{path}': it is a directory, not a shared library")
    try:
        import tvm_ffi
    except ImportError as e:
        raise LoadError(f"cannot load '{path}': tvm-ffi is not installed "
                        f"(pip install apache-tvm-ffi)") from e
    try:
        return tvm_ffi.load_module(path)
    except Exception as e:
        raise LoadError(f"cannot load '{path}': {e}") from e


def _cuda_device():
    """Device 0 when a CUDA device is present, else None (never raises)."""
    from tirc.runtime.devices import device
    try:
        dev = device("cuda", 0)
        return dev if dev.exists else None
    except Exception:
        return None


def check_manifest_images(manifest_path: str, dev=None) -> None:
    """Check the kernels listed in a build manifest against ``dev`` (default: device 0
    when present): each needs at least one image (PTX or cubin, of any of its archs, or
    among the entries of its fatbin) that runs there."""
    import json

    if not os.path.isfile(manifest_path):
        return
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    kernels = [k for k in manifest.get("kernels", []) if k.get("image")]
    if not kernels:
        return
    dev = dev if dev is not None else _cuda_device()
    if dev is None:
        return
    for kernel in kernels:
        images = kernel["image"] if isinstance(kernel["image"], list) else [kernel["image"]]
        if kernel.get("fatbin"):  # the driver picks among the fatbin's entries
            candidates = [(e["arch"], e["format"]) for e in kernel["fatbin"]]
        else:
            candidates = [(_image_arch(image, kernel.get("target", "")),
                           "cubin" if image.endswith(".cubin") else "ptx") for image in images]
        errors = []
        for arch, kind in candidates:
            try:
                check_device_image(arch, dev, kind)
                break
            except IncompatibleDeviceImage as e:
                errors.append(str(e))
        else:
            raise IncompatibleDeviceImage(
                f"kernel '{kernel['name']}' of {os.path.basename(manifest_path)[:-5]} has no "
                f"image for this GPU: {errors[-1] if errors else 'no images'}")


def _image_arch(image: str, target_json: str) -> str:
    m = re.search(r"\.(sm_\d+[af]?)\.(ptx|cubin)$", image)
    if m:
        return m.group(1)
    import json
    arch = json.loads(target_json).get("arch", "sm_80") if target_json else "sm_80"
    return arch[0] if isinstance(arch, list) else arch


def check_device_image(arch: str, dev, kind: str | None = None) -> None:
    """Raise :class:`IncompatibleDeviceImage` unless an image built for ``arch`` runs
    on ``dev`` (anything with a ``compute_capability`` (major, minor)).

    ``kind`` is ``"cubin"`` or ``"ptx"``; by default ``sm_XY`` names a cubin and
    ``compute_XY`` PTX. A cubin runs only on its own major version with a minor at
    least its own; PTX runs on its architecture and every later one (the driver
    compiles it); an arch-specific image (``sm_90a``) runs only on exactly that
    architecture, a family one (``sm_100f``) on its major version from its minor up.
    """
    major, minor, _, default_kind = parse_arch(arch)
    kind = kind or default_kind
    if kind not in ("cubin", "ptx"):
        raise ValueError(f"image kind must be 'cubin' or 'ptx', not {kind!r}")
    cc = getattr(dev, "compute_capability", None)
    if cc is None:
        raise IncompatibleDeviceImage(f"a CUDA image ({arch}) cannot run on {dev}: it is "
                                      f"not a CUDA device")
    have = (int(cc[0]), int(cc[1]))
    how = image_rule(arch, kind)
    if rule_holds(how, (major, minor), have):
        return
    rule = rule_text(how, (major, minor))
    name = getattr(dev, "name", None)
    where = f"{dev} ({name}, compute capability {have[0]}.{have[1]})" if name else \
        f"{dev} (compute capability {have[0]}.{have[1]})"
    raise IncompatibleDeviceImage(
        f"the device image was built for {arch} ({kind}) and cannot run on {where}: "
        f"a {kind} for {arch} needs {rule}; rebuild with "
        f"--target 'cuda -arch=sm_{have[0]}{have[1]}'")
