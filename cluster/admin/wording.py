"""How messages count things: "1 partition", "3 partitions", never "1 partitions"."""

from __future__ import annotations

IRREGULAR = {"entry": "entries", "replica": "replicas"}


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and the noun, singular for exactly one."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {plural or IRREGULAR.get(noun) or noun + 's'}"
