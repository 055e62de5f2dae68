"""Validation of topic changes and Kafka's assignment of added partitions (pure)."""

import pytest

from kafkactl.cluster.admin.replica_assignment import BrokerInfo
from kafkactl.cluster.admin.topic_changes import (
    InvalidChange, check_name_collision, new_partitions_assignment, parse_replica_assignment, validate_assignment,
)


def test_parse_replica_assignment():
    assert parse_replica_assignment("1:2:3, 2:3:1") == [[1, 2, 3], [2, 3, 1]]
    with pytest.raises(InvalidChange, match="partition 1 '2:'"):
        parse_replica_assignment("1:2,2:")


@pytest.mark.parametrize("partitions, message", [
    ([[1, 2], [2, 2]], "partition 1 lists a broker twice"),
    ([[1, 2], [3]], "partition 1 has 1 replicas where the others have 2"),
    ([[1, 4]], "broker 4 is not registered"),
])
def test_validate_assignment_refuses(partitions, message):
    with pytest.raises(InvalidChange, match=message):
        validate_assignment(partitions, {1, 2, 3})


def test_name_collisions_swap_dot_and_underscore():
    check_name_collision("a.b", ["a.b", "c"])          # the same name is not a collision
    with pytest.raises(InvalidChange, match="'a_b'"):
        check_name_collision("a.b", ["a_b"])


def test_added_partitions_follow_kafkas_add_partitions():
    brokers = [BrokerInfo(b) for b in (1, 2, 3, 4)]
    existing = {0: [2, 3], 1: [3, 4]}
    # start index = position of broker 2 among 1..4 = 1; the first shift is 1 too,
    # and grows by one at partition 4 (a full turn of 4 brokers).
    assert new_partitions_assignment(existing, 5, brokers) == {2: [4, 2], 3: [1, 3], 4: [2, 1]}


def test_added_partitions_start_at_the_next_broker_when_the_first_replica_is_gone():
    brokers = [BrokerInfo(b) for b in (1, 3)]
    assert new_partitions_assignment({0: [2]}, 2, brokers) == {1: [1]}   # start at broker 3 (index 1)


def test_added_partitions_refusals():
    brokers = [BrokerInfo(b) for b in (1, 2)]
    with pytest.raises(InvalidChange, match="can only be added"):
        new_partitions_assignment({0: [1], 1: [2]}, 2, brokers)
    with pytest.raises(InvalidChange, match="larger than available brokers"):
        new_partitions_assignment({0: [1, 2, 3]}, 2, brokers)
    with pytest.raises(InvalidChange, match="list the 1 new ones"):
        new_partitions_assignment({0: [1]}, 2, brokers, explicit=[[1], [2], [1]])


# --- selecting topics by name or pattern (kafka-topics.sh --topic) ---------------------

import pytest as _pytest  # noqa: E402

from kafkactl.cluster.admin.topic_names import BadTopicPattern, select_topics  # noqa: E402

EXISTING = ["events", "orders.v1", "orders_v1", "orders_v2"]


def test_an_exact_name_selects_itself_alone_and_patterns_match_whole_names():
    assert select_topics(["orders.v1"], EXISTING) == ["orders.v1"]
    assert select_topics(["orders_v.*"], EXISTING) == ["orders_v1", "orders_v2"]
    assert select_topics(["order"], EXISTING + ["order"]) == ["order"]
    assert select_topics(["ev.*", "orders_v2"], EXISTING) == ["events", "orders_v2"]


@_pytest.mark.parametrize("pattern, message", [
    ("ord", "no topic matches 'ord'"), ("orders(", "neither a topic nor a valid regular expression")])
def test_a_pattern_that_selects_nothing_is_named(pattern, message):
    with _pytest.raises(BadTopicPattern, match=message):
        select_topics([pattern], EXISTING)
