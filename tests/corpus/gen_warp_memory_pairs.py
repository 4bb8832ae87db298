"""Print TVM 0.27's LowerWarpMemory result for every ``warp_memory/<case>.before.tir``.

TVM's own unit tests of LowerWarpMemory were written against the TE schedule API and
are gone from its repository, so these inputs are written here (in the form the pass
sees them in TVM: flat buffers, a kernel's ``T.launch_thread`` scopes, the warp buffer
allocated outside its ``threadIdx.x`` launch). For each, this script writes what
``tvm.tirx.transform.LowerWarpMemory()`` (pip ``apache-tvm==0.27.0.post1``) makes of it
as ``<case>.after.tir`` (``mod.script()``), or, where TVM rejects the input,
``<case>.error.txt`` with the first line of TVM's message.

    /work/main/.venv/bin/python tests/corpus/gen_warp_memory_pairs.py
"""
import sys
from pathlib import Path

import tvm
from tvm.script import from_source

HERE = Path(__file__).parent / "warp_memory"


def main() -> None:
    for before in sorted(HERE.glob("*.before.tir")):
        case = before.name[: -len(".before.tir")]
        for old in HERE.glob(case + ".after.tir"):
            old.unlink()
        for old in HERE.glob(case + ".error.txt"):
            old.unlink()
        mod = from_source(before.read_text())
        try:
            out = tvm.tirx.transform.LowerWarpMemory()(mod)
        except Exception as err:  # noqa: BLE001 - TVM raises InternalError and others
            msg = str(err).strip().splitlines()[-1]
            (HERE / f"{case}.error.txt").write_text(msg + "\n")
            print(f"{case}: error: {msg}", file=sys.stderr)
            continue
        (HERE / f"{case}.after.tir").write_text(out.script())
        print(f"{case}: ok", file=sys.stderr)


if __name__ == "__main__":
    main()
