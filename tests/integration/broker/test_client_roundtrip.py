"""kafka-python 3.x and confluent-kafka produce idempotently and read back with
`assign`: keys, values, headers and offsets survive, each client reads what the
other wrote, and the stored batches carry the producer id and sequences."""

from __future__ import annotations

from support.broker_support import (
    assert_contiguous, confluent_consume, kafka_python_consume, partition_dir, stored_batches,
)
from support.names import unique_topic

COUNT = 2000


def _record(i: int) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]:
    key = None if i % 100 == 0 else f"key-{i}".encode()
    value = None if i % 250 == 7 else f"value-{i}-".encode() + bytes(range(i % 256))
    headers = [("seq", str(i).encode()), ("kind", b"even" if i % 2 == 0 else b"odd")]
    if i % 3 == 0:
        headers.append(("empty", b""))
    return key, value, headers


def _check_kafka_python_records(records) -> None:
    assert [r.offset for r in records] == list(range(COUNT))
    for r in records:
        key, value, headers = _record(r.offset)
        assert (r.key, r.value, list(r.headers)) == (key, value, headers), f"offset {r.offset}"


def _check_confluent_messages(messages) -> None:
    assert [m.offset() for m in messages] == list(range(COUNT))
    for m in messages:
        key, value, headers = _record(m.offset())
        assert (m.key(), m.value(), m.headers() or []) == (key, value, headers), f"offset {m.offset()}"


def _check_idempotent_batches(status, topic: str) -> None:
    """Every batch carries one producer id (from InitProducerId) and consecutive sequences."""
    batches = stored_batches(partition_dir(status, topic))
    assert assert_contiguous(batches) == COUNT
    assert {b.producer_id for b in batches} != {-1}
    assert len({b.producer_id for b in batches}) == 1
    sequence = 0
    for batch in batches:
        assert batch.base_sequence == sequence, f"batch at {batch.base_offset}"
        sequence += batch.record_count


def test_kafka_python_default_producer_and_assign_consumer(shared_cluster):
    from kafka import KafkaProducer

    _, status = shared_cluster
    topic = unique_topic("kafka-python")
    producer = KafkaProducer(bootstrap_servers=status.bootstrap_servers)  # idempotent by default
    try:
        futures = []
        for i in range(COUNT):
            key, value, headers = _record(i)
            futures.append(producer.send(topic, key=key, value=value, headers=headers, partition=0))
            if i % 500 == 499:
                producer.flush()  # several produce requests, several batches
        producer.flush()
        offsets = [future.get(timeout=30).offset for future in futures]
    finally:
        producer.close()
    assert offsets == list(range(COUNT))

    _check_kafka_python_records(kafka_python_consume(status.bootstrap_servers, topic, COUNT))
    _check_confluent_messages(confluent_consume(status.bootstrap_servers, topic, COUNT))
    _check_idempotent_batches(status, topic)


def test_confluent_idempotent_producer_and_assign_consumer(shared_cluster):
    from confluent_kafka import Producer

    _, status = shared_cluster
    topic = unique_topic("confluent")
    acknowledged: dict[int, int] = {}
    errors = []

    def on_delivery(i, error, message):
        if error is not None:
            errors.append(error)
        else:
            acknowledged[i] = message.offset()

    producer = Producer({"bootstrap.servers": status.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    for i in range(COUNT):
        key, value, headers = _record(i)
        producer.produce(topic, key=key, value=value, headers=headers, partition=0,
                         on_delivery=lambda error, message, i=i: on_delivery(i, error, message))
        if i % 500 == 499:
            producer.flush(30)
    assert producer.flush(30) == 0
    assert errors == []
    assert [acknowledged[i] for i in range(COUNT)] == list(range(COUNT))

    _check_confluent_messages(confluent_consume(status.bootstrap_servers, topic, COUNT))
    _check_kafka_python_records(kafka_python_consume(status.bootstrap_servers, topic, COUNT))
    _check_idempotent_batches(status, topic)


def test_consumers_start_in_the_middle_of_a_batch(shared_cluster):
    """A fetch from an offset inside a (compressed) batch returns the whole batch;
    both clients must start exactly at the offset they asked for."""
    from confluent_kafka import Consumer, TopicPartition
    from kafka import KafkaProducer

    _, status = shared_cluster
    topic = unique_topic("mid-batch")
    producer = KafkaProducer(bootstrap_servers=status.bootstrap_servers, compression_type="gzip",
                             linger_ms=50)
    try:
        for i in range(100):
            producer.send(topic, value=b"mid-%d" % i, partition=0)
        producer.flush()
    finally:
        producer.close()
    batches = stored_batches(partition_dir(status, topic))
    assert batches[0].record_count > 40 and batches[0].codec == 1  # one gzip batch holds 0..41

    records = kafka_python_consume(status.bootstrap_servers, topic, 100 - 41, start=41)
    assert [(r.offset, r.value) for r in records] == [(i, b"mid-%d" % i) for i in range(41, 100)]

    consumer = Consumer({"bootstrap.servers": status.bootstrap_servers, "group.id": unique_topic("g"),
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 41)])
        message = None
        while message is None:
            message = consumer.poll(10)
        assert message.error() is None and (message.offset(), message.value()) == (41, b"mid-41")
    finally:
        consumer.close()


def test_confluent_admin_lists_every_topic(shared_cluster):
    # librdkafka 2.x's all-topics Metadata v12 carries three bytes after its
    # body; Kafka ignores them, and so must the broker (it closed the connection).
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    _, status = shared_cluster
    topic = unique_topic("listed")
    producer = Producer({"bootstrap.servers": status.bootstrap_servers})
    producer.produce(topic, b"x")
    assert producer.flush(30) == 0
    listed = AdminClient({"bootstrap.servers": status.bootstrap_servers}).list_topics(timeout=15)
    assert topic in listed.topics and listed.topics[topic].error is None
