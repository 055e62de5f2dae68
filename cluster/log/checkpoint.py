"""Kafka's checkpoint files, written atomically and read strictly.

Every checkpoint is text: line 1 the format version (`0`), line 2 the entry
count, then one entry per line with space-separated fields. Offset
checkpoints (`replication-offset-checkpoint`,
`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`, one per
log dir, named in layout.py) hold `topic partition offset`; the leader-epoch
checkpoint reuses the same frame with `epoch startOffset` entries.

A write goes to `<name>.tmp`, is fsynced, renamed over the file, and the
directory is fsynced (durable.write_atomically), so a crash leaves either the
old or the new file. A caller that can rebuild what a crash loses may write
without the fsyncs and make the file durable later (durable.fsync_file), off
its critical path. A read refuses anything off the format, naming the file
and line (CheckpointFormatError); what a caller does then is its own rule.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from kafkactl.cluster.log.durable import TMP_SUFFIX, remove_if_present, write_atomically
from kafkactl.cluster.log.errors import CheckpointFormatError

CHECKPOINT_VERSION = 0

Entry = TypeVar("Entry")
TopicPartition = tuple[str, int]


def write_checkpoint(path: str, lines: list[str], durable: bool = True) -> None:
    text = f"{CHECKPOINT_VERSION}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    write_atomically(path, text.encode(), durable)


def read_checkpoint(path: str, parse_entry: Callable[[list[str]], Entry],
                    field_count: int) -> list[Entry] | None:
    """Entries of a checkpoint file, None if it does not exist.

    Raises CheckpointFormatError naming the file and line for anything off:
    unknown version, bad count, wrong field count, unparsable field, or a
    count that does not match the number of entries.
    """
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except FileNotFoundError:
        return None
    try:
        lines = raw.decode().split("\n")
    except UnicodeDecodeError as error:
        raise CheckpointFormatError(path, 1, f"not UTF-8 text: {error}") from error
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line
    if len(lines) < 2:
        raise CheckpointFormatError(path, len(lines) + 1, "missing version or entry count line")
    version = _parse_int(path, 1, lines[0], "version")
    if version != CHECKPOINT_VERSION:
        raise CheckpointFormatError(path, 1, f"unsupported version {version}")
    count = _parse_int(path, 2, lines[1], "entry count")
    if count < 0 or count != len(lines) - 2:
        raise CheckpointFormatError(
            path, 2, f"entry count {count} but the file holds {len(lines) - 2} entries")
    entries = []
    for line_number, line in enumerate(lines[2:], start=3):
        fields = line.split(" ")
        if len(fields) != field_count or "" in fields:
            raise CheckpointFormatError(
                path, line_number, f"expected {field_count} space-separated fields, got {line!r}")
        try:
            entries.append(parse_entry(fields))
        except ValueError as error:
            raise CheckpointFormatError(path, line_number, f"{line!r}: {error}") from error
    return entries


def _parse_int(path: str, line_number: int, text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CheckpointFormatError(path, line_number, f"{what} {text!r} is not an integer") from None


def _parse_offset_entry(fields: list[str]) -> tuple[TopicPartition, int]:
    topic, partition, offset = fields
    partition_number = int(partition)
    offset_value = int(offset)
    if partition_number < 0:
        raise ValueError(f"negative partition {partition_number}")
    return (topic, partition_number), offset_value


class OffsetCheckpointFile:
    """One `topic partition offset` checkpoint file of a log dir."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        lines = [f"{topic} {partition} {offset}"
                 for (topic, partition), offset in sorted(offsets.items())]
        write_checkpoint(self.path, lines)

    def read(self) -> dict[TopicPartition, int]:
        """The offsets, {} when the file does not exist; duplicates are an error."""
        entries = read_checkpoint(self.path, _parse_offset_entry, 3)
        result: dict[TopicPartition, int] = {}
        for line_number, (topic_partition, offset) in enumerate(entries or (), start=3):
            if topic_partition in result:
                raise CheckpointFormatError(self.path, line_number,
                                            f"duplicate entry for {topic_partition}")
            result[topic_partition] = offset
        return result


def remove_stale_tmp_files(directory: str, names: Iterable[str]) -> None:
    """Delete `<name>.tmp` left by a crash during a checkpoint write."""
    for name in names:
        remove_if_present(os.path.join(directory, name + TMP_SUFFIX))
