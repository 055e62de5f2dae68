"""Leadership moves under an idempotent acks=-1 load: a rolling restart by
controlled shutdown, a reassignment to three entirely different brokers, and
the controller's automatic leader rebalance after a crash.

Nothing acknowledged may be lost or written twice; a rolling restart and a
reassignment must never leave a partition without a live leader, which an
observer thread checks in ZooKeeper all along.
"""

from __future__ import annotations

import time

import pytest

from kafkactl.cluster.zk import layout
from support.acked_check import assert_nothing_lost
from support.load_producer import LoadProducer
from support.log_dirs import leftovers, partition_dir
from support.offline_observer import OfflineObserver, assert_never_offline
from support.waiting import wait_for
from support.zk_state import leaders, preferred_leaders


def log_size(cluster, broker_id: int) -> int:
    return cluster.log_file(broker_id).stat().st_size


def log_since(cluster, broker_id: int, offset: int) -> str:
    with open(cluster.log_file(broker_id), "rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


# ---- 1. rolling restart ---------------------------------------------------------

ROLLING_PARTITIONS = 6


@pytest.mark.slow
def test_rolling_restart_by_controlled_shutdown_sees_no_offline_partition(faults):
    cluster = faults(brokers=3)
    topic = cluster.create_topic("rolling", ROLLING_PARTITIONS)   # preferred leaders 1, 2, 3, 1, 2, 3
    preferred = preferred_leaders(cluster, topic)
    producer = LoadProducer(cluster.bootstrap, topic, ROLLING_PARTITIONS, rate=300).start()
    observer = OfflineObserver(cluster, topic, ROLLING_PARTITIONS).start()
    diagnose = lambda: f"{cluster.describe(topic)}\n{observer.summary()}"   # noqa: E731
    timings = []
    try:
        producer.wait_progress(150, diagnose=diagnose)
        for broker_id in cluster.broker_ids:
            started = time.monotonic()
            offset = log_size(cluster, broker_id)
            controller = cluster.controller()
            cluster.stop(broker_id)                       # SIGTERM: controlled shutdown
            observer.down.add(broker_id)
            stopped = time.monotonic()
            text = log_since(cluster, broker_id, offset)
            assert f"controlled shutdown of broker {broker_id} succeeded" in text, (
                f"broker {broker_id} stopped without a successful controlled shutdown:\n"
                + "\n".join(text.splitlines()[-15:]))
            assert f"broker {broker_id} stopped cleanly" in text, "\n".join(text.splitlines()[-15:])
            assert broker_id not in leaders(cluster, topic).values(), diagnose()
            producer.wait_progress(60, diagnose=diagnose)   # writes go on with 2 of 3 in sync
            observer.down.discard(broker_id)
            cluster.start_only(broker_id)
            cluster.wait_full_isr(topic, timeout_s=40)
            timings.append(f"broker {broker_id}{' (controller)' if broker_id == controller else ''}: "
                           f"stop {stopped - started:.1f} s, back in every ISR after "
                           f"{time.monotonic() - stopped:.1f} s")
        after_rolling = leaders(cluster, topic)
        cluster.request_preferred_election([(topic, p) for p in preferred])
        wait_for(lambda: not cluster.exists(layout.PREFERRED_REPLICA_ELECTION), 20,
                 "/admin/preferred_replica_election to be deleted", diagnose=diagnose)
        wait_for(lambda: leaders(cluster, topic) == preferred, 15,
                 f"the preferred leaders {preferred} back", diagnose=diagnose)
        producer.wait_progress(150, diagnose=diagnose)
    finally:
        observer.stop()
        producer.stop()
    print("\n".join(timings))
    print(f"leaders after the rolling restart {after_rolling}; after the preferred election "
          f"{leaders(cluster, topic)}")
    print(observer.summary())
    assert_never_offline(observer, min_rounds=100)
    assert leaders(cluster, topic) == preferred, diagnose()
    assert_nothing_lost(cluster, topic, producer)


# ---- 2. reassignment to three other brokers --------------------------------------

REASSIGN_PARTITIONS = 3


@pytest.mark.slow
def test_reassignment_to_three_other_brokers_under_load(faults):
    # Deleted logs go from disk after 1 s (file.delete.delay.ms, Kafka: 60 s).
    cluster = faults(brokers=6, overrides={"log.segment.delete.delay.ms": "1000"})
    assignment = {0: [1, 2, 3], 1: [4, 5, 6], 2: [2, 4, 6]}
    untouched = {p: r for p, r in assignment.items() if p != 0}
    topic = cluster.create_topic("reassign-far", REASSIGN_PARTITIONS, assignment=assignment)
    producer = LoadProducer(cluster.bootstrap, topic, REASSIGN_PARTITIONS, rate=300).start()
    observer = OfflineObserver(cluster, topic, REASSIGN_PARTITIONS).start()
    diagnose = lambda: f"{cluster.describe(topic)}\n{observer.summary()}"   # noqa: E731
    old, target = [1, 2, 3], [4, 5, 6]
    try:
        producer.wait_progress(300, diagnose=diagnose)
        before = cluster.state(topic, 0)
        assert before.leader in old, diagnose()
        acked_before = producer.ack_count(0)
        started = time.monotonic()
        cluster.request_reassignment({(topic, 0): target})
        wait_for(lambda: not cluster.exists(layout.REASSIGN_PARTITIONS), 40,
                 "/admin/reassign_partitions to be deleted", diagnose=diagnose)
        took = time.monotonic() - started
        done = cluster.assignment(topic)
        assert done.partitions[0] == target, diagnose()
        assert {p: r for p, r in done.partitions.items() if p != 0} == untouched, diagnose()
        assert not done.adding_replicas and not done.removing_replicas, diagnose()
        state = cluster.state(topic, 0)
        assert state.leader in target and set(state.isr) <= set(target), diagnose()
        assert state.leader_epoch > before.leader_epoch, diagnose()
        producer.wait_progress(100, partition=0, diagnose=diagnose)   # partition 0 goes on, on 4-6
    finally:
        observer.stop()
        producer.stop()
    print(f"reassignment of {topic}-0 {old} -> {target} took {took:.1f} s; leader {before.leader} "
          f"epoch {before.leader_epoch} -> leader {state.leader} epoch {state.leader_epoch}; "
          f"{acked_before} messages of partition 0 acknowledged before, {producer.ack_count(0)} after")
    print(observer.summary())
    for broker_id in old:
        dirs = cluster.status.broker(broker_id).log_dirs
        wait_for(lambda: not leftovers(dirs, topic, 0), 15,
                 f"broker {broker_id} to delete its log of {topic}-0",
                 diagnose=lambda: str(leftovers(dirs, topic, 0)))
    for broker_id in target:
        assert partition_dir(cluster.status.broker(broker_id).log_dirs, topic, 0) is not None, broker_id
    assert_never_offline(observer, min_rounds=20)
    cluster.wait_full_isr(topic)
    assert_nothing_lost(cluster, topic, producer)


# ---- 3. automatic leader rebalance -----------------------------------------------

REBALANCE_PARTITIONS = 6


@pytest.mark.slow
def test_auto_leader_rebalance_puts_leaders_back(faults):
    cluster = faults(brokers=3, overrides={
        "auto.leader.rebalance.enable": "true",
        "leader.imbalance.check.interval.seconds": "1",
        "leader.imbalance.per.broker.percentage": "0",
    })
    topic = cluster.create_topic("auto-rebalance", REBALANCE_PARTITIONS)   # preferred 1, 2, 3, 1, 2, 3
    preferred = preferred_leaders(cluster, topic)
    producer = LoadProducer(cluster.bootstrap, topic, REBALANCE_PARTITIONS, rate=300).start()
    diagnose = lambda: cluster.describe(topic)   # noqa: E731
    try:
        producer.wait_progress(150, diagnose=diagnose)
        assert leaders(cluster, topic) == preferred, diagnose()
        # A broker other than the controller, so that the rebalance is done
        # by the controller that has been running its timer all along.
        controller = cluster.controller()
        victim = next(b for b in cluster.broker_ids if b != controller)
        led = [p for p, b in preferred.items() if b == victim]
        cluster.kill(victim)
        for p in led:
            cluster.wait_new_leader(topic, p, victim, timeout_s=20)
        for p in led:
            producer.wait_progress(30, partition=p, diagnose=diagnose)
        moved = leaders(cluster, topic)
        assert victim not in moved.values(), diagnose()
        restarted = time.monotonic()
        cluster.start_only(victim)
        # No admin trigger: the controller's rebalance timer alone.
        wait_for(lambda: leaders(cluster, topic) == preferred, 30,
                 f"the preferred leaders {preferred} back without an admin trigger", diagnose=diagnose)
        back_after = time.monotonic() - restarted
        assert not cluster.exists(layout.PREFERRED_REPLICA_ELECTION)
        for p in led:
            producer.wait_progress(30, partition=p, diagnose=diagnose)
    finally:
        producer.stop()
    print(f"killed broker {victim} (controller {controller}); leaders then {moved}; preferred "
          f"leaders {preferred} back {back_after:.1f} s after the restart")
    cluster.wait_full_isr(topic)
    assert leaders(cluster, topic) == preferred, diagnose()
    assert_nothing_lost(cluster, topic, producer)
