"""When librdkafka reports a successful delivery without an offset, and
whether the broker's answers are the cause (the admin soak once saw one).

librdkafka's idempotent producer has several batches of a partition in
flight. When the first fails with a retriable "possibly persisted" error
(NOT_ENOUGH_REPLICAS_AFTER_APPEND here; REQUEST_TIMED_OUT, a request timeout
or a lost connection alike) its messages go back to the partition queue and
the producer drains; when the next batch, already sent, then succeeds, its
sequence numbers prove the first batch was written, and librdkafka reports
the first batch's messages delivered without retrying them: "implicitly
acked by subsequent batch success" (rd_kafka_handle_idempotent_Produce_success
-> rd_kafka_dr_implicit_ack, src/rdkafka_request.c and rdkafka_broker.c).
Nothing ever gave it their offsets, so the delivery report carries
RD_KAFKA_OFFSET_INVALID (None in Python). Kafka 2.8 answers these requests
the same way: NOT_ENOUGH_REPLICAS_AFTER_APPEND once the high watermark passed
the batch while the ISR is below min.insync.replicas
(Partition.checkEnoughReplicasReachOffset).

Real processes: three brokers, the follower stopped with SIGSTOP, and a
proxy (support.produce_gate) holding the producer's second Produce request
until the first is answered and the ISR is full again.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode

from support.acked_check import read_partition
from support.admin_soak import check_acknowledged, ring_logger
from support.produce_gate import ProduceGate
from support.waiting import wait_for


@pytest.mark.slow
def test_a_batch_acknowledged_by_the_next_ones_success_is_reported_without_its_offset(faults):
    # A ZooKeeper session that outlives the follower's pause: only the leader
    # takes it out of the ISR (replica.lag.time.max.ms, 3 s).
    cluster = faults(brokers=3, overrides={"zookeeper.session.timeout.ms": "15000"})
    controller = cluster.controller()
    leader, follower = [b for b in cluster.broker_ids if b != controller][:2]
    topic = cluster.create_topic("dr-offset", 1, assignment={0: [leader, follower]},
                                 config={"min.insync.replicas": "2"})
    gate = ProduceGate({b.id: (b.host, b.port) for b in cluster.status.brokers})
    reports: dict[bytes, tuple] = {}
    client_log = ring_logger("dr-offset-producer")
    producer = Producer({"bootstrap.servers": gate.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0, "message.timeout.ms": 120000, "request.timeout.ms": 60000,
                         "logger": client_log, "debug": "eos,msg"})

    def produce(value: bytes) -> None:
        producer.produce(topic, value=value, partition=0,
                         on_delivery=lambda error, message: reports.__setitem__(message.value(),
                                                                                (error, message.offset())))

    def polled(event):
        return lambda: producer.poll(0.05) >= 0 and event.is_set()

    try:
        produce(b"before")                    # the producer id and the leader known
        assert producer.flush(30) == 0
        assert reports[b"before"] == (None, 0)

        cluster.pause(follower)
        try:
            gate.hold_after_first()
            produce(b"first")
            wait_for(polled(gate.first_sent), 30, "the first Produce request to pass the proxy")
            produce(b"second")
            wait_for(polled(gate.held), 30, "the second Produce request to be held in the proxy")
            # The leader drops the stopped follower from the ISR: the high
            # watermark passes "first" with the ISR below min.insync.replicas.
            wait_for(polled(gate.first_answered), 30, "the first Produce request's answer",
                     diagnose=lambda: cluster.describe(topic))
        finally:
            cluster.resume(follower)
        assert gate.first_errors == [ErrorCode.not_enough_replicas_after_append.value]
        cluster.wait_full_isr(topic)          # so "second" can be appended and committed
        gate.release()
        assert producer.flush(60) == 0
    finally:
        gate.release()
        gate.close()

    # "second" is answered with its offset; "first" is acknowledged by that
    # answer, with no offset of its own.
    assert reports[b"second"] == (None, 2), reports
    assert reports[b"first"] == (None, None), reports
    said = "\n".join(client_log.implicit_acks)
    # librdkafka's own account: the first batch's error, then its messages acked by the second's success.
    assert "insufficient number of in-sync replicas (actions Retry,MsgPossiblyPersisted)" in said, said
    assert "1 message(s) implicitly acked by subsequent batch success" in said, said
    _high, records = read_partition(cluster.bootstrap, topic, 0)
    assert [value for _, value in records] == [b"before", b"first", b"second"]
    # The soak's check finds each exactly once: by offset, and by value when there is none.
    assert check_acknowledged({0: b"before", 2: b"second"}, [b"first"], dict(records)) == []
    assert check_acknowledged({}, [b"first"], dict(records + [(3, b"first")])) != []
