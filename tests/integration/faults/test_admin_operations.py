"""Admin operations the controller carries out under an idempotent acks=-1
load: partition reassignment and preferred replica election, triggered by
writing Kafka's ZooKeeper admin znodes (the kafkactl commands come later).
"""

from __future__ import annotations

import pytest

from kafkactl.cluster.zk import layout
from support.acked_check import assert_check, assert_nothing_lost
from support.load_producer import LoadProducer
from support.log_dirs import leftovers, partition_dir
from support.waiting import wait_for

PARTITIONS = 3


@pytest.mark.slow
def test_reassignment_to_a_different_replica_set_under_load(faults):
    # Deleted logs go from disk after 1 s (file.delete.delay.ms, Kafka: 60 s).
    cluster = faults(brokers=4, overrides={"log.segment.delete.delay.ms": "1000"})
    assignment = {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 1]}
    topic = cluster.create_topic("reassign", PARTITIONS, assignment=assignment)
    producer = LoadProducer(cluster.bootstrap, topic, PARTITIONS, rate=300).start()
    diagnose = lambda: cluster.describe(topic)   # noqa: E731
    target = [2, 3, 4]
    try:
        producer.wait_progress(300, diagnose=diagnose)
        epoch_before = cluster.state(topic, 0).leader_epoch
        cluster.request_reassignment({(topic, 0): target})
        wait_for(lambda: not cluster.exists(layout.REASSIGN_PARTITIONS), 30,
                 "/admin/reassign_partitions to be deleted", diagnose=diagnose)
        done = cluster.assignment(topic)
        assert done.partitions[0] == target, diagnose()
        assert {p: r for p, r in done.partitions.items() if p != 0} == {1: [2, 3, 4], 2: [3, 4, 1]}
        assert not done.adding_replicas and not done.removing_replicas, diagnose()
        state = cluster.state(topic, 0)
        assert state.leader in target and set(state.isr) <= set(target), diagnose()
        assert state.leader_epoch > epoch_before, diagnose()
        producer.wait_progress(100, partition=0, diagnose=diagnose)
    finally:
        producer.stop()
    broker_1_dirs = cluster.status.broker(1).log_dirs
    assert partition_dir(broker_1_dirs, topic, 1) is None          # never had it
    wait_for(lambda: not leftovers(broker_1_dirs, topic, 0), 10,
             f"broker 1 to delete its log of {topic}-0",
             diagnose=lambda: str(leftovers(broker_1_dirs, topic, 0)))
    cluster.wait_full_isr(topic)
    assert_check(cluster.bootstrap, producer)
    cluster.wait_replicas_agree(topic)


@pytest.mark.slow
def test_preferred_election_after_a_failover_puts_leaders_back(faults):
    cluster = faults(brokers=3)
    topic = cluster.create_topic("preferred", PARTITIONS)   # p led by broker p+1 first
    producer = LoadProducer(cluster.bootstrap, topic, PARTITIONS, rate=300).start()
    diagnose = lambda: cluster.describe(topic)   # noqa: E731
    preferred = {p: r[0] for p, r in cluster.assignment(topic).partitions.items()}
    try:
        producer.wait_progress(150, diagnose=diagnose)
        assert {p: cluster.leader(topic, p) for p in preferred} == preferred, diagnose()
        victim = preferred[0]
        cluster.kill(victim)
        cluster.wait_new_leader(topic, 0, victim)
        producer.wait_progress(100, partition=0, diagnose=diagnose)
        cluster.restart()
        cluster.wait_full_isr(topic)
        moved = {p: cluster.leader(topic, p) for p in preferred}
        assert moved[0] != victim, f"leadership came back by itself: {diagnose()}"
        cluster.request_preferred_election([(topic, p) for p in preferred])
        wait_for(lambda: not cluster.exists(layout.PREFERRED_REPLICA_ELECTION), 20,
                 "/admin/preferred_replica_election to be deleted", diagnose=diagnose)
        wait_for(lambda: {p: cluster.leader(topic, p) for p in preferred} == preferred, 10,
                 f"the preferred leaders {preferred} back", diagnose=diagnose)
        producer.wait_progress(100, partition=0, diagnose=diagnose)
        print(f"leaders after the failover {moved}; after the election {preferred}")
    finally:
        producer.stop()
    assert_nothing_lost(cluster, topic, producer)
