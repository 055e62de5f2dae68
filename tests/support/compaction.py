"""Compacted topics in the integration tests and the benchmark: keyed lines for
kcat, what the log must hold after a clean, and reading it back with kcat."""

from __future__ import annotations

import subprocess
from pathlib import Path

KCAT_TIMEOUT_S = 120

# (offset, key, value); value None is a tombstone.
Record = tuple[int, str, str | None]


def keyed_rounds(keys: int, rounds: int, value_bytes: int = 40, tombstones: frozenset[int] = frozenset(),
                 prefix: str = "k") -> list[tuple[str, str | None]]:
    """`rounds` updates of every key, in order; in the last round the keys
    numbered in `tombstones` get a tombstone instead of a value (deleted)."""
    pad = "x" * value_bytes
    lines = []
    for r in range(rounds):
        for k in range(keys):
            tombstone = r == rounds - 1 and k in tombstones
            lines.append((f"{prefix}{k:05d}", None if tombstone else f"r{r:03d}-{k:05d}-{pad}"))
    return lines


def produce_with_kcat(bootstrap: str, topic: str, pairs: list[tuple[str, str | None]], partition: int = 0,
                      batch_messages: int = 20) -> None:
    """`key:value` lines through `kcat -P -K: -Z` (an empty value is sent as a NULL: a tombstone), acks=all,
    at most `batch_messages` to a batch (small segments then roll often)."""
    text = "".join(f"{key}:{'' if value is None else value}\n" for key, value in pairs)
    done = subprocess.run(["kcat", "-b", bootstrap, "-t", topic, "-p", str(partition), "-P", "-K:", "-Z",
                           "-X", "acks=all", "-X", f"batch.num.messages={batch_messages}"],
                          input=text, text=True, capture_output=True, timeout=KCAT_TIMEOUT_S)
    assert done.returncode == 0 and "fail" not in done.stderr.lower(), done.stderr


def consume_with_kcat(bootstrap: str, topic: str, partition: int = 0) -> list[Record]:
    """Every record of the partition as kcat reads it: (offset, key, value or None)."""
    done = subprocess.run(["kcat", "-b", bootstrap, "-t", topic, "-p", str(partition), "-C", "-e", "-q", "-Z",
                           "-o", "beginning", "-f", "%o\t%k\t%s\n"],
                          capture_output=True, text=True, timeout=KCAT_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    records = []
    for line in done.stdout.splitlines():
        offset, key, value = line.split("\t")
        records.append((int(offset), key, None if value == "NULL" else value))
    return records


def with_offsets(pairs: list[tuple[str, str | None]], first_offset: int = 0) -> list[Record]:
    return [(first_offset + i, key, value) for i, (key, value) in enumerate(pairs)]


def latest_per_key(records: list[Record], drop_tombstones: bool) -> list[Record]:
    """The last record of each key, in offset order; without tombstones if asked."""
    latest: dict[str, Record] = {}
    for record in records:
        latest[record[1]] = record
    return sorted(r for r in latest.values() if not (drop_tombstones and r[2] is None))


def partition_files(directory: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffix))
