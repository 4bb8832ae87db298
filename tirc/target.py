"""Targets as values: a kind, options, and an optional host target.

Targets parse from the command-line form (``cuda -arch=sm_90``), from JSON text or a
dict (``{"kind": "cuda", "arch": "sm_90", "host": "llvm"}``), and from ``T.target(...)``
in TVMScript. Every target has one canonical string; equality and hashing go by it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


class TargetError(ValueError):
    """A malformed target description."""


@dataclass(frozen=True, slots=True)
class Target:
    kind: str
    options: tuple[tuple[str, Any], ...] = ()
    host: "Target | None" = None
    _canonical: str = field(default="", compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(sorted(self.options)))
        object.__setattr__(self, "_canonical", json.dumps(self.to_dict(), sort_keys=True))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and other._canonical == self._canonical

    def __hash__(self) -> int:
        return hash(self._canonical)

    def __str__(self) -> str:
        return self._canonical

    @property
    def canonical(self) -> str:
        return self._canonical

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self.options:
            if key == name:
                return value
        return default

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key, value in self.options:
            out[key] = list(value) if isinstance(value, tuple) else value
        if self.host is not None:
            out["host"] = self.host.to_dict()
        return out

    def with_host(self, host: "Target | None") -> "Target":
        return Target(self.kind, self.options, host)

    def without_host(self) -> "Target":
        return Target(self.kind, self.options, None)


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        raise TargetError("nested objects are only allowed for 'host'")
    return value


def _parse_cli_value(text: str) -> Any:
    if "," in text:
        return tuple(_parse_cli_value(part) for part in text.split(","))
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return text


_KIND = re.compile(r"^[a-z][a-z0-9_]*$")


def _check_kind(kind: object) -> str:
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise TargetError(f"invalid target kind {kind!r}")
    return kind


def target_from_dict(config: dict[str, Any]) -> Target:
    if "kind" not in config:
        raise TargetError("a target needs a 'kind'")
    _check_kind(config["kind"])
    host = config.get("host")
    host_target = None
    if host is not None:
        host_target = parse_target(host)
    options = tuple((k, _freeze(v)) for k, v in config.items() if k not in ("kind", "host"))
    return Target(config["kind"], options, host_target)


def parse_target(spec: "str | dict[str, Any] | Target", host: "str | dict | Target | None" = None) -> Target:
    """Parse a target from its command-line text, JSON text, or a dict."""
    if isinstance(spec, Target):
        target = spec
    elif isinstance(spec, dict):
        target = target_from_dict(spec)
    elif isinstance(spec, str):
        text = spec.strip()
        if text.startswith("{"):
            try:
                config = json.loads(text)
            except json.JSONDecodeError as e:
                raise TargetError(f"invalid JSON target: {e.msg}") from None
            if not isinstance(config, dict):
                raise TargetError("a JSON target must be an object")
            target = target_from_dict(config)
        else:
            words = text.split()
            if not words:
                raise TargetError("empty target")
            options = []
            for word in words[1:]:
                if not word.startswith("-") or "=" not in word:
                    raise TargetError(f"expected '-option=value', got '{word}'")
                key, _, value = word.lstrip("-").partition("=")
                options.append((key, _parse_cli_value(value)))
            target = Target(_check_kind(words[0]), tuple(options))
    else:
        raise TargetError(f"cannot make a target from {type(spec).__name__}")
    if host is not None:
        target = target.with_host(parse_target(host))
    return target
