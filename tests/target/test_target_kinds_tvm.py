"""Every target kind TVM 0.27 registers is either built or refused by name
item 2): ``nvptx`` (TVM's LLVM-based CUDA kind, ``-mcpu=sm_86``) builds with the cuda
backend; the kinds tirc has no code generator for are a located "not supported" error."""
from __future__ import annotations

import re

import pytest

from conftest import ROOT
from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from tirc.frontend.parse import parse
from tirc.target.kinds import KINDS, UNSUPPORTED_KINDS, TargetError, parse_target

# TVM 0.27's TVM_REGISTER_TARGET_KIND names (src/**/target_kind.cc)
TVM_KINDS = {"c", "composite", "cuda", "ext_dev", "hexagon", "llvm", "metal", "nvptx",
             "opencl", "rocm", "test", "trn", "vulkan", "webgpu"}
NVPTX_MODULE = ROOT / "tests" / "corpus" / "tvm" / "target_nvptx.tir"  # printed by TVM 0.27


def test_every_tvm_kind_is_supported_or_refused_by_name():
    assert set(KINDS) | set(UNSUPPORTED_KINDS) == TVM_KINDS
    assert not set(KINDS) & set(UNSUPPORTED_KINDS)


def test_nvptx_is_the_cuda_backend_with_mcpu_for_arch():
    t = parse_target("nvptx -mcpu=sm_86")
    cuda = parse_target("cuda -arch=sm_86")
    assert t.kind == "nvptx" and t.is_cuda and t.is_device
    assert t.get("arch") == "sm_86" and t.get("mtriple") == "nvptx64-nvidia-cuda"
    for derived in ("ptx_version", "max_shared_memory_per_block"):
        assert t.get(derived) == cuda.get(derived)
    with pytest.raises(TargetError, match="invalid value 'sm_10' for option 'mcpu'"):
        parse_target("nvptx -mcpu=sm_10")
    with pytest.raises(TargetError, match="option 'mtriple'"):
        parse_target("nvptx -mtriple=amdgcn-amd-amdhsa")


def test_a_tvm_printed_nvptx_module_builds_the_same_ptx_as_cuda(tmp_path):
    text = NVPTX_MODULE.read_text()
    nvptx = build(text, None, None, tmp_path / "n", "m", filename=str(NVPTX_MODULE))
    as_cuda = text.replace('"kind": "nvptx", "max_num_threads": 1024, "mcpu": "sm_86", '
                           '"mtriple": "nvptx64-nvidia-cuda", ',
                           '"arch": "sm_86", "kind": "cuda", "max_num_threads": 1024, ')
    assert as_cuda != text
    cuda = build(as_cuda, None, None, tmp_path / "c", "m", filename="c.tir")
    assert (tmp_path / "n" / "m.ptx").read_text() == (tmp_path / "c" / "m.ptx").read_text()
    assert ".target sm_86" in (tmp_path / "n" / "m.ptx").read_text()
    kernel = nvptx.manifest["kernels"][0]
    assert kernel["target_summary"].startswith("nvptx") and kernel["image"] == "m.ptx"
    assert {p.name for p in nvptx.files} == {p.name for p in cuda.files}


@pytest.mark.parametrize("kind", sorted(UNSUPPORTED_KINDS))
def test_an_unsupported_kind_in_the_text_is_a_located_error(kind):
    text = ('# from tvm.script import tirx as T\n\n@T.prim_func\n'
            'def f(A: T.Buffer((4,), "float32")):\n'
            f'    T.func_attr({{"target": T.target({{"kind": "{kind}"}})}})\n'
            '    A[0] = T.float32(1)\n')
    with pytest.raises(Diagnostic) as e:
        parse(text, "k.tir")
    assert re.search(rf"target kind '{kind}' \(.+\) is not supported by tirc; supported "
                     r"kinds: c, cuda, llvm, nvptx", e.value.message), e.value.message
    assert e.value.span is not None and e.value.span.line == 5


def test_an_unsupported_kind_on_the_command_line_is_a_usage_error(tmp_path):
    from click.testing import CliRunner

    from tirc.driver import cli
    r = CliRunner().invoke(cli, ["build", str(ROOT / "samples" / "vector_add.tir"),
                                 "--target", "ext_dev", "-o", str(tmp_path)])
    assert r.exit_code == 2
    assert "target kind 'ext_dev' (TVM's external-device placeholder) is not supported" in r.output
    assert not list(tmp_path.iterdir())
