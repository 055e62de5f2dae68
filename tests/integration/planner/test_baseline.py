"""Kafka's default assignment as the report's baseline: the same results as
`assign_replicas`, deterministic for a seed (the lower bound: test_bounds.py)."""

import pytest

from kafkactl.cluster.admin.replica_assignment import BrokerInfo, assign_replicas
from kafkactl.planner.baseline import kafka_assignment, topic_rng
from kafkactl.planner.options import PlannerOptions


@pytest.fixture
def grown(fixture_snapshot):
    fixture, snapshot, _ = fixture_snapshot("add_two_brokers")
    return fixture, snapshot


def rows_of(frame):
    return sorted((r.topic, r.partition, list(r.replicas), list(r.log_dirs), r.leader) for r in frame.collect())


def test_it_is_assign_replicas_per_topic_deterministic_and_seeded(grown):
    fixture, snapshot = grown
    options = PlannerOptions(add_brokers=(5, 6), exclude_brokers=(1,), seed=7)
    first = rows_of(kafka_assignment(snapshot, options))
    assert first == rows_of(kafka_assignment(snapshot, options))
    brokers = [BrokerInfo(b["broker_id"], b["rack"]) for b in fixture.brokers if b["broker_id"] != 1]
    expected = assign_replicas(brokers, 8, 2, 0, topic_rng(7, "events"))
    assert [(t, p, r) for t, p, r, _, _ in first] == [("events", p, expected[p]) for p in range(8)]
    assert all(leader == replicas[0] for _, _, replicas, _, leader in first)
    other_seed = rows_of(kafka_assignment(snapshot, PlannerOptions(add_brokers=(5, 6), exclude_brokers=(1,), seed=8)))
    assert [r[2] for r in other_seed] != [r[2] for r in first]


def test_replicas_that_stay_keep_their_dir_and_new_ones_fill_the_emptiest(grown):
    fixture, snapshot = grown
    result = rows_of(kafka_assignment(snapshot, PlannerOptions(add_brokers=(5, 6))))
    current = {(p["topic"], p["partition"]): dict(zip(p["replicas"], p["log_dirs"])) for p in fixture.partitions}
    per_dir: dict[tuple[int, str], int] = {}
    for topic, partition, replicas, log_dirs, _ in result:
        for broker, path in zip(replicas, log_dirs):
            if broker in current[(topic, partition)]:
                assert path == current[(topic, partition)][broker]
            per_dir[(broker, path)] = per_dir.get((broker, path), 0) + 1
    for broker in (5, 6):  # new and empty: Kafka alternates between its dirs, the lower path first
        counts = [per_dir.get((broker, d), 0) for d in ("/data/hdd0", "/data/ssd0")]
        assert sum(counts) > 0 and counts[0] - counts[1] in (0, 1)
