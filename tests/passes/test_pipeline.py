"""The pass manager and `tirc lower`: order, instruments, early stops, usage errors."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from conftest import SAMPLES, TESTS
from tirc.driver import cli
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PIPELINE, PassContext, TimePasses, run_pipeline
from tirc.target.kinds import parse_target


def test_every_pass_runs_after_the_passes_it_requires():
    names = [p.name for p in PIPELINE]
    assert len(set(names)) == len(names)
    for i, p in enumerate(PIPELINE):
        for req in p.requires:
            assert req in names[:i], f"{p.name} requires {req}, which does not run before it"


def test_stop_after_and_timing_instrument():
    mod = parse(SAMPLES[0].read_text())
    timer = TimePasses()
    out = run_pipeline(mod, PassContext(parse_target("llvm")), "Verify", (timer,))
    assert out is mod
    assert [name for name, _ in timer.times] == ["Verify"]


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_lower_stop_after_bind_target_prints_text_tvm_and_tirc_read(path):
    result = CliRunner().invoke(cli, ["lower", str(path), "--target", "cuda -arch=sm_90",
                                      "--host", "llvm", "--stop-after", "BindTarget"])
    assert result.exit_code == 0, result.output
    mod = parse(result.output)
    assert all("target" in f.attrs for f in mod.functions.values())
    try:
        import tvm
    except ImportError:
        return
    tvm.script.from_source(result.output)


def test_lower_usage_errors_list_the_valid_choices(tmp_path):
    path = str(SAMPLES[0])
    runner = CliRunner()
    bad_pass = runner.invoke(cli, ["lower", path, "--stop-after", "Nope"])
    assert bad_pass.exit_code == 2 and "valid passes: Verify, InferBlockRegions, BindTarget" in bad_pass.output
    bad_target = runner.invoke(cli, ["lower", path, "--target", "cuda -arch=sm_1"])
    assert bad_target.exit_code == 2 and "valid values: sm_50" in bad_target.output
    bad_host = runner.invoke(cli, ["lower", path, "--target", "cuda", "--host", "cuda"])
    assert bad_host.exit_code == 2 and "host must be a CPU target" in bad_host.output


def test_print_after_and_verify_each():
    path = next(p for p in SAMPLES if p.name == "device_call_add.tir")
    result = CliRunner().invoke(cli, ["lower", str(path), "--target", "cuda", "--print-after", "Verify",
                                      "--verify-each", "--time-passes"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# after Verify\n")
    assert "pass timings:" in result.output


def test_print_after_all_shows_every_stage():
    from tirc.passes.pipeline import pass_names
    path = next(p for p in SAMPLES if p.name == "vector_add.tir")
    result = CliRunner().invoke(cli, ["lower", str(path), "--target", "cuda", "--print-after", "all"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    shown = [line[len("# after "):] for line in lines if line.startswith("# after ")]
    skipped = [line.split()[2].rstrip(":") for line in lines if line.startswith("# skipped ")]
    # block passes do not run on a module without block-level functions, nor passes on
    # a module without what they lower (the vector add has none of it), nor opt-in
    # passes not asked for, and say so
    assert shown == [p.name for p in PIPELINE if not (p.blocks_only or p.needs or p.option)]
    assert skipped == [p.name for p in PIPELINE if p.blocks_only or p.needs or p.option]
    assert "# skipped InstrumentBoundCheckers: opt-in, not asked for " \
           "(instrument_bound_checkers)" in lines
    assert sorted(shown + skipped) == sorted(pass_names())


def test_block_passes_run_on_block_level_modules_only():
    """A module without blocks skips the block passes (not even imported), one with
    blocks runs every block pass (and every pass that needs no feature)."""
    from pathlib import Path
    timer = TimePasses()
    run_pipeline(parse(SAMPLES[0].read_text()), PassContext(parse_target("llvm")), None, (timer,))
    ran = [name for name, _ in timer.times]
    assert "LowerInitBlock" not in ran and "FlattenBuffer" in ran
    block_level = TESTS / "tir" / "sblock_matmul_relu.tir"
    timer = TimePasses()
    run_pipeline(parse(block_level.read_text()), PassContext(parse_target("llvm")), None, (timer,))
    ran = [name for name, _ in timer.times]
    always = [p.name for p in PIPELINE if (p.blocks_only or not p.needs) and not p.option]
    assert [n for n in ran if n in set(always)] == always
    assert not {p.name for p in PIPELINE if p.option} & set(ran)  # opt-in, not asked for


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_whole_pipeline_runs_on_every_sample_with_verify_each(path):
    result = CliRunner().invoke(cli, ["lower", str(path), "--target", "cuda -arch=sm_90", "--verify-each"])
    assert result.exit_code == 0, result.output
    parse(result.output)


def test_targets_and_passes_commands():
    runner = CliRunner()
    t = runner.invoke(cli, ["targets"])
    assert t.exit_code == 0
    assert "cuda" in t.output and "-arch=<str>  default sm_80" in t.output
    assert "The default CUDA architecture is sm_80" in t.output
    p = runner.invoke(cli, ["passes"])
    assert p.exit_code == 0 and "BindTarget" in p.output


def test_seed_000_lowers_cleanly_where_tvm_fails_in_make_packed_api():
    """TVM 0.27 stops on samples/device_call_add.tir in MakePackedAPI ("variables (length,)
    are used, but are not passed in as API arguments"); tirc folds the host call of the
    helper and lowers the whole module."""
    from conftest import ROOT
    from tirc.passes.prepare.verify import verify
    mod = parse((ROOT / "samples" / "device_call_add.tir").read_text())
    out = run_pipeline(mod, PassContext(parse_target("cuda -arch=sm_90", host="llvm")))
    verify(out)
    main = out["main"]
    assert main.attrs["calling_conv"] == 1 and main.attrs["global_symbol"] == "__tvm_ffi_main"
    assert out["main_kernel"].attrs["tirx.kernel_launch_params"] == ("blockIdx.x", "threadIdx.x")


def test_lower_passes_runs_exactly_the_named_passes_on_the_text_as_written():
    """``--passes`` (as ``opt -passes=``): TVM's own LowerCrossThreadReduction test input,
    no Verify or BindTarget before it, gives TVM's expected module; the passes named run
    in order and nothing else (``--print-after all`` shows exactly those)."""
    from pathlib import Path
    from tirc.ir.equal import assert_structural_equal
    pairs = TESTS / "corpus" / "sblock_passes" / "LowerCrossThreadReduction"
    before, after = pairs / "loop_split.before.tir", pairs / "loop_split.after.tir"
    result = CliRunner().invoke(cli, ["lower", str(before), "--passes", "LowerCrossThreadReduction"])
    assert result.exit_code == 0, result.output
    assert_structural_equal(parse(result.output), parse(after.read_text()))
    two = CliRunner().invoke(cli, ["lower", str(before), "--passes",
                                   "LowerCrossThreadReduction,LowerInitBlock", "--print-after", "all"])
    assert two.exit_code == 0, two.output
    assert [ln for ln in two.output.splitlines() if ln.startswith("# after ")] == [
        "# after LowerCrossThreadReduction", "# after LowerInitBlock"]
    for args, message in ((["--passes", "Nope"], "unknown pass 'Nope'"),
                          (["--passes", ","], "name at least one pass"),
                          (["--passes", "Verify", "--stop-after", "Verify"], "does not take")):
        bad = CliRunner().invoke(cli, ["lower", str(before), *args])
        assert bad.exit_code == 2 and message in bad.output, bad.output


def test_verify_each_accepts_loop_pragmas():
    """LowerOpaqueBlock writes a loop's pragmas as T.attr(loop_var, "pragma_*", v) around
    the loop; the node names the loop, it is no use of an undefined variable, so
    --verify-each holds after every pass (it failed after LowerOpaqueBlock)."""
    from pathlib import Path
    path = TESTS / "corpus" / "sblock" / "dl_gpu_matmul.tir"
    result = CliRunner().invoke(cli, ["lower", str(path), "--target", "cuda -arch=sm_80",
                                      "--verify-each"])
    assert result.exit_code == 0, result.output


def test_passes_live_in_the_folders_of_their_phases_in_pipeline_order():
    """tirc/passes/ reads as the pipeline does: one folder per phase, the phases in
    pipeline order, each pass (but Verify and BindTarget, run by functions here) the
    module of its name's snake_case in its phase's folder; `tirc passes` shows them."""
    import re

    from conftest import ROOT
    from tirc.passes.pipeline import MAKE_C_API, PHASES, PIPELINE
    order = [name for name, _ in PHASES]
    seen = [p.phase for p in PIPELINE]
    assert seen == sorted(seen, key=order.index), "phases out of order"
    assert set(seen) == set(order)
    for p in [*PIPELINE, MAKE_C_API]:
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", p.name).lower()
        snake = {"make_capi": "make_c_api", "inject_ptxldg32": "inject_ptx_ldg32"}.get(snake, snake)
        path = ROOT / "tirc" / "passes" / p.phase / f"{snake}.py"
        assert path.is_file(), f"{p.name}: no {path.relative_to(ROOT)}"
    flat = [f.name for f in (ROOT / "tirc" / "passes").glob("*.py")]
    assert sorted(flat) == ["__init__.py", "pass_context.py", "pipeline.py"]
    out = CliRunner().invoke(cli, ["passes"]).output
    heads = [m.group(1) for m in re.finditer(r"^(\w+): ", out, re.M)]
    assert heads == order
