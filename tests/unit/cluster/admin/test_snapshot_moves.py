"""Snapshots mid-reassignment: which partitions are moving and to where, the
refusal's line, and a moving partition recorded as its move will leave it."""

from __future__ import annotations

from types import SimpleNamespace

from kafkactl.cluster.admin.snapshot import BrokerMetrics, Capacities, DirMetrics, ReplicaMetrics, build_snapshot
from kafkactl.cluster.admin.snapshot_moves import (
    ReassignmentInProgress,
    moving_from_listing,
    moving_from_zookeeper,
    settle,
)
from kafkactl.cluster.admin.topics import PartitionInfo

CAPACITIES = Capacities(100, 100)


def metrics_of(broker_id, replicas: dict, used: dict) -> BrokerMetrics:
    """replicas: {(topic, partition): (size, dir, in rate)}; used: {dir: used bytes}."""
    return BrokerMetrics(broker_id,
                         {path: DirMetrics(path, "ssd", 10_000, bytes_used) for path, bytes_used in used.items()},
                         {key: ReplicaMetrics(size, path, rate, rate * 2) for key, (size, path, rate) in replicas.items()})


def moving_one_replica():
    """t-0 (one replica) moving from broker 1 to broker 2: 300 of its 1000 bytes copied so far;
    t-1 stays on 1 and 3."""
    partitions = [PartitionInfo("t", 0, [2, 1], 1, 3, [1]), PartitionInfo("t", 1, [1, 3], 1, 3, [1, 3])]
    metrics = {
        1: metrics_of(1, {("t", 0): (1000, "/a", 50.0), ("t", 1): (200, "/a", 5.0)}, {"/a": 1200}),
        2: metrics_of(2, {("t", 0): (300, "/b", 0.0)}, {"/b": 300}),
        3: metrics_of(3, {("t", 1): (200, "/c", 0.0)}, {"/c": 200}),
    }
    return partitions, metrics


def test_zookeeper_moves_take_the_topic_znodes_target_over_the_admin_znode():
    moving = moving_from_zookeeper({("t", 0): [2], ("t", 5): [4, 1]},
                                   {("t", 0): ([2, 1], [1]), ("u", 1): ([3, 4, 1, 2], [1, 2])})
    assert moving.targets == {("t", 0): (2,), ("t", 5): (4, 1), ("u", 1): (3, 4)}
    assert moving.any and moving.source == "/admin/reassign_partitions exists"


def test_an_empty_admin_znode_still_counts_and_no_znode_with_no_moves_does_not():
    assert moving_from_zookeeper({}, {}).any
    assert not moving_from_zookeeper(None, {}).any
    assert not moving_from_listing({}).any


def test_listed_reassignments_target_the_replicas_less_those_being_removed():
    moving = moving_from_listing({("t", 0): ((3, 1, 2), (1,))})
    assert moving.targets == {("t", 0): (3, 2)} and moving.source == "listed by ListPartitionReassignments"


def test_the_refusal_is_one_line_naming_the_count_and_the_flag():
    message = str(ReassignmentInProgress(moving_from_listing({("t", 0): ((2, 1), (1,)), ("t", 1): ((3,), ())})))
    assert message == ("a reassignment is in progress (2 partitions moving, listed by ListPartitionReassignments): "
                       "a snapshot now would record their replica sets mid-move; wait for it (`kafkactl reassign "
                       "status`) or pass --allow-reassignment-in-progress to record their target replicas")
    assert "\n" not in message


def test_a_moving_partition_is_recorded_at_its_target_with_the_whole_log_and_the_leaders_rates():
    partitions, metrics = moving_one_replica()
    settled, settled_metrics, count = settle(partitions, metrics, {("t", 0): (2,)})
    assert count == 1
    assert (settled[0].replicas, settled[0].leader, settled[0].isr) == ([2], 2, [])
    assert settled[1] is partitions[1]
    snapshot = build_snapshot([SimpleNamespace(broker_id=b, rack=None) for b in (1, 2, 3)], settled,
                              settled_metrics, CAPACITIES, count)
    assert snapshot.partitions[0] == {"topic": "t", "partition": 0, "replicas": [2], "leader": 2, "log_dirs": ["/b"],
                                      "size_bytes": 1000, "bytes_in_per_s": 50.0, "bytes_out_per_s": 100.0}
    # The dirs as after the move: broker 1 no longer holds t-0, broker 2 holds all of it.
    assert [(d["broker_id"], d["used_bytes"]) for d in snapshot.log_dirs] == [(1, 200), (2, 1000), (3, 200)]
    assert snapshot.meta() == {"reassigning_partitions": 1}


def test_settling_leaves_the_metrics_it_was_given_unchanged():
    partitions, metrics = moving_one_replica()
    settle(partitions, metrics, {("t", 0): (2,)})
    assert metrics[1].dirs["/a"].used_bytes == 1200 and ("t", 0) in metrics[1].replicas
    assert metrics[2].replicas[("t", 0)].size_bytes == 300


def test_a_leader_in_the_target_stays_leader_and_a_growing_partition_keeps_both_copies():
    partitions, metrics = moving_one_replica()
    settled, settled_metrics, _ = settle(partitions, metrics, {("t", 0): (1, 2)})
    assert (settled[0].replicas, settled[0].leader) == ([1, 2], 1)
    assert settled_metrics[1].dirs["/a"].used_bytes == 1200
    assert settled_metrics[2].dirs["/b"].used_bytes == 1000


def test_partitions_not_in_the_snapshot_or_without_a_leaders_copy_are_left_as_they_are():
    partitions, metrics = moving_one_replica()
    gone = PartitionInfo("t", 2, [3, 1], 3, 1, [3])      # broker 3 reports no copy of t-2
    settled, _, count = settle([*partitions, gone], metrics, {("t", 2): (1,), ("x", 0): (1,)})
    assert count == 0 and settled == [*partitions, gone]
