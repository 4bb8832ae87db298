"""Write ``<name>.tvm_after.tir``, TVM 0.27's LowerAutoCopy of each ``<name>.tir`` here, for
tests/passes/blocks/test_lower_auto_copy.py to compare tirc's result with.

TVM receives the module as tirc reads it (its block regions inferred, printed by tirc);
its result is ``mod.script()``. Run with TVM 0.27 (pip ``apache-tvm==0.27.0.post1``) and
tirc importable:

    PYTHONPATH=. python tests/passes/blocks/auto_copy/gen_tvm_after.py
"""
from __future__ import annotations

from pathlib import Path

import tvm

from tirc.frontend.parse import parse
from tirc.ir.printer import print_module
from tirc.passes.prepare.infer_block_regions import infer_block_regions
from tirc.passes.prepare.verify import verify

HERE = Path(__file__).parent


def main() -> None:
    for path in sorted(HERE.glob("*.tir")):
        if path.name.endswith(".tvm_after.tir"):
            continue
        mod = infer_block_regions(verify(parse(path.read_text(), str(path))))
        received = tvm.script.from_source(print_module(mod))
        if isinstance(received, tvm.tirx.PrimFunc):
            received = tvm.IRModule({"main": received})
        out = tvm.s_tir.transform.LowerAutoCopy()(received)
        (HERE / f"{path.stem}.tvm_after.tir").write_text(out.script())
        print("wrote", path.stem)


if __name__ == "__main__":
    main()
