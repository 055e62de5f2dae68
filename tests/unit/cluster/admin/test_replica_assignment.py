import random
from collections import Counter

import pytest

from kafkactl.cluster.admin.replica_assignment import AssignmentError, BrokerInfo, assign_replicas
from kafkactl.cluster.admin.topic_names import InvalidTopicName, validate_topic_name


def brokers(n, racks=None):
    return [BrokerInfo(i, racks[(i - 1) % len(racks)] if racks else None) for i in range(1, n + 1)]


@pytest.mark.parametrize("seed", range(5))
def test_round_robin_spreads_leaders_and_replicas(seed):
    assignment = assign_replicas(brokers(3), 6, 3, rng=random.Random(seed))
    assert len(assignment) == 6
    for replicas in assignment.values():
        assert sorted(replicas) == [1, 2, 3]
    leaders = Counter(r[0] for r in assignment.values())
    assert set(leaders.values()) == {2}


def test_followers_shift_so_pairs_vary():
    assignment = assign_replicas(brokers(5), 10, 2, rng=random.Random(1))
    pairs = {tuple(r) for r in assignment.values()}
    assert len(pairs) > 5
    assert all(len(set(r)) == 2 for r in assignment.values())


def test_rack_aware_puts_each_replica_in_another_rack():
    racked = brokers(6, racks=["a", "b", "c"])
    rack_of = {b.broker_id: b.rack for b in racked}
    for seed in range(10):
        assignment = assign_replicas(racked, 12, 3, rng=random.Random(seed))
        for replicas in assignment.values():
            assert len({rack_of[r] for r in replicas}) == 3
            assert len(set(replicas)) == 3


def test_refuses_impossible_requests():
    with pytest.raises(AssignmentError, match="larger than available brokers"):
        assign_replicas(brokers(2), 1, 3)
    with pytest.raises(AssignmentError):
        assign_replicas(brokers(2), 0, 1)


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "bad name", "ü"])
def test_illegal_topic_names(name):
    with pytest.raises(InvalidTopicName):
        validate_topic_name(name)


def test_legal_topic_names():
    for name in ["orders", "a.b_c-d", "x" * 249]:
        validate_topic_name(name)
