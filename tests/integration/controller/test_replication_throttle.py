"""A reassignment under Kafka's replication throttle moves data no faster than the rate."""

from __future__ import annotations

import os
import time
from pathlib import Path

from confluent_kafka import Producer
from kazoo.client import KazooClient

from kafkactl.cluster.admin.topics import create_topic, describe_topics
from kafkactl.cluster.zk import codecs, layout
from support.waiting import wait_for

RATE_BYTES_PER_S = 1_000_000
DATA_BYTES = 6_000_000


def announce(zk: KazooClient, entity_path: str) -> None:
    zk.create(layout.CONFIG_CHANGE_PREFIX, codecs.encode_config_change(entity_path), sequence=True)


def test_throttled_reassignment_is_paced_by_the_rate(start_cluster):
    _, status = start_cluster(brokers=2, overrides={"zookeeper.session.timeout.ms": "4000"})
    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        create_topic(zk, "moving", {0: [1]}, {})
        wait_for(lambda: describe_topics(zk, ["moving"])["moving"][0].leader == 1, 20, "a leader")
        producer = Producer({"bootstrap.servers": status.bootstrap_servers, "acks": "all",
                             "linger.ms": 5, "compression.type": "none"})
        value = os.urandom(10_000)
        for _ in range(DATA_BYTES // len(value)):
            producer.produce("moving", value)
            producer.poll(0)
        assert producer.flush(30) == 0

        # Throttle the way kafka-reassign-partitions.sh does: rates on the
        # brokers, the moving replicas named on the topic.
        zk.ensure_path("/config/brokers")
        zk.create(layout.entity_config("brokers", "<default>"), codecs.encode_entity_config({
            "leader.replication.throttled.rate": str(RATE_BYTES_PER_S),
            "follower.replication.throttled.rate": str(RATE_BYTES_PER_S)}))
        announce(zk, "brokers/<default>")
        zk.set(layout.topic_config("moving"), codecs.encode_entity_config({
            "leader.replication.throttled.replicas": "0:1",
            "follower.replication.throttled.replicas": "0:2"}))
        announce(zk, "topics/moving")
        time.sleep(1)  # let both brokers read the change

        started = time.monotonic()
        zk.create(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment({("moving", 0): [1, 2]}))
        wait_for(lambda: zk.exists(layout.REASSIGN_PARTITIONS) is None, 60, "the reassignment to finish")
        elapsed_s = time.monotonic() - started
        # The first window's worth may go at once; the rest at the rate.
        assert elapsed_s >= (DATA_BYTES - 2 * RATE_BYTES_PER_S) / RATE_BYTES_PER_S * 0.8, elapsed_s
        assert describe_topics(zk, ["moving"])["moving"][0].isr == [1, 2]
        follower_log = sum(f.stat().st_size for d in status.broker(2).log_dirs
                           for f in Path(d).glob("moving-0/*.log"))
        assert follower_log >= DATA_BYTES
    finally:
        zk.stop()
        zk.close()
