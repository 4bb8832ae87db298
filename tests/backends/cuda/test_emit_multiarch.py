"""``tirc build --emit tir,llvm,ptx`` (intermediates) and cuda targets with several archs
(``cuda -arch=sm_80,sm_90``: one image per arch, chosen at load time)."""
from __future__ import annotations


import pytest
from click.testing import CliRunner

from tirc.build.stages import build
from tirc.build.options import parse_emit
from tirc.driver import cli
from conftest import TESTS

ROOT = TESTS.parent
SAMPLES = ROOT / "samples"


def _build(args, tmp_path):
    r = CliRunner().invoke(cli, ["build", *map(str, args), "-o", str(tmp_path)])
    return r


# -- --emit ---------------------------------------------------------------------------------
def test_parse_emit_commas_and_repeats():
    assert parse_emit(("ptx,tir", "llvm", "tir")) == ("tir", "llvm", "ptx")
    assert parse_emit("llvm") == ("llvm",)
    with pytest.raises(ValueError, match="unknown --emit kind 'asm'; valid: tir, llvm, ptx"):
        parse_emit(("tir,asm",))


def test_emit_everything_with_a_depfile(tmp_path):
    r = _build([SAMPLES / "multi_target.tir", "--emit", "tir,llvm", "--emit", "ptx", "-MD"],
               tmp_path)
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["multi_target.d", "multi_target.h", "multi_target.json",
                            "multi_target.ll", "multi_target.lowered.tir", "multi_target.o",
                            "multi_target.sm_80.device.ll", "multi_target.sm_80.ptx",
                            "multi_target.sm_90.device.ll", "multi_target.sm_90.ptx"])
    from tirc.ir.printer import print_module
    from tirc.frontend.parse import parse
    from tirc.passes.pipeline import PassContext, run_pipeline
    from tirc.target.kinds import parse_target
    lowered = (tmp_path / "multi_target.lowered.tir").read_text()
    src = parse((SAMPLES / "multi_target.tir").read_text(), "multi_target.tir")
    assert lowered == print_module(run_pipeline(src, PassContext(parse_target("llvm"))))
    for arch in ("sm_80", "sm_90"):
        ll = (tmp_path / f"multi_target.{arch}.device.ll").read_text()
        assert 'target triple = "nvptx64-nvidia-cuda"' in ll
    assert 'target triple = "nvptx64' not in (tmp_path / "multi_target.ll").read_text()
    dep = (tmp_path / "multi_target.d").read_text()
    for n in names:
        if n != "multi_target.d":
            assert str(tmp_path / n) in dep


def test_emit_llvm_single_device_image_and_unknown_kind(tmp_path):
    r = _build([SAMPLES / "vector_add.tir", "--target", "cuda -arch=sm_90", "--emit", "llvm"],
               tmp_path)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "vector_add.device.ll").exists() and (tmp_path / "vector_add.ll").exists()
    r = _build([SAMPLES / "vector_add.tir", "--emit", "tir,bogus"], tmp_path / "x")
    assert r.exit_code == 2 and "unknown --emit kind 'bogus'" in r.output
    assert not (tmp_path / "x").exists()


def test_emit_ptx_with_cubins(tmp_path):
    from tirc.backends.cuda import cubin as nvptx_cubin
    if not nvptx_cubin.available():
        pytest.skip("nvJitLink is not installed")
    r = build((SAMPLES / "vector_add.tir").read_text(), "cuda -arch=sm_90", out_dir=tmp_path,
              name="vector_add", device_format="cubin", emit=("ptx",))
    assert {p.name for p in r.files} >= {"vector_add.cubin", "vector_add.ptx"}
    assert ".target sm_90" in (tmp_path / "vector_add.ptx").read_text()
    assert (tmp_path / "vector_add.cubin").read_bytes()[:4] == b"\x7fELF"


def test_emit_is_atomic_on_failure(tmp_path):
    good = _build([SAMPLES / "vector_add.tir", "--target", "cuda", "--emit", "tir,llvm"], tmp_path)
    assert good.exit_code == 0, good.output
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    bad = tmp_path / "src" / "vector_add.tir"
    bad.parent.mkdir()
    bad.write_text((SAMPLES / "vector_add.tir").read_text().replace("T.Buffer", "T.Bufer", 1))
    r = _build([bad, "--target", "cuda", "--emit", "tir,llvm"], tmp_path)
    assert r.exit_code == 1
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


