"""TVM's own runtime-error tests, run on tirc's builds of the same modules: the modules
TVM 0.27 built in tests/python/codegen/test_codegen_assert.py and
test_codegen_error_handling.py (both for ``llvm`` and ``c``; printed in
tests/corpus/tvm_tests), called as those tests call them, must pass the good calls and
raise the exception type and message TVM's tests expect for the bad ones.

The cases are TVM's (apache/tvm at the corpus's commit), written here as data: the
corpus keeps one module per distinct text, so the tests that share a module
(``test_type_mismatch_non_tensor``, ``test_shape_mismatch_shared_variable``) run on the
module of ``test_wrong_argument_count_error``.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from tirc.build.stages import build
from conftest import TESTS

tvm_ffi = pytest.importorskip("tvm_ffi")

CORPUS = TESTS / "corpus" / "tvm_tests"
INDEX = json.loads((CORPUS / "index.json").read_text())
ASSERT_FILE = "tests/python/codegen/test_codegen_assert.py"
ERRORS_FILE = "tests/python/codegen/test_codegen_error_handling.py"

F32 = "float32"


def z(shape, dtype=F32):
    return np.zeros(shape, dtype)


_N0 = "`func(A: Tensor([n0], float32), B: Tensor([n0], float32))`"
_MIXED = "`func(a0: bool, a1: Tensor([10], float32))`"
# TVM test -> (the test whose module it runs on, good calls [(args, result)], bad calls
# [(args, exception, message)])
CASES = {
    "test_wrong_argument_count_error": ("test_wrong_argument_count_error", [((z(128), z(128)), None)], [
        ((), TypeError, f"Expected 2 arguments when calling:\n  {_N0}")]),
    "test_type_mismatch_non_tensor": ("test_wrong_argument_count_error", [], [
        ((z(128), 1), TypeError,
         f"Mismatched type on argument #1 when calling:\n  {_N0},\n  expected Tensor")]),
    "test_shape_mismatch_shared_variable": ("test_wrong_argument_count_error", [], [
        ((z(128), z(126)), ValueError, f"Mismatched B.shape[0] on argument #1 when calling:\n"
         f"  {_N0},\n  expected to match A.shape[0]")]),
    "test_invalid_shape_fixed": ("test_invalid_shape_fixed", [((z(128), z(128)), None)], [
        ((z(256), z(256)), ValueError, "Invalid a.shape[0] on argument #0 when calling:\n"
         "  `func(a: Tensor([128], float32), b: Tensor([128], float32))`,\n  expected 128")]),
    "test_ndim_mismatch_error": ("test_ndim_mismatch_error", [((z((4, 8)), z((4, 8))), None)], [
        ((z(4), z(4)), ValueError, "Mismatched a.ndim on argument #0 when calling:\n"
         "  `func(a: Tensor([4, 8], float32), b: Tensor([4, 8], float32))`,\n  expected 2")]),
    "test_dtype_mismatch_error": ("test_dtype_mismatch_error", [((z(8), z(8)), None)], [
        ((z(8, "int32"), z(8)), TypeError, "Mismatched a.dtype on argument #0 when calling:\n"
         "  `func(a: Tensor([8], float32), b: Tensor([8], float32))`,\n  expected float32")]),
    "test_strides_mismatch_transposed": ("test_strides_mismatch_transposed",
                                         [((z((128, 128)), z((128, 128))), None)], [
        ((np.asfortranarray(z((128, 128))), z((128, 128))), ValueError,
         "Mismatched a.strides on argument #0 when calling:\n"
         "  `func(a: Tensor([128, 128], float32), b: Tensor([128, 128], float32))`,\n"
         "  expected to be compact array")]),
    "test_type_mismatch_int_parameter": ("test_type_mismatch_int_parameter", [((5,), 10)], [
        ((z(8),), TypeError,
         "Mismatched type on argument #0 when calling:\n  `func(x: int32)`,\n  expected int")]),
    "test_type_mismatch_float_parameter": ("test_type_mismatch_float_parameter", [((1.0,), 1)], [
        ((z(8),), TypeError,
         "Mismatched type on argument #0 when calling:\n  `func(x: float32)`,\n  expected float")]),
    "test_type_mismatch_bool_parameter": ("test_type_mismatch_bool_parameter", [((True,), 1)], [
        ((z(8),), TypeError,
         "Mismatched type on argument #0 when calling:\n  `func(x: bool)`,\n  expected boolean")]),
    "test_forward_reference_symbolic_shape": ("test_forward_reference_symbolic_shape", [], [
        ((z(10, "int32"), z(4, "int32")), ValueError,
         "Invalid A.shape[0] on argument #0 when calling:\n"
         "  `func(A: Tensor([batch_size + T.int64(1)], int32), B: Tensor([batch_size], int32))`,"
         "\n  expected B.shape[0] + 1")]),
    "test_invalid_arguments_mixed_params": ("test_invalid_arguments_mixed_params",
                                            [((True, z(10)), 0)], [
        ((1, 1), TypeError,
         f"Mismatched type on argument #1 when calling:\n  {_MIXED},\n  expected Tensor"),
        ((1, z(10, "int32")), TypeError,
         f"Mismatched a1.dtype on argument #1 when calling:\n  {_MIXED},\n  expected float32"),
        ((False, z(11)), ValueError,
         f"Invalid a1.shape[0] on argument #1 when calling:\n  {_MIXED},\n  expected 10")]),
}


def _module(source_file: str, test: str, target: str) -> str:
    """The corpus file TVM printed for ``source_file::test[target]``."""
    key = f"{source_file}::{test}[{target}]"
    names = [n for n, e in INDEX.items() if e["source"] == key]
    assert len(names) == 1, key
    return names[0]


def _load(name: str, tmp_path: Path):
    entry = INDEX[name]
    build((CORPUS / name).read_text(), entry["target"], entry["host"], tmp_path, "m",
          shared=True, filename=name)
    return tvm_ffi.load_module(str(tmp_path / "m.so"))["func"]


needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


@needs_cc
@pytest.mark.parametrize("target", ["llvm", "c"])
@pytest.mark.parametrize("test", sorted(CASES))
def test_tvm_error_handling_case(test, target, tmp_path):
    module_test, good, bad = CASES[test]
    func = _load(_module(ERRORS_FILE, module_test, target), tmp_path)
    for args, result in good:
        assert func(*args) == result
    for args, exc, message in bad:
        with pytest.raises(exc, match=re.escape(message)):
            func(*args)


@needs_cc
@pytest.mark.parametrize("target", ["llvm", "c"])
def test_forward_reference_computes(target, tmp_path):
    """test_forward_reference_symbolic_shape's good call: B[i] = A[i] + A[i + 1]."""
    func = _load(_module(ERRORS_FILE, "test_forward_reference_symbolic_shape", target), tmp_path)
    a, b = np.array([1, 2, 3, 4, 5], "int32"), z(4, "int32")
    func(a, b)
    np.testing.assert_array_equal(b, [3, 5, 7, 9])


