"""Idempotent producers: a retried batch (same producer id, epoch and sequence,
as sent after a lost response) is acknowledged with its first offset and not
written twice; a sequence gap is refused. Raw Produce requests, so the retry is
exact."""

from __future__ import annotations

import datetime

import pytest
from support.broker_support import wait_for_leaders, watermarks
from support.names import unique_topic
from support.raw_requests import encode_batch
from support.wire import WireClient
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId, TopicName

PRODUCE_VERSION = 9


def _init_producer_id(client: WireClient) -> tuple[int, int]:
    cls = load_request_schema(22, 4)
    response = client.request(cls(transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60),
                                  producer_id=ProducerId(-1), producer_epoch=-1))
    assert response.error_code == ErrorCode.none
    return int(response.producer_id), int(response.producer_epoch)


def _produce(client: WireClient, topic: str, batch: bytes):
    import sys

    cls = load_request_schema(0, PRODUCE_VERSION)
    module = sys.modules[cls.__module__]
    request = cls(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=10),
                  topic_data=(module.TopicProduceData(name=TopicName(topic), partition_data=(
                      module.PartitionProduceData(index=0, records=batch),)),))
    [topic_response] = client.request(request).responses
    [partition] = topic_response.partition_responses
    return partition.error_code, partition.base_offset


def _create_topic(bootstrap: str, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        assert producer.partitions_for(topic) == {0}
    finally:
        producer.close()


def test_retried_batch_is_not_written_twice(shared_cluster):
    _, status = shared_cluster
    topic = unique_topic("idempotent")
    _create_topic(status.bootstrap_servers, topic)
    broker = status.broker(1)
    with WireClient(broker.host, broker.port, timeout_s=30) as client:
        producer_id, epoch = _init_producer_id(client)
        first = encode_batch([b"a0", b"a1", b"a2"], producer_id, epoch, base_sequence=0)
        assert _produce(client, topic, first) == (ErrorCode.none, 0)

        error, offset = _produce(client, topic, first)  # the retry of a lost response
        assert error in (ErrorCode.none, ErrorCode.duplicate_sequence_number) and offset == 0, (
            f"retry answered {error!r} at offset {offset}")
        assert watermarks(status.bootstrap_servers, topic) == (0, 3), "the retried batch was appended"

        second = encode_batch([b"b3"], producer_id, epoch, base_sequence=3)
        assert _produce(client, topic, second) == (ErrorCode.none, 3)

        gap = encode_batch([b"c9"], producer_id, epoch, base_sequence=9)
        error, _ = _produce(client, topic, gap)
        assert error == ErrorCode.out_of_order_sequence_number
        assert watermarks(status.bootstrap_servers, topic) == (0, 4)


@pytest.mark.slow
def test_retry_after_a_crash_is_not_written_twice(start_cluster):
    """Producer state is rebuilt from the log: a batch acknowledged just before a
    kill -9 and retried after the restart is still recognised."""
    cluster, status = start_cluster(brokers=1)
    topic = unique_topic("idempotent-crash")
    _create_topic(status.bootstrap_servers, topic)
    broker = status.broker(1)
    with WireClient(broker.host, broker.port, timeout_s=30) as client:
        producer_id, epoch = _init_producer_id(client)
        batch = encode_batch([b"x0", b"x1"], producer_id, epoch, base_sequence=0)
        assert _produce(client, topic, batch) == (ErrorCode.none, 0)
    cluster.kill_broker(1)
    cluster.up()
    wait_for_leaders(status.bootstrap_servers, topic)
    with WireClient(broker.host, broker.port, timeout_s=30) as client:
        error, offset = _produce(client, topic, batch)
        assert error in (ErrorCode.none, ErrorCode.duplicate_sequence_number) and offset == 0, (
            f"retry after restart answered {error!r} at offset {offset}")
        assert _produce(client, topic, encode_batch([b"x2"], producer_id, epoch, base_sequence=2)) == (
            ErrorCode.none, 2)
    assert watermarks(status.bootstrap_servers, topic) == (0, 3)
