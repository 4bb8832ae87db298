"""What a device backend returns: the images it made and the facts the build passes on."""
from __future__ import annotations

from dataclasses import field
from pathlib import Path

from tirc.diagnostics import Diagnostic
from tirc.records import record
from tirc.target.kinds import Target


@record
class DeviceOutputs:
    """What the device stage made: per device target its files (arch or archs, path,
    bytes), the emitted intermediates, its facts for the manifest by target
    (canonical; ``"resource_usage"``: ``{kernel symbol: {arch: figures}}``,
    ``"fatbin"``: the fatbin's entries ``[{"arch", "format"}]``) and warnings; each
    image and PTX file by format and label (``"ptx"``: ``{"sm_90": bytes}``; the label
    is the part of the file name between NAME and the extension, or the arch of a
    build's one image: ``sm_80.2`` for a second target of one arch, ``sm_80-sm_90`` for
    a fatbin); and, per device module, what the host's launch table needs: the module,
    its kernels' symbols and its images as ``(data, format, arch)``."""

    images: dict[Target, list[tuple[str, Path, bytes]]] = field(default_factory=dict)
    extras: list[tuple[Path, bytes]] = field(default_factory=list)
    facts: dict[str, dict] = field(default_factory=dict)
    warnings: list[Diagnostic] = field(default_factory=list)
    labelled: dict[str, dict[str, bytes]] = field(default_factory=dict)
    launches: list[tuple[object, tuple[str, ...], list[tuple[bytes, str, str]]]] = field(
        default_factory=list)