# -- several archs of one kind --------------------------------------------------------------
def test_multi_arch_target_parsing_and_canonical_form():
    from tirc.target.kinds import TargetError, cuda_archs, for_arch, parse_target
    t = parse_target("cuda -arch=sm_90,sm_80")
    assert t.get("arch") == ("sm_80", "sm_90") and cuda_archs(t) == ("sm_80", "sm_90")
    assert t.to_dict()["arch"] == ["sm_80", "sm_90"] and t.describe() == "cuda -arch=sm_80,sm_90"
    assert t == parse_target('{"kind": "cuda", "arch": ["sm_80", "sm_90", "sm_80"]}')
    assert t == parse_target(t.canonical) == parse_target({"kind": "cuda", "arch": "sm_80,sm_90"})
    # the oldest arch's PTX version, the smallest shared-memory limit
    assert t.get("ptx_version") == 70 and t.get("max_shared_memory_per_block") == 166912
    assert parse_target("cuda -arch=sm_80,sm_86").get("max_shared_memory_per_block") == 101376
    # one arch stays the plain string
    one = parse_target('{"kind": "cuda", "arch": ["sm_90"]}')
    assert one == parse_target("cuda -arch=sm_90") and one.to_dict()["arch"] == "sm_90"
    assert cuda_archs(one) == ("sm_90",)
    # each arch's image is compiled for a single-arch target with its own derivations
    per = for_arch(parse_target("cuda -arch=sm_80,sm_90a -max_num_threads=512"), "sm_90a")
    assert per.get("arch") == "sm_90a" and per.get("ptx_version") == 80
    assert per.get("max_num_threads") == 512
    for bad in ("cuda -arch=sm_80,sm_1", "cuda -arch=", '{"kind": "cuda", "arch": []}'):
        with pytest.raises(TargetError):
            parse_target(bad)


def test_multi_arch_build_files_manifest_and_embedding(tmp_path):
    import json
    r = _build([SAMPLES / "vector_add.tir", "--target", "cuda -arch=sm_90,sm_80", "-MD"], tmp_path)
    assert r.exit_code == 0, r.output
    names = {p.name for p in tmp_path.iterdir()}
    assert {"vector_add.sm_80.ptx", "vector_add.sm_90.ptx", "vector_add.o"} <= names
    assert "vector_add.ptx" not in names
    obj = (tmp_path / "vector_add.o").read_bytes()
    for arch in ("sm_80", "sm_90"):
        ptx = (tmp_path / f"vector_add.{arch}.ptx").read_text()
        assert f".target {arch}" in ptx and ptx.encode() in obj
    assert ".version 7.0" in (tmp_path / "vector_add.sm_80.ptx").read_text()
    assert ".version 7.8" in (tmp_path / "vector_add.sm_90.ptx").read_text()
    kernel = json.loads((tmp_path / "vector_add.json").read_text())["kernels"][0]
    assert kernel["image"] == ["vector_add.sm_80.ptx", "vector_add.sm_90.ptx"]
    assert str(tmp_path / "vector_add.sm_90.ptx") in (tmp_path / "vector_add.d").read_text()
    first = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    again = _build([SAMPLES / "vector_add.tir", "--target", "cuda -arch=sm_80,sm_90", "-MD"], tmp_path)
    assert again.exit_code == 0 and {p.name: p.read_bytes() for p in tmp_path.iterdir()} == first


def test_multi_arch_build_result_and_emit(tmp_path):
    from tirc.target.kinds import for_arch, parse_target
    t = parse_target("cuda -arch=sm_80,sm_90")
    r = build((SAMPLES / "vector_add.tir").read_text(), t, out_dir=tmp_path, name="vector_add",
              emit=("llvm",))
    assert r.images == {for_arch(t, a).canonical:  # device targets carry no host
                        tmp_path / f"vector_add.{a}.ptx" for a in ("sm_80", "sm_90")}
    assert (tmp_path / "vector_add.sm_80.device.ll").exists()
    assert (tmp_path / "vector_add.sm_90.device.ll").exists()


def test_multi_arch_device_only_and_fatbin_with_cubin_usage_error(tmp_path):
    r = _build([SAMPLES / "vector_add.tir", "--target", "cuda -arch=sm_80,sm_90", "--device-only"],
               tmp_path)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "vector_add.json", "vector_add.sm_80.ptx", "vector_add.sm_90.ptx"]
    r = _build([SAMPLES / "vector_add.tir", "--target", "cuda -arch=sm_80,sm_90",
                "--device-format", "fatbin,cubin"], tmp_path / "f")
    assert r.exit_code == 2 and "--device-format fatbin holds the cubins" in r.output


def _pick(archs, cc):
    """What the loader's chain picks on a device of capability ``cc`` (x10)."""
    from tirc.backends.cuda.launch import image_preference
    for i, rule, major, minor in image_preference(archs):
        if (rule == "exact" and (major, minor) == divmod(cc, 10)
                or rule == "major" and major == cc // 10 and minor <= cc % 10
                or rule == "atmost" and major * 10 + minor <= cc):
            return archs[i][0]
    return None


