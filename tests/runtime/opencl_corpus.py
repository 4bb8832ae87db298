"""The CUDA modules of the corpora, retargeted to opencl: which modules, and how.

Every module of the corpora that has a CUDA (or nvptx) function — the samples, the
modules TVM 0.27 printed (tests/corpus/tvm, tests/corpus/tvm_tests), the block-level
te / schedule / dlight corpus (tests/corpus/sblock) and the cross-thread reductions
(tests/corpus/simt) — with each CUDA target replaced by
``opencl -max_num_threads=1024`` (TVM's OpenCL default allows 256 work-items a group; the
corpus was scheduled for CUDA's 1024) and its host kept. Used by test_opencl_corpus.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import ROOT, TESTS

CORPUS = TESTS / "corpus"
OPENCL = "opencl -max_num_threads=1024"
_TARGET = {"kind": "opencl", "max_num_threads": 1024}


def retarget_text(text: str, target: dict | None = None) -> str:
    """``text`` with every ``T.target({...})`` of kind cuda or nvptx made an opencl target
    (``target``, another kind's, when given; the same host); other targets unchanged."""
    out, i = [], 0
    while True:
        j = text.find("T.target(", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        k = j + len("T.target(")
        end = _closing_brace(text, k)
        body = text[k:end + 1]
        try:
            config = json.loads(body)
        except ValueError:
            config = None
        if isinstance(config, dict) and config.get("kind") in ("cuda", "nvptx"):
            new = dict(target or _TARGET)
            if "host" in config:
                new["host"] = config["host"]
            body = json.dumps(new)
        out.append(text[i:k] + body)
        i = end + 1


def _closing_brace(text: str, start: int) -> int:
    depth = 0
    for m in range(start, len(text)):
        if text[m] == "{":
            depth += 1
        elif text[m] == "}":
            depth -= 1
            if depth == 0:
                return m
    return len(text) - 1


def expected_cases() -> list[tuple[Path, dict]]:
    """The sblock and simt corpus entries with a CUDA target: (folder, index entry)."""
    cases = []
    for folder in ("sblock", "simt"):
        root = CORPUS / folder
        for entry in json.loads((root / "index.json").read_text()):
            if entry["target"] != "llvm":
                cases.append((root, entry))
    return cases


def text_cases() -> list[Path]:
    """The samples and TVM-printed modules with a CUDA function (the samples are built
    with --target cuda, so every sample with a thread binding counts)."""
    files = []
    for p in sorted((ROOT / "samples").glob("*.tir")):
        if "thread_binding" in p.read_text() or "launch_thread" in p.read_text():
            files.append(p)
    for folder in ("tvm", "tvm_tests"):
        for p in sorted((CORPUS / folder).glob("*.tir")):
            if re.search(r'"kind": "(cuda|nvptx)"', p.read_text()):
                files.append(p)
    return files
