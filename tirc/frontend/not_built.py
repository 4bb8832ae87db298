"""TVM constructs tirc reads but does not build, each with the reason given at its
location (instead of "unknown name" or "unknown dtype")."""
from __future__ import annotations

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
