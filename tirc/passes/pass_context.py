"""What every pass is given besides the module."""
from __future__ import annotations

from typing import Any

from tirc.records import record
from tirc.target.kinds import Target


@record(frozen=True)
class PassContext:
    """What passes may read besides the module: the bind target (with its host) and the
    host ABI of public functions (``"packed"``: MakePackedAPI; ``"c"``: MakeCAPI) and
    the prefix of their exported symbols (``--symbol-prefix``; "" for none), and TVM's
    pass configuration options (``--pass-config KEY=VALUE``: ``tirx.use_async_copy``,
    ``s_tir.InjectDoubleBuffer`` ``{"split_loop": 2}``, ...), sorted by key."""

    target: Target
    abi: str = "packed"
    symbol_prefix: str = ""
    config: tuple[tuple[str, Any], ...] = ()

    def config_of(self, key: str, default: Any = None) -> Any:
        """The option ``key`` (a dict for an option with fields, as TVM's config nodes),
        ``default`` when it is not set (``{}`` for None)."""
        for k, v in self.config:
            if k == key:
                return v
        return {} if default is None else default
