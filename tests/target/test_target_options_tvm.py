"""Every option TVM 0.27's target kinds define is accepted, and the
ones that change code are used: the option names below are TVM's registry
(``tvm.target.TargetKind.options_from_name(kind)`` in TVM 0.27, ``host`` and ``kind``
being the target's own structure), a ``feature.<name>`` key is accepted on every kind,
and an unknown option is still an error."""
from __future__ import annotations

import pytest

from tirc.build.stages import build
from tirc.target.kinds import KINDS, TargetError, fast_math_flags, parse_target

TVM_OPTIONS = {
    "cuda": ["arch", "device", "from_device", "keys", "l2_cache_size_bytes", "libs",
             "max_num_threads", "max_shared_memory_per_block", "max_threads_per_block", "mcpu",
             "model", "registers_per_block", "tag", "target_device_type", "thread_warp_size"],
    "nvptx": ["device", "from_device", "keys", "libs", "max_num_threads", "mcpu", "model",
              "mtriple", "tag", "target_device_type", "thread_warp_size"],
    "llvm": ["cl-opt", "device", "fast-math", "fast-math-arcp", "fast-math-contract",
             "fast-math-ninf", "fast-math-nnan", "fast-math-nsz", "fast-math-reassoc",
             "from_device", "jit", "keys", "libs", "mabi", "mattr", "mcpu", "mfloat-abi",
             "model", "mtriple", "num-cores", "opt-level", "tag", "target_device_type",
             "vector-width"],
}


@pytest.mark.parametrize("kind", sorted(TVM_OPTIONS))
def test_every_tvm_option_is_an_option(kind):
    assert set(TVM_OPTIONS[kind]) <= set(KINDS[kind].options)


def test_tvm_targets_with_the_new_options_read():
    t = parse_target({"kind": "cuda", "arch": "sm_90", "l2_cache_size_bytes": 52428800,
                      "from_device": 0, "target_device_type": 2, "feature.has_fp16": True})
    assert t.get("l2_cache_size_bytes") == 52428800 and t.get("feature.has_fp16") is True
    t = parse_target("llvm -jit=orcjit -vector-width=256 -cl-opt=-unroll-threshold:int=100")
    assert t.get("vector-width") == 256 and t.get("cl-opt") == ("-unroll-threshold:int=100",)
    # unset informational options are not written: a plain target's JSON is as before
    assert "l2_cache_size_bytes" not in parse_target("cuda -arch=sm_90").canonical
    with pytest.raises(TargetError, match="unknown option 'l2_cache' for target kind 'cuda'"):
        parse_target("cuda -l2_cache=1")
    with pytest.raises(TargetError, match="takes an integer"):
        parse_target("cuda -l2_cache_size_bytes=big")


def test_fast_math_flags_reach_the_float_arithmetic(tmp_path):
    text = ('# from tvm.script import tirx as T\n@T.prim_func\n'
            'def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):\n'
            '    B[0] = A[0] * A[1] + A[2] / A[3]\n')
    assert fast_math_flags(parse_target("llvm")) == ()
    assert fast_math_flags(parse_target("llvm -fast-math=true")) == ("fast",)
    flags = fast_math_flags(parse_target("llvm -fast-math-nnan=true -fast-math-arcp=true"))
    assert flags == ("arcp", "nnan")

    def ops(target: str) -> list[str]:
        build(text, target, None, tmp_path / target.replace(" ", "_"), "m", emit=("llvm",))
        ll = next((tmp_path / target.replace(" ", "_")).glob("*.ll")).read_text()
        return [line.split("=", 1)[1].split()[0:3] for line in ll.splitlines()
                if any(f" {op} " in line for op in ("fmul", "fdiv", "fadd"))]

    assert all(op[1] == "float" for op in ops("llvm"))  # no flags
    flagged = ops("llvm -fast-math-nnan=true -fast-math-arcp=true")
    assert flagged and all(set(op[1:3]) == {"arcp", "nnan"} for op in flagged)
    assert any(op[0] == "fdiv" for op in flagged)  # the division carries them too
    assert all(op[1] == "fast" for op in ops("llvm -fast-math=true"))
