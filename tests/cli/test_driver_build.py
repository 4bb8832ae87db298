"""``tirc build`` as a compiler driver for Make and CI: several
inputs and ``-j``, exit codes, atomic and byte-identical outputs, depfiles, multi-target
file names, cross-compiled objects, ``-v``/``--quiet``, and ``samples/Makefile``."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from conftest import ROOT, SAMPLES

from tirc.driver import cli

SAMPLE_DIR = ROOT / "samples"
CPU = "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    for i in range(4):\n        A[i] = T.float32(1)\n"
BROKEN = "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    A[0] = T.expp(A[1])\n"
CUDA = ("--target", "cuda", "--host", "llvm")
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def run(*args):
    return CliRunner().invoke(cli, ["build", *map(str, args)])


def tirc(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tirc", "build", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, check=False)


def snapshot(d):
    """Every file under ``d``: its bytes and mtime."""
    return {p.relative_to(d).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(d.rglob("*")) if p.is_file()}


def elf_machine(data: bytes) -> int:
    assert data[:4] == b"\x7fELF" and data[5] == 1
    return struct.unpack_from("<H", data, 18)[0]


# -- byte-identical outputs --------------------------------------------------------------

@needs_cc
def test_two_builds_are_byte_identical(tmp_path, monkeypatch):
    results = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        monkeypatch.chdir(tmp_path / d)
        for args in ([SAMPLE_DIR / "device_call_add.tir", *CUDA],
                     [SAMPLE_DIR / "multi_target.tir", *CUDA],
                     [SAMPLE_DIR / "cpu_matmul.tir", "--shared", "--emit", "llvm"]):
            r = run(*args, "-MD", "-o", "out")
            assert r.exit_code == 0, r.output
        results.append({k: v for k, (v, _) in snapshot(tmp_path / d / "out").items()})
    a, b = results
    assert {"device_call_add.o", "device_call_add.ptx", "device_call_add.d",
            "multi_target.sm_90.ptx", "cpu_matmul.so", "cpu_matmul.ll"} <= set(a)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name] == b[name], name


# -- atomic outputs: a failed build changes nothing --------------------------------------

def test_failing_build_leaves_a_good_build_untouched(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    out = tmp_path / "out"
    (src / "mod.tir").write_text(CPU)
    assert run(src / "mod.tir", "-MD", "-o", out).exit_code == 0
    before = snapshot(out)
    assert set(before) == {"mod.o", "mod.h", "mod.json", "mod.d"}
    (src / "mod.tir").write_text(BROKEN)
    r = run(src / "mod.tir", "-MD", "-o", out)
    assert r.exit_code == 1
    assert "unknown name 'T.expp'" in r.output
    assert snapshot(out) == before
    assert sorted(os.listdir(out)) == sorted(before)  # no temporary file either


@needs_cc
def test_failure_while_writing_leaves_no_temporary_file(tmp_path):
    """The link of NAME.so fails after every other output is in a temporary file."""
    (tmp_path / "mod.tir").write_text(CPU)
    out = tmp_path / "out"
    assert run(tmp_path / "mod.tir", "--shared", "-MD", "-o", out).exit_code == 0
    before = snapshot(out)
    r = run(tmp_path / "mod.tir", "--target", "llvm -mtriple=aarch64-linux-gnu", "--shared",
            "-MD", "-o", out)
    assert r.exit_code == 1
    assert "cannot link a shared library" in r.output
    assert snapshot(out) == before
    assert sorted(os.listdir(out)) == sorted(before)


# -- exit codes ------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["--no-such-flag"],
    ["-j", "0"],
    ["-v", "--quiet"],
    ["--target", "nope"],
    ["--target", "cuda", "--host", "cuda"],
    ["-MF", "x.d", "SECOND"],
    ["MISSING"],
], ids=["flag", "jobs", "v-quiet", "target", "host", "MF-several", "missing-input"])
def test_misuse_exits_2(tmp_path, args):
    good = tmp_path / "mod.tir"
    good.write_text(CPU)
    second = tmp_path / "other.tir"
    second.write_text(CPU)
    args = [str(second) if a == "SECOND" else str(tmp_path / "missing.tir") if a == "MISSING"
            else a for a in args]
    r = run(good, *args, "-o", tmp_path / "out")
    assert r.exit_code == 2, r.output
    assert not (tmp_path / "out").exists()


def test_no_input_and_same_name_twice_are_misuse(tmp_path):
    assert run("-o", tmp_path).exit_code == 2
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in "ab":
        (tmp_path / d / "mod.tir").write_text(CPU)
    r = run(tmp_path / "a" / "mod.tir", tmp_path / "b" / "mod.tir", "-o", tmp_path / "out")
    assert r.exit_code == 2
    assert "would both write" in r.output


def test_exit_codes_0_and_1(tmp_path):
    (tmp_path / "good.tir").write_text(CPU)
    (tmp_path / "bad.tir").write_text(BROKEN)
    assert run(tmp_path / "good.tir", "-o", tmp_path / "out").exit_code == 0
    assert run(tmp_path / "bad.tir", "-o", tmp_path / "out").exit_code == 1
    p = tirc(tmp_path / "good.tir", "-o", tmp_path / "out2")
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    p = tirc(tmp_path / "bad.tir", "-o", tmp_path / "out2")
    assert p.returncode == 1 and "Traceback" not in p.stderr


# -- several inputs, -j ------------------------------------------------------------------------

def test_several_inputs_in_parallel_one_broken(tmp_path):
    (tmp_path / "bad.tir").write_text(BROKEN)
    (tmp_path / "good.tir").write_text(CPU)
    out = tmp_path / "out"
    p = tirc("bad.tir", "good.tir", "-j", "2", "-o", out, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert p.stdout == ""
    assert sorted(os.listdir(out)) == ["good.h", "good.json", "good.o"]
    assert p.stderr.startswith("[1/2] bad.tir\nbad.tir:3:12: error: unknown name 'T.expp'\n")
    assert "\n[2/2] good.tir\n" in p.stderr
    assert p.stderr.endswith("tirc: 1 of 2 inputs failed\n")
    assert "Traceback" not in p.stderr
    # the same report, in the same order, built serially
    serial = tirc("bad.tir", "good.tir", "-j", "1", "-o", tmp_path / "out1", cwd=tmp_path)
    assert (serial.returncode, serial.stderr) == (1, p.stderr)


def test_every_sample_with_j(tmp_path):
    cuda = [s for s in SAMPLES if s.name != "cpu_matmul.tir"]
    r = run(*cuda, *CUDA, "-j", "3", "-MD", "-o", tmp_path)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines == [f"[{i}/{len(cuda)}] {s}" for i, s in enumerate(cuda, 1)]
    for s in cuda:
        assert (tmp_path / f"{s.stem}.o").is_file() and (tmp_path / f"{s.stem}.d").is_file()


def test_quiet_and_verbose(tmp_path):
    (tmp_path / "a.tir").write_text(CPU)
    (tmp_path / "b.tir").write_text(CPU)
    (tmp_path / "bad.tir").write_text(BROKEN)
    files = [tmp_path / n for n in ("a.tir", "b.tir")]
    r = run(*files, "--quiet", "-o", tmp_path / "q")
    assert (r.exit_code, r.output) == (0, "")
    r = run(*files, tmp_path / "bad.tir", "-q", "-o", tmp_path / "q")
    assert r.exit_code == 1
    assert r.output.startswith(f"{tmp_path / 'bad.tir'}:3:12: error: unknown name 'T.expp'")
    assert "[" not in r.output.splitlines()[0] and "tirc:" not in r.output
    r = run(files[0], "-v", "-o", tmp_path / "v")
    assert r.exit_code == 0
    out = tmp_path / "v"
    for name in ("a.o", "a.h", "a.json"):
        size = (out / name).stat().st_size
        assert f"tirc: wrote {out / name} ({size} bytes)" in r.output
    assert f"tirc: {files[0]}: host code for llvm" in r.output
    assert f"tirc: {files[0]}: built in " in r.output
    r = run(*files, "-v", "-j", "1", "-o", out)
    assert "[2/2]" in r.output and "tirc: 2 of 2 inputs built in " in r.output


# -- depfiles ---------------------------------------------------------------------------------------

def test_depfile(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLE_DIR / "multi_target.tir", "multi_target.tir")
    r = run("multi_target.tir", *CUDA, "-MD", "-o", "out")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "out" / "multi_target.d").read_text() == (
        "out/multi_target.o \\\n"
        "  out/multi_target.sm_80.ptx \\\n"
        "  out/multi_target.sm_90.ptx \\\n"
        "  out/multi_target.h \\\n"
        "  out/multi_target.json: multi_target.tir\n")
    r = run("multi_target.tir", *CUDA, "-MF", "deps/m.dep", "-o", "out2")
    assert r.exit_code == 0, r.output
    text = (tmp_path / "deps" / "m.dep").read_text()
    assert text.startswith("out2/multi_target.o \\\n") and text.endswith(": multi_target.tir\n")
    assert not (tmp_path / "out2" / "multi_target.d").exists()


@needs_cc
def test_depfile_lists_the_shared_library_and_escapes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my dir").mkdir()
    (tmp_path / "my dir" / "m.tir").write_text(CPU)
    r = run("my dir/m.tir", "--shared", "-MD", "-o", "o$t")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "o$t" / "m.d").read_text() == (
        "o$$t/m.o \\\n  o$$t/m.h \\\n  o$$t/m.json \\\n  o$$t/m.so: my\\ dir/m.tir\n")


# -- file names and cross-compilation -------------------------------------------------------------

def test_multi_target_file_names(tmp_path):
    r = run(SAMPLE_DIR / "multi_target.tir", "-o", tmp_path)
    assert r.exit_code == 0, r.output
    assert sorted(os.listdir(tmp_path)) == [
        "multi_target.h", "multi_target.json", "multi_target.o",
        "multi_target.sm_80.ptx", "multi_target.sm_90.ptx"]
    assert ".target sm_80" in (tmp_path / "multi_target.sm_80.ptx").read_text()
    assert ".target sm_90" in (tmp_path / "multi_target.sm_90.ptx").read_text()


@pytest.mark.parametrize("extra", [(), ("--target", "cuda")], ids=["cpu", "cuda-host"])
def test_aarch64_object(tmp_path, extra):
    src = SAMPLE_DIR / "device_call_add.tir" if extra else tmp_path / "m.tir"
    if not extra:
        src.write_text(CPU)
    r = run(src, *extra, "--host", "llvm -mtriple=aarch64-linux-gnu", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    obj = tmp_path / "out" / f"{src.stem}.o"
    assert elf_machine(obj.read_bytes()) == 183  # EM_AARCH64
    if shutil.which("readelf"):
        header = subprocess.run(["readelf", "-h", str(obj)], capture_output=True, text=True,
                                check=True).stdout
        assert "AArch64" in header


def test_default_target_is_llvm_and_documented(tmp_path):
    (tmp_path / "m.tir").write_text(CPU)
    assert run(tmp_path / "m.tir", "-o", tmp_path).exit_code == 0
    assert elf_machine((tmp_path / "m.o").read_bytes()) == 62  # this machine: x86-64
    help_text = CliRunner().invoke(cli, ["build", "--help"]).output
    assert "without --target, they get llvm" in " ".join(help_text.split())
    assert "without `--target` they get `llvm`" in (ROOT / "README.md").read_text()


# -- samples/Makefile --------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_samples_makefile_from_a_clean_tree(tmp_path):
    tree = tmp_path / "samples"
    shutil.copytree(SAMPLE_DIR, tree, ignore=shutil.ignore_patterns("out"))
    tirc_cmd = f"{sys.executable} -m tirc"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    make = ["make", "-C", str(tree), "-j", "4", f"TIRC={tirc_cmd}"]
    p = subprocess.run(make, capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    out = tree / "out"
    built = set(os.listdir(out))
    for s in SAMPLES:
        for ext in ("o", "h", "json", "d"):
            assert f"{s.stem}.{ext}" in built, (s.stem, ext)
    assert {"multi_target.sm_80.ptx", "multi_target.sm_90.ptx",
            "device_call_add.ptx"} <= built
    assert not any(n.endswith(".ptx") for n in built if n.startswith("cpu_matmul"))
    # up to date: nothing to do; an edited sample (via its depfile) is rebuilt alone
    p = subprocess.run(make, capture_output=True, text=True, env=env, check=True)
    assert " build " not in p.stdout and "Nothing to be done" in p.stdout
    later = time.time() + 10
    os.utime(tree / "vector_add.tir", (later, later))
    p = subprocess.run(make, capture_output=True, text=True, env=env, check=True)
    assert p.stdout.count(" build ") == 1 and "vector_add.tir" in p.stdout
    subprocess.run(["make", "-C", str(tree), "clean"], capture_output=True, check=True)
    assert not out.exists()


def test_both_device_formats_can_be_asked_for(tmp_path):
    """--device-format ptx,cubin (or the flag twice) writes both images."""
    from click.testing import CliRunner
    from tirc.backends.cuda import cubin as nvptx_cubin
    from tirc.driver import cli
    if not nvptx_cubin.available():
        pytest.skip("nvJitLink is not installed")
    sample = str(ROOT / "samples" / "two_kernels.tir")
    for flags in (["--device-format", "ptx,cubin"], ["--device-format", "cubin", "--device-format", "ptx"]):
        out = tmp_path / "_".join(flags)
        result = CliRunner().invoke(cli, ["build", sample, "--target", "cuda", "-o", str(out), *flags])
        assert result.exit_code == 0, result.output
        assert (out / "two_kernels.ptx").is_file() and (out / "two_kernels.cubin").is_file()
    bad = CliRunner().invoke(cli, ["build", sample, "--device-format", "foo", "-o", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "unknown device format 'foo'" in bad.output


def test_build_turns_the_cycle_collector_off_only_while_building(tmp_path, monkeypatch):
    import gc

    import tirc.build.stages
    from tirc.build.jobs import build_one
    from tirc.build.options import build_options

    seen = []
    original = tirc.build.stages.build

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(tirc.build.stages, "build", spy)
    assert gc.isenabled()
    outcome = build_one(str(ROOT / "samples" / "cpu_matmul.tir"), build_options(out_dir=str(tmp_path)))
    assert outcome.status == 0 and seen == [False]
    assert gc.isenabled()
    (tmp_path / "bad.tir").write_text("@T.prim_func\ndef f(:\n")
    assert build_one(str(tmp_path / "bad.tir"), build_options(out_dir=str(tmp_path))).status == 1
    assert gc.isenabled()
