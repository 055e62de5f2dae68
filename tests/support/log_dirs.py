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


def ssd_hdd_broker(tmp_path: Path, now_ms: int):
    """Broker 1's config, LogManager (started) and ReplicaManager over an ssd0
    and an hdd0 dir under tmp_path, at a fixed clock: (config, logs,
    replica_manager, ssd, hdd)."""
    from kafkactl.cluster.broker.config import from_properties
    from kafkactl.cluster.broker.replica_manager import ReplicaManager
    from kafkactl.cluster.log.manager import LogDir, LogManager

    ssd, hdd = str(tmp_path / "ssd0"), str(tmp_path / "hdd0")
    config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.dirs": f"{ssd},{hdd}",
                                 "log.dir.media": f"{ssd}:ssd,{hdd}:hdd"})
    logs = LogManager([LogDir(ssd, "ssd"), LogDir(hdd, "hdd")], config.default_log_config(), lambda: now_ms)
    logs.startup()
    return config, logs, ReplicaManager(config, logs, lambda: now_ms), ssd, hdd
