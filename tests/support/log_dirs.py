"""A partition's files in a broker's log dirs, read from outside the broker:
where its directory is, its batches, what a deletion left behind."""

from __future__ import annotations

import struct
from pathlib import Path

BATCH_HEADER = struct.Struct(">qiiBI")   # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a batch


def partition_dir(log_dirs, topic: str, partition: int) -> Path | None:
    for log_dir in log_dirs:
        candidate = Path(log_dir) / f"{topic}-{partition}"
        if candidate.is_dir():
            return candidate
    return None


def partition_batches(log_dirs, topic: str, partition: int) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, leader epoch, crc) of every complete batch in
    the partition's segment files, in order; [] when the broker has none."""
    directory = partition_dir(log_dirs, topic, partition)
    if directory is None:
        return []
    batches = []
    for segment in sorted(directory.glob("*.log")):
        try:
            data = segment.read_bytes()
        except FileNotFoundError:   # rolled or deleted while we looked
            continue
        position = 0
        while position + BATCH_HEADER.size <= len(data):
            base, length, epoch, _magic, crc = BATCH_HEADER.unpack_from(data, position)
            if length <= 0 or position + 12 + length > len(data):
                break                       # preallocated zeros or a write in progress
            (delta,) = LAST_OFFSET_DELTA.unpack_from(data, position + 23)
            batches.append((base, base + delta, epoch, crc))
            position += 12 + length
    return batches


def leftovers(log_dirs, topic: str, partition: int) -> list[str]:
    """Dirs of the partition in the log dirs: the live one or a renamed `-delete` one."""
    name = f"{topic}-{partition}"
    return [str(p) for d in log_dirs for p in Path(d).iterdir()
            if p.name == name or (p.name.startswith(name + ".") and p.name.endswith("-delete"))]
