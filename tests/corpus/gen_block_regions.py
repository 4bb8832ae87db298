#!/usr/bin/env python
"""TVM 0.27's print of block_regions/written.tir (blocks without T.reads/T.writes, or with
one of them: TVM's parser infers the rest, GetSBlockReadWriteRegion) into
block_regions/tvm.tir, for tests/passes/prepare/test_infer_block_regions.py.

    .venv/bin/python tests/corpus/gen_block_regions.py           # (re)write tvm.tir
    .venv/bin/python tests/corpus/gen_block_regions.py --check   # compare, write nothing

tvm.tir is exactly ``mod.script()``. Not a test module (it needs TVM).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import tvm

DIR = Path(__file__).resolve().parent / "block_regions"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with tvm.tir, write nothing")
    args = ap.parse_args(argv)
    printed = tvm.script.from_source((DIR / "written.tir").read_text()).script()
    out = DIR / "tvm.tir"
    if args.check:
        same = out.exists() and out.read_text() == printed
        print("check: identical" if same else "check: FAILED (tvm.tir differs)")
        return 0 if same else 1
    out.write_text(printed)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
