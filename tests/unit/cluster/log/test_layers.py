"""The package's map (cluster/log/__init__.py) holds: every module is in it, and
each imports only from its own layer or the layers listed above it."""

import ast
import re
from pathlib import Path

import kafkactl.cluster.log as package

FOLDER = Path(package.__file__).parent
PREFIX = "kafkactl.cluster.log."


def layers() -> list[list[str]]:
    """The module names of each layer, top first, as the package docstring lists them."""
    result: list[list[str]] = []
    for line in package.__doc__.splitlines():
        if line and not line.startswith(" "):
            result.append([])
        elif result and (match := re.match(r"    (\w+)\s", line)):
            result[-1].append(match.group(1))
    return [layer for layer in result if layer]


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            names.add(node.module[len(PREFIX):].split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(a.name[len(PREFIX):].split(".")[0] for a in node.names if a.name.startswith(PREFIX))
    return names


def test_every_module_is_on_the_map():
    listed = [name for layer in layers() for name in layer]
    assert len(listed) == len(set(listed))
    assert set(listed) == {p.stem for p in FOLDER.glob("*.py")} - {"__init__"}


def test_imports_go_only_to_the_same_layer_or_above():
    allowed: set[str] = set()
    for layer in layers():
        allowed |= set(layer)
        for name in layer:
            outside = imported_modules(FOLDER / f"{name}.py") - allowed
            assert not outside, f"{name} imports {sorted(outside)} from a layer below its own"
