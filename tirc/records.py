"""Frozen records: the IR's nodes, the build's facts and every other immutable value
class of tirc.

``@record`` makes a class what ``@dataclass(frozen=True, slots=True)`` makes it, at a
third of the cost of creating the class. ``dataclasses.fields``, ``replace``,
``is_dataclass`` and ``asdict`` work on it as on any dataclass; equality, hashing,
``repr``, immutability (``FrozenInstanceError``) and pickling behave the same. The
difference is where the methods come from: a frozen dataclass gets six methods written
as source text for its fields and compiled when the class is created (0.4 ms a class
on Python 3.11, about 35 ms of a 150 ms ``tirc build`` for its ~100 classes), where a
record gets only its ``__init__`` compiled; ``==``, ``hash``, ``repr`` and the frozen
``__setattr__``/``__delattr__`` are the functions below, shared by every record.

``@record(eq=False)``: compared and hashed by identity (``Var``, ``Buffer``);
``@record(slots=False)``: instances have a ``__dict__``, as with a plain
``@dataclass(frozen=True)``. A record may define ``__post_init__``; ``kw_only``,
``init=False``, ``hash=`` and ``InitVar`` fields are not supported.
"""
from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import dataclass_transform


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls=None, /, *, eq: bool = True, slots: bool = True):
    """The class as a frozen dataclass (see the module's docstring)."""
    def wrap(cls):
        undocumented = not cls.__doc__
        if undocumented:  # dataclass would make one with inspect.signature, which is slow
            cls.__doc__ = cls.__name__
        cls = dataclass(cls, init=False, repr=False, eq=False, slots=slots)
        fs = fields(cls)
        cls.__init__ = _init(cls, fs)
        if undocumented:
            cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in fs)})"
        if eq:
            cls._record_key = staticmethod(_key([f.name for f in fs if f.compare]))
            cls.__eq__ = _eq
            cls.__hash__ = _hash
        if "__repr__" not in cls.__dict__:
            cls._record_shown = tuple(f.name for f in fs if f.repr)
            cls.__repr__ = _repr
        cls.__setattr__ = _setattr
        cls.__delattr__ = _delattr
        if slots:  # no __dict__ for pickle and copy to fill: they call __setstate__
            cls.__getstate__ = _getstate
            cls.__setstate__ = _setstate
        return cls
    return wrap if cls is None else wrap(cls)


_NO_VALUE = object()  # an argument left out, for a field with a default factory


def _init(cls, fs):
    """``__init__(self, <fields in order, with their defaults>)``, as a frozen
    dataclass's: each field set with ``object.__setattr__``, then ``__post_init__``."""
    params, body = ["self"], []
    env = {"_record_setattr": object.__setattr__, "_record_no_value": _NO_VALUE}
    for f in fs:
        if f.kw_only or not f.init or f.hash is not None:
            raise TypeError(f"{cls.__name__}.{f.name}: a record's fields are all "
                            "positional-or-keyword __init__ parameters, hashed as compared")
        value = f.name
        if f.default is not MISSING:
            env[f"_record_default_{f.name}"] = f.default
            params.append(f"{f.name}=_record_default_{f.name}")
        elif f.default_factory is not MISSING:
            env[f"_record_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_record_no_value")
            value = f"_record_factory_{f.name}() if {f.name} is _record_no_value else {f.name}"
        else:
            params.append(f.name)
        body.append(f"    _record_setattr(self, {f.name!r}, {value})\n")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()\n")
    exec(f"def __init__({', '.join(params)}):\n{''.join(body) or '    pass'}\n", env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _key(names: list[str]):
    """A function of a record giving the tuple of the ``names`` fields' values."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _eq(self, other):
    if other.__class__ is self.__class__:
        return self._record_key(self) == other._record_key(other)
    return NotImplemented


def _hash(self):
    return hash(self._record_key(self))


def _repr(self):
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_shown)
    return f"{self.__class__.__qualname__}({shown})"


def _setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self):
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self, state):
    for f, value in zip(fields(self), state):
        object.__setattr__(self, f.name, value)
