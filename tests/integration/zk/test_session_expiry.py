"""A lone broker paused past its ZooKeeper session comes back registered and leading.

SIGSTOP stands in for a long GC pause or a frozen VM: ZooKeeper expires the
session and drops the ephemeral registration (and the /controller node this
broker held); after SIGCONT the broker must notice the expiry, register again
(a new znode, so a new broker epoch), win the controller election again and
keep leading its partition, losing no message. With no other replica nobody
took over, so the leader epoch need not change (Kafka's controller, too,
elects only partitions whose leader is gone). The multi-broker case, where
another broker takes over and the paused one must not commit, is issue 3's.
"""

from __future__ import annotations

import os
import signal
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kazoo.client import KazooClient

from kafkactl.cluster.zk import codecs, layout
from support.waiting import wait_for

SESSION_TIMEOUT_MS = 4000




def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=20)
    for value in values:
        producer.send(topic, value=value).get(timeout=30)
    producer.close()


def consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            values.extend(r.value for r in records)
    consumer.close()
    return values


def test_paused_broker_reregisters_and_leads_again(start_cluster):
    cluster, status = start_cluster(brokers=1, overrides={
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "num.partitions": "1",
    })
    bootstrap = status.bootstrap_servers
    produce(bootstrap, "paused", [b"before-%d" % i for i in range(10)])

    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        first_epoch = zk.exists(layout.broker(1)).czxid
        state_path = layout.partition_state("paused", 0)
        first_leader_epoch = codecs.decode_partition_state(state_path, zk.get(state_path)[0]).leader_epoch

        pid = status.broker(1).pid
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_for(lambda: zk.exists(layout.broker(1)) is None, 3 * SESSION_TIMEOUT_MS / 1000,
                     "ZooKeeper to expire the paused broker's session")
        finally:
            os.kill(pid, signal.SIGCONT)

        stat = wait_for(lambda: zk.exists(layout.broker(1)), 20, "the broker to register again")
        assert stat.czxid != first_epoch, "a new registration carries a new broker epoch"
        wait_for(lambda: zk.exists(layout.CONTROLLER), 20, "a controller again")
        assert codecs.decode_controller_epoch(zk.get(layout.CONTROLLER_EPOCH)[0]) == 2
        # The new controller may read the brokers before the broker registered
        # again and mark the partition offline; the registration then elects it.
        state = wait_for(
            lambda: (s := codecs.decode_partition_state(state_path, zk.get(state_path)[0])).leader == 1 and s,
            20, "broker 1 to lead again")
        assert state.isr == [1] and state.leader_epoch >= first_leader_epoch
    finally:
        zk.stop()
        zk.close()

    produce(bootstrap, "paused", [b"after-%d" % i for i in range(10)])
    values = consume_all(bootstrap, "paused", 20)
    assert values == [b"before-%d" % i for i in range(10)] + [b"after-%d" % i for i in range(10)]
