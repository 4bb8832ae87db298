"""BindTarget as TVM 0.27's: for every module of the samples and the
corpora, bound to ``cuda -arch=sm_90`` with host ``llvm`` and to ``llvm``, each function
gets the target kind, arch and host TVM's BindTarget gives it
(tests/corpus/tvm/bound_targets.json, printed by TVM with
tests/corpus/gen_bound_targets.py), duplicates for host callers included.

Compared as tirc means them: TVM names the function of a file with one bare
``@T.prim_func`` ``main``; an ``nvptx`` target's arch is its ``mcpu`` (TVM keeps no
``arch``). One difference is tirc's on purpose: bound to a CPU target, an exposed
function with an explicit device target and no host gets that CPU target as its host
(TVM gives it none, and then cannot make its host side), so that it builds; and bound to
a CPU target, a private function called from host code and from thread-bound code is
not duplicated (TVM's ``_host`` copy has the same CPU target as the original).
"""
from __future__ import annotations

import json

import pytest

from conftest import ROOT
from tirc.ir.attrs import TARGET
from tirc.frontend.parse import parse
from tirc.passes.prepare.bind_target import bind_target
from tirc.target.kinds import parse_target

REFERENCE = json.loads((ROOT / "tests" / "corpus" / "tvm" / "bound_targets.json").read_text())
BINDS = {"cuda -arch=sm_90 --host llvm": ("cuda -arch=sm_90", "llvm"), "llvm": ("llvm", None)}

DEVICE_KINDS = {"cuda", "nvptx"}


def summary(t) -> list | None:
    if t is None:
        return None
    return [t.kind, None if t.kind == "nvptx" else t.get("arch"),
            t.host.kind if t.host is not None else None]


def expected(bind: str, path: str, mod) -> dict:
    """TVM's targets for ``mod``'s functions, named as tirc names them, with tirc's one
    deliberate difference applied."""
    ref = dict(REFERENCE[bind][path])
    if list(ref) == ["main"] and list(mod.functions) != ["main"] and len(mod.functions) == 1:
        ref = {next(iter(mod.functions)): ref["main"]}
    out = {}
    for name, t in ref.items():
        if (bind == "llvm" and name not in mod.functions and name.endswith("_host")
                and ref.get(name[:-len("_host")]) == t):
            continue
        if t is not None and t[0] == "nvptx":
            t = [t[0], None, t[2]]
        f = mod.functions.get(name)
        if (bind == "llvm" and t is not None and t[0] in DEVICE_KINDS and t[2] is None
                and f is not None and not f.private):
            t = [t[0], t[1], "llvm"]
        out[name] = t
    return out


CASES = [(bind, path) for bind in sorted(REFERENCE) for path in sorted(REFERENCE[bind])]


def test_the_reference_covers_the_corpora():
    assert all(len(REFERENCE[b]) >= 200 for b in BINDS)


@pytest.mark.parametrize("bind, path", CASES, ids=[f"{b.split()[0]}-{p}" for b, p in CASES])
def test_functions_get_tvms_targets(bind, path):
    target, host = BINDS[bind]
    mod = parse((ROOT / path).read_text(), path)
    ours = bind_target(mod, parse_target(target, host=host))
    got = {name: summary(f.attrs.get(TARGET)) for name, f in ours.functions.items()}
    assert got == expected(bind, path, mod)