ASSERTS = sorted(e["source"].split("::")[1].split("[")[0] for e in INDEX.values()
                 if e["source"].startswith(ASSERT_FILE + "::") and e["target"] == "llvm")
_ASSERT = re.compile(r'assert 0 < x, \("(\w+)", \[(.*)\]\)')


@needs_cc
@pytest.mark.parametrize("target", ["llvm", "c"])
@pytest.mark.parametrize("test", ASSERTS)
def test_tvm_assert_case(test, target, tmp_path):
    """``func(x)`` asserts ``0 < x`` with a kind and message parts: x = 1 passes, x = 0
    raises that kind with the parts joined (TVM's test_codegen_assert cases)."""
    name = _module(ASSERT_FILE, test, target)
    kind, parts = _ASSERT.search((CORPUS / name).read_text()).groups()
    message = "".join(json.loads(f"[{parts}]"))
    func = _load(name, tmp_path)
    func(1)
    with pytest.raises({"RuntimeError": RuntimeError, "ValueError": ValueError,
                        "TypeError": TypeError}[kind], match=re.escape(message)):
        func(0)


def test_every_case_has_its_modules():
    assert len(ASSERTS) == 8
    for module_test, _, _ in CASES.values():
        for target in ("llvm", "c"):
            _module(ERRORS_FILE, module_test, target)
