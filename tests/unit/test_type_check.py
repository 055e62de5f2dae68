"""A type checker follows every import of cli/, cluster/ and planner/.

The editable install maps kafkactl.cli to cli/ (and so on) with an import
hook that static tools cannot follow; links/kafkactl/ gives them the same
names (pyproject.toml's [tool.mypy] and [tool.pyright]). This runs mypy over
the three packages and fails on any name it cannot resolve: a module not
found, a module without the attribute imported from it, an undefined name.
Type errors proper are not judged here.
"""

import re
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]
UNRESOLVED = re.compile(r"\[(import-not-found|import|name-defined)\]$|Module \".*\" has no attribute")


def test_mypy_resolves_every_import_and_name(monkeypatch):
    monkeypatch.chdir(ROOT)
    report, errors, _ = api.run(["--no-incremental", "--no-error-summary"])
    assert not errors, errors
    unresolved = [line for line in report.splitlines() if UNRESOLVED.search(line)]
    assert not unresolved, "\n".join(unresolved)


def test_the_link_tree_maps_each_source_folder():
    for folder in ("cli", "cluster", "planner"):
        link = ROOT / "links" / "kafkactl" / folder
        assert link.is_symlink() and link.resolve() == ROOT / folder


def test_one_import_style_absolute_kafkactl_names():
    relative = [f"{path.relative_to(ROOT)}:{number}"
                for folder in ("cli", "cluster", "planner") for path in sorted((ROOT / folder).rglob("*.py"))
                for number, line in enumerate(path.read_text().splitlines(), 1)
                if re.match(r"\s*from \.+[\w.]* *import ", line)]
    assert not relative, "relative imports (write `from kafkactl.… import …`): " + ", ".join(relative)
