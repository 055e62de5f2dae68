"""Fetch long poll: with nothing to return the broker holds the request for
max_wait (not less, not much more), and answers as soon as enough data arrives
(min_bytes), so consumers neither spin nor lag."""

from __future__ import annotations

import threading
import time

import pytest
from support.names import unique_topic
from support.raw_requests import fetch_request
from support.wire import WireClient
from kio.schema.errors import ErrorCode

MAX_WAIT_MS = 2000


@pytest.fixture
def empty_topic(shared_cluster):
    """A topic whose single partition exists, has a leader and holds nothing."""
    from kafka import KafkaProducer

    _, status = shared_cluster
    topic = unique_topic("long-poll")
    producer = KafkaProducer(bootstrap_servers=status.bootstrap_servers, acks="all")
    try:
        assert producer.partitions_for(topic) == {0}  # auto-creates it and waits for the leader
        yield status, topic, producer  # a connected producer, for sending at a chosen moment
    finally:
        producer.close()


def _partition(response):
    [topic] = response.responses
    [partition] = topic.partitions
    return partition


def _timed_fetch(status, topic: str, **kwargs):
    broker = status.broker(1)
    with WireClient(broker.host, broker.port, timeout_s=30) as client:
        request = fetch_request(topic, 0, MAX_WAIT_MS, **kwargs)
        client.request(fetch_request(topic, 0, 0, **kwargs))  # connection and partition warm
        started = time.monotonic()
        response = client.request(request)
        return time.monotonic() - started, response, started


def _send_later(producer, topic: str, delay_s: float, value: bytes, acked_at: list) -> threading.Thread:
    def run():
        time.sleep(delay_s)
        producer.send(topic, value=value, partition=0).get(timeout=10)
        acked_at.append(time.monotonic())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_fetch_on_empty_partition_waits_max_wait(empty_topic):
    status, topic, _ = empty_topic
    elapsed, response, _ = _timed_fetch(status, topic)
    partition = _partition(response)
    assert partition.error_code == ErrorCode.none
    assert (partition.high_watermark, partition.records or b"") == (0, b"")
    assert 1.9 <= elapsed <= 2.8, f"empty fetch answered after {elapsed:.2f} s, max_wait is 2 s"


def test_fetch_returns_as_soon_as_a_message_arrives(empty_topic):
    status, topic, producer = empty_topic
    acked_at: list[float] = []
    sender = _send_later(producer, topic, 0.5, b"wake-up", acked_at)
    elapsed, response, started = _timed_fetch(status, topic)
    answered_at = started + elapsed
    sender.join(10)
    partition = _partition(response)
    assert partition.error_code == ErrorCode.none and partition.high_watermark == 1
    assert b"wake-up" in (partition.records or b""), "the fetch returned without the new message"
    assert 0.4 <= elapsed <= 1.5, f"fetch answered after {elapsed:.2f} s; message sent at 0.5 s"
    assert answered_at - acked_at[0] < 0.5, "fetch lagged the acknowledged produce"


def test_fetch_waits_for_min_bytes(empty_topic):
    status, topic, producer = empty_topic
    acked_at: list[float] = []
    sender = _send_later(producer, topic, 0.5, b"small", acked_at)
    elapsed, response, _ = _timed_fetch(status, topic, min_bytes=64 * 1024)
    sender.join(10)
    partition = _partition(response)
    # Not enough bytes ever arrive: the broker answers at max_wait with what it has.
    assert 1.9 <= elapsed <= 2.8, f"fetch answered after {elapsed:.2f} s"
    assert b"small" in (partition.records or b"")
