"""What every pass is given besides the module."""
from __future__ import annotations

from tirc.records import record
from tirc.target.kinds import Target


@record(frozen=True)
class PassContext:
    """What passes may read besides the module: the bind target (with its host) and the
    host ABI of public functions (``"packed"``: MakePackedAPI; ``"c"``: MakeCAPI) and
    the prefix of their exported symbols (``--symbol-prefix``; "" for none), and the
    opt-in passes asked for (``Pass.option`` names these flags)."""

    target: Target
    abi: str = "packed"
    symbol_prefix: str = ""
    instrument_bound_checkers: bool = False  # --instrument-bound-checkers
    default_gpu_schedule: bool = False  # --default-gpu-schedule
    renormalize_split_pattern: bool = False  # Python API only (see the pass)
