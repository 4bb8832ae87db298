"""What every pass is given besides the module."""
from __future__ import annotations

from typing import Any

from tirc.records import record
from tirc.target.kinds import Target


@record(frozen=True)
class PassContext:
    """What passes may read besides the module: the bind target (with its host) and the
    host ABI of public functions (``"packed"``: MakePackedAPI; ``"c"``: MakeCAPI) and
    the prefix of their exported symbols (``--symbol-prefix``; "" for none), the
    opt-in passes asked for (flags that ``Pass.option`` names), and TVM's pass
    configuration options (``--pass-config KEY=VALUE``: ``tirx.use_async_copy``,
    ``s_tir.InjectDoubleBuffer`` ``{"split_loop": 2}``, ...), sorted by key."""

    target: Target
    abi: str = "packed"
    symbol_prefix: str = ""
    instrument_bound_checkers: bool = False  # --instrument-bound-checkers
    default_gpu_schedule: bool = False  # --default-gpu-schedule
    renormalize_split_pattern: bool = False  # Python API only (see the pass)
    config: tuple[tuple[str, Any], ...] = ()
    # the names of the whole module's functions when the passes run on a part of it
    # (``-j N``): a function a pass adds takes none of them
    module_names: frozenset[str] = frozenset()

    def config_of(self, key: str, default: Any = None) -> Any:
        """The option ``key`` (a dict for an option with fields, as TVM's config nodes),
        ``default`` when it is not set (``{}`` for None)."""
        for k, v in self.config:
            if k == key:
                return v
        return {} if default is None else default

    def enabled(self, option: str) -> bool:
        """Whether ``option`` (a ``Pass.option``) is set: one of TVM's pass options when
        its name has a dot (``tirx.use_async_copy``), else a flag of this context."""
        if "." in option:
            return bool(self.config_of(option, False))
        return bool(getattr(self, option))
