"""Retention by size and by time deletes whole old segments from disk; the
earliest offset moves forward, consumers asking for a deleted offset are reset
to it, and everything from it on is intact."""

from __future__ import annotations

import time

from support.broker_support import (
    confluent_consume, kafka_python_consume, partition_dir, segment_files, stored_batches, wait_for_leaders,
    watermarks,
)
from support.names import unique_topic
from support.waiting import wait_for

SEGMENT_BYTES = 16384
RETENTION_BYTES = 65536
RETENTION_MS = 3_600_000
FAST_RETENTION = {
    "log.segment.bytes": str(SEGMENT_BYTES),
    "log.retention.check.interval.ms": "500",
    "log.segment.delete.delay.ms": "100",
}


def _value(i: int) -> bytes:
    return b"retained-%06d-" % i + bytes(range(200))


def _produce(bootstrap: str, topic: str, count: int, timestamp_ms: int | None = None) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20)
    try:
        futures = []
        for i in range(count):
            futures.append(producer.send(topic, key=b"%d" % i, value=_value(i), partition=0,
                                         timestamp_ms=timestamp_ms))
            if i % 50 == 49:
                producer.flush()  # many small batches, so segments fill gradually
        producer.flush()
        assert [f.get(timeout=30).offset for f in futures] == list(range(count))
    finally:
        producer.close()


def _check_served_from_earliest(bootstrap: str, topic: str, count: int, earliest: int) -> None:
    # A consumer positioned at 0 is out of range and resets to the earliest offset.
    records = kafka_python_consume(bootstrap, topic, count - earliest, start=0,
                                   auto_offset_reset="earliest")
    assert [(r.offset, r.key, r.value) for r in records] == [
        (i, b"%d" % i, _value(i)) for i in range(earliest, count)]
    messages = confluent_consume(bootstrap, topic, count - earliest,
                                 **{"auto.offset.reset": "earliest"})
    assert messages[0].offset() == earliest
    assert [m.value() for m in messages] == [_value(i) for i in range(earliest, count)]


def _no_deleted_files(directory) -> bool:
    return not any(p.name.endswith(".deleted") for p in directory.iterdir())


def test_retention_bytes_deletes_oldest_segments(start_cluster):
    cluster, status = start_cluster(overrides={**FAST_RETENTION, "log.retention.bytes": str(RETENTION_BYTES)})
    bootstrap = status.bootstrap_servers
    topic = unique_topic("retention-bytes")
    count = 2000  # about 480 KiB: some 30 segments of 16 KiB
    _produce(bootstrap, topic, count)
    directory = partition_dir(status, topic)

    def settled():
        segments = segment_files(directory)
        size = sum(s.stat().st_size for s in segments)
        return size < RETENTION_BYTES + SEGMENT_BYTES and _no_deleted_files(directory) and segments

    segments = wait_for(settled, 15, what=f"retention of {directory} down to ~{RETENTION_BYTES} bytes")
    size = sum(s.stat().st_size for s in segments)
    assert size >= RETENTION_BYTES, f"retention deleted too much: {size} bytes left"
    first_base = int(segments[0].name.split(".")[0])
    assert first_base > 0
    assert not (directory / f"{0:020d}.index").exists()
    assert not (directory / f"{0:020d}.timeindex").exists()

    earliest, latest = watermarks(bootstrap, topic)
    assert (earliest, latest) == (first_base, count)
    assert stored_batches(directory)[0].base_offset == earliest
    _check_served_from_earliest(bootstrap, topic, count, earliest)

    # A crash does not bring deleted records back or lose the start offset.
    cluster.kill_broker(1)
    cluster.up()
    wait_for_leaders(bootstrap, topic)
    assert watermarks(bootstrap, topic) == (earliest, count)
    _check_served_from_earliest(bootstrap, topic, count, earliest)


def test_retention_ms_deletes_expired_segments_only(start_cluster):
    _, status = start_cluster(overrides={**FAST_RETENTION, "log.retention.ms": str(RETENTION_MS)})
    bootstrap = status.bootstrap_servers
    old, fresh = unique_topic("retention-old"), unique_topic("retention-fresh")
    count = 600
    _produce(bootstrap, old, count, timestamp_ms=int(time.time() * 1000) - 24 * RETENTION_MS)
    _produce(bootstrap, fresh, count)
    old_dir, fresh_dir = partition_dir(status, old), partition_dir(status, fresh)
    fresh_segments = segment_files(fresh_dir)
    # The old topic's segments may already be gone here (retention runs every
    # 500 ms); that they existed and went shows as active_base > 0 below.
    assert len(fresh_segments) > 3

    # Every expired segment goes except the active one, which is never deleted.
    remaining = wait_for(lambda: len(segment_files(old_dir)) == 1 and _no_deleted_files(old_dir)
                         and segment_files(old_dir), 15, what=f"expiry of the segments in {old_dir}")
    active_base = int(remaining[0].name.split(".")[0])
    assert 0 < active_base < count
    earliest, latest = watermarks(bootstrap, old)
    assert (earliest, latest) == (active_base, count)
    _check_served_from_earliest(bootstrap, old, count, earliest)

    # Records within retention.ms stay, checked after a few more retention runs.
    time.sleep(1.5)
    assert segment_files(fresh_dir) == fresh_segments
    assert watermarks(bootstrap, fresh) == (0, count)
