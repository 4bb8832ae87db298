"""Capture the lowered modules TVM 0.27 builds in its tests of scalable vectors
(AArch64 SVE, RISC-V V): ``T.vscale()``, ``float32xvscalex4``, scalable ``T.Ramp`` /
``T.Broadcast``, lane masks and predicated access.

The same capture as ``gen_tvm_test_corpus.py`` (TVM 0.27.0.post1, the modules that reach
``tvm.tirx.transform.SplitHostDevice``, printed with ``mod.script()``, deduplicated,
re-parsed by TVM), over the test files in ``SVE_TEST_FILES`` at the same apache/tvm
commit, with pytest's skip marks off (``-p no:skipping``): TVM skips its predicated SVE
tests unconditionally ("not supported in earlier versions of LLVM"), and its LLVM 17+
builds them.

    /tmp/tvmenv/bin/python tests/corpus/gen_sve_corpus.py [--tvm-git-dir DIR] [-j N]

writes ``tests/corpus/sve_tests/`` (README.md there is kept).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tvm_test_corpus as gen  # noqa: E402

SVE_TEST_FILES = [
    "tests/python/codegen/test_target_codegen_llvm_vla.py",
    "tests/python/codegen/test_target_codegen_aarch64.py",
]

if __name__ == "__main__":
    gen.TEST_FILES[:] = SVE_TEST_FILES
    os.environ["PYTEST_ADDOPTS"] = "-p no:skipping"  # read by the workers' pytest.main
    if "--worker" not in sys.argv and "--out" not in sys.argv:
        sys.argv += ["--out", os.path.join(os.path.dirname(os.path.abspath(__file__)), "sve_tests")]
    gen.main()
