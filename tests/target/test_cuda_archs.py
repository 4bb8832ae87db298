"""Every CUDA arch TVM accepts: Maxwell and Pascal (sm_50..sm_62, the default
TVM prints on a machine without a GPU) and the sm_100/sm_120 families with their a/f
suffixes build PTX; a cubin nvJitLink cannot make is a located error suggesting PTX; the
per-arch facts come from one table and the load-time rule from one module."""
from __future__ import annotations

from pathlib import Path

import pytest

from tirc.backends.cuda.launch import image_preference
from tirc.build.stages import build
from tirc.target.cuda_arch import image_rule
from tirc.diagnostics import Diagnostic
from tirc.target.kinds import CUDA_ARCHS, parse_target
from conftest import TESTS

ROOT = TESTS
SOFTMAX = (ROOT / "tir" / "sblock_dlight_softmax_cuda.tir").read_text()


@pytest.mark.parametrize("arch", ["sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62",
                                  "sm_70", "sm_72"])
def test_old_archs_build_ptx_with_warp_shuffles(arch, tmp_path):
    """PTX 6.2 at least: LLVM aborted the whole process on activemask (a cross-thread
    reduction) for sm_70 with PTX 6.0."""
    t = parse_target(f"cuda -arch={arch}")
    assert t.get("ptx_version") == 62
    assert t.get("max_shared_memory_per_block") == (49152 if arch < "sm_70" else 98304)
    build(SOFTMAX, t, parse_target("llvm"), tmp_path, "m")
    ptx = (tmp_path / "m.ptx").read_text()
    assert f".target {arch}" in ptx and ".version 6.2" in ptx and "activemask" in ptx


@pytest.mark.parametrize("arch", ["sm_100f", "sm_103a", "sm_110", "sm_120f", "sm_121a"])
def test_blackwell_families_build_ptx(arch, tmp_path):
    build(SOFTMAX, parse_target(f"cuda -arch={arch}"), parse_target("llvm"), tmp_path, "m")
    assert f".target {arch}" in (tmp_path / "m.ptx").read_text()


def test_a_cubin_nvjitlink_cannot_make_is_a_located_error_and_writes_nothing(tmp_path):
    from tirc.backends.cuda import cubin as nvptx_cubin
    if not nvptx_cubin.available():
        pytest.skip("nvJitLink is not installed")
    from cuda.bindings import nvjitlink
    if nvjitlink.version()[0] < 13:
        pytest.skip("nvJitLink before CUDA 13 still compiles for sm_61")
    with pytest.raises(Diagnostic, match="cannot make a cubin for sm_61; build PTX for it "
                                         "with --device-format ptx") as err:
        build(SOFTMAX, parse_target("cuda -arch=sm_61"), parse_target("llvm"), tmp_path, "m",
              device_format="cubin")
    assert err.value.span is not None and err.value.span.line > 0
    assert not list(tmp_path.iterdir())


def test_load_rules_of_specific_and_family_images():
    assert image_rule("sm_90a", "ptx") == "exact" and image_rule("sm_90a", "cubin") == "exact"
    assert image_rule("sm_100f", "ptx") == "major" and image_rule("sm_100f", "cubin") == "major"
    assert image_rule("sm_80", "ptx") == "atmost" and image_rule("sm_80", "cubin") == "major"
    # the launcher tries cubins, then specific/family images, then the newest arch first
    order = image_preference([("sm_80", "ptx"), ("sm_100f", "ptx"), ("sm_90", "cubin")])
    assert [(i, rule) for i, rule, _, _ in order] == [(2, "major"), (1, "major"), (0, "atmost")]


def test_every_arch_of_the_table_is_a_valid_target():
    assert {"sm_80", "sm_90", "sm_90a", "sm_100f"} <= set(CUDA_ARCHS)
    for arch in CUDA_ARCHS:
        assert parse_target(f"cuda -arch={arch}").get("arch") == arch
