"""Kernel parameters in TVM's order: pointers, then scalars, each by
name. For every module with CUDA kernels among the samples and the corpora, the kernels
tirc's SplitHostDevice makes take the parameters TVM 0.27's make, in the same order
(tests/corpus/tvm/kernel_params.json, printed by TVM with
tests/corpus/gen_kernel_params.py), so a kernel launched by a TVM-built host gets the
right arguments.

Names are compared without what each compiler appends to them (TVM names a pointer
after its buffer's data variable, ``A_1_ptr`` where tirc's is ``A_ptr``, and does not
append ``_ptr`` to a name that has it). Two modules get other parameters from TVM, for
reasons that are not the order: there the parameters both have are in the same order.
"""
from __future__ import annotations

import json

import pytest

from conftest import ROOT
from tirc.ir.attrs import CALLING_CONV, CallingConv
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target

EXPECTED = json.loads((ROOT / "tests" / "corpus" / "tvm" / "kernel_params.json").read_text())


import re

# module -> why TVM's kernel takes other parameters than tirc's
OTHER_PARAMS = {
    # ``length: T.int32 = ...`` is a one-element host buffer in TVM, whose host address
    # its kernel receives; tirc binds the value and passes it
    "samples/device_call_add.tir": "TVM passes a host buffer's address",
    # W = T.decl_buffer(data=A.data): TVM passes A's pointer twice, tirc once
    "tests/corpus/tvm/decl_buffer_aliasing.tir": "TVM passes an aliased pointer twice",
}


def base(name: str) -> str:
    while name.endswith("_ptr"):
        name = name[:-4]
    return re.sub(r"_\d+$", "", name)


def kernel_params(path: str) -> dict[str, list[str]]:
    mod = parse((ROOT / path).read_text(), path)
    ctx = PassContext(parse_target("cuda -arch=sm_90", host="llvm"))
    mod = run_pipeline(mod, ctx, "SplitHostDevice")
    return {name: [p.name for p in f.params] for name, f in mod.functions.items()
            if f.attrs.get(CALLING_CONV) == int(CallingConv.DEVICE_KERNEL_LAUNCH)}


def test_the_reference_covers_the_corpora():
    assert len(EXPECTED) >= 40
    assert "tests/corpus/tvm/cuda_kernel_param_order.tir" in EXPECTED


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_kernel_parameters_are_tvms(path):
    ours = {k: [base(p) for p in ps] for k, ps in kernel_params(path).items()}
    theirs = {k: [base(p) for p in ps] for k, ps in EXPECTED[path].items()}
    assert sorted(ours) == sorted(theirs)
    if path not in OTHER_PARAMS:
        assert ours == theirs
        return
    for name, params in ours.items():
        common = [p for p in theirs[name] if p in params]
        assert sorted(set(common)) == sorted(set(params))
        assert list(dict.fromkeys(common)) == params


def test_the_order_is_not_first_use_nor_the_signature():
    """The written module: first uses are Z, A, A0, b, n, m, alpha, the signature Z, A0,
    A, b, n, m, alpha; TVM's order is by kind, then by name."""
    params = kernel_params("tests/corpus/tvm/cuda_kernel_param_order.tir")
    assert params == {"f_kernel": ["A_ptr", "A0_ptr", "Z_ptr", "b_ptr", "alpha", "m", "n"]}
