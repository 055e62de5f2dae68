"""Plans that move only what they must: replace a broker, or empty some (pure)."""

import pytest

from kafkactl.cluster.admin.replica_moves import MoveError, move_off_brokers, parse_replacements, replace_brokers

CURRENT = {("a", 0): [1, 2, 3], ("a", 1): [2, 3, 4], ("b", 0): [3, 1], ("b", 1): [4, 2]}


def test_a_replaced_broker_hands_every_replica_to_its_successor_in_place():
    assert replace_brokers(CURRENT, {3: 5}, registered={1, 2, 3, 4, 5}) == {
        ("a", 0): [1, 2, 5], ("a", 1): [2, 5, 4], ("b", 0): [5, 1]}


@pytest.mark.parametrize("replacements, message", [
    ({3: 9}, "broker 9 is not registered"),
    ({3: 3}, "cannot replace itself"),
    ({3: 1}, "topic 'a' partition 0 would hold a broker twice (1,2,3 -> 1,2,1)"),
])
def test_replacements_that_cannot_be_are_named(replacements, message):
    with pytest.raises(MoveError, match=message.replace("(", r"\(").replace(")", r"\)")):
        replace_brokers(CURRENT, replacements, registered={1, 2, 3, 4})


def test_replacements_are_parsed_as_old_colon_new():
    assert parse_replacements(["3:5", " 4:6 "]) == {3: 5, 4: 6}
    for bad in (["3-5"], ["x:5"], ["3:5", "3:6"]):
        with pytest.raises(MoveError):
            parse_replacements(bad)


def test_excluded_brokers_are_emptied_onto_the_least_loaded_others_and_nothing_else_moves():
    racks = {1: None, 2: None, 3: None, 4: None, 5: None}
    plan = move_off_brokers(CURRENT, {3}, racks)
    assert set(plan) == {("a", 0), ("a", 1), ("b", 0)}                 # b-1 has no replica on 3
    assert plan[("a", 0)] == [1, 2, 5] and plan[("a", 1)][0] == 2      # positions kept
    assert all(3 not in replicas for replicas in plan.values())
    assert all(len(set(r)) == len(r) for r in plan.values())
    # 5 held nothing: it takes the moved replicas first, until loads even out
    after = {**CURRENT, **plan}
    loads = [sum(r.count(b) for r in after.values()) for b in (1, 2, 4, 5)]
    assert loads == [2, 3, 3, 2]


def test_a_rack_the_partition_does_not_use_yet_is_preferred():
    racks = {1: "r1", 2: "r2", 3: "r3", 4: "r2", 5: "r3"}
    assert move_off_brokers({("t", 0): [1, 2, 3]}, {3}, racks) == {("t", 0): [1, 2, 5]}


def test_too_few_brokers_left_is_refused():
    with pytest.raises(MoveError, match="only 2 brokers would remain"):
        move_off_brokers({("t", 0): [1, 2, 3]}, {3}, {1: None, 2: None, 3: None})
