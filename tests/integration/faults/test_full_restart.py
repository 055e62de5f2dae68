"""The whole cluster stops (SIGTERM to every broker, then ZooKeeper) and comes
back with its data while an idempotent acks=-1 producer keeps writing.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from support.acked_check import assert_nothing_lost
from support.load_producer import LoadProducer

PARTITIONS = 3


def high_watermarks(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw-probe"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


@pytest.mark.slow
def test_restart_of_the_whole_cluster_keeps_everything(faults):
    cluster = faults(brokers=3)
    topic = cluster.create_topic("restart", PARTITIONS)
    producer = LoadProducer(cluster.bootstrap, topic, PARTITIONS, rate=300).start()
    diagnose = lambda: cluster.describe(topic)   # noqa: E731
    try:
        producer.wait_progress(600, diagnose=diagnose)
        epochs_before = {p: s.leader_epoch for p, s in cluster.states(topic).items()}
        hws_before = high_watermarks(cluster.bootstrap, topic)
        acked_before = producer.ack_count()
        cluster.down()
        cluster.up()
        cluster.wait_full_isr(topic)
        epochs_after = {p: s.leader_epoch for p, s in cluster.states(topic).items()}
        # The producer saw every broker go away: librdkafka may sit in its
        # reconnect and retry backoffs for a while; what matters is that it
        # resumes within its message timeout (30 s) and loses nothing.
        producer.wait_progress(300, timeout_s=45, diagnose=diagnose)
    finally:
        producer.stop()
    hws_after = high_watermarks(cluster.bootstrap, topic)
    print(f"leader epochs {epochs_before} -> {epochs_after}; high watermarks {hws_before} -> "
          f"{hws_after}; acknowledged before the restart {acked_before}")
    assert all(epochs_after[p] >= epochs_before[p] for p in epochs_before), (epochs_before, epochs_after)
    assert all(hws_after[p] >= hws_before[p] for p in hws_before), (hws_before, hws_after)
    assert_nothing_lost(cluster, topic, producer)
