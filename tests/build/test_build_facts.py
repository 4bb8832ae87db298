"""The build's facts: the passes that decide what the outputs report
record it once, in ``IRModule.facts``; NAME.json and NAME.h are functions of that record.

- LowerDeviceKernelLaunch records each kernel: symbol, target, parameters, launch
  parameters and sizes, host launch sites;
- BF16/FP8StorageLegalize update a kernel's parameters when they change their storage;
- MakePackedAPI / MakeCAPI record each exported function's signature.
"""
from __future__ import annotations

import ast
import textwrap

from conftest import ROOT
from tirc.ir.facts import BuildFacts, LaunchSizes, Param
from tirc.frontend.parse import parse
from tirc.passes.pipeline import PassContext, run_pipeline
from tirc.target.kinds import parse_target

VECTOR_ADD = (ROOT / "samples" / "vector_add.tir").read_text()


def _lower(text: str, target: str, stop_after: str | None = None, abi: str = "packed"):
    t = parse_target(target, host="llvm") if target.startswith("cuda") else parse_target(target)
    return run_pipeline(parse(text), PassContext(t, abi), stop_after)


def test_the_module_as_written_has_no_facts():
    assert parse(VECTOR_ADD).facts == BuildFacts()


def test_lower_device_kernel_launch_records_each_kernel_and_its_launches():
    before = _lower(VECTOR_ADD, "cuda -arch=sm_90", "SplitHostDevice")
    assert before.facts.kernels == ()
    mod = _lower(VECTOR_ADD, "cuda -arch=sm_90", "LowerDeviceKernelLaunch")
    (k,) = mod.facts.kernels
    assert (k.name, k.symbol, k.target_summary) == ("vector_add_kernel", "vector_add_kernel",
                                                     "cuda -arch=sm_90")
    assert k.launch_params == ("blockIdx.x", "threadIdx.x")
    assert k.sizes == LaunchSizes(("(n + 255) // 256", 1, 1), (256, 1, 1), 0)
    assert [(site.caller, site.sizes) for site in k.launches] == [("vector_add", k.sizes)]
    assert Param("A_ptr", "scalar", "handle", (), "float32") in k.params
    assert k.params[-1] == Param("n", "scalar", "int32")
    assert k.span is not None and k.span.line == 9  # the thread binding it came from
    assert mod.facts.functions == ()  # MakePackedAPI has not run


def test_the_abi_passes_record_the_exported_signatures():
    mod = _lower(VECTOR_ADD, "cuda -arch=sm_90")
    (f,) = mod.facts.functions
    assert (f.name, f.symbol, f.abi) == ("vector_add", "__tvm_ffi_vector_add", "packed")
    assert f.signature.startswith('vector_add(A: T.Buffer((n,), "float32"), B: ')
    assert f.params[0] == Param("A", "buffer", "float32", ("n",), written=False)
    assert [p.written for p in f.params] == [False, False, True]
    assert f.returns is None and f.declaration is None
    c = _lower(VECTOR_ADD, "cuda -arch=sm_90", abi="c")
    (f,) = c.facts.functions
    assert f.declaration == "int32_t vector_add(float* A, float* B, float* C, int64_t n)"
    assert [(p.name, p.doc) for p in f.c_params][-1] == (
        "n", "size variable of the buffer shapes (non-negative)")
    assert len(c.facts.kernels) == 1  # the kernel record travelled through MakeCAPI


def test_storage_legalization_updates_the_kernel_parameters_it_changes():
    text = textwrap.dedent('''\
        # from tvm.script import tirx as T
        @T.prim_func
        def scale(A: T.Buffer((256,), "bfloat16")):
            for tx in T.thread_binding(256, thread="threadIdx.x"):
                A[tx] = A[tx] * T.bfloat16(2)
    ''')
    decided = _lower(text, "cuda -arch=sm_90", "LowerDeviceKernelLaunch")
    assert [p.points_to for p in decided.facts.kernels[0].params] == ["bfloat16"]
    legal = _lower(text, "cuda -arch=sm_90")  # bfloat16 is stored as uint16 (no native type)
    assert [p.points_to for p in legal.facts.kernels[0].params] == ["uint16"]
    assert legal.facts.kernels[0].sizes == decided.facts.kernels[0].sizes


def _runtime_imports(path) -> list[str]:
    """The modules a file imports when it runs (not those under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for top in ast.walk(tree) if isinstance(top, ast.If)
                   and isinstance(top.test, ast.Name) and top.test.id == "TYPE_CHECKING"
                   for n in ast.walk(top)}
    nodes = [n for n in ast.walk(tree) if id(n) not in typing_only]
    modules = [n.module for n in nodes if isinstance(n, ast.ImportFrom)]
    return modules + [a.name for n in nodes if isinstance(n, ast.Import) for a in n.names]


def test_the_outputs_read_the_record_and_no_ir():
    """manifest.py, header.py, run.py and the runtime's loader import nothing from the
    passes or the IR's nodes and traversal; the build hands them the record."""
    for name in ("build/manifest.py", "build/header.py", "run.py", "runtime/loader.py"):
        modules = _runtime_imports(ROOT / "tirc" / name)
        assert not [m for m in modules if m.startswith("tirc.passes")], name
        assert not set(modules) & {"tirc.ir.function", "tirc.ir.stmt", "tirc.ir.visitor",
                                   "tirc.ir.expr", "tirc.ir.describe"}, (name, modules)
