"""``tirc build --print-after`` / ``--stop-after`` on stage names as well as pass names:
what each stage shows, that a stopped build writes nothing, and that
an unknown name is a usage error naming the stages."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import ROOT
from tirc.build.stages import STAGE_NAMES, build
from tirc.build.options import check_stop_names
from tirc.driver import cli
from tirc.frontend.parse import parse

SAMPLE = ROOT / "samples" / "vector_add.tir"
CUDA = "cuda -arch=sm_90"


def shown(tmp_path, **options) -> tuple[list[str], object]:
    texts: list[str] = []
    result = build(SAMPLE.read_text(), CUDA, None, tmp_path / "out", "va", show=texts.append,
                   **options)
    return texts, result


def test_stage_names_are_the_table():
    assert STAGE_NAMES == ("parse", "passes", "split", "device-codegen", "host-codegen",
                           "manifest", "write")


def test_print_after_each_stage(tmp_path):
    texts, result = shown(tmp_path, print_after=STAGE_NAMES)
    by_stage = {t.splitlines()[0].removeprefix("# after stage "): t for t in texts}
    assert list(by_stage) == list(STAGE_NAMES)
    # parse and passes: TIR that reads back
    parse(by_stage["parse"].split("\n", 1)[1])
    lowered = parse(by_stage["passes"].split("\n", 1)[1])
    assert "vector_add_kernel" in lowered.functions
    # split: the host module, then the device module, each named with its target
    split = by_stage["split"]
    assert split.index("# host module (llvm)") < split.index("# device module (cuda -arch=sm_90)")
    assert "def vector_add_kernel" in split.split("# device module")[1]
    assert "def vector_add_kernel" not in split.split("# device module")[0]
    # device-codegen: the PTX as written
    ptx = (tmp_path / "out" / "va.ptx").read_text()
    assert by_stage["device-codegen"] == f"# after stage device-codegen\n# va.ptx\n{ptx}"
    # host-codegen: the host object's LLVM IR
    assert "define" in by_stage["host-codegen"] and "__tvm_ffi_vector_add" in by_stage["host-codegen"]
    # manifest: NAME.h and NAME.json as written
    manifest = by_stage["manifest"]
    assert (tmp_path / "out" / "va.h").read_text() in manifest
    assert (tmp_path / "out" / "va.json").read_text() in manifest
    # write: the files, as the result lists them
    assert by_stage["write"].splitlines()[1:] == [str(p) for p in result.files]


def test_print_after_pass_and_stage_in_pipeline_order(tmp_path):
    texts, _ = shown(tmp_path, print_after=("write", "SplitHostDevice", "parse"))
    assert [t.splitlines()[0] for t in texts] == [
        "# after stage parse", "# after SplitHostDevice", "# after stage write"]


@pytest.mark.parametrize("stop", STAGE_NAMES[:-1])
def test_stop_after_stage_writes_nothing(tmp_path, stop):
    texts, result = shown(tmp_path, stop_after=stop, print_after=("all",))
    assert not (tmp_path / "out").exists()
    assert result.files == []
    assert [name for name, _ in result.stage_times] == list(STAGE_NAMES[:STAGE_NAMES.index(stop) + 1])
    assert texts[-1].startswith(f"# after stage {stop}\n")


def test_stop_after_pass_ends_the_build(tmp_path):
    texts, result = shown(tmp_path, stop_after="FlattenBuffer", print_after=("passes",))
    assert not (tmp_path / "out").exists()
    assert [name for name, _ in result.stage_times] == ["parse", "passes"]
    assert result.pass_times[-1][0] == "FlattenBuffer"
    # the module shown after the passes stage is the one FlattenBuffer left: no split yet
    assert "T.launch_thread" in texts[-1] and "vector_add_kernel" not in texts[-1]


def test_stop_after_last_stage_is_a_whole_build(tmp_path):
    _, result = shown(tmp_path, stop_after="write")
    assert sorted(p.name for p in result.files) == ["va.h", "va.json", "va.o", "va.ptx"]


def test_device_only_host_codegen_says_so(tmp_path):
    texts, _ = shown(tmp_path, device_only=True, print_after=("host-codegen",))
    assert texts == ["# after stage host-codegen\n# no host object (device-only build)\n"]


def test_cubin_is_shown_as_binary(tmp_path):
    pytest.importorskip("cuda.bindings.nvjitlink")
    texts, _ = shown(tmp_path, device_format="cubin", print_after=("device-codegen",))
    assert texts[0].startswith("# after stage device-codegen\n# va.cubin: ")
    assert texts[0].endswith(" bytes (binary)\n")


@pytest.mark.parametrize("print_after,stop_after,message", [
    (("bogus",), None, "--print-after: unknown stage or pass 'bogus'; stages: parse, passes"),
    ((), "device codegen", "--stop-after: unknown stage or pass 'device codegen'"),
    (("MakeCAPI",), None, "it does not run with --abi packed"),
    ((), "all", "--stop-after: unknown stage or pass 'all'"),
])
def test_unknown_names(print_after, stop_after, message):
    with pytest.raises(ValueError, match=message):
        check_stop_names(print_after, stop_after)


def test_c_abi_names():
    assert "MakeCAPI" in check_stop_names(("all",), "MakeCAPI", abi="c")


def test_cli_print_after_goes_to_stdout(tmp_path):
    r = CliRunner().invoke(cli, [
        "build", str(SAMPLE), "--target", CUDA, "-o", str(tmp_path / "out"),
        "--print-after", "host-codegen", "--stop-after", "host-codegen", "--time-passes"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("# after stage host-codegen\n")
    assert "define" in r.stdout and "stage timings" not in r.stdout
    assert "stage timings:" in r.stderr and "host-codegen" in r.stderr
    assert "  write" not in r.stderr  # the stages after the stop do not run
    assert not (tmp_path / "out").exists()


def test_cli_several_inputs_print_in_input_order(tmp_path):
    other = ROOT / "samples" / "two_kernels.tir"
    r = CliRunner().invoke(cli, [
        "build", str(SAMPLE), str(other), "--target", CUDA, "-o", str(tmp_path),
        "--print-after", "parse", "--stop-after", "parse", "-j", "2"])
    assert r.exit_code == 0, r.stderr
    first, second = r.stdout.split("# after stage parse\n")[1:]
    assert "def vector_add" in first and "def vector_add" not in second
    assert list(tmp_path.iterdir()) == []


def test_cli_unknown_stage_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(cli, [
        "build", str(SAMPLE), "-o", str(tmp_path), "--stop-after", "linking"])
    assert r.exit_code == 2
    assert "unknown stage or pass 'linking'; stages: parse, passes, split" in r.stderr


def test_manifest_shown_is_the_json(tmp_path):
    texts, _ = shown(tmp_path, print_after=("manifest",), stop_after="manifest")
    body = texts[0].split("# va.json\n", 1)[1]
    assert json.loads(body)["module"] == "va"
