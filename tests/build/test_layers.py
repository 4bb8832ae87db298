"""The layers of tirc (pyproject.toml, ``[tool.importlinter]``): kept by the package, and
broken by a planted import from a lower layer into a higher one. Private names
(``_name``) are used only in the module that defines them."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytest.importorskip("importlinter")


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--config", str(tree / "pyproject.toml"),
                           "--no-cache"],
                          cwd=tree, env=env, capture_output=True, text=True)


def test_layer_contracts_are_kept():
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@pytest.mark.parametrize("module, planted, broken", [
    ("tirc/ir/dtype.py", "import tirc.build.stages", "tirc's layers"),
    ("tirc/passes/prepare/verify.py", "import tirc.passes.lower.simplify", "phases"),
    ("tirc/backends/llvm/types.py", "import tirc.backends.cuda.nvptx", "code generator"),
])
def test_a_planted_upward_import_breaks_a_contract(tmp_path, module, planted, broken):
    shutil.copytree(ROOT / "tirc", tmp_path / "tirc", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{planted}\n")
    r = lint_imports(tmp_path)
    assert r.returncode != 0
    assert "0 broken" not in r.stdout and broken in r.stdout.split("Broken contracts")[1], r.stdout


def test_private_names_stay_in_their_module():
    crossing = []
    for path in sorted((ROOT / "tirc").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tirc"):
                crossing += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{a.name}"
                             for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not crossing
