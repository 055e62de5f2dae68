"""Rendering command results as a table, JSON or YAML on stdout.

Commands build plain data (dicts, lists, str/int/float/bool/None) and a
function that renders it as a human table; `emit` picks by --output. YAML
comes from the small emitter below rather than PyYAML, which is not a
dependency: it covers exactly the plain data commands produce, and quotes
every string that a YAML 1.1 or 1.2 reader could take for something else.
"""

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./@+-]*$")
# Words YAML 1.1 readers turn into booleans or null.
_RESERVED = frozenset("y n yes no on off true false null ~".split())
_NUMBERISH = re.compile(r"^[-+]?(\.?[0-9]|\.inf|\.nan|0x|0o)", re.IGNORECASE)


def emit(data: Any, output: str, table: Callable[[], str] | None = None) -> None:
    """Write data to stdout in the chosen format; table() renders the table form."""
    if output == "json":
        text = json.dumps(data, indent=2) + "\n"
    elif output == "yaml":
        text = to_yaml(data)
    else:
        text = table() if table is not None else to_yaml(data)
        text = text if text.endswith("\n") else text + "\n"
    sys.stdout.write(text)


def render_table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    from tabulate import tabulate  # heavy-ish: imported only when a table is printed

    if not rows:
        return "(none)"
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def to_yaml(data: Any) -> str:
    """YAML block style for dict/list/scalar trees (keys in insertion order)."""
    return "\n".join(_lines(data, 0)) + "\n"


def _lines(data: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(data, Mapping) and data:
        return _mapping_lines(data, indent)
    if isinstance(data, (list, tuple)) and data:
        return _sequence_lines(data, indent)
    return [pad + _scalar(data)]


def _mapping_lines(data: Mapping, indent: int) -> list[str]:
    pad = " " * indent
    lines = []
    for key, value in data.items():
        head = f"{pad}{_scalar(key)}:"
        if _is_block(value):
            # A list under a key may sit at the key's indentation (YAML allows it),
            # but indenting it reads better.
            lines.append(head)
            lines.extend(_lines(value, indent + 2))
        else:
            lines.append(f"{head} {_scalar(value)}")
    return lines


def _sequence_lines(data: Sequence, indent: int) -> list[str]:
    pad = " " * indent
    lines = []
    for item in data:
        if _is_block(item):
            # "- " then the item's first line; its other lines align under it.
            inner = _lines(item, indent + 2)
            lines.append(f"{pad}- {inner[0].lstrip()}")
            lines.extend(inner[1:])
        else:
            lines.append(f"{pad}- {_scalar(item)}")
    return lines


def _is_block(value: Any) -> bool:
    return isinstance(value, (Mapping, list, tuple)) and bool(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    return _string(str(value))


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return repr(value)


def _string(text: str) -> str:
    if _PLAIN.match(text) and text.lower() not in _RESERVED and not _NUMBERISH.match(text):
        return text
    # A JSON string literal is also a valid YAML double-quoted scalar.
    return json.dumps(text, ensure_ascii=False)
