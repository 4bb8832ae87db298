"""Targets as values: parsing forms and canonical identity."""
from __future__ import annotations

import pytest

from tirc.target import Target, TargetError, parse_target


def test_command_line_form():
    t = parse_target("cuda -arch=sm_90 -max_num_threads=512")
    assert t.kind == "cuda" and t.get("arch") == "sm_90" and t.get("max_num_threads") == 512


def test_json_and_dict_forms_with_host():
    a = parse_target('{"kind": "cuda", "arch": "sm_90", "host": "llvm"}')
    b = parse_target({"kind": "cuda", "arch": "sm_90", "host": {"kind": "llvm"}})
    c = parse_target("cuda -arch=sm_90", host="llvm")
    assert a == b == c and hash(a) == hash(c)
    assert a.host == Target("llvm")


def test_canonical_string_decides_equality():
    assert parse_target("cuda -arch=sm_80") != parse_target("cuda -arch=sm_90")
    assert str(parse_target("cuda -arch=sm_90")) == '{"arch": "sm_90", "kind": "cuda"}'


@pytest.mark.parametrize("bad", ["", "{", "[1]", "cuda arch=sm_90", '{"arch": "sm_90"}'])
def test_bad_targets(bad):
    with pytest.raises(TargetError):
        parse_target(bad)