def test_image_preference_rules():
    ptx = [("sm_80", "ptx"), ("sm_90", "ptx")]
    assert [_pick(ptx, cc) for cc in (75, 80, 86, 89, 90, 100)] == [
        None, "sm_80", "sm_80", "sm_80", "sm_90", "sm_90"]
    cubin = [("sm_80", "cubin"), ("sm_86", "cubin"), ("sm_90", "cubin")]
    assert [_pick(cubin, cc) for cc in (75, 80, 86, 89, 90, 100)] == [
        None, "sm_80", "sm_86", "sm_86", "sm_90", None]
    specific = [("sm_80", "ptx"), ("sm_90a", "ptx")]
    assert [_pick(specific, cc) for cc in (80, 90, 100)] == ["sm_80", "sm_90a", "sm_80"]
    mixed = [("sm_80", "ptx"), ("sm_86", "cubin")]  # a cubin beats PTX where it fits
    assert [_pick(mixed, cc) for cc in (80, 86, 89, 90)] == ["sm_80", "sm_86", "sm_86", "sm_80"]


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory):
    import shutil
    import subprocess
    from test_cuda_launch import FAKE_LIBCUDA
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("fakecuda")
    (d / "fake.c").write_text(FAKE_LIBCUDA)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "libcuda.so.1"), str(d / "fake.c")],
                   check=True)
    return {"LD_LIBRARY_PATH": str(d)}


@pytest.fixture(scope="module")
def multi_arch_so(tmp_path_factory):
    pytest.importorskip("tvm_ffi")
    out = tmp_path_factory.mktemp("multiarch")
    build((SAMPLES / "vector_add.tir").read_text(), "cuda -arch=sm_80,sm_90,sm_90a",
          out_dir=out, name="vector_add", shared=True)
    return out / "vector_add.so"


@pytest.mark.parametrize("cc, arch", [(80, "sm_80"), (86, "sm_80"), (89, "sm_80"),
                                      (90, "sm_90a"), (100, "sm_90")])
def test_the_image_that_fits_the_device_is_loaded(multi_arch_so, fake_libcuda, cc, arch):
    from test_cuda_launch import _call
    lines = _call(multi_arch_so, "vector_add", 300, 1, calls=2,
                  env={**fake_libcuda, "FAKE_CC": str(cc)})
    launch = "launch vector_add_kernel 2 1 1 256 1 1 0 n=300"
    assert lines == ["cuInit", "retain 1", f"load {arch}", launch, "OK", launch, "OK"]


def test_a_device_too_old_for_every_image_is_a_clear_error(multi_arch_so, fake_libcuda):
    from test_cuda_launch import _call
    lines = _call(multi_arch_so, "vector_add", 16, 0, calls=2, env={**fake_libcuda, "FAKE_CC": "75"})
    error = ("RuntimeError: no device image of this module fits device 0 (compute capability "
             "7.5); it has images for sm_80 ptx, sm_90 ptx, sm_90a ptx")
    assert lines == ["cuInit", "retain 0", error, error]


def test_multi_arch_cubins(tmp_path):
    from tirc.backends.cuda import cubin as nvptx_cubin
    if not nvptx_cubin.available():
        pytest.skip("nvJitLink is not installed")
    r = _build([SAMPLES / "vector_add.tir", "--target", "cuda -arch=sm_80,sm_90",
                "--device-format", "cubin", "--emit", "ptx"], tmp_path)
    assert r.exit_code == 0, r.output
    obj = (tmp_path / "vector_add.o").read_bytes()
    for arch in ("sm_80", "sm_90"):
        cubin = (tmp_path / f"vector_add.{arch}.cubin").read_bytes()
        assert cubin[:4] == b"\x7fELF" and cubin in obj
        assert f".target {arch}" in (tmp_path / f"vector_add.{arch}.ptx").read_text()


@pytest.mark.gpu
def test_multi_arch_vector_add_runs_on_the_gpu(tmp_path):
    np = pytest.importorskip("numpy")
    tvm_ffi = pytest.importorskip("tvm_ffi")
    from tirc import runtime as rt
    build((SAMPLES / "vector_add.tir").read_text(), "cuda -arch=sm_80,sm_90", out_dir=tmp_path,
          name="vector_add", shared=True)
    dev = rt.device("cuda", 0)
    a = np.arange(1000, dtype=np.float32)
    A, B, C = rt.from_numpy(a, dev), rt.from_numpy(a, dev), rt.empty((1000,), "float32", dev)
    f = tvm_ffi.load_module(str(tmp_path / "vector_add.so"))["vector_add"]
    f(tvm_ffi.from_dlpack(A), tvm_ffi.from_dlpack(B), tvm_ffi.from_dlpack(C))
    rt.synchronize(dev)
    np.testing.assert_allclose(C.to_numpy(), a + a)
