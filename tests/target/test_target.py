"""Targets as values: the kind registry, every parsing form, canonical identity."""
from __future__ import annotations

import json

import pytest

from tirc.target.kinds import DEFAULT_CUDA_ARCH, KINDS, TargetError, host_triple, parse_target


def test_command_line_form_with_typed_options():
    t = parse_target("cuda -arch=sm_90 -max_num_threads=512")
    assert t.kind == "cuda" and t.get("arch") == "sm_90" and t.get("max_num_threads") == 512


def test_bare_kind_gets_defaults_and_derived_options():
    t = parse_target("cuda")
    assert t.get("arch") == DEFAULT_CUDA_ARCH
    assert t.get("thread_warp_size") == 32
    assert t.get("ptx_version") == 70 and t.get("max_shared_memory_per_block") == 166912
    h = parse_target("sm_90".join(["cuda -arch=", ""]))
    assert h.get("ptx_version") == 78 and h.get("max_shared_memory_per_block") == 232448


def test_explicit_option_beats_derived_default():
    t = parse_target("cuda -arch=sm_90 -max_shared_memory_per_block=49152")
    assert t.get("max_shared_memory_per_block") == 49152


def test_llvm_triple_defaults_to_this_machine_and_is_overridable():
    assert parse_target("llvm").get("mtriple") == host_triple()
    assert parse_target("llvm -mtriple=aarch64-linux-gnu").get("mtriple") == "aarch64-linux-gnu"
    assert parse_target("llvm -mattr=+avx2,+fma").get("mattr") == ("+avx2", "+fma")
    assert parse_target("llvm -opt_level=1") == parse_target("llvm -opt-level=1")


def test_every_form_gives_the_same_target():
    forms = [
        parse_target('{"kind": "cuda", "arch": "sm_90", "host": "llvm"}'),
        parse_target({"kind": "cuda", "arch": "sm_90", "host": {"kind": "llvm"}}),
        parse_target("cuda -arch=sm_90", host="llvm"),
        parse_target({"kind": "cuda", "arch": "sm_90", "max_num_threads": 1024, "tag": "",
                      "keys": ["cuda", "gpu"], "thread_warp_size": 32, "host": "llvm"}),
    ]
    assert all(f == forms[0] and hash(f) == hash(forms[0]) for f in forms)
    assert forms[0].host == parse_target("llvm")


def test_canonical_string_is_the_json_of_all_options():
    t = parse_target("cuda -arch=sm_90")
    data = json.loads(t.canonical)
    assert data["kind"] == "cuda" and data["arch"] == "sm_90" and data["max_num_threads"] == 1024
    assert parse_target("cuda -arch=sm_80") != t
    assert parse_target(t.canonical) == t


def test_printed_form_keeps_only_what_was_written():
    t = parse_target("cuda -arch=sm_90", host="llvm")
    assert t.to_dict(explicit_only=True) == {"kind": "cuda", "arch": "sm_90", "host": {"kind": "llvm"}}


@pytest.mark.parametrize("bad,message", [
    ("", "empty target; valid kinds: c, cuda, llvm, nvptx"),
    ("metal", "target kind 'metal' (Apple GPUs) is not supported by tirc; supported kinds: "
              "c, cuda, llvm, nvptx"),
    ("tpu", "unknown target kind 'tpu'; valid kinds: c, cuda, llvm, nvptx"),
    ("cuda -archh=sm_90", "unknown option 'archh' for target kind 'cuda'; valid options:"),
    ("cuda -arch=sm_91", "invalid value 'sm_91' for option 'arch' of 'cuda'; valid values: sm_50"),
    ("cuda -max_num_threads=lots", "takes an integer"),
    ("llvm -fast-math=maybe", "takes true or false"),
    ("cuda arch=sm_90", "expected '-option=value'"),
    ("{", "invalid JSON target"),
    ("[1]", "unknown target kind '[1]'"),
    ('{"arch": "sm_90"}', "a target needs a 'kind'"),
    ('{"kind": "cuda", "host": {"kind": "llvm", "host": "llvm"}}', "cannot have a host"),
])
def test_bad_targets_say_what_is_valid(bad, message):
    with pytest.raises(TargetError) as info:
        parse_target(bad)
    assert message in str(info.value)


def test_registry_declares_device_types():
    assert KINDS["cuda"].is_device and KINDS["cuda"].dl_device_type == 2
    assert not KINDS["llvm"].is_device and KINDS["llvm"].dl_device_type == 1
