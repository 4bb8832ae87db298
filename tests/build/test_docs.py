"""The documentation keeps up with the code: docs/ARCHITECTURE.md names every module under
tirc/ by its path, and the README stays a front door (at most 250 lines)."""
from __future__ import annotations

from conftest import ROOT

README_MAX_LINES = 250


def test_architecture_names_every_module():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    modules = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tirc").rglob("*.py")
                     if p.name != "__init__.py")
    assert modules
    missing = [m for m in modules if m not in text]
    assert not missing, f"docs/ARCHITECTURE.md does not name: {', '.join(missing)}"


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; at most {README_MAX_LINES}: move the detail "
        "into docs/")


def test_readme_links_resolve():
    import re
    text = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link
