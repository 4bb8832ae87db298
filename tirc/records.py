"""Records: tirc's dataclasses (the IR's nodes, the build's facts, a pass's working
state), made at a fraction of the cost of ``@dataclass``.

``@record(...)`` takes ``dataclass``'s ``frozen``, ``slots`` and ``eq`` and makes the
same class: ``dataclasses.fields``, ``replace``, ``is_dataclass`` and ``asdict`` work on
it, and ``__init__``, ``==``, ``hash``, ``repr``, immutability (``FrozenInstanceError``)
and pickling behave as a dataclass's. The difference is where the methods come from.
A dataclass gets each of them written as source text for its fields and compiled when
the class is created: six for a frozen dataclass, 0.4 ms a class on Python 3.11, about
35 ms of a 150 ms ``tirc build`` for the ~100 classes it imports. A record gets only
its ``__init__`` compiled; ``==``, ``hash``, ``repr`` and the frozen
``__setattr__``/``__delattr__`` are the functions below, shared by every record.

A frozen record's ``__init__`` is written here (a dataclass's would come with the frozen
``__setattr__``): its fields are all positional-or-keyword parameters, with their
defaults or default factories, then ``__post_init__`` if the class has one; ``kw_only``,
``init=False`` and ``InitVar`` fields are not supported. No field may set ``hash=``.
"""
from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from reprlib import recursive_repr
from typing import dataclass_transform


@dataclass_transform(field_specifiers=(field,))
def record(cls=None, /, *, eq: bool = True, frozen: bool = False, slots: bool = False):
    """``dataclass(cls, eq=eq, frozen=frozen, slots=slots)``, made cheaply (module
    docstring)."""
    def wrap(cls):
        if eq and "__eq__" in cls.__dict__:
            raise TypeError(f"{cls.__name__} defines __eq__: make it a record with eq=False")
        undocumented = not cls.__doc__
        if undocumented:  # dataclass would write one with inspect.signature, which is slow
            cls.__doc__ = cls.__name__
        if frozen:
            cls = _frozen(cls, slots)
        else:  # the dataclass writes __init__ only
            cls = dataclass(cls, repr=False, eq=False, slots=slots)
        fs = fields(cls)
        if undocumented:
            cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in fs)})"
        if any(f.hash is not None for f in fs):
            raise TypeError(f"{cls.__name__}: a record hashes the fields it compares")
        if eq:
            cls._record_key = staticmethod(_key([f.name for f in fs if f.compare]))
            cls.__eq__ = _eq
            cls.__hash__ = _hash if frozen else None  # a mutable dataclass is unhashable
        if "__repr__" not in cls.__dict__:
            cls._record_shown = tuple(f.name for f in fs if f.repr)
            cls.__repr__ = _repr
        return cls
    return wrap if cls is None else wrap(cls)


def _frozen(cls, slots: bool):
    cls = dataclass(cls, init=False, repr=False, eq=False, slots=slots)
    cls.__init__ = _init(cls, fields(cls))
    cls.__setattr__ = _setattr
    cls.__delattr__ = _delattr
    if slots:  # no __dict__ for pickle and copy to fill: they call __setstate__
        cls.__getstate__ = _getstate
        cls.__setstate__ = _setstate
    return cls


_NO_VALUE = object()  # an argument left out, for a field with a default factory


def _init(cls, fs):
    """``__init__(self, <fields in order, with their defaults>)``, as a frozen
    dataclass's: each field set with ``object.__setattr__``, then ``__post_init__``."""
    params, body = ["self"], []
    env = {"_record_setattr": object.__setattr__, "_record_no_value": _NO_VALUE}
    for f in fs:
        if f.kw_only or not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: a frozen record's fields are all "
                            "positional-or-keyword __init__ parameters")
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
    # The one exec in tirc, as dataclasses' own: source made from the field names of
    # tirc's classes at import, never from input text (the parser evaluates nothing).
    # dataclass(frozen=True) would make the same __init__ at three times the cost.
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
        key = self._record_key
        return key(self) == key(other)
    return NotImplemented


def _hash(self):
    return hash(self._record_key(self))


@recursive_repr()  # a record that holds itself shows as ..., as a dataclass's
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
