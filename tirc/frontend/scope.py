"""Nested name scopes of the builder."""
from __future__ import annotations


class Scope:
    """A stack of name tables; inner definitions shadow outer ones."""

    def __init__(self) -> None:
        self._frames: list[dict[str, object]] = [{}]

    def push(self) -> None:
        self._frames.append({})

    def pop(self) -> None:
        self._frames.pop()

    def define(self, name: str, value: object) -> None:
        self._frames[-1][name] = value

    def define_outermost(self, name: str, value: object) -> None:
        self._frames[0][name] = value

    def lookup(self, name: str) -> object | None:
        for frame in reversed(self._frames):
            if name in frame:
                return frame[name]
        return None

    def defined_here(self, name: str) -> bool:
        return name in self._frames[-1]
