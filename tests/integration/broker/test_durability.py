"""Crash safety: kill -9 under acks=all load, and torn segment tails.

A killed broker, restarted with `kafkactl cluster up`, still serves every
message it acknowledged at the acknowledged offset, and new messages follow
the log end without gaps or repeats. A segment whose last batch was cut (or
followed by zeros) is recovered to its whole batches: consumers that check
CRCs never see a broken batch, and new writes continue where the log ends.
"""

from __future__ import annotations

import os
import time

import pytest
from support.broker_support import (
    confluent_consume, kafka_python_consume, kafkactl_up, log_tail, partition_dir, read_batches,
    segment_files, stored_batches, wait_for_leaders, watermarks,
)
from support.names import unique_topic
from support.producers import BackgroundProducer
from support.waiting import wait_for

pytestmark = pytest.mark.slow


def _produce_one(bootstrap: str, topic: str, value: bytes) -> int:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        return producer.send(topic, value=value, partition=0).get(timeout=30).offset
    finally:
        producer.close()


def _stream_value(index: int) -> bytes:
    return b"message-%08d-" % index + b"x" * (index % 200)


def test_acknowledged_messages_survive_kill_9_and_restart_by_cli(start_cluster, tmp_path):
    cluster, status = start_cluster(brokers=1, overrides={"log.segment.bytes": "65536"})
    bootstrap = status.bootstrap_servers
    topic = unique_topic("crash")
    _produce_one(bootstrap, topic, b"first")  # the topic exists before the stream starts
    producer = BackgroundProducer(bootstrap, topic, _stream_value, linger_ms=2, burst=200, pause_s=0.005,
                                  keyed=True)
    producer.start()
    try:
        wait_for(lambda: producer.acked_count() >= 5000, 60, what="5000 acknowledgements")
        cluster.kill_broker(1)  # SIGKILL while requests are in flight
        acked_at_kill, sent_at_kill = producer.acked_count(), producer.sent
        time.sleep(1.0)  # the producer keeps queueing meanwhile
        restarted = kafkactl_up(cluster.root, tmp_path / "home")
        assert restarted["brokers"][0]["alive"] and restarted["bootstrap_servers"] == bootstrap
        wait_for(lambda: producer.acked_count() >= acked_at_kill + 3000, 90,
                 what="acknowledgements after the restart")
    finally:
        remaining = producer.stop_and_flush(90)
    assert remaining == 0, f"{remaining} messages never delivered"
    assert producer.errors == [], producer.errors[:5]
    assert acked_at_kill < sent_at_kill, "nothing was in flight when the broker died"
    assert acked_at_kill < len(producer.acknowledged) == producer.sent

    earliest, latest = watermarks(bootstrap, topic)
    assert earliest == 0
    records = kafka_python_consume(bootstrap, topic, latest)
    assert [r.offset for r in records] == list(range(latest)), "offsets with gaps or repeats"
    assert records[0].value == b"first"
    by_offset = {r.offset: r for r in records}
    lost = [(i, offset) for i, offset in producer.acknowledged.items()
            if by_offset.get(offset) is None or by_offset[offset].value != producer.value(i)]
    assert lost == [], f"{len(lost)} acknowledged messages not at their offsets, e.g. {lost[:5]}"

    # New writes continue at the log end, through a fresh client.
    assert _produce_one(bootstrap, topic, b"after") == latest
    assert watermarks(bootstrap, topic) == (0, latest + 1)
    assert kafka_python_consume(bootstrap, topic, 1, start=latest)[0].value == b"after"


# ---- torn tails -----------------------------------------------------------

def _cut_in_header(last) -> tuple[int, bytes]:
    return last.position + 30, b""


def _cut_in_records(last) -> tuple[int, bytes]:
    return last.position + last.size // 2, b""


def _cut_last_byte(last) -> tuple[int, bytes]:
    return last.position + last.size - 1, b""


def _zeros_after_last_batch(last) -> tuple[int, bytes]:
    # A torn extension: the file grew but the batch bytes never arrived.
    return last.position, b"\0" * last.size


TORN_TAILS = {"cut-in-header": _cut_in_header, "cut-in-records": _cut_in_records,
              "cut-last-byte": _cut_last_byte, "zeros": _zeros_after_last_batch}
BATCHES = 8
RECORDS_PER_BATCH = 100


def _value(offset: int) -> bytes:
    return b"record-%06d-" % offset + b"abcdefgh" * (offset % 20)


def test_torn_segment_tail_is_cut_to_whole_batches(start_cluster):
    from kafka import KafkaProducer

    cluster, status = start_cluster(brokers=1)
    bootstrap = status.bootstrap_servers
    topics = {name: unique_topic(f"torn-{name}") for name in TORN_TAILS}
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=50)
    try:
        for topic in topics.values():
            for offset in range(BATCHES * RECORDS_PER_BATCH):
                producer.send(topic, value=_value(offset), partition=0)
                if offset % RECORDS_PER_BATCH == RECORDS_PER_BATCH - 1:
                    producer.flush()  # one produce request per batch of records
    finally:
        producer.close()

    cluster.kill_broker(1)
    kept = {}
    for name, topic in topics.items():
        directory = partition_dir(status, topic)
        segment = segment_files(directory)[-1]
        batches = read_batches(segment)
        assert len(batches) >= 3 and batches[-1].last_offset == BATCHES * RECORDS_PER_BATCH - 1
        last = batches[-1]
        size, appended = TORN_TAILS[name](last)
        with open(segment, "r+b") as file:
            file.truncate(size)
            file.seek(size)
            file.write(appended)
        kept[name] = (segment, last.position, last.base_offset)

    status = cluster.up()
    wait_for_leaders(bootstrap, *topics.values())
    for name, topic in topics.items():
        segment, whole_bytes, next_offset = kept[name]
        assert os.path.getsize(segment) == whole_bytes, (
            f"{name}: recovery left {os.path.getsize(segment)} bytes, whole batches end at "
            f"{whole_bytes}\n{log_tail(status.broker(1).log_file)}")
        assert watermarks(bootstrap, topic) == (0, next_offset), name
        records = kafka_python_consume(bootstrap, topic, next_offset)  # CRCs checked
        assert [(r.offset, r.value) for r in records] == [(o, _value(o)) for o in range(next_offset)]
        messages = confluent_consume(bootstrap, topic, next_offset)  # check.crcs=true
        assert [m.offset() for m in messages] == list(range(next_offset))

        assert _produce_one(bootstrap, topic, b"after-recovery") == next_offset, name
        tail = kafka_python_consume(bootstrap, topic, 2, start=next_offset - 1)
        assert [(r.offset, r.value) for r in tail] == [
            (next_offset - 1, _value(next_offset - 1)), (next_offset, b"after-recovery")]
        batches = stored_batches(partition_dir(status, topic))
        assert batches[-1].base_offset == next_offset and batches[-1].record_count == 1
