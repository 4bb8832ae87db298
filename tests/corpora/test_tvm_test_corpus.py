"""Build, with tirc, the lowered modules TVM 0.27 itself builds in its own unit tests.

``tests/corpus/tvm_tests/`` holds every module that reached TVM's host/device split
(the input of ``tvm.tirx.transform.SplitHostDevice``) while TVM's test files ran,
printed by TVM 0.27 (``tests/corpus/gen_tvm_test_corpus.py``; README.md there). Each
is built here with the target TVM built it for (``index.json``). Modules tirc refuses
are listed in ``REFUSED`` with the text of the error, grouped by reason: they must
still give a located diagnostic with that text, and every other module must build.
Neither TVM nor a GPU is needed.
"""

import json
from collections import Counter
from pathlib import Path

import pytest

from tirc.build.stages import build
from tirc.diagnostics import Diagnostic
from conftest import TESTS

CORPUS = TESTS / "corpus" / "tvm_tests"
INDEX = json.loads((CORPUS / "index.json").read_text())

# reason -> {file: text the diagnostic must contain}
REFUSED = {
    "two functions export one symbol (the TVM test checks that TVM rejects it too)": {
        "test_target_codegen_llvm__1.tir":
            "functions 'first_unique_key' and 'second_unique_key' both export the symbol 'dup_symbol'",
    },
    "the TVM test stores 4 lanes into a local buffer of 2 elements (MultiB), past its end": {
        "test_tir_ptx_mma__8.tir": "store to buffer 'MultiB' (2,) at index 0..3: outside the buffer",
    },
}

EXPECTED_ERROR = {f: text for files in REFUSED.values() for f, text in files.items()}


def _build(name, out_dir):
    entry = INDEX[name]
    path = CORPUS / name
    return build(path.read_text(), target=entry["target"], host=entry["host"], out_dir=out_dir,
                 name="m", filename=str(path), device_format="ptx")


def test_index_matches_files():
    on_disk = {p.name for p in CORPUS.glob("*.tir")}
    assert on_disk == set(INDEX)
    for name, entry in INDEX.items():
        first = (CORPUS / name).read_text().split("\n", 1)[0]
        assert first.startswith("# source: %s  target: %s" % (entry["source"], entry["target"])), name
    assert set(EXPECTED_ERROR) <= set(INDEX), sorted(set(EXPECTED_ERROR) - set(INDEX))
    assert sum(len(f) for f in REFUSED.values()) == len(EXPECTED_ERROR)  # no file in two groups


@pytest.mark.parametrize("name", sorted(INDEX))
def test_build_tvm_test_module(name, tmp_path):
    if name in EXPECTED_ERROR:
        with pytest.raises(Diagnostic) as info:
            _build(name, tmp_path)
        err = info.value
        assert err.span is not None, str(err)
        assert err.span.file == str(CORPUS / name) and err.span.line > 1, str(err)
        assert EXPECTED_ERROR[name] in err.message, str(err)
        assert not list(tmp_path.iterdir())  # nothing written
    else:
        result = _build(name, tmp_path)
        assert (tmp_path / ("m.c" if INDEX[name]["target"] == "c" else "m.o")).is_file()
        if INDEX[name]["target"].startswith("cuda"):
            assert result.images and all(Path(p).is_file() for p in result.images.values())


def test_counts(capsys):
    """Modules by source test file, and how many of them build."""
    total = Counter(e["source"].split("::")[0] for e in INDEX.values())
    refused = Counter(INDEX[n]["source"].split("::")[0] for n in EXPECTED_ERROR)
    lines = ["", "%-82s %7s %6s" % ("TVM test file", "modules", "build")]
    for f in sorted(total):
        lines.append("%-82s %7d %6d" % (f, total[f], total[f] - refused[f]))
    lines.append("%-82s %7d %6d" % ("total (%d test files)" % len(total), len(INDEX), len(INDEX) - len(EXPECTED_ERROR)))
    lines.append("refused, by reason:")
    for why, files in REFUSED.items():
        lines.append("  %3d  %s" % (len(files), why))
    with capsys.disabled():
        print("\n".join(lines))
    assert len(INDEX) - len(EXPECTED_ERROR) > 0
