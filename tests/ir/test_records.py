"""``tirc.records.record`` makes the class ``dataclass`` makes (cheaper to
create): each check builds one class body both ways and compares what they do."""
from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, dataclass, field

import pytest

from tirc.records import record

OPTIONS = [dict(frozen=True, slots=True), dict(frozen=True, slots=True, eq=False),
           dict(frozen=True), dict(frozen=True, eq=False), dict(), dict(eq=False)]


class Node:  # what pickle finds by name: test_pickle_and_copy puts a record here
    pass


def _body():
    class Node:
        name: str
        value: float = 0.0
        tags: tuple = ()
        items: tuple = field(default_factory=tuple)
        span: object = field(default=None, compare=False, repr=False)
    return Node


def _both(options):
    """The same class, as a dataclass and as a record."""
    return dataclass(_body(), **options), record(**options)(_body())


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_same_class_as_dataclass(options):
    dc, rc = _both(options)
    assert [(f.name, f.default, f.default_factory, f.compare, f.repr)
            for f in dataclasses.fields(rc)] == \
        [(f.name, f.default, f.default_factory, f.compare, f.repr)
         for f in dataclasses.fields(dc)]
    assert dataclasses.is_dataclass(rc) and rc.__match_args__ == dc.__match_args__
    assert hasattr(rc, "__slots__") == hasattr(dc, "__slots__")
    assert (rc.__hash__ is None) == (dc.__hash__ is None)


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_same_behaviour_as_dataclass(options):
    dc, rc = _both(options)
    r, d = rc("x", 1.5, ("t",), span="here"), dc("x", 1.5, ("t",), span="here")
    assert repr(r) == repr(d)
    assert (r.name, r.value, r.tags, r.items, r.span) == (d.name, d.value, d.tags, d.items, d.span)
    same, other = rc("x", 1.5, ("t",), span="elsewhere"), rc("y", 1.5, ("t",))
    if options.get("eq", True):  # by the compared fields (not span), same class only
        assert r == same and r != other and r != d
    else:  # by identity
        assert r != same and r == r
    if options.get("frozen"):
        if options.get("eq", True):
            assert hash(r) == hash(same) == hash(d)
        for obj in (r, d):
            with pytest.raises(FrozenInstanceError):
                obj.name = "z"
            with pytest.raises(FrozenInstanceError):
                del obj.name
    else:
        r.name = "z"
        assert r.name == "z"


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_replace_pickle_copy(options, monkeypatch):
    rc = record(**options)(_body())
    rc.__module__, rc.__qualname__ = __name__, "Node"
    monkeypatch.setattr(f"{__name__}.Node", rc)
    r = rc("x", 2.0, ("t",), (1, 2), span="s")
    new = dataclasses.replace(r, value=3.0)
    assert (new.name, new.value, new.tags, new.items, new.span) == ("x", 3.0, ("t",), (1, 2), "s")
    for c in (pickle.loads(pickle.dumps(r)), copy.copy(r), copy.deepcopy(r)):
        assert (c.name, c.value, c.tags, c.items, c.span) == ("x", 2.0, ("t",), (1, 2), "s")
    assert dataclasses.asdict(r) == {"name": "x", "value": 2.0, "tags": ("t",),
                                     "items": (1, 2), "span": "s"}


def test_default_factory_called_each_time():
    @record(frozen=True, eq=False)
    class P:
        items: list = field(default_factory=list)

    assert P().items == [] and P().items is not P().items
    assert P([1]).items == [1]


def test_init_arguments_as_dataclass():
    @record(frozen=True, slots=True)
    class P:
        x: int
        y: int = 0

    assert P(1) == P(x=1, y=0) == P(1, 0)
    for args, kwargs in (((), {}), ((1, 2, 3), {}), ((1,), {"z": 2}), ((1,), {"x": 1})):
        with pytest.raises(TypeError):
            P(*args, **kwargs)


