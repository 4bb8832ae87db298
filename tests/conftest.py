"""Shared test helpers: where the TIR files live, parse/print shortcuts, and the
before/expected check of the pass tests (:func:`check_pass`, :func:`pass_checker`)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"  # the corpora and other data of the tests live here

# Tests are grouped in folders as the code is; a test module may use another's helpers
# by its name (``from test_cuda_launch import fake_driver``) from any folder.
for _folder in sorted({p.parent for p in TESTS.rglob("test_*.py")} - {TESTS}):
    if "corpus" not in _folder.parts and str(_folder) not in sys.path:
        sys.path.append(str(_folder))

SAMPLES = sorted((ROOT / "samples").glob("*.tir"))
TVM_CORPUS = sorted((ROOT / "tests" / "corpus" / "tvm").glob("*.tir"))
TEST_MODULES = sorted((ROOT / "tests" / "tir").glob("*.tir"))
ALL_TIR = SAMPLES + TVM_CORPUS + TEST_MODULES


def parsed_modules(paths) -> list[tuple[str, object]]:
    """``(path relative to the repository, module)`` for each of ``paths`` that parses."""
    from tirc.diagnostics import Diagnostic
    from tirc.frontend.parse import parse
    out = []
    for path in paths:
        try:
            out.append((str(path.relative_to(ROOT)), parse(path.read_text(), str(path))))
        except Diagnostic:
            continue
    return out


def modules_before_and_after(paths, ctx):
    """For each of ``paths`` that parses and lowers under ``ctx``: ``(path, [the parsed
    module, the module after the whole pipeline])``."""
    from tirc.diagnostics import Diagnostic
    from tirc.frontend.parse import parse
    from tirc.passes.pipeline import run_pipeline
    for path in paths:
        try:
            mod = parse(path.read_text(), str(path))
            yield path, [mod, run_pipeline(mod, ctx)]
        except Diagnostic:
            continue


def lowered_texts(mods, ctx) -> dict[str, str]:
    """Each ``(name, module)`` of ``mods`` through the whole pipeline under ``ctx``: the
    printed result, or ``error: MESSAGE at SPAN``."""
    from tirc.diagnostics import Diagnostic
    from tirc.ir.printer import print_module
    from tirc.passes.pipeline import run_pipeline
    out = {}
    for name, mod in mods:
        try:
            out[name] = print_module(run_pipeline(mod, ctx))
        except Diagnostic as d:
            out[name] = f"error: {d.message} at {d.span}"
    return out


def ptxas_check(ptx: str, arch: str, tmp_path: Path) -> bool:
    """Assemble ``ptx`` for ``arch`` with ``ptxas`` when it is installed (optional: the
    project never needs it); False when it is not, an assertion with ptxas's message when
    it rejects the PTX."""
    import shutil
    import subprocess
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return False
    src = tmp_path / f"k_{arch}.ptx"
    src.write_text(ptx)
    proc = subprocess.run([ptxas, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr + "\n--- PTX ---\n" + ptx
    return True


def check_expected_outputs(corpus: Path, entry: dict, library: Path) -> None:
    """Call ``entry["func"]`` of the built ``library`` on the inputs TVM computed for a
    corpus entry (``corpus / entry["npz"]``) and compare its outputs with TVM's."""
    import numpy as np
    import tvm_ffi
    expected = np.load(corpus / entry["npz"])
    args = [expected[f"arg{i}"].copy() for i in range(len(entry["params"]))]
    tvm_ffi.load_module(str(library))[entry["func"]](*args)
    for i in entry["outputs"]:
        np.testing.assert_allclose(args[i].astype("float64"), expected[f"out{i}"].astype("float64"),
                                   rtol=max(entry["rtol"], 1e-5), atol=max(entry["atol"], 1e-5))


HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"


def check_pass(transform, before: str, expected: str, *, header: str = HEADER,
               verify_input: bool = True, verify_output: bool = True, reprint: bool = False,
               post=None, with_input: bool = False):
    """The before/expected check of the pass tests, written once: parse ``header + before``
    (verified unless ``verify_input=False``), apply ``transform`` (module -> module),
    verify the result (unless ``verify_output=False``) and assert it is structurally
    equal to ``header + expected``. ``reprint=True`` also asserts that the result prints
    and parses back to itself; ``post(after)`` runs any further checks of the caller
    (each test file's ``check`` is one of these, made by :func:`pass_checker`).
    Returns the result, or ``(input, result)`` with ``with_input=True``."""
    from tirc.ir.equal import assert_structural_equal
    from tirc.frontend.parse import parse
    from tirc.passes.prepare.verify import verify

    mod = parse(header + before, "before.tir")
    if verify_input:
        mod = verify(mod)
    after = transform(mod)
    if verify_output:
        verify(after)
    assert_structural_equal(after, parse(header + expected, "expected.tir"))
    if reprint:
        from tirc.ir.printer import print_module
        assert_structural_equal(parse(print_module(after), "printed.tir"), after)
    if post is not None:
        post(after)
    return (mod, after) if with_input else after


def pass_checker(transform, **settings):
    """A test file's ``check(before, expected, **options)``: :func:`check_pass` with
    ``transform(mod, **options)`` and this file's ``settings`` (see :func:`check_pass`)."""
    def check(before: str, expected: str, **options):
        return check_pass(lambda mod: transform(mod, **options), before, expected, **settings)
    return check


def ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` skip cleanly where no CUDA device is present."""
    gpu_items = [i for i in items if "gpu" in i.keywords]
    if not gpu_items:
        return
    try:
        from cuda.bindings import driver  # noqa: F401  (imported only when a GPU test exists)
        err, = driver.cuInit(0)[:1]
        err2, count = driver.cuDeviceGetCount()
        has_gpu = int(err) == 0 and int(err2) == 0 and count > 0
    except Exception:
        has_gpu = False
    if not has_gpu:
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU with the CUDA driver")
        for item in gpu_items:
            item.add_marker(skip)
