"""The explicit package list in pyproject.toml must name every source package.

The source folders map onto `kafkactl.*` (see docs/architecture.md), which
setuptools cannot discover by itself; a package missing from the list would
work in the editable install and vanish from a wheel.
"""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = set()
    for name, folder in setuptools["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *relative.parts]))
    assert found - listed == set(), "add these to [tool.setuptools].packages"
    assert listed - found == set(), "these listed packages do not exist"


def test_planner_goals_ship_in_the_wheel():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "kafkactl.planner.goals" in project["tool"]["setuptools"]["packages"]
