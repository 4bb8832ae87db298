"""TVM constructs tirc reads but does not build, each with the reason given at its
location (instead of "unknown name" or "unknown dtype")."""
from __future__ import annotations

import re

_TMA = ("CUDA tensor maps (TMA: T.TensorMap, T.create_tma_descriptor, a 'tensormap' "
        "handle) are not supported: tirc does not build the bulk tensor copies of sm_90; "
        "copy into shared memory with ordinary loads instead")

# T.<name> -> why tirc does not build it
NAMES = {
    "TensorMap": _TMA,
    "create_tma_descriptor": _TMA,
}

# a dtype name -> why tirc does not build it
DTYPES = {
    "tensormap": _TMA,
}


def dtype_reason(name: str) -> str | None:
    """Why tirc does not build dtype ``name``, if it is one TVM has."""
    if name in DTYPES:
        return DTYPES[name]
    m = re.fullmatch(r"(u?int)([3567])(x\d+)?", name)
    if m is not None:
        per_byte = 8 // int(m.group(2)) if 8 % int(m.group(2)) == 0 else None
        packing = f"{per_byte} elements to a byte" if per_byte else "elements across bytes"
        return (f"sub-byte integer dtype '{name}' is not supported: TVM packs its "
                f"{m.group(1)}{m.group(2)} elements into bytes ({packing}), which tirc's buffers, "
                "loads and stores do not model; use int8/uint8 buffers holding the packed bytes")
    return None
