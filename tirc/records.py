"""Records: tirc's dataclasses (the IR's nodes, the build's facts, a pass's working
state), made at a fraction of the cost of ``@dataclass``.

``@record(...)`` takes ``dataclass``'s ``frozen``, ``slots`` and ``eq`` and makes the
same class: ``dataclasses.fields``, ``replace``, ``is_dataclass`` and ``asdict`` work on
it, and ``__init__``, ``==``, ``hash``, ``repr``, immutability (``FrozenInstanceError``)
and pickling behave as a dataclass's. The difference is where the methods come from.
A dataclass gets each of them written as source text for its fields and compiled when
the class is created: six for a frozen dataclass, 0.4 ms a class on Python 3.11, about
35 ms of a 150 ms ``tirc build`` for the ~100 classes it imports. A record compiles
nothing for itself:

* ``__init__`` is a template compiled once per *shape* (frozen or not, which fields have
  a default factory, whether there is a ``__post_init__``) from a syntax tree built
  here, no text evaluated, with placeholder names, and
  copied for each class with its field names put in (``CodeType.replace``) when the
  class makes its first instance; a build imports ~100 record classes and compiles
  about 20 templates;
* ``==``, ``hash``, ``repr`` and the frozen ``__setattr__``/``__delattr__`` are the
  functions below, shared by every record;
* the fields are read from the class's annotations here, as ``dataclass`` reads them.

``cache_hash=True`` (frozen, slots and eq records only) keeps a record's hash in a slot
of its own, ``_record_hash``, once computed: an IR expression's hash is that of its
fields, its sub-expressions' among them, so without it every dict lookup of an expression
hashes the whole tree under it again. The cache is not a field: ``fields``, ``==``,
``repr``, ``replace`` and pickling ignore it (a copy or an unpickled record hashes again,
as string hashes differ between processes).

Supported: fields with a default, a ``field(default=..., default_factory=...,
compare=..., repr=..., metadata=...)``, inherited record fields, and ``ClassVar``
annotations (not fields). Refused with a TypeError: ``kw_only``, ``init=False``,
``InitVar`` and ``hash=`` fields, a class defining ``__init__`` (or ``__eq__`` with
``eq=True``, or ``__setattr__`` when frozen), and a field without a default after one
with a default.
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
from dataclasses import MISSING, FrozenInstanceError, field, fields
from operator import attrgetter
from reprlib import recursive_repr
from types import CodeType, FunctionType
from typing import dataclass_transform

# The marker ``dataclasses.fields()`` selects a class's fields by (private to the
# module, the same object since Python 3.7).
_FIELD = dataclasses._FIELD


@dataclass_transform(field_specifiers=(field,))
def record(cls=None, /, *, eq: bool = True, frozen: bool = False, slots: bool = False,
           cache_hash: bool = False):
    """``dataclass(cls, eq=eq, frozen=frozen, slots=slots)``, made cheaply (module
    docstring); ``cache_hash``: the hash computed once (module docstring)."""
    if cache_hash and not (frozen and slots and eq):
        raise TypeError("cache_hash is for frozen, slots and eq records")

    def wrap(cls):
        name = cls.__name__
        own = cls.__dict__
        for method, refused in (("__init__", True), ("__eq__", eq),
                                ("__setattr__", frozen), ("__delattr__", frozen)):
            if refused and method in own:
                raise TypeError(f"{name} defines {method}: records write their own")
        all_fields = _fields(cls)
        ns = dict(own)
        for f in all_fields.values():
            if f.name in own:  # the default is an __init__ default, not a class attribute
                del ns[f.name]
                if not slots and f.default is not MISSING:
                    ns[f.name] = f.default  # as dataclass leaves it
        fs = tuple(all_fields.values())
        ns["__dataclass_fields__"] = all_fields
        ns["__init__"], owner = _deferred_init(cls.__qualname__, fs, frozen)
        ns.setdefault("__match_args__", tuple(f.name for f in fs))
        if not cls.__doc__:
            ns["__doc__"] = f"{name}({', '.join(f.name for f in fs)})"
        if frozen:
            ns["__setattr__"] = _setattr
            ns["__delattr__"] = _delattr
        if eq:
            ns["_record_key"] = staticmethod(_key([f.name for f in fs if f.compare]))
            ns["__eq__"] = _eq
            # a mutable dataclass is unhashable
            ns["__hash__"] = (_cached_hash if cache_hash else _hash) if frozen else None
        if "__repr__" not in own:
            ns["_record_shown"] = tuple(f.name for f in fs if f.repr)
            ns["__repr__"] = _repr
        if slots:
            inherited = {s for base in cls.__mro__[1:-1]
                         for s in _slot_names(base)}
            ns["__slots__"] = tuple(f.name for f in fs if f.name not in inherited) + (
                ("_record_hash",) if cache_hash and "_record_hash" not in inherited else ())
            ns.pop("__dict__", None)
            ns.pop("__weakref__", None)
            if frozen:  # no __dict__ for pickle and copy to fill: they call __setstate__
                ns.setdefault("__getstate__", _getstate)
                ns.setdefault("__setstate__", _setstate)
            new = type(cls)(name, cls.__bases__, ns)
            new.__qualname__ = cls.__qualname__  # not in the class's __dict__
            owner.append(new)
            return new
        for key, value in ns.items():
            if own.get(key, MISSING) is not value:
                setattr(cls, key, value)
        for key in own.keys() - ns.keys():
            delattr(cls, key)
        owner.append(cls)
        return cls
    return wrap if cls is None else wrap(cls)


def _fields(cls) -> dict[str, dataclasses.Field]:
    """The class's fields by name, inherited ones first, as ``dataclass`` finds them."""
    found: dict[str, dataclasses.Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        found.update(getattr(base, "__dataclass_fields__", {}))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        if text.startswith(("ClassVar", "typing.ClassVar")):
            continue
        if text.startswith(("InitVar", "dataclasses.InitVar")):
            raise TypeError(f"{cls.__name__}.{name}: a record has no InitVar fields")
        default = cls.__dict__.get(name, MISSING)
        if isinstance(default, dataclasses.Field):
            f = default
        else:
            if default is not MISSING and default.__class__.__hash__ is None:
                raise ValueError(f"mutable default {type(default)} for field {name} "
                                 "is not allowed: use default_factory")
            f = field(default=default)
        if f.kw_only is True or not f.init:
            raise TypeError(f"{cls.__name__}.{name}: a record's fields are all "
                            "positional-or-keyword __init__ parameters")
        if f.hash is not None:
            raise TypeError(f"{cls.__name__}.{name}: a record hashes the fields it compares")
        f.name, f.type, f._field_type = name, annotation, _FIELD
        if f.kw_only is MISSING:
            f.kw_only = False
        found[name] = f
    has_default = None
    for f in found.values():
        if f.default is MISSING and f.default_factory is MISSING and has_default:
            raise TypeError(f"non-default argument '{f.name}' follows default argument "
                            f"'{has_default}'")
        if f.default is not MISSING or f.default_factory is not MISSING:
            has_default = has_default or f.name
    return found


def _slot_names(base) -> tuple[str, ...]:
    slots = base.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


_NO_VALUE = object()  # an argument left out, for a field with a default factory
_PLACEHOLDER = "_record_p"  # field i's name in a template: _record_p<i>
_TEMPLATES: dict[tuple, object] = {}  # shape -> the code of its __init__ template


def _deferred_init(qualname: str, fs, frozen: bool):
    """A stand-in ``__init__`` that puts the class's own (:func:`_init`) in its place at
    the class's first instance, and the list to append the finished class to: a build
    imports some hundred record classes and makes instances of about half of them, so
    the others never cost a template."""
    owner: list[type] = []

    def __init__(self, *args, **kwargs):
        cls = owner[0]
        if cls.__dict__.get("__init__") is __init__:
            cls.__init__ = _init(cls, fs, frozen)
        cls.__init__(self, *args, **kwargs)

    __init__.__qualname__ = f"{qualname}.__init__"
    return __init__, owner


def _init(cls, fs, frozen: bool):
    """``__init__(self, <fields in order, with their defaults>)``, as a dataclass's:
    each field set (with ``object.__setattr__`` when frozen), then
    ``__post_init__``: the template of the class's shape with the field names put in.
    A field with a plain default and a required one share the template's code (the
    defaults are the function's, not the code's)."""
    kinds = tuple("factory" if f.default_factory is not MISSING
                  else "default" if f.default is not MISSING else "required" for f in fs)
    post_init = hasattr(cls, "__post_init__")
    shape = (frozen, tuple(kind == "factory" for kind in kinds), post_init)
    template = _TEMPLATES.get(shape)
    if template is None:
        template = _TEMPLATES[shape] = _template(*shape)
    names = {f"{_PLACEHOLDER}{i}": f.name for i, f in enumerate(fs)}
    code = template.replace(
        co_varnames=tuple(names.get(n, n) for n in template.co_varnames),
        co_names=tuple(names.get(n, n) for n in template.co_names),
        co_consts=tuple(names.get(c, c) if type(c) is str else c for c in template.co_consts),
        co_qualname=f"{cls.__qualname__}.__init__")
    env = {"__builtins__": builtins, "_record_setattr": object.__setattr__,
           "_record_no_value": _NO_VALUE}
    env.update((f"_record_factory{i}", f.default_factory)
               for i, (f, kind) in enumerate(zip(fs, kinds)) if kind == "factory")
    defaults = tuple(f.default if kind == "default" else _NO_VALUE
                     for f, kind in zip(fs, kinds) if kind != "required")
    return FunctionType(code, env, "__init__", defaults or None)


def _template(frozen: bool, factories: tuple[bool, ...], post_init: bool) -> CodeType:
    """The code of ``__init__`` for one shape, its field names placeholders.

    Compiled from a syntax tree built here from the shape alone (``frozen``, which
    fields have a default factory, ``post_init``) with the placeholder names
    ``_record_p<i>``: no text is evaluated, and no class's field name is in it. The names
    go in afterwards, as data, by ``CodeType.replace`` (``_init``). Without it each record
    class would need a hand-written ``__init__``, or a generic ``*args`` one several
    times slower on every IR node made."""
    at = {"lineno": 1, "col_offset": 0}  # every node on line 1 (no location walk)

    def name(n: str) -> ast.Name:
        return ast.Name(n, ast.Load(), **at)

    def call(func: ast.expr, args: list[ast.expr]) -> ast.Call:
        return ast.Call(func, args, [], **at)

    params, body = [ast.arg("self", **at)], []
    for i, factory in enumerate(factories):
        p = f"{_PLACEHOLDER}{i}"
        params.append(ast.arg(p, **at))  # defaults are the function's (_init), not the code's
        value = name(p)
        if factory:  # _record_factory<i>() if p is _record_no_value else p
            value = ast.IfExp(ast.Compare(name(p), [ast.Is()], [name("_record_no_value")], **at),
                              call(name(f"_record_factory{i}"), []), name(p), **at)
        body.append(ast.Expr(call(name("_record_setattr"),
                                  [name("self"), ast.Constant(p, **at), value]), **at)
                    if frozen else
                    ast.Assign([ast.Attribute(name("self"), p, ast.Store(), **at)], value, **at))
    if post_init:
        body.append(ast.Expr(call(ast.Attribute(name("self"), "__post_init__", ast.Load(), **at),
                                  []), **at))
    signature = ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[],
                              kw_defaults=[], kwarg=None, defaults=[])
    fields_of = {"name": "__init__", "args": signature, "body": body or [ast.Pass(**at)],
                 "decorator_list": [], "returns": None, "type_comment": None, **at}
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12
        fields_of["type_params"] = []
    tree = ast.Module([ast.FunctionDef(**fields_of)], [])
    module = compile(tree, "<record __init__>", "exec")
    return next(c for c in module.co_consts if isinstance(c, CodeType))


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


def _cached_hash(self):
    try:
        return self._record_hash
    except AttributeError:
        h = hash(self._record_key(self))
        object.__setattr__(self, "_record_hash", h)
        return h


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
