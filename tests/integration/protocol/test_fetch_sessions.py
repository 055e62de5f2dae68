"""Incremental fetch sessions (KIP-227) on a real broker: a session is
granted, an incremental fetch carries only partitions with something new,
out-of-step epochs and unknown sessions get their error codes, and a
consumer that uses sessions (kafka-python) reads everything."""

from __future__ import annotations

import datetime
import time

from kafka import KafkaConsumer, KafkaProducer
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.produce.v9 import request as produce9

from kafkactl.cluster.protocol.record_batch import build_batch
from support.wire import WireClient

PARTITIONS = 4


def fetch(client: WireClient, topic: str, session_id: int, epoch: int, offsets: dict[int, int],
          forgotten=(), max_wait_ms: int = 300):
    request = fetch12.FetchRequest(
        replica_id=-1, max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=1,
        session_id=session_id, session_epoch=epoch,
        topics=(fetch12.FetchTopic(topic=topic, partitions=tuple(
            fetch12.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
            for p, o in offsets.items())),) if offsets else (),
        forgotten_topics_data=(fetch12.ForgottenTopic(topic=topic, partitions=tuple(forgotten)),)
        if forgotten else ())
    return client.request(request)


def carried(response) -> dict[int, int]:
    """partition -> high watermark of every partition in the response."""
    return {p.partition_index: p.high_watermark for t in response.responses for p in t.partitions}


def produce_one(client: WireClient, topic: str, partition: int) -> None:
    request = produce9.ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=5),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(produce9.PartitionProduceData(
            index=partition, records=build_batch([(b"k", b"v", None, int(time.time() * 1000))])),)),))
    assert client.request(request).responses[0].partition_responses[0].error_code == ErrorCode.none


def test_incremental_fetches_carry_only_what_changed(start_cluster):
    cluster, status = start_cluster(brokers=1, overrides={"num.partitions": str(PARTITIONS),
                                                          "auto.create.topics.enable": "true"})
    broker = status.broker(1)
    topic = "sessions"
    producer = KafkaProducer(bootstrap_servers=status.bootstrap_servers)
    producer.send(topic, b"first", partition=0).get(timeout=20)
    producer.close()
    client = WireClient(broker.host, broker.port)
    try:
        full = fetch(client, topic, 0, 0, {p: 0 for p in range(PARTITIONS)})
        assert full.error_code == ErrorCode.none and full.session_id != 0
        assert sorted(carried(full)) == list(range(PARTITIONS))
        session = full.session_id
        started = time.monotonic()
        idle = fetch(client, topic, session, 1, {0: 1})      # it read partition 0's record
        assert carried(idle) == {} and time.monotonic() - started >= 0.25   # waited, nothing new
        produce_one(client, topic, 2)
        assert carried(fetch(client, topic, session, 2, {})) == {2: 1}
        assert fetch(client, topic, session, 5, {}).error_code == ErrorCode.invalid_fetch_session_epoch
        assert fetch(client, topic, session + 1, 3, {}).error_code == ErrorCode.fetch_session_id_not_found
        forgot = fetch(client, topic, session, 3, {}, forgotten=[2])
        assert forgot.error_code == ErrorCode.none and carried(forgot) == {}
        produce_one(client, topic, 2)
        assert carried(fetch(client, topic, session, 4, {})) == {}          # no longer in the session
        closed = fetch(client, topic, session, -1, {1: 0})
        assert closed.session_id == 0 and sorted(carried(closed)) == [1]
        assert fetch(client, topic, session, 5, {}).error_code == ErrorCode.fetch_session_id_not_found
    finally:
        client.close()


def test_a_consumer_with_fetch_sessions_reads_everything(start_cluster):
    """kafka-python (3.x) keeps a fetch session per broker: both halves are
    read, the second while its session is running."""
    cluster, status = start_cluster(brokers=1, overrides={"num.partitions": str(PARTITIONS),
                                                          "auto.create.topics.enable": "true"})
    topic = "sessions-consumer"
    producer = KafkaProducer(bootstrap_servers=status.bootstrap_servers, linger_ms=5)
    consumer = KafkaConsumer(topic, bootstrap_servers=status.bootstrap_servers, auto_offset_reset="earliest",
                             enable_auto_commit=False, group_id=None, fetch_max_wait_ms=100)
    try:
        for half in range(2):
            sent = [f"m{half}-{i}".encode() for i in range(1000)]
            for i, value in enumerate(sent):
                producer.send(topic, value, partition=i % PARTITIONS)
            producer.flush(timeout=20)
            assert sorted(consume(consumer, len(sent))) == sorted(sent)
    finally:
        consumer.close()
        producer.close()


def consume(consumer, count: int, timeout_s: float = 60.0) -> list[bytes]:
    received: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(received) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            received += [r.value for r in records]
    return received
