"""A broker that cannot store a partition answers LeaderAndIsr with
KAFKA_STORAGE_ERROR for it; the controller takes that replica offline
(Kafka's LeaderAndIsrResponseReceived): a new leader if it led, and out of
the ISR, on real broker processes."""

from __future__ import annotations

import time
from pathlib import Path

from kazoo.client import KazooClient

from kafkactl.cluster.admin.topics import create_topic, describe_topics
from support.waiting import wait_for

SESSION = {"zookeeper.session.timeout.ms": "4000", "auto.leader.rebalance.enable": "false"}


def test_a_replica_whose_log_cannot_be_created_is_taken_offline(start_cluster):
    cluster, status = start_cluster(brokers=3, overrides=SESSION)
    zk = KazooClient(hosts=status.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        # A file where broker 1 would create the partition's log dir (its ssd
        # dir, where new logs go): creating the log fails with an I/O error,
        # which takes that log dir offline (KIP-112, as Kafka's LogManager);
        # broker 1 runs on with its other dir. (Both dirs failing would halt
        # it: tests/integration/broker/test_log_dir_failure.py.)
        (Path(status.broker(1).log_dirs[0]) / "sick-0").write_bytes(b"not a log dir")
        create_topic(zk, "sick", {0: [1, 2, 3]}, {})
        state = lambda: describe_topics(zk, ["sick"])["sick"][0]  # noqa: E731
        # Broker 1, the first replica, is elected first; its answer moves the leadership on.
        wait_for(lambda: state().leader == 2 and sorted(state().isr) == [2, 3], 30,
                 "broker 1 out of the ISR and broker 2 leading")
        time.sleep(2)                       # it stays that way: answering again changes nothing
        assert state().leader == 2 and sorted(state().isr) == [2, 3]
        assert cluster.status().broker(1).alive        # the broker runs on: only that replica is offline
    finally:
        zk.stop()
        zk.close()
