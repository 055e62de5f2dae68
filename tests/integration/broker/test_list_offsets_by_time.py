"""ListOffsets by timestamp (kafka-python `offsets_for_times`): the first offset
whose record timestamp is at or after the target, with that record's timestamp;
None past the last record. Across batches, segments, codecs, and with
timestamps that are not in offset order."""

from __future__ import annotations

import time

import pytest
from support.broker_support import partition_dir, segment_files
from support.names import unique_topic


def _produce(bootstrap: str, topic: str, timestamps: list[int], value_size: int,
             batch: int, compression: str | None = None) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=50,
                             compression_type=compression, batch_size=1 << 20)
    try:
        futures = []
        for i, timestamp in enumerate(timestamps):
            value = (b"ts-%d-" % timestamp + b"0123456789abcdef" * value_size)[:value_size]
            futures.append(producer.send(topic, value=value, partition=0, timestamp_ms=timestamp))
            if i % batch == batch - 1:
                producer.flush()
        producer.flush()
        assert [f.get(timeout=30).offset for f in futures] == list(range(len(timestamps)))
    finally:
        producer.close()


def _expected(timestamps: list[int], target: int) -> tuple[int, int] | None:
    return next(((offset, ts) for offset, ts in enumerate(timestamps) if ts >= target), None)


def _check_lookups(bootstrap: str, topic: str, timestamps: list[int], step: int = 1) -> None:
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    targets = sorted({t + d for t in timestamps[::step] for d in (-1, 0, 1)}
                     | {min(timestamps) - 60_000, max(timestamps) + 60_000})
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        wrong = []
        for target in targets:
            found = consumer.offsets_for_times({tp: target})[tp]
            got = None if found is None else (found.offset, found.timestamp)
            if got != _expected(timestamps, target):
                wrong.append((target, got, _expected(timestamps, target)))
        assert wrong == [], (f"{len(wrong)} of {len(targets)} lookups wrong, "
                             f"(target, got, expected): {wrong[:5]}")
    finally:
        consumer.close()


def test_offsets_for_times_across_batches_and_segments(shared_cluster):
    _, status = shared_cluster
    topic = unique_topic("by-time")
    base = int(time.time() * 1000) - 3_600_000
    timestamps = [base + 10 * i for i in range(1200)]
    _produce(status.bootstrap_servers, topic, timestamps, value_size=1024, batch=40)
    assert len(segment_files(partition_dir(status, topic))) >= 2  # 1 MiB segments
    _check_lookups(status.bootstrap_servers, topic, timestamps, step=7)


def test_offsets_for_times_with_timestamps_out_of_order(shared_cluster):
    _, status = shared_cluster
    topic = unique_topic("by-time-unordered")
    base = int(time.time() * 1000) - 3_600_000
    timestamps = [base + ((i * 37) % 100) * 1000 for i in range(100)]
    _produce(status.bootstrap_servers, topic, timestamps, value_size=100, batch=10)
    _check_lookups(status.bootstrap_servers, topic, timestamps)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_offsets_for_times_inside_compressed_batches(shared_cluster, codec):
    _, status = shared_cluster
    topic = unique_topic(f"by-time-{codec}")
    base = int(time.time() * 1000) - 3_600_000
    timestamps = [base + 10 * i for i in range(200)]
    _produce(status.bootstrap_servers, topic, timestamps, value_size=200, batch=20,
             compression=codec)
    _check_lookups(status.bootstrap_servers, topic, timestamps)
