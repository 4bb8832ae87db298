"""CUDA architecture names and the rule saying which GPUs run an image built for one:
the one place for these rules, read by the launcher the host object carries
(``backends/cuda_launch.py``) and by the Python loader (``runtime/loader.py``). The
per-arch compile facts (PTX version, shared memory) are ``tirc.target.kinds.CUDA_ARCHS``.

* a cubin for ``sm_XY`` runs on compute capability X.y with y >= Y (same major);
* PTX for ``sm_XY`` (or ``compute_XY``) runs on X.Y and every later capability: the
  driver compiles it;
* an arch-specific image (``sm_90a``, either format) runs only on exactly X.Y;
* a family image (``sm_100f``) runs on its major version from its minor up.
"""
from __future__ import annotations

import re

_ARCH = re.compile(r"^(?P<prefix>sm|compute)_(?P<major>\d+?)(?P<minor>\d)(?P<suffix>[af]?)$")


def parse_arch(arch: str) -> tuple[int, int, str, str]:
    """``sm_90a`` -> (9, 0, "a", "cubin"); ``compute_80`` -> (8, 0, "", "ptx")."""
    m = _ARCH.match(arch.strip()) if isinstance(arch, str) else None
    if m is None:
        raise ValueError(f"bad architecture '{arch}' (expected e.g. 'sm_90', 'sm_90a' "
                         f"or 'compute_80')")
    kind = "cubin" if m["prefix"] == "sm" else "ptx"
    return int(m["major"]), int(m["minor"]), m["suffix"], kind


def image_rule(arch: str, fmt: str) -> str:
    """Which devices run an image of ``fmt`` ("cubin" or "ptx") built for ``arch``:
    "exact" (capability == the arch's), "major" (same major, minor >= the arch's) or
    "atmost" (the arch's capability <= the device's)."""
    _, _, suffix, _ = parse_arch(arch)
    if suffix == "a":
        return "exact"
    return "major" if fmt == "cubin" or suffix == "f" else "atmost"


def rule_holds(rule: str, want: tuple[int, int], have: tuple[int, int]) -> bool:
    if rule == "exact":
        return have == want
    if rule == "major":
        return have[0] == want[0] and have[1] >= want[1]
    return have >= want


def rule_text(rule: str, want: tuple[int, int]) -> str:
    major, minor = want
    return {"exact": f"exactly compute capability {major}.{minor}",
            "major": f"compute capability {major}.x with x >= {minor}",
            "atmost": f"compute capability {major}.{minor} or newer"}[rule]
