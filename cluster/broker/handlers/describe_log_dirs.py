"""DescribeLogDirs (API 35, v0-v4): every log dir with its partitions' sizes.

As Kafka's ReplicaManager.describeLogDirs: one result per log dir, each
partition's size in bytes and its offset lag (how far its log end offset is
below the high watermark, never negative); a request naming topics gets
only those (null asks for all). v4 adds the volume's total and usable bytes
(usable = what an unprivileged writer may still use, statvfs f_bavail).
A partition being moved between log dirs also appears in the dir it is
moving to, with is_future_key true and as offset lag how far its future
log's end is behind the current log's. A log dir that failed while the
broker runs is answered KAFKA_STORAGE_ERROR with no partitions, as Kafka
answers an offline dir.
"""

from __future__ import annotations

import datetime
import os

from kio.schema.errors import ErrorCode

from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class


def handle(services, header, request):
    cls = response_class(35, header.api_version)
    replica_manager = services.replica_manager
    log_manager = replica_manager.log_manager
    wanted = _wanted(request.topics)
    by_dir: dict[str, dict[str, list]] = {d.path: {} for d in log_manager.log_dirs}
    placements = sorted(log_manager.placements(), key=lambda p: (p[0], p[3]))
    end_offsets = {tp: log_.log_end_offset for tp, log_, _, is_future in placements if not is_future}
    for (topic, index), log_, path, is_future in placements:
        if (wanted is not None and index not in wanted.get(topic, ())) or path not in by_dir:
            continue
        if is_future:   # how far the copy is behind the current log
            lag = max(end_offsets.get((topic, index), 0) - log_.log_end_offset, 0)
        else:
            lag = _offset_lag(replica_manager, topic, index, log_.log_end_offset)
        by_dir[path].setdefault(topic, []).append(nested(
            cls, "DescribeLogDirsPartition", partition_index=index, partition_size=log_.size_bytes,
            offset_lag=lag, is_future_key=is_future))
    results = tuple(_result(cls, path, topics) if log_manager.is_dir_online(path) else _offline(cls, path)
                    for path, topics in by_dir.items())
    return make(cls, throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, results=results)


def _wanted(topics) -> dict[str, set[int]] | None:
    if topics is None:
        return None
    return {t.topic: set(t.partitions) for t in topics}


def _offset_lag(replica_manager, topic: str, index: int, log_end_offset: int) -> int:
    partition = replica_manager.get(topic, index)
    if partition is None:
        return -1   # Kafka's INVALID_OFFSET_LAG: the replica is not online here
    return max(partition.high_watermark - log_end_offset, 0)


def _offline(cls, path: str):
    """A dir that failed (dir_failures.py): KAFKA_STORAGE_ERROR, nothing in it, as Kafka answers."""
    return nested(cls, "DescribeLogDirsResult", error_code=ErrorCode.kafka_storage_error, log_dir=path,
                  topics=(), total_bytes=-1, usable_bytes=-1)


def _result(cls, path: str, topics: dict[str, list]):
    try:
        stats = os.statvfs(path)
    except OSError:
        return nested(cls, "DescribeLogDirsResult", error_code=ErrorCode.kafka_storage_error, log_dir=path,
                      topics=(), total_bytes=-1, usable_bytes=-1)
    return nested(
        cls, "DescribeLogDirsResult", error_code=ErrorCode.none, log_dir=path,
        total_bytes=stats.f_blocks * stats.f_frsize, usable_bytes=stats.f_bavail * stats.f_frsize,
        topics=tuple(nested(cls, "DescribeLogDirsTopic", name=t, partitions=tuple(p))
                     for t, p in sorted(topics.items())))
