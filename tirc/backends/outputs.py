"""What a device backend returns: the images it made, the facts the build passes on, and
the time of each of its sub-stages."""
from __future__ import annotations

import time
from contextlib import contextmanager
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
    times: dict[str, float] = field(default_factory=dict)  # seconds by sub-stage (Backend.substages)

    def merged(self, other: "DeviceOutputs") -> "DeviceOutputs":
        """These outputs and ``other``'s (another device kind's) together."""
        labelled = {k: dict(v) for k, v in self.labelled.items()}
        for k, v in other.labelled.items():
            labelled.setdefault(k, {}).update(v)
        times = dict(self.times)
        for k, v in other.times.items():
            times[k] = times.get(k, 0.0) + v
        return DeviceOutputs({**self.images, **other.images}, self.extras + other.extras,
                             {**self.facts, **other.facts}, self.warnings + other.warnings,
                             labelled, self.launches + other.launches, times)

    @contextmanager
    def timed(self, substage: str):
        """Add the time of the block to ``substage``'s."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.times[substage] = self.times.get(substage, 0.0) + time.perf_counter() - start