def test_post_init_runs():
    seen = []

    @record(frozen=True)
    class P:
        x: int

        def __post_init__(self):
            seen.append(self.x)

    P(3)
    assert seen == [3]


def test_own_repr_kept_and_doc():
    @record(frozen=True, slots=True, eq=False)
    class V:
        name: str

        def __repr__(self) -> str:
            return f"V<{self.name}>"

    assert repr(V("i")) == "V<i>" and V("i") != V("i")
    assert V.__doc__ == "V(name)"


def test_unsupported_fields_refused():
    with pytest.raises(TypeError):
        @record(frozen=True)
        class K:
            x: int = field(default=0, kw_only=True)
    with pytest.raises(TypeError):
        @record(frozen=True)
        class H:
            x: int = field(default=0, hash=False)
    with pytest.raises(TypeError):
        @record
        class E:
            x: int

            def __eq__(self, other):
                return True


def test_repr_of_a_cycle():
    @record
    class Box:
        inner: object = None

    b = Box()
    b.inner = b

    @dataclass
    class Box:  # noqa: F811 (the same, as a dataclass)
        inner: object = None

    d = Box()
    d.inner = d
    assert repr(b) == repr(d) == "test_repr_of_a_cycle.<locals>.Box(inner=...)"


def test_field_names_put_into_the_shared_init():
    """Two classes of one shape share a template: each __init__ takes its own names."""
    @record(frozen=True, slots=True)
    class A:
        x: int
        y: int = 1

    @record(frozen=True, slots=True)
    class B:
        left: str
        right: str = "r"

    assert A(y=5, x=2) == A(2, 5) and (A(2).x, A(2).y) == (2, 1)
    assert (B(right="q", left="p").left, B("p").right) == ("p", "r")
    assert A.__init__.__qualname__.endswith("A.__init__")
    with pytest.raises(TypeError):
        B(x=1)


def test_inherited_fields_and_class_vars():
    from typing import ClassVar

    @record
    class Base:
        a: int
        kind: ClassVar[str] = "base"

    @record
    class Child(Base):
        b: int = 2

    assert [f.name for f in dataclasses.fields(Child)] == ["a", "b"]
    c = Child(1)
    assert (c.a, c.b, Child.kind) == (1, 2, "base") and c == Child(1, 2)


def test_class_shapes_refused_as_dataclass_refuses_them():
    with pytest.raises(TypeError):  # a required field after a default
        @record(frozen=True)
        class Order:
            x: int = 0
            y: int
    with pytest.raises(ValueError):  # a mutable default
        @record
        class Mutable:
            items: list = []
    with pytest.raises(TypeError):
        @record(frozen=True)
        class OwnInit:
            x: int

            def __init__(self, x):
                pass
    with pytest.raises(TypeError):
        @record(frozen=True)
        class Init:
            x: dataclasses.InitVar[int]


def test_cached_hash():
    """``cache_hash``: the hash is computed once and kept outside the fields; equal
    records hash alike, and a copy, a replacement or an unpickled record hashes again."""
    calls = []

    class Key:
        def __init__(self, v):
            self.v = v

        def __hash__(self):
            calls.append(self.v)
            return hash(self.v)

        def __eq__(self, other):
            return self.v == other.v

    @record(frozen=True, slots=True, cache_hash=True)
    class Cached:
        key: object
        span: object = field(default=None, compare=False)

    a, b = Cached(Key(1)), Cached(Key(1), span="elsewhere")
    assert hash(a) == hash(a) == hash(b) and a == b and calls == [1, 1]
    assert [f.name for f in dataclasses.fields(Cached)] == ["key", "span"]
    assert "_record_hash" not in repr(a)
    c = dataclasses.replace(a, key=Key(2))
    assert hash(c) == hash(Cached(Key(2))) != hash(a) and c != a
    assert hash(copy.copy(a)) == hash(a)
    for options in (dict(frozen=True), dict(slots=True, frozen=False), dict(frozen=True, slots=True, eq=False)):
        with pytest.raises(TypeError):
            record(cache_hash=True, **options)
